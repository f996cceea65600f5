package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// PeerError is a failure of the peer or of the exchange with it: peer
// unreachable, vanished, garbled, or running with other parameters. The
// command maps it to exit code exitPeer.
type PeerError struct{ Err error }

func (e *PeerError) Error() string { return e.Err.Error() }
func (e *PeerError) Unwrap() error { return e.Err }

func peerErrorf(format string, a ...any) error {
	return &PeerError{Err: fmt.Errorf(format, a...)}
}

// Conn is the out-of-band TCP channel with perftest's discipline: every
// exchange is "client writes then reads, server reads then writes", one
// write per record, each record read in full. Every I/O has a deadline so a
// silent peer turns into an error within StepTimeout, except waits that
// legitimately last as long as the peer's run (WaitPeer), which rely on TCP
// keepalive and the peer closing.
type Conn struct {
	c           net.Conn
	client      bool
	StepTimeout time.Duration
	// RunTimeout bounds waits that span the peer's measurement (0: none;
	// keepalive still detects a dead host).
	RunTimeout time.Duration
	ctx        context.Context
	peerVer    Version
	noDone     bool // -R: no "done" record at the end (cm.go)
}

// newConn wraps an established connection.
func newConn(ctx context.Context, c net.Conn, client bool, step time.Duration) *Conn {
	if tc, ok := c.(*net.TCPConn); ok {
		// A peer host that vanishes without a FIN is noticed within
		// about 2+3*1 s even during a long run.
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: 2 * time.Second, Interval: time.Second, Count: 3})
	}
	cn := &Conn{c: c, client: client, StepTimeout: step, ctx: ctx}
	// A cancelled context (Ctrl-C) unblocks any pending I/O at once.
	go func() {
		<-ctx.Done()
		_ = c.SetDeadline(time.Unix(1, 0))
	}()
	return cn
}

// Dial connects to a perftest or rdmactl server, retrying until timeout
// (a server started a moment later is fine; perftest itself does not
// retry).
func Dial(ctx context.Context, host string, port int, timeout, step time.Duration) (*Conn, error) {
	return dialNet(ctx, "tcp", host, port, timeout, step)
}

// dialNet is Dial on network "tcp" (IPv4 or IPv6, as the address is) or
// "tcp6" (--ipv6-addr: IPv6 only, as perftest's ai_family AF_INET6).
func dialNet(ctx context.Context, network, host string, port int, timeout, step time.Duration) (*Conn, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		d := net.Dialer{Timeout: time.Until(deadline)}
		if d.Timeout <= 0 {
			break
		}
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			return newConn(ctx, c, true, step), nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return nil, peerErrorf("cannot connect to %s: %v (is the server running? start it first with the same test, e.g. 'rdmactl perf write -d DEV')", addr, shortNetErr(lastErr))
}

// Listen binds the server socket (all addresses when bind is "").
func Listen(bind string, port int) (net.Listener, error) {
	return listenNet("tcp", bind, port)
}

// listenNet is Listen on network "tcp" or "tcp6" (--ipv6-addr).
func listenNet(network, bind string, port int) (net.Listener, error) {
	lc := net.ListenConfig{} // Go sets SO_REUSEADDR on listeners, like perftest
	l, err := lc.Listen(context.Background(), network, net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %v", net.JoinHostPort(bind, strconv.Itoa(port)), shortNetErr(err))
	}
	return l, nil
}

// Accept waits for one client (until ctx is cancelled).
func Accept(ctx context.Context, l net.Listener, step time.Duration) (*Conn, error) {
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := l.Accept()
		ch <- res{c, err}
	}()
	select {
	case <-ctx.Done():
		_ = l.Close()
		r := <-ch
		if r.c != nil {
			_ = r.c.Close()
		}
		return nil, ctx.Err()
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("accept: %v", r.err)
		}
		return newConn(ctx, r.c, false, step), nil
	}
}

func shortNetErr(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		var se *os.SyscallError
		if errors.As(oe.Err, &se) {
			return se.Err
		}
		return oe.Err
	}
	return err
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// RemoteAddr is the peer's address.
func (c *Conn) RemoteAddr() string { return c.c.RemoteAddr().String() }

// PeerVersion is the version record the peer sent.
func (c *Conn) PeerVersion() Version { return c.peerVer }

// xchg performs one exchange of equal-sized records. what names the record
// in errors; long allows the read to wait for the peer's whole run.
func (c *Conn) xchg(what string, mine []byte, theirsLen int, long bool) ([]byte, error) {
	theirs := make([]byte, theirsLen)
	if c.client {
		if err := c.write(what, mine); err != nil {
			return nil, err
		}
		if err := c.read(what, theirs, long); err != nil {
			return nil, err
		}
	} else {
		if err := c.read(what, theirs, long); err != nil {
			return nil, err
		}
		if err := c.write(what, mine); err != nil {
			return nil, err
		}
	}
	return theirs, nil
}

func (c *Conn) write(what string, b []byte) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(c.StepTimeout))
	if _, err := c.c.Write(b); err != nil {
		return c.ioErr("sending", what, err)
	}
	return nil
}

func (c *Conn) read(what string, b []byte, long bool) error {
	var dl time.Time
	switch {
	case !long:
		dl = time.Now().Add(c.StepTimeout)
	case c.RunTimeout > 0:
		dl = time.Now().Add(c.RunTimeout)
	}
	_ = c.c.SetReadDeadline(dl)
	if _, err := io.ReadFull(c.c, b); err != nil {
		return c.ioErr("reading", what, err)
	}
	return nil
}

func (c *Conn) ioErr(verb, what string, err error) error {
	if c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return peerErrorf("peer %s closed the connection while %s %s (it failed or was stopped; see its output)", c.RemoteAddr(), verb, what)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		// A peer killed with unread data in its socket resets it.
		return peerErrorf("peer %s reset the connection while %s %s (it failed or was stopped; see its output)", c.RemoteAddr(), verb, what)
	case errors.As(err, &ne) && ne.Timeout():
		return peerErrorf("peer %s did not answer within %v while %s %s (different test or options on the two sides?)", c.RemoteAddr(), c.StepTimeout, verb, what)
	}
	return peerErrorf("%s %s with %s: %v", verb, what, c.RemoteAddr(), shortNetErr(err))
}

// doneRecord is what ctx_close_connection writes after the last key
// round (doneSize bytes).
const doneRecord = "done\x00"

// sayDone ends the exchange as ctx_close_connection does: after the last
// key round each side writes "done\0" and closes. perftest never reads it;
// we drain the peer's copy briefly so that our close does not reset a
// connection the peer is still reading.
func (c *Conn) sayDone() {
	if c.noDone {
		return
	}
	_ = c.c.SetWriteDeadline(time.Now().Add(c.StepTimeout))
	_, _ = c.c.Write([]byte(doneRecord))
	_ = c.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var b [doneSize]byte
	_, _ = io.ReadFull(c.c, b[:])
}
