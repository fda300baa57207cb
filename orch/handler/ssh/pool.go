package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/solarops/solar/orch/handler"
)

// Transport runs attempts on SSH nodes; a location that names no SSH node
// goes to Fallback. It may be used from many goroutines; Close it when the
// run is over.
type Transport struct {
	cfg      Config
	nodes    map[string]*Node
	fallback handler.Transport
	own      *handler.Local // the fallback when New was given none; settled by Close
	dials    chan struct{}  // one token per dial in progress

	mu    sync.Mutex
	pools map[string]*pool
	bases baseCache
}

// New returns a Transport for nodes, by location name. Locations that are
// not in nodes run on fallback (nil is a handler.Local of the Transport's
// own, which Close settles).
func New(nodes map[string]*Node, fallback handler.Transport, cfg Config) *Transport {
	var own *handler.Local
	if fallback == nil {
		own = &handler.Local{}
		fallback = own
	}
	c := cfg.withDefaults()
	return &Transport{cfg: c, nodes: nodes, fallback: fallback, own: own, dials: make(chan struct{}, c.MaxDials), pools: map[string]*pool{}}
}

// Open returns the host of location: a remote one for an SSH node. It does
// not connect; the first attempt does.
func (t *Transport) Open(ctx context.Context, location string) (handler.Host, error) {
	n, ok := t.nodes[location]
	if !ok {
		return t.fallback.Open(ctx, location)
	}
	return &host{t: t, p: t.pool(n)}, nil
}

func (t *Transport) pool(n *Node) *pool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pools[n.Name]
	if !ok {
		p = &pool{t: t, node: n, changed: make(chan struct{}), bases: map[string]*baseUpload{}}
		t.pools[n.Name] = p
	}
	return p
}

// Close closes every connection, once each guard has stopped what is
// still running there and tidied up (or guardLinger has passed). Attempts
// still running on them fail. A fallback of the Transport's own is
// settled (handler.Local.Settle).
func (t *Transport) Close() error {
	t.mu.Lock()
	pools := t.pools
	t.pools = map[string]*pool{}
	t.mu.Unlock()
	var conns []*conn
	for _, p := range pools {
		conns = append(conns, p.takeAll()...)
	}
	for _, c := range conns {
		c.guard.close()
	}
	deadline := time.NewTimer(guardLinger)
	defer deadline.Stop()
	for _, c := range conns {
		select {
		case <-c.guard.done:
		case <-deadline.C:
		}
		c.client.Close()
	}
	if t.own != nil {
		t.own.Settle()
	}
	return nil
}

// guardLinger bounds how long Close waits for the guards to end.
const guardLinger = 3 * time.Second

// Check logs in to n (where the connection's guard looks for the commands
// actions need) and runs a trivial command twice. connect is the time until the first command ended
// (dialling, logging in, the first session, which a server prepares more
// slowly); rtt is the second command's, on the open connection: what each
// action pays.
func (t *Transport) Check(ctx context.Context, n *Node) (connect, rtt time.Duration, err error) {
	start := time.Now()
	p := t.pool(n)
	for i := range 2 {
		begin := time.Now()
		c, s, err := p.newSession(ctx)
		if err != nil {
			return 0, 0, err
		}
		out, err := s.Output(`exec /bin/sh -c 'echo ok'`)
		s.Close()
		p.release(c)
		if err != nil {
			return 0, 0, p.lostErr(c, err)
		}
		if got := strings.TrimSpace(string(out)); got != "ok" {
			return 0, 0, nodeErr(ErrNode, "node %s (%s): a trivial command printed %q", n.Name, n.Addr(), out)
		}
		if i == 0 {
			connect = time.Since(start)
		} else {
			rtt = time.Since(begin)
		}
	}
	return connect, rtt, nil
}

// pool holds the connections to one node.
type pool struct {
	t    *Transport
	node *Node

	mu      sync.Mutex
	conns   []*conn
	dialing int // dials in progress
	waiting int // acquirers with no session slot yet
	// changed is closed and replaced whenever a slot frees or a dial ends.
	changed chan struct{}
	// failed is the last dial's error, and failGen counts dial failures,
	// so that everyone waiting when a dial fails gets its error instead of
	// dialling again in turn.
	failed  error
	failGen int

	bases map[string]*baseUpload
}

// conn is one SSH connection and its session slots.
type conn struct {
	raw      net.Conn // the TCP connection under client
	client   *gossh.Client
	guard    *guard
	sessions int // open or opening, the guard's not counted
	limit    int // lowered when the server refuses a session
	dead     error
}

