package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// guard is the controller's end of one connection's guard (guard.sh): a
// session that lives as long as the connection and watches the attempts
// its other sessions start, so that an attempt needs no watchdog of its
// own on the node. It hears the connection's heartbeats; it stops an
// attempt when told to, and every attempt when the controller goes away or
// falls silent; and once an attempt's session has ended it reports the
// attempt's result file and tidies up after it.
type guard struct {
	ch   gossh.Channel
	in   *stdinWriter
	dir  string // the guard's private directory on the node
	boot string // the node's boot id, as the guard read it
	// wrapper is the payload of an attempt's exec request on this
	// connection: the wrapper's text, run by the login shell when it is
	// a POSIX sh, else by /bin/sh.
	wrapper []byte
	tail    *lastBytes

	mu      sync.Mutex
	waiting map[string]chan guardReport // by nonce: attempts waiting for fin
	ended   error                       // why the guard's output ended
	done    chan struct{}               // closed when it has
	exited  chan struct{}               // closed when its session has ended
}

// guardReport is what the guard said of one ended attempt's result file.
type guardReport struct {
	result    []byte
	resultErr error
}

// startGuard starts the guard on client and waits until it is ready: it
// has swept the node and made its private directory. hbWait is how long,
// in seconds, it lets the controller be silent.
func startGuard(client *gossh.Client, hbWait int, timeout time.Duration) (*guard, error) {
	ch, reqs, err := client.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	g := &guard{ch: ch, tail: &lastBytes{}, waiting: map[string]chan guardReport{}, done: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		// The guard's requests: its exit status, which nothing needs.
		for r := range reqs {
			if r.WantReply {
				_ = r.Reply(false, nil)
			}
		}
		close(g.exited)
	}()
	go func() { _, _ = io.Copy(g.tail, ch.Stderr()) }()
	ok, err := ch.SendRequest("exec", true, guardExec)
	if err == nil && !ok {
		err = errors.New("the server refused to run the guard")
	}
	if err != nil {
		ch.Close()
		return nil, err
	}
	g.in = newStdinWriter(channelStdin{ch})
	g.in.send([]byte(fmt.Sprintf("%d %s %d\n", protocolVersion, newNonce(), hbWait)))
	out := bufio.NewReaderSize(ch, 64<<10)
	ready := make(chan error, 1)
	go func() {
		line, err := out.ReadString('\n')
		rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "ready ")
		f := strings.SplitN(rest, " ", 3)
		if err != nil || !ok || len(f) != 3 || f[2] == "" || !validWord(f[0]) {
			ready <- g.startErr(err)
			return
		}
		g.boot, g.dir = f[0], f[2]
		// A login shell that runs POSIX sh takes the wrapper's text
		// itself: the attempt spares the node one exec of /bin/sh.
		g.wrapper = wrapperExec
		switch f[1] {
		case "sh", "dash", "bash":
			g.wrapper = wrapperDirect
		}
		ready <- nil
		g.read(out)
	}()
	select {
	case err = <-ready:
	case <-time.After(timeout):
		err = fmt.Errorf("the guard did not start within %s", timeout)
	}
	if err != nil {
		ch.Close()
		return nil, err
	}
	return g, nil
}

// channelStdin is a channel's stdin: closing it sends EOF.
type channelStdin struct{ ch gossh.Channel }

func (c channelStdin) Write(p []byte) (int, error) { return c.ch.Write(p) }
func (c channelStdin) Close() error                { return c.ch.CloseWrite() }

// startErr says why the guard did not become ready: its own complaint, or
// its exit.
func (g *guard) startErr(err error) error {
	select {
	case <-g.exited:
	case <-time.After(time.Second):
	}
	for _, line := range strings.Split(strings.TrimSpace(g.tail.text()), "\n") {
		if msg, ok := strings.CutPrefix(line, "solar-guard: "); ok {
			return errors.New(msg)
		}
	}
	if t := strings.TrimSpace(g.tail.text()); t != "" {
		return fmt.Errorf("the guard failed: %s", t)
	}
	if err == nil {
		err = errors.New("it said nothing")
	}
	return fmt.Errorf("the guard did not start: %v", err)
}

