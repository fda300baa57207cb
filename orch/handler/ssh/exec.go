package ssh

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/orch/handler"
)

var (
	//go:embed common.sh
	commonScript string
	//go:embed wrapper.sh
	wrapperScript string
	//go:embed guard.sh
	guardScript string
	//go:embed setup.sh
	setupScript string

	// The payloads of the sessions' exec requests, made once: each
	// attempt's session sends the wrapper's text.
	wrapperExec   = gossh.Marshal(execMsg{Command: shellCommand(compact(commonScript+wrapperScript), "solar-wrapper")})
	wrapperDirect = gossh.Marshal(execMsg{Command: compact(commonScript + wrapperScript)})
	guardExec     = gossh.Marshal(execMsg{Command: shellCommand(compact(commonScript+guardScript), "solar-guard")})
)

// protocolVersion is the first word the wrapper and the guard read; bump
// it with any change to what travels on their stdin.
const protocolVersion = 3

// resultLimit bounds the result file read back from a node, as for local
// attempts.
const resultLimit = 16 << 20

// ioGrace is how long an attempt waits for the session's output to end
// once the script has exited: a background child of the script that keeps
// stdout open must not hold the attempt.
const ioGrace = time.Second

// Exit statuses of the wrapper itself, before the script starts.
const (
	exitProtocol = 97 // stdin was not what the wrapper expects
	exitSetup    = 98 // no guard, no base dir, the record not made
)

// host is one node, as the shell handler sees it.
type host struct {
	t *Transport
	p *pool
}

// Close does nothing: connections live as long as the Transport.
func (h *host) Close() error { return nil }

// Batches reports true: a node runs batch scripts (handler.BatchHost),
// their document in the attempt's inputs file.
func (h *host) Batches() bool { return true }

// Exec runs one attempt on the node: one session runs the wrapper, which
// becomes the script. The base is taken to be in the node's cache; when
// the wrapper finds it is not, it goes there and the attempt runs again.
func (h *host) Exec(ctx context.Context, a handler.Attempt) (handler.Ended, error) {
	n := h.p.node
	if a.Program != nil {
		return handler.Ended{}, nodeErr(ErrNode, "node %s: %s runs on the controller, not on a node", n.Name, a.Program.Name)
	}
	b, err := h.t.bases.get(a.BaseDir)
	if err != nil {
		return handler.Ended{}, nodeErr(ErrNode, "node %s: cannot pack the base: %v", n.Name, err)
	}
	env, err := envFile(a)
	if err != nil {
		return handler.Ended{}, err
	}
	for try := 0; try < 3; try++ {
		if try > 0 {
			if err := h.p.ensureBase(ctx, b); err != nil {
				if ctx.Err() != nil {
					return handler.Ended{Stopped: true}, nil
				}
				return handler.Ended{}, err
			}
		}
		ended, nobase, err := h.run(ctx, a, b, env)
		if !nobase {
			return ended, err
		}
		if try > 0 {
			// Someone emptied the cache since the upload: upload again.
			h.p.forgetBase(b.hash)
		}
	}
	return handler.Ended{}, nodeErr(ErrNode, "node %s (%s): the base vanished from ~/.cache/solar/bases twice while the run used it", n.Name, n.Addr())
}

// session is one attempt's session: what the node said on it.
type session struct {
	exit     *handler.Exit // from exit-status or exit-signal
	closed   bool          // the channel's requests ended: the session is over
	outputs  int           // output streams that ended (stdout, stderr)
	stopped  bool
	finished bool
}