func (p *pool) broadcast() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// acquire returns a connection with a free session slot, taken. It dials
// when every connection is full and the dials in progress would not make
// room for everyone waiting.
func (p *pool) acquire(ctx context.Context) (*conn, error) {
	p.mu.Lock()
	p.waiting++
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	gen := p.failGen
	for {
		for _, c := range p.conns {
			if c.dead == nil && c.sessions < c.limit {
				c.sessions++
				p.mu.Unlock()
				return c, nil
			}
		}
		if p.failGen != gen {
			err := p.failed
			p.mu.Unlock()
			return nil, err
		}
		if p.dialing*p.t.cfg.MaxSessions < p.waiting {
			p.dialing++
			go p.dial()
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		p.mu.Lock()
	}
}

// release gives a session slot back.
func (p *pool) release(c *conn) {
	p.mu.Lock()
	c.sessions--
	if c.limit < max(p.t.cfg.MaxSessions-1, 1) {
		// A refusal lowered the limit while the server was still closing a
		// session; it has had time to finish since.
		c.limit++
	}
	p.broadcast()
	p.mu.Unlock()
}

// dial makes one connection and adds it to the pool, or records why not.
func (p *pool) dial() {
	c, err := p.connect(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dialing--
	if err != nil {
		p.failed = err
		p.failGen++
	} else {
		p.conns = append(p.conns, c)
	}
	p.broadcast()
}

// connect dials the node and logs in; with guard, the connection's guard
// is started (a connection of the pool), else it is a connection of its
// own for one upload (see pool.upload).
func (p *pool) connect(guard bool) (*conn, error) {
	n, cfg := p.node, &p.t.cfg
	ccfg, done, err := cfg.clientConfig(n)
	if err != nil {
		return nil, err
	}
	defer done()
	p.t.dials <- struct{}{}
	defer func() { <-p.t.dials }()
	raw, err := net.DialTimeout("tcp", n.Addr(), cfg.DialTimeout)
	if err != nil {
		return nil, nodeErr(ErrUnreachable, "node %s (%s) is unreachable: %v", n.Name, n.Addr(), cleanNetErr(err))
	}
	// The handshake and login must not hang on a node that accepted the
	// connection and then went silent.
	_ = raw.SetDeadline(time.Now().Add(cfg.DialTimeout))
	sc, chans, reqs, err := gossh.NewClientConn(raw, n.Addr(), ccfg)
	if err != nil {
		raw.Close()
		var hk *hostKeyError
		switch {
		case errors.As(err, &hk):
			return nil, hk
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, nodeErr(ErrLogin, "node %s (%s) refused the login of %s: %v", n.Name, n.Addr(), ccfg.User, err)
		case strings.Contains(err.Error(), "no common algorithm for host key"):
			// The node no longer holds a key of the trusted key's type (it
			// was reinstalled): a changed key, named as such.
			if offered, serr := ScanHostKey(context.Background(), n.Name, n.Addr(), cfg.DialTimeout); serr == nil {
				return nil, &hostKeyError{node: n.Name, addr: n.Addr(), want: FingerprintOf(n.HostKey), got: FingerprintOf(offered)}
			}
		}
		return nil, nodeErr(ErrUnreachable, "node %s (%s): ssh handshake failed: %v", n.Name, n.Addr(), handshakeReason(err))
	}
	client := gossh.NewClient(sc, chans, reqs)
	if !guard {
		_ = raw.SetDeadline(time.Time{})
		return &conn{raw: raw, client: client, limit: 1}, nil
	}
	// The guard takes one of the server's sessions for the connection's
	// life; it must be running before any attempt starts.
	g, err := startGuard(client, max(int(3*cfg.Keepalive/time.Second), 3), cfg.DialTimeout)
	if err != nil {
		client.Close()
		if strings.HasPrefix(err.Error(), "lacks ") {
			return nil, nodeErr(ErrNode, "node %s (%s) %v", n.Name, n.Addr(), err)
		}
		return nil, nodeErr(ErrNode, "node %s (%s): %v", n.Name, n.Addr(), err)
	}
	_ = raw.SetDeadline(time.Time{})
	c := &conn{raw: raw, client: client, guard: g, limit: max(cfg.MaxSessions-1, 1)}
	go p.keepalive(c)
	return c, nil
}

// handshakeReason says why an SSH handshake failed, without the library's
// own "ssh: handshake failed:" (the message says so already).
func handshakeReason(err error) error {
	err = cleanNetErr(err)
	msg := strings.TrimPrefix(err.Error(), "ssh: handshake failed: ")
	switch {
	case msg == "EOF" || strings.HasSuffix(msg, "connection reset by peer"):
		return errors.New("the server closed the connection before the handshake ended (is it an SSH server? check ip and ssh_port, and the server's log)")
	case msg != err.Error():
		return errors.New(msg)
	}
	return err
}

// cleanNetErr drops the Go-internal "dial tcp" wording where the cause is
// clear without it.
func cleanNetErr(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		if op.Timeout() {
			return errors.New("connection timed out")
		}
		var sc *os.SyscallError
		if errors.As(op.Err, &sc) {
			return sc.Err
		}
		return op.Err
	}
	return err
}

// keepalive checks c every period until it dies. A keepalive request
// travels behind whatever was written before it, and on a slow line a base
// upload queues seconds of bytes: an unanswered keepalive alone does not
// mean a dead connection. c is closed when a keepalive has gone unanswered
// for a period and nothing at all, not even a TCP acknowledgement of the
// upload, has arrived from the node for a period either. A connection cut
// while idle is given up as soon as before, one period after the first
// unanswered keepalive: the last answer arrived a period before it.
func (p *pool) keepalive(c *conn) {
	every := p.t.cfg.Keepalive
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	closed := make(chan struct{})
	go func() {
		_ = c.client.Wait()
		close(closed)
	}()
	for {
		select {
		case <-closed:
			p.markDead(c, errors.New("the connection was closed"))
			return
		case <-ticker.C:
		}
		if c.guard != nil {
			c.guard.beat()
		}
		if why := c.ping(every, closed); why != nil {
			p.markDead(c, why)
			c.client.Close()
			return
		}
	}
}

// ping sends one keepalive on c and waits for its answer while the node is
// heard from; it returns why c is dead, or nil once the answer came.
func (c *conn) ping(every time.Duration, closed <-chan struct{}) error {
	answered := make(chan error, 1)
	sent := time.Now()
	go func() {
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		answered <- err
	}()
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case err := <-answered:
			if err != nil {
				return fmt.Errorf("keepalive failed: %v", err)
			}
			return nil
		case <-closed:
			return errors.New("the connection was closed")
		case <-timer.C:
		}
		quiet, known := c.silence()
		if !known {
			return fmt.Errorf("no answer to a keepalive for %s", time.Since(sent).Round(100*time.Millisecond))
		}
		if quiet >= every {
			return fmt.Errorf("no answer to a keepalive for %s and nothing received for %s", time.Since(sent).Round(100*time.Millisecond), quiet.Round(100*time.Millisecond))
		}
		timer.Reset(every - quiet)
	}
}