// read parses the guard's reports until its output ends, handing each to
// the attempt waiting for it; then every waiter learns that the guard is
// gone.
func (g *guard) read(out *bufio.Reader) {
	err := g.readReports(out)
	g.mu.Lock()
	if errors.Is(err, io.EOF) {
		err = errors.New("the connection's guard ended")
	}
	g.ended = err
	close(g.done)
	g.mu.Unlock()
}

func (g *guard) readReports(out *bufio.Reader) error {
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			return err
		}
		head, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "\x1e")
		nonce, kind, ok2 := strings.Cut(head, " ")
		if !ok || !ok2 {
			return fmt.Errorf("the guard said %q", line)
		}
		var r guardReport
		switch kind {
		case "none":
		case "odd":
			r.resultErr = errors.New("cannot read the result file: it is not a regular file")
		case "result":
			if r, err = readResult(out, nonce); err != nil {
				return err
			}
		default:
			return fmt.Errorf("the guard said %q", line)
		}
		g.mu.Lock()
		ch := g.waiting[nonce]
		delete(g.waiting, nonce)
		g.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// readResult reads a result file's content up to its end line, NONCE ".",
// keeping at most resultLimit bytes of it.
func readResult(out *bufio.Reader, nonce string) (guardReport, error) {
	end := nonce + ".\n"
	var buf bytes.Buffer
	too := false
	for {
		line, err := out.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return guardReport{}, err
		}
		if err == nil && string(line) == end && (buf.Len() == 0 || buf.Bytes()[buf.Len()-1] == '\n') {
			break
		}
		if buf.Len()+len(line) > resultLimit+1 {
			too = true
			continue
		}
		buf.Write(line)
	}
	// The guard ends the content with a newline of its own.
	b := buf.Bytes()
	if len(b) > 0 {
		b = b[:len(b)-1]
	}
	if too || len(b) > resultLimit {
		return guardReport{resultErr: fmt.Errorf("cannot read the result file: it is larger than %d bytes", resultLimit)}, nil
	}
	return guardReport{result: b}, nil
}

// finish tells the guard that attempt nonce's session has ended and
// returns what it reports of the result file.
func (g *guard) finish(ctx context.Context, nonce string) (guardReport, error) {
	ch := make(chan guardReport, 1)
	g.mu.Lock()
	if g.ended != nil {
		err := g.ended
		g.mu.Unlock()
		return guardReport{}, err
	}
	g.waiting[nonce] = ch
	g.mu.Unlock()
	g.in.sendWait([]byte("e " + nonce + "\n"))
	select {
	case r := <-ch:
		return r, nil
	case <-g.done:
		return guardReport{}, g.ended
	case <-ctx.Done():
		g.mu.Lock()
		delete(g.waiting, nonce)
		g.mu.Unlock()
		return guardReport{}, context.Cause(ctx)
	}
}

// stop asks the guard to stop attempt nonce: SIGTERM, its grace, SIGKILL.
func (g *guard) stop(nonce string) { g.in.sendWait([]byte("s " + nonce + "\n")) }

// beat is the connection's heartbeat.
func (g *guard) beat() { g.in.send([]byte("h\n")) }

// close tells the guard to end: it stops what is still registered, tidies
// up, removes its directory and ends, which closes done.
func (g *guard) close() { g.in.close() }

// validWord reports whether s is a word the node may say of itself: a
// boot id (or "-" when it could not be read).
func validWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'f' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return s != ""
}

// grace is what the wrapper's header says of an attempt's grace: tenths
// of a second.
func graceWord(d time.Duration) string {
	return strconv.Itoa(int(max(d, 0) / (100 * time.Millisecond)))
}