// run is one session of the wrapper. nobase reports that the base was not
// in the node's cache after all.
func (h *host) run(ctx context.Context, a handler.Attempt, b *base, env []byte) (ended handler.Ended, nobase bool, err error) {
	p := h.p
	if ctx.Err() != nil {
		return handler.Ended{Stopped: true}, false, nil
	}
	// The gate (the sync of what the task depends on) passes while the
	// session opens and the node starts the wrapper, which waits for its
	// stdin: the script cannot start before the gate has passed, since
	// nothing is sent on stdin until then.
	gate := make(chan error, 1)
	if a.Gate == nil {
		gate <- nil
	} else {
		go func() { gate <- handler.PassGate(a.Gate) }()
	}
	c, ch, reqs, err := p.newChannel(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return handler.Ended{Stopped: true}, false, nil
		}
		return handler.Ended{}, false, err
	}
	defer p.release(c)
	defer ch.Close()

	nonce := newNonce()
	tw := newTrailerWriter(a.Stdout, nonce)
	tw.note = func(what string, waited time.Duration) { note(a, p.node, what, waited) }
	errTail := &lastBytes{w: a.Stderr}
	ok, err := ch.SendRequest("exec", true, c.guard.wrapper)
	if err != nil {
		return handler.Ended{}, false, p.lostErr(c, err)
	}
	if !ok {
		return handler.Ended{}, false, nodeErr(ErrNode, "node %s (%s): the server refused to run the wrapper", p.node.Name, p.node.Addr())
	}
	if err := <-gate; err != nil {
		// Closed with nothing on its stdin, the wrapper ends at once.
		return handler.Ended{}, false, err
	}
	msg := make([]byte, 0, 256+len(env))
	msg = fmt.Appendf(msg, "v=%d n=%s h=%s key=%s g=%s bt=%s D=", protocolVersion, nonce, b.hash, recordKey(p.node, a.Key), graceWord(a.Grace), c.guard.boot)
	msg = appendQuoted(msg, c.guard.dir)
	msg = append(msg, '\n')
	msg = append(msg, env...)
	outs := make(chan struct{}, 2)
	go func() {
		// A large environment may wait for the node's window while the
		// outputs are read.
		_, _ = ch.Write(msg)
		_ = ch.CloseWrite()
		copyPooled(errTail, ch.Stderr())
		outs <- struct{}{}
	}()
	go func() {
		copyPooled(tw, ch)
		outs <- struct{}{}
	}()

	ss := h.wait(ctx, c, ch, reqs, outs, nonce, a.Grace)
	started, nobase := tw.state()
	switch {
	case nobase:
		return handler.Ended{}, true, nil
	case ss.stopped:
		ended = handler.Ended{Stopped: true, Exit: handler.Exit{Code: -1, Signal: "SIGKILL"}}
		if ss.exit != nil {
			ended.Exit = *ss.exit
		}
		return ended, false, nil
	case ss.exit == nil:
		return handler.Ended{}, false, p.lostErr(c, errors.New("the session ended without an exit status"))
	case !started:
		// The wrapper ended before the script: say why, and let the guard
		// forget what it registered.
		_, _ = c.guard.finish(ctx, nonce)
		if code := ss.exit.Code; code == exitProtocol || code == exitSetup {
			return handler.Ended{}, false, nodeErr(ErrNode, "node %s (%s): %s", p.node.Name, p.node.Addr(), wrapperMessage(errTail.text(), code))
		}
		return handler.Ended{}, false, nodeErr(ErrNode, "node %s (%s): the wrapper ended (%s) before the script started: %s", p.node.Name, p.node.Addr(), exitText(*ss.exit), strings.TrimSpace(errTail.text()))
	}
	r, err := c.guard.finish(ctx, nonce)
	if err != nil {
		if ctx.Err() != nil {
			return handler.Ended{Stopped: true, Exit: *ss.exit}, false, nil
		}
		return handler.Ended{}, false, p.lostErr(c, err)
	}
	return handler.Ended{Exit: *ss.exit, Result: r.result, ResultErr: r.resultErr}, false, nil
}

func exitText(e handler.Exit) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// copyBufs holds the buffers attempts copy their output through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyPooled copies r to w through a pooled buffer.
func copyPooled(w io.Writer, r io.Reader) {
	b := copyBufs.Get().(*[]byte)
	_, _ = io.CopyBuffer(w, r, *b)
	copyBufs.Put(b)
}

