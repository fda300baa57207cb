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
	"syscall"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/solarops/solar/orch/handler"
)

var (
	//go:embed wrapper.sh
	wrapperScript string
	//go:embed setup.sh
	setupScript string
)

// protocolVersion is the first word the wrapper reads; bump it with any
// change to what travels on stdin.
const protocolVersion = 2

// resultLimit bounds the result file read back from a node, as for local
// attempts.
const resultLimit = 16 << 20

// ioGrace is how long an attempt waits for the session to close once the
// wrapper has reported: a background child of the script that keeps
// stdout open must not hold the attempt.
const ioGrace = time.Second

// Exit statuses of the wrapper itself, before the script runs.
const (
	exitProtocol = 97 // stdin was not what the wrapper expects
	exitSetup    = 98 // no private dir, no base dir, inputs not written
)

// host is one node, as the shell handler sees it.
type host struct {
	t *Transport
	p *pool
}

// Close does nothing: connections live as long as the Transport.
func (h *host) Close() error { return nil }

// Exec runs one attempt on the node: the base goes to the node's cache if
// it is not there yet, then one session runs the wrapper.
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
	for try := 0; try < 2; try++ {
		if err := h.p.ensureBase(ctx, b); err != nil {
			if ctx.Err() != nil {
				return handler.Ended{Stopped: true}, nil
			}
			return handler.Ended{}, err
		}
		ended, nobase, err := h.run(ctx, a, b, env)
		if !nobase {
			return ended, err
		}
		// Someone emptied the cache since this run looked: upload again.
		h.p.forgetBase(b.hash)
	}
	return handler.Ended{}, nodeErr(ErrNode, "node %s (%s): the base vanished from ~/.cache/solar/bases twice while the run used it", n.Name, n.Addr())
}

// run is one session of the wrapper. nobase reports that the base was not
// in the node's cache after all.
func (h *host) run(ctx context.Context, a handler.Attempt, b *base, env []byte) (ended handler.Ended, nobase bool, err error) {
	p, cfg := h.p, &h.t.cfg
	if ctx.Err() != nil {
		return handler.Ended{Stopped: true}, false, nil
	}
	c, s, err := p.newSession(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return handler.Ended{Stopped: true}, false, nil
		}
		return handler.Ended{}, false, err
	}
	defer p.release(c)
	defer s.Close()

	nonce := newNonce()
	tw := newTrailerWriter(a.Stdout, nonce)
	tw.note = func(what string, waited time.Duration) { note(a, p.node, what, waited) }
	errTail := &lastBytes{w: a.Stderr}
	s.Stdout, s.Stderr = tw, errTail
	stdin, err := s.StdinPipe()
	if err != nil {
		return handler.Ended{}, false, p.lostErr(c, err)
	}
	if err := handler.PassGate(a.Gate); err != nil {
		return handler.Ended{}, false, err
	}
	if err := s.Start(shellCommand(wrapperScript, "solar-wrapper")); err != nil {
		return handler.Ended{}, false, p.lostErr(c, err)
	}
	grace := a.Grace
	if grace < 0 {
		grace = 0
	}
	hbWait := int(3 * cfg.Keepalive / time.Second)
	hbWait = max(hbWait, 3)
	header := fmt.Sprintf("%d %s %s %d %d %d %d %s\n", protocolVersion, nonce, b.hash,
		int(grace/(100*time.Millisecond)), hbWait, len(env), resultLimit, recordKey(p.node, a.Key))
	in := newStdinWriter(stdin)
	in.send(append([]byte(header), env...))

	waited := make(chan error, 1)
	go func() { waited <- s.Wait() }()
	beat := time.NewTicker(cfg.Keepalive)
	defer beat.Stop()
	var (
		waitErr  error
		finished bool // Wait returned
		stopped  bool
		giveUp   <-chan time.Time
	)
	done, complete := ctx.Done(), tw.complete
	for !finished {
		select {
		case waitErr = <-waited:
			finished = true
		case <-complete:
			// The wrapper has said everything; the session closes when the
			// script's leftover children let go of its output.
			complete = nil
			giveUp = time.After(ioGrace)
		case <-beat.C:
			in.send([]byte("h\n"))
		case <-done:
			done = nil
			stopped = true
			in.send([]byte("s\n"))
			giveUp = time.After(grace + 2*cfg.Keepalive)
		case <-giveUp:
			s.Close()
			waitErr = <-waited
			finished = true
		}
	}
	in.close()

	t := tw.trailer()
	switch {
	case t.nobase:
		return handler.Ended{}, true, nil
	case t.ok:
		ended = handler.Ended{Exit: exitOf(t.code), Stopped: stopped, Result: t.result, ResultErr: t.resultErr}
		return ended, false, nil
	case stopped:
		return handler.Ended{Stopped: true, Exit: handler.Exit{Code: -1, Signal: "SIGKILL"}}, false, nil
	}
	var ee *gossh.ExitError
	if errors.As(waitErr, &ee) {
		if code := ee.ExitStatus(); code == exitProtocol || code == exitSetup {
			return handler.Ended{}, false, nodeErr(ErrNode, "node %s (%s): %s", p.node.Name, p.node.Addr(), wrapperMessage(errTail.text(), code))
		}
		if sig := ee.Signal(); sig != "" {
			return handler.Ended{Exit: handler.Exit{Code: -1, Signal: handler.SignalName(sig)}}, false, nil
		}
		return handler.Ended{Exit: handler.Exit{Code: ee.ExitStatus()}}, false, nil
	}
	if waitErr == nil {
		waitErr = errors.New("the wrapper ended without reporting")
	}
	return handler.Ended{}, false, p.lostErr(c, waitErr)
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