// silence is how long nothing at all has arrived on c from the node: no
// SSH message, no TCP acknowledgement of what was sent. The kernel keeps
// the time of both (TCP_INFO; its own TCP keepalive uses them). known is
// false when it cannot be asked: then an unanswered keepalive alone
// decides, as it did before.
func (c *conn) silence() (d time.Duration, known bool) {
	tcp, ok := c.raw.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	cerr := rc.Control(func(fd uintptr) {
		info, err = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if cerr != nil || err != nil {
		return 0, false
	}
	return time.Duration(min(info.Last_ack_recv, info.Last_data_recv)) * time.Millisecond, true
}

// markDead takes c out of service; attempts on it fail with why.
func (p *pool) markDead(c *conn, why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.dead != nil {
		return
	}
	c.dead = why
	for i, x := range p.conns {
		if x == c {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	p.broadcast()
}

// lostErr describes a failure on c, which is closed if it was the
// connection that failed.
func (p *pool) lostErr(c *conn, err error) error {
	p.mu.Lock()
	why := c.dead
	p.mu.Unlock()
	if why == nil {
		why = err
	}
	return nodeErr(ErrLost, "node %s (%s): connection lost: %v", p.node.Name, p.node.Addr(), why)
}

// takeAll takes every connection out of the pool.
func (p *pool) takeAll() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	conns := p.conns
	p.conns = nil
	return conns
}

// newSession opens a session on a connection from the pool.
func (p *pool) newSession(ctx context.Context) (*conn, *gossh.Session, error) {
	var s *gossh.Session
	c, err := p.open(ctx, func(c *conn) (err error) {
		s, err = c.client.NewSession()
		return err
	})
	return c, s, err
}

// newChannel opens a session channel on a connection from the pool,
// without the goroutines and buffers of a gossh.Session: an attempt
// reads its requests and output itself.
func (p *pool) newChannel(ctx context.Context) (*conn, gossh.Channel, <-chan *gossh.Request, error) {
	var (
		ch   gossh.Channel
		reqs <-chan *gossh.Request
	)
	c, err := p.open(ctx, func(c *conn) (err error) {
		ch, reqs, err = c.client.OpenChannel("session", nil)
		return err
	})
	return c, ch, reqs, err
}

// open opens a session with do on a connection from the pool. A server
// that refuses the session (it still counts one that is closing) lowers
// that connection's limit and the attempt tries again.
func (p *pool) open(ctx context.Context, do func(*conn) error) (*conn, error) {
	for try := 0; ; try++ {
		c, err := p.acquire(ctx)
		if err != nil {
			return nil, err
		}
		err = do(c)
		if err == nil {
			return c, nil
		}
		var oce *gossh.OpenChannelError
		if errors.As(err, &oce) && try < 20 {
			p.mu.Lock()
			c.sessions--
			c.limit = max(1, min(c.limit, c.sessions))
			p.broadcast()
			p.mu.Unlock()
			time.Sleep(time.Duration(try+1) * time.Millisecond)
			continue
		}
		p.release(c)
		if try == 0 && oce == nil {
			// The connection died unnoticed (a silent drop shows only at
			// the next keepalive): nothing ran, so the attempt dials again
			// once rather than fail.
			p.markDead(c, err)
			c.client.Close()
			continue
		}
		return nil, p.lostErr(c, err)
	}
}