// execMsg is the payload of an "exec" request (RFC 4254, 6.5).
type execMsg struct {
	Command string
}

// exitSignalMsg is the payload of an "exit-signal" request (RFC 4254, 6.10).
type exitSignalMsg struct {
	Signal     string
	CoreDumped bool
	Error      string
	Lang       string
}

// wait follows one attempt's session until it is over: the exit status is
// known (or the channel closed) and its output has ended, or ioGrace has
// passed since the exit; or it was stopped and is gone (or given up on).
// The output is copied whole before it returns.
func (h *host) wait(ctx context.Context, c *conn, ch gossh.Channel, reqs <-chan *gossh.Request, outs <-chan struct{}, nonce string, grace time.Duration) session {
	var (
		ss     session
		giveUp <-chan time.Time
	)
	done := ctx.Done()
	for ss.outputs < 2 && !ss.finished {
		select {
		case r, ok := <-reqs:
			if !ok {
				ss.closed, reqs = true, nil
				if giveUp == nil {
					giveUp = time.After(ioGrace)
				}
				break
			}
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
			if ss.exit == nil {
				if ss.exit = exitOfRequest(r); ss.exit != nil && giveUp == nil {
					giveUp = time.After(ioGrace)
				}
			}
		case <-outs:
			ss.outputs++
		case <-done:
			done = nil
			ss.stopped = true
			c.guard.stop(nonce)
			giveUp = time.After(max(grace, 0) + 2*h.t.cfg.Keepalive)
		case <-giveUp:
			ss.finished = true
		}
	}
	if ss.outputs < 2 {
		// Closed here, the channel ends its readers at once.
		ch.Close()
		for ss.outputs < 2 {
			<-outs
			ss.outputs++
		}
	}
	if ss.exit == nil && !ss.closed && !ss.stopped {
		// The output ended first; the exit status follows.
		select {
		case r, ok := <-reqs:
			for ok && ss.exit == nil {
				if ss.exit = exitOfRequest(r); ss.exit == nil {
					r, ok = <-reqs
				}
			}
		case <-time.After(ioGrace):
		}
	}
	return ss
}

// exitOfRequest reads an exit-status or exit-signal request; nil for any
// other.
func exitOfRequest(r *gossh.Request) *handler.Exit {
	switch r.Type {
	case "exit-status":
		if len(r.Payload) < 4 {
			return nil
		}
		code := int(r.Payload[0])<<24 | int(r.Payload[1])<<16 | int(r.Payload[2])<<8 | int(r.Payload[3])
		return &handler.Exit{Code: code}
	case "exit-signal":
		var m exitSignalMsg
		if err := gossh.Unmarshal(r.Payload, &m); err != nil {
			return nil
		}
		return &handler.Exit{Code: -1, Signal: handler.SignalName(m.Signal)}
	}
	return nil
}

