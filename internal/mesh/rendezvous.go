package mesh

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"time"
)

// The rendezvous is out of band over TCP, as perf's own exchange: rank 0
// (the coordinator) listens, every other rank connects and says who it is
// (Hello), and once all have come or the deadline has passed the
// coordinator sends each the roster of who came. Messages are JSON
// objects, one a line, of at most maxMessage bytes; every read and write
// has a deadline, so a peer that stops answering costs a bounded wait.

// ProtoVersion is the rendezvous protocol; ranks of another refuse.
// 2: Hello.Unfit.
const ProtoVersion = 2

// maxMessage bounds one message: a roster of 1,024 ranks of 8 devices is
// about 300 KB.
const maxMessage = 8 << 20

// Hello is what a rank says of itself.
type Hello struct {
	Proto int    `json:"proto"`
	Job   string `json:"job"` // the job's identity: another job's rank is refused
	Rank  int    `json:"rank"`
	Size  int    `json:"size"`
	Host  string `json:"host"` // its host name, for reports
	// Addr is where its tests listen; empty: the address it connected
	// from, as the coordinator saw it.
	Addr string `json:"addr"`
	// Port is the base of its tests' exchange ports: the test of its
	// device i listens at Port+i.
	Port    int      `json:"port"`
	Devices []string `json:"devices"`
	// Unfit says why the rank's host failed its health check before the
	// job (perf mesh --doctor): it takes the roster and no part in the
	// rounds. Empty for a fit rank.
	Unfit string `json:"unfit,omitempty"`
}

// Member is one rank in the roster.
type Member struct {
	Hello
	// Absent says why a rank is not in the job (it never came, it was
	// refused); empty for a rank that came.
	Absent string `json:"absent,omitempty"`
}

// Roster is every rank, by rank.
type Roster struct {
	Members []Member `json:"members"`
	Error   string   `json:"error,omitempty"` // to a rank refused
}

// Link is a rendezvous connection: JSON lines with deadlines.
type Link struct {
	c net.Conn
	r *bufio.Reader
}

func newLink(c net.Conn) *Link { return &Link{c: c, r: bufio.NewReaderSize(c, 4<<10)} }

// Send writes v as one line by the deadline.
func (l *Link) Send(v any, deadline time.Time) error {
	b, err := encodeMessage(v)
	if err != nil {
		return err
	}
	return l.sendLine(b, deadline)
}

// encodeMessage is v as one line.
func encodeMessage(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) >= maxMessage {
		return nil, fmt.Errorf("message of %d bytes: at most %d", len(b), maxMessage)
	}
	return append(b, '\n'), nil
}

func (l *Link) sendLine(b []byte, deadline time.Time) error {
	_ = l.c.SetWriteDeadline(deadline)
	_, err := l.c.Write(b)
	return err
}

// Recv reads one line into v by the deadline.
func (l *Link) Recv(v any, deadline time.Time) error {
	_ = l.c.SetReadDeadline(deadline)
	line, err := readLine(l.r)
	if err != nil {
		return err
	}
	return decodeMessage(line, v)
}

// Close closes the connection.
func (l *Link) Close() error { return l.c.Close() }

// readLine reads up to '\n', refusing a line of maxMessage bytes or more.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) >= maxMessage {
			return nil, fmt.Errorf("a message longer than %d bytes", maxMessage)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, net.ErrClosed) || len(line) == 0 {
				return nil, err
			}
			return nil, fmt.Errorf("a message cut short: %w", err)
		}
	}
}

// decodeMessage decodes one message, refusing unknown fields and
// trailing data, so that a garbled peer is named, not half-read.
func decodeMessage(line []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("a garbled message: %v", err)
	}
	if d.More() {
		return errors.New("a garbled message: data after the object")
	}
	return nil
}

