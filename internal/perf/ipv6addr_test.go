package perf

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// --ipv6-addr: the exchange runs over IPv6 only, both ways; an IPv4
// server address is then an error.
func TestSessionIPv6Addr(t *testing.T) {
	l6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	port := l6.Addr().(*net.TCPAddr).Port
	_ = l6.Close()
	f := newFakeFabric()
	srv := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, Server: true, Port: port, IPv6Addr: true}
	cli := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, Host: "::1", Port: port, IPv6Addr: true}
	srv.Defaults()
	cli.Defaults()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss := &Session{P: &srv, Dev: newFakeDevice(f, 1), StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
	cs := &Session{P: &cli, Dev: newFakeDevice(f, 2), StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
	var sres *Result
	var serr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); sres, serr = ss.Run(ctx) }()
	cres, cerr := cs.Run(ctx)
	wg.Wait()
	if serr != nil || cerr != nil {
		t.Fatalf("server: %v client: %v", serr, cerr)
	}
	if !strings.HasPrefix(sres.Info.Peer, "[::1]:") || !strings.HasPrefix(cres.Info.Peer, "[::1]:") {
		t.Fatalf("peers %q and %q, want [::1]", sres.Info.Peer, cres.Info.Peer)
	}
	// IPv6 only: an IPv4 server address is refused, not tried.
	v4 := cli
	v4.Host = "127.0.0.1"
	c := &Session{P: &v4, Dev: newFakeDevice(f, 3), DialTimeout: 300 * time.Millisecond}
	if _, err := c.Run(ctx); err == nil || !strings.Contains(err.Error(), "cannot connect to 127.0.0.1") {
		t.Fatalf("--ipv6-addr to 127.0.0.1: %v", err)
	}
}