// recordKey is the KEY of the wrapper's protocol: the name of the record
// by which the next attempt of the same resource on the node finds this
// one. It hashes the node's address, as the store gives it, with the key,
// so that two servers on one machine sharing a login (tests, or two
// stores that reach the node differently) do not take each other's
// attempts for their own. "-" is no record: an attempt that may run
// beside others.
func recordKey(n *Node, key string) string {
	if key == "" {
		return "-"
	}
	sum := sha256.Sum256([]byte(n.Addr() + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// note tells the attempt's log what the wrapper had to do before the
// script could start: wait for a previous attempt of the same resource
// ("ended") or kill it ("killed").
func note(a handler.Attempt, n *Node, what string, waited time.Duration) {
	if a.Note == nil {
		return
	}
	w := waited.Round(100 * time.Millisecond).String()
	switch what {
	case "ended":
		a.Note(fmt.Sprintf("waited %s for a previous attempt's process group left on node %s to end", w, n.Name))
	case "killed":
		a.Note(fmt.Sprintf("killed a previous attempt's process group left on node %s: it was not gone %s after being asked to stop", n.Name, w))
	}
}

func wrapperMessage(stderr string, code int) string {
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(line, "solar-wrapper: ") {
			return strings.TrimPrefix(line, "solar-wrapper: ")
		}
	}
	if code == exitProtocol {
		return "the wrapper could not read its instructions"
	}
	if t := strings.TrimSpace(stderr); t != "" {
		return "the wrapper could not prepare the attempt: " + t
	}
	return "the wrapper could not prepare the attempt"
}

// compact drops a script's comment lines, blank lines and indentation:
// the wrapper's text travels with every attempt. Only whole lines go; the
// scripts keep no line whose meaning its indentation carries.
func compact(script string) string {
	var b strings.Builder
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// shellCommand is the command of a session: script run by /bin/sh with
// args, whatever the login shell is. Only fixed text goes through here;
// args are words solar makes (hashes, modes), never operator data.
func shellCommand(script, argv0 string, args ...string) string {
	if strings.ContainsRune(script, '\'') {
		panic("ssh: a wrapper script holds a single quote")
	}
	var b strings.Builder
	b.WriteString("exec /bin/sh -c '")
	b.WriteString(script)
	b.WriteString("' ")
	b.WriteString(argv0)
	for _, a := range args {
		for _, r := range a {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				panic("ssh: unsafe word on a command line: " + a)
			}
		}
		b.WriteByte(' ')
		b.WriteString(a)
	}
	return b.String()
}

// envFile is what the wrapper sources after its own words: the script to
// run and the protocol variables as single-quoted assignments, and
// solar_inputs, which writes the inputs file once the wrapper has looked
// at what it was given. Inside single quotes the shell takes every byte as it is,
// so no value is ever expanded or run.
func envFile(a handler.Attempt) ([]byte, error) {
	var b []byte
	b = append(b, "s="...)
	b = appendQuoted(b, a.Script)
	b = append(b, '\n')
	for _, kv := range a.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) {
			return nil, fmt.Errorf("%w: environment entry %q is not NAME=value", handler.ErrBadRequest, k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("%w: %s holds a NUL byte", handler.ErrBadRequest, k)
		}
		b = append(b, "export "...)
		b = append(b, k...)
		b = append(b, '=')
		b = appendQuoted(b, v)
		b = append(b, '\n')
	}
	if bytes.IndexByte(a.Inputs, 0) >= 0 {
		return nil, fmt.Errorf("%w: the inputs hold a NUL byte", handler.ErrBadRequest)
	}
	b = append(b, "solar_inputs() { printf '%s' "...)
	b = appendQuoted(b, string(a.Inputs))
	b = append(b, " >\"$d.inputs.json\"; }\n"...)
	if a.Batch {
		// A batch's document is its inputs file (handler.BatchHost).
		b = append(b, "export SOLAR_BATCH=\"$D/$n.inputs.json\"\n"...)
	}
	return b, nil
}

func validName(k string) bool {
	if k == "" || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// appendQuoted appends s in single quotes; a quote inside ends the quoted
// part, adds an escaped quote and starts a new one.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b = append(b, s[:i]...)
		b = append(b, `'\''`...)
		s = s[i+1:]
	}
	b = append(b, s...)
	return append(b, '\'')
}

func newNonce() string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// stdinWriter writes to a session's stdin from a goroutine of its own, so
// that a connection that stopped moving cannot block its callers. Closing
// it closes the stdin once what was queued is written.
type stdinWriter struct {
	w      io.WriteCloser
	ch     chan []byte
	mu     sync.Mutex
	closed bool
}

func newStdinWriter(w io.WriteCloser) *stdinWriter {
	sw := &stdinWriter{w: w, ch: make(chan []byte, 256)}
	go func() {
		for b := range sw.ch {
			if _, err := w.Write(b); err != nil {
				for range sw.ch {
				}
				break
			}
		}
		w.Close()
	}()
	return sw
}

// send queues b; when the queue is full b is dropped: a heartbeat, which
// the node tolerates for a while.
func (sw *stdinWriter) send(b []byte) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed {
		return
	}
	select {
	case sw.ch <- b:
	default:
	}
}