// Gather is the coordinator's side: self is rank 0's Hello; it accepts
// ranks on ln until all of self.Size have come or deadline, then sends
// each the roster. It returns the roster and the links of the ranks that
// came (nil for the others; links[0] is nil, rank 0 being this process).
func Gather(ctx context.Context, ln net.Listener, self Hello, deadline time.Time) (*Roster, []*Link, error) {
	if self.Rank != 0 || self.Size < 1 || self.Size > MaxHosts {
		return nil, nil, fmt.Errorf("the coordinator is rank 0 of 1 to %d ranks (rank %d of %d)", MaxHosts, self.Rank, self.Size)
	}
	self.Proto = ProtoVersion
	members := make([]Member, self.Size)
	links := make([]*Link, self.Size)
	members[0] = Member{Hello: self}
	if self.Unfit != "" {
		members[0].Absent = "left out: " + self.Unfit
	}
	var mu sync.Mutex
	came := 1
	all := make(chan struct{})
	if self.Size == 1 {
		close(all)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	// Accept until all have come or the deadline; each hello is read in
	// its own goroutine, bounded by the deadline.
	_ = setAcceptDeadline(ln, deadline)
	var wg sync.WaitGroup
	pending := map[net.Conn]bool{} // accepted, hello not yet read
	go func() {
		select {
		case <-all:
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
		_ = setAcceptDeadline(ln, time.Now())
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		mu.Lock()
		pending[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := newLink(c)
			var h Hello
			err := l.Recv(&h, deadline)
			mu.Lock()
			delete(pending, c)
			if err != nil {
				mu.Unlock()
				c.Close()
				return
			}
			why := ""
			switch {
			case h.Proto != ProtoVersion:
				why = fmt.Sprintf("rendezvous protocol %d, the coordinator speaks %d: run the same rdmactl everywhere", h.Proto, ProtoVersion)
			case h.Job != self.Job:
				why = fmt.Sprintf("job %q, the coordinator's is %q: another job uses this coordinator's port", h.Job, self.Job)
			case h.Size != self.Size:
				why = fmt.Sprintf("%d ranks, the coordinator has %d", h.Size, self.Size)
			case h.Rank < 1 || h.Rank >= self.Size:
				why = fmt.Sprintf("rank %d: want 1 to %d", h.Rank, self.Size-1)
			case links[h.Rank] != nil:
				why = fmt.Sprintf("rank %d came twice", h.Rank)
			}
			if why == "" {
				if h.Addr == "" {
					if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
						h.Addr = ta.IP.String()
					}
				}
				members[h.Rank] = Member{Hello: h}
				if h.Unfit != "" {
					members[h.Rank].Absent = "left out: " + h.Unfit
				}
				links[h.Rank] = l
				came++
				if came == self.Size {
					close(all)
				}
			}
			mu.Unlock()
			if why != "" {
				_ = l.Send(Roster{Error: why}, deadline)
				c.Close()
			}
		}()
	}
	// Connections still saying hello when all have come (or at the
	// deadline) are cut: nobody waits for them.
	mu.Lock()
	for c := range pending {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for r := range members {
		if links[r] == nil && r != 0 {
			members[r] = Member{Hello: Hello{Rank: r, Size: self.Size}, Absent: "never came to the rendezvous"}
		}
	}
	roster := &Roster{Members: members}
	if err := ctx.Err(); err != nil {
		closeAll(links)
		return nil, nil, err
	}
	// The roster goes to every rank that came (encoded once: the
	// coordinator's memory stays linear in the ranks); one that cannot
	// take it is absent from then on.
	line, err := encodeMessage(roster)
	if err != nil {
		closeAll(links)
		return nil, nil, err
	}
	var smu sync.Mutex
	var swg sync.WaitGroup
	sendBy := time.Now().Add(30 * time.Second)
	for r, l := range links {
		if l == nil {
			continue
		}
		swg.Add(1)
		go func() {
			defer swg.Done()
			if err := l.sendLine(line, sendBy); err != nil {
				smu.Lock()
				links[r] = nil
				smu.Unlock()
				l.Close()
			}
		}()
	}
	swg.Wait()
	// An unfit rank had the roster (it learns the job went on without
	// it) and has no part in the rounds.
	for r, l := range links {
		if l != nil && members[r].Unfit != "" {
			l.Close()
			links[r] = nil
		}
	}
	return roster, links, nil
}

func closeAll(links []*Link) {
	for _, l := range links {
		if l != nil {
			l.Close()
		}
	}
}

func setAcceptDeadline(ln net.Listener, t time.Time) error {
	if d, ok := ln.(interface{ SetDeadline(time.Time) error }); ok {
		return d.SetDeadline(t)
	}
	return nil
}

// Join is a rank's side: it connects to the coordinator at addr (again
// while nothing listens there yet, until the deadline), says hello and
// waits for the roster.
func Join(ctx context.Context, addr string, h Hello, deadline time.Time) (*Roster, *Link, error) {
	h.Proto = ProtoVersion
	var d net.Dialer
	var c net.Conn
	// why is the first refusal seen (connection refused, no route): the
	// attempt the deadline cuts short only says "i/o timeout".
	var why error
	for {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		var err error
		c, err = d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if why == nil && !errors.Is(err, context.DeadlineExceeded) && !os.IsTimeout(err) {
			why = err
		}
		if time.Now().After(deadline) {
			if why == nil {
				why = err
			}
			return nil, nil, fmt.Errorf("coordinator %s: %w (is rank 0 running, and --coordinator right?)", addr, why)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	l := newLink(c)
	if err := l.Send(h, deadline); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("coordinator %s: %w", addr, err)
	}
	var r Roster
	if err := l.Recv(&r, deadline.Add(30*time.Second)); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("coordinator %s: no roster: %w", addr, err)
	}
	if r.Error != "" {
		c.Close()
		return nil, nil, fmt.Errorf("coordinator %s refused rank %d: %s", addr, h.Rank, r.Error)
	}
	if err := r.check(h.Size); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("coordinator %s: %w", addr, err)
	}
	return &r, l, nil
}

// check refuses a roster that does not list every rank once.
func (r *Roster) check(size int) error {
	if len(r.Members) != size {
		return fmt.Errorf("a roster of %d ranks, want %d", len(r.Members), size)
	}
	for i, m := range r.Members {
		if m.Rank != i {
			return fmt.Errorf("a roster with rank %d at %d", m.Rank, i)
		}
	}
	return nil
}

// Absent lists the ranks that are not in the job, in order.
func (r *Roster) Absent() []int {
	var out []int
	for _, m := range r.Members {
		if m.Absent != "" {
			out = append(out, m.Rank)
		}
	}
	sort.Ints(out)
	return out
}