// exitOf turns the wrapper's view of the script's status into an Exit:
// above 128 is death by signal, as the shell reports it.
func exitOf(code int) handler.Exit {
	if code > 128 && code < 128+65 {
		if name, ok := handler.KnownSignal(syscall.Signal(code - 128)); ok {
			return handler.Exit{Code: -1, Signal: name}
		}
	}
	return handler.Exit{Code: code}
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

// envFile is what the wrapper sources: the script to run and the protocol
// variables as single-quoted assignments, and a printf that writes the
// inputs file. Inside single quotes the shell takes every byte as it is,
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
	b = append(b, "printf '%s' "...)
	b = appendQuoted(b, string(a.Inputs))
	b = append(b, " >\"$d/inputs.json\"\n"...)
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
// that a connection that stopped moving cannot block the attempt.
type stdinWriter struct {
	w    io.WriteCloser
	ch   chan []byte
	once sync.Once
}

func newStdinWriter(w io.WriteCloser) *stdinWriter {
	sw := &stdinWriter{w: w, ch: make(chan []byte, 16)}
	go func() {
		for b := range sw.ch {
			if _, err := w.Write(b); err != nil {
				for range sw.ch {
				}
				return
			}
		}
	}()
	return sw
}

// send queues b; when the queue is full the heartbeat is dropped, which
// the node tolerates for a while.
func (sw *stdinWriter) send(b []byte) {
	select {
	case sw.ch <- b:
	default:
	}
}

func (sw *stdinWriter) close() { sw.once.Do(func() { close(sw.ch) }) }

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

// trailerWriter passes the script's output on until the wrapper's marker,
// RS NONCE " " (RS the record separator, 0x1e), and parses the report
// after it. Output that may be the start of the marker is held back until
// the next write tells; starting with a byte text never ends with, the
// marker holds back nothing of ordinary output, so lines stream as they
// are written (a marker starting with "\n" held back every line's end):
//
//	nobase\n
//	exit CODE none\n
//	exit CODE odd\n
//	exit CODE result\n CONTENT \n NONCE .\n
//
// A note, "note WHAT CENTISECONDS\n" after the marker, is no report: it
// goes to note, and output goes on after it.
type trailerWriter struct {
	out      io.Writer
	note     func(what string, waited time.Duration) // nil drops notes
	marker   []byte
	end      []byte
	mu       sync.Mutex
	hold     []byte // output that may be the start of the marker
	found    bool
	report   []byte
	complete chan struct{} // closed once the report is whole
	closed   bool
}

func newTrailerWriter(out io.Writer, nonce string) *trailerWriter {
	if out == nil {
		out = io.Discard
	}
	return &trailerWriter{out: out, marker: []byte("\x1e" + nonce + " "), end: []byte("\n" + nonce + ".\n"), complete: make(chan struct{})}
}

func (t *trailerWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(p), t.write(p)
}

func (t *trailerWriter) write(p []byte) error {
	if t.found {
		return t.addReport(p)
	}
	data := append(t.hold, p...)
	if i := bytes.Index(data, t.marker); i >= 0 {
		if _, err := t.out.Write(data[:i]); err != nil {
			return err
		}
		t.found = true
		t.hold = nil
		return t.addReport(data[i+len(t.marker):])
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

// addReport keeps report bytes, at most what a whole report can be. A
// note ends at its line's end, and what follows is output again.
func (t *trailerWriter) addReport(p []byte) error {
	room := resultLimit + 256 - len(t.report)
	if room > 0 {
		t.report = append(t.report, p[:min(len(p), room)]...)
	}
	if line, rest, ok := bytes.Cut(t.report, []byte("\n")); ok && !t.closed && bytes.HasPrefix(line, []byte("note ")) {
		t.tellNote(string(line))
		rest = append([]byte(nil), rest...)
		t.found, t.report = false, nil
		return t.write(rest)
	}
	if !t.closed && t.whole() {
		t.closed = true
		close(t.complete)
	}
	return nil
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

func (t *trailerWriter) whole() bool {
	line, rest, ok := bytes.Cut(t.report, []byte("\n"))
	if !ok {
		return false
	}
	if !bytes.HasSuffix(line, []byte(" result")) {
		return true
	}
	return bytes.Contains(rest, t.end) || len(t.report) >= resultLimit+256
}

// report is what the wrapper said after the script.
type report struct {
	ok, nobase bool
	code       int
	result     []byte
	resultErr  error
}

// trailer parses the report; ok is false when there was none.
func (t *trailerWriter) trailer() report {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.found {
		// The script's last bytes were held back in case they began a
		// marker that never came.
		if len(t.hold) > 0 {
			_, _ = t.out.Write(t.hold)
			t.hold = nil
		}
		return report{}
	}
	line, rest, ok := bytes.Cut(t.report, []byte("\n"))
	if !ok {
		return report{}
	}
	f := strings.Fields(string(line))
	if len(f) == 1 && f[0] == "nobase" {
		return report{nobase: true}
	}
	if len(f) != 3 || f[0] != "exit" {
		return report{}
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return report{}
	}
	r := report{ok: true, code: code}
	switch f[2] {
	case "none":
	case "odd":
		r.resultErr = errors.New("cannot read the result file: it is not a regular file")
	case "result":
		i := bytes.Index(rest, t.end)
		switch {
		case i > resultLimit || i < 0 && len(rest) > resultLimit:
			r.resultErr = fmt.Errorf("cannot read the result file: it is larger than %d bytes", resultLimit)
		case i < 0:
			return report{}
		default:
			r.result = append([]byte(nil), rest[:i]...)
		}
	default:
		return report{}
	}
	return r
}