// sendWait queues b, waiting for room: a command that must not be lost.
// The queue drains even when the connection is dead.
func (sw *stdinWriter) sendWait(b []byte) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.closed {
		sw.ch <- b
	}
}

func (sw *stdinWriter) close() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if !sw.closed {
		sw.closed = true
		close(sw.ch)
	}
}

// lastBytes passes writes on and keeps the last few hundred bytes, where
// the wrapper's own complaint would be.
type lastBytes struct {
	w   io.Writer
	mu  sync.Mutex
	buf []byte
}

func (l *lastBytes) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 1024 {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-512:]...)
	}
	l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}

func (l *lastBytes) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// trailerWriter passes the session's output on, watching for the
// wrapper's lines before the script starts, each behind a marker, RS NONCE
// " " (RS the record separator, 0x1e), that the script never sees:
//
//	note WHAT CENTISECONDS\n   what the wrapper waited for (to note)
//	nobase\n                   the base is not in the node's cache
//	start\n                    the script starts: the rest is its output
//
// Output that may be the start of the marker is held back until the next
// write tells; starting with a byte text never ends with, the marker
// holds back nothing of ordinary output. Once the script has started,
// output passes straight through.
type trailerWriter struct {
	out    io.Writer
	note   func(what string, waited time.Duration) // nil drops notes
	marker []byte
	mu     sync.Mutex
	hold   []byte // output that may be the start of the marker
	line   []byte // the wrapper's line after a marker, so far
	inLine bool
	// started and nobase are what the wrapper said.
	started, nobase bool
}

func newTrailerWriter(out io.Writer, nonce string) *trailerWriter {
	if out == nil {
		out = io.Discard
	}
	return &trailerWriter{out: out, marker: []byte("\x1e" + nonce + " ")}
}

func (t *trailerWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		_, err := t.out.Write(p)
		return len(p), err
	}
	return len(p), t.write(p)
}

func (t *trailerWriter) write(p []byte) error {
	data := append(t.hold, p...)
	t.hold = nil
	for len(data) > 0 {
		if t.inLine {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				t.line = append(t.line, data...)
				return nil
			}
			t.line = append(t.line, data[:i]...)
			t.said(string(t.line))
			t.line, t.inLine, data = nil, false, data[i+1:]
			if t.started {
				_, err := t.out.Write(data)
				return err
			}
			continue
		}
		if i := bytes.Index(data, t.marker); i >= 0 {
			if _, err := t.out.Write(data[:i]); err != nil {
				return err
			}
			t.inLine, data = true, data[i+len(t.marker):]
			continue
		}
		keep := 0
		for k := min(len(data), len(t.marker)-1); k > 0; k-- {
			if bytes.HasPrefix(t.marker, data[len(data)-k:]) {
				keep = k
				break
			}
		}
		if _, err := t.out.Write(data[:len(data)-keep]); err != nil {
			return err
		}
		t.hold = append([]byte(nil), data[len(data)-keep:]...)
		return nil
	}
	return nil
}

// said takes one of the wrapper's lines.
func (t *trailerWriter) said(line string) {
	switch {
	case line == "start":
		t.started = true
	case line == "nobase":
		t.nobase = true
	case strings.HasPrefix(line, "note "):
		t.tellNote(line)
	}
}

// tellNote passes on a note line, "note WHAT CENTISECONDS".
func (t *trailerWriter) tellNote(line string) {
	f := strings.Fields(line)
	if t.note == nil || len(f) != 3 {
		return
	}
	centis, err := strconv.Atoi(f[2])
	if err != nil {
		return
	}
	t.note(f[1], time.Duration(centis)*10*time.Millisecond)
}

// state returns what the wrapper said, once the session's output has
// ended; output held back in case it began a marker goes out.
func (t *trailerWriter) state() (started, nobase bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.hold) > 0 {
		_, _ = t.out.Write(t.hold)
		t.hold = nil
	}
	return t.started, t.nobase
}
