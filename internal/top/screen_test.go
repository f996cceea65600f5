package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"golang.org/x/sys/unix"
)

func TestDecodeKeys(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []key
	}{
		{"q", []key{{kind: keyRune, r: 'q'}}},
		{"\x03", []key{{kind: keyCtrlC}}},
		{"\r", []key{{kind: keyEnter}}},
		{"\x7f\x08", []key{{kind: keyBackspace}, {kind: keyBackspace}}},
		{"\x1b", []key{{kind: keyEsc}}},
		{"\x1b\x1b", []key{{kind: keyEsc}, {kind: keyEsc}}},
		{"\x1b[C\x1b[D", []key{{kind: keyRight}, {kind: keyLeft}}},
		{"\x1bOC\x1bOD", []key{{kind: keyRight}, {kind: keyLeft}}},
		{"\x1b[1;5C", []key{{kind: keyOther}}}, // Ctrl+Right: not bound
		{"\x1b[15~t", []key{{kind: keyOther}, {kind: keyRune, r: 't'}}},
		{"\x1bq", []key{{kind: keyOther}}}, // Alt+q does not quit
		{"\x1b[", []key{{kind: keyOther}}},
		{"é<", []key{{kind: keyRune, r: 'é'}, {kind: keyRune, r: '<'}}},
		{"\xff ", []key{{kind: keyOther}, {kind: keyRune, r: ' '}}},
	} {
		if got := decodeKeys([]byte(c.in)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzDecodeKeys: any bytes decode without a panic, each key takes at
// least one byte, and text without control bytes comes back as itself.
func FuzzDecodeKeys(f *testing.F) {
	for _, s := range []string{"q", "\x1b[C", "\x1bOD", "\x1b[1;5C", "\x1b[", "\x1b\x1b[", "é\xff\x03", "\x1bO", "/rxe\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ks := decodeKeys(b)
		if len(ks) > len(b) {
			t.Fatalf("%q: %d keys from %d bytes", b, len(ks), len(b))
		}
		text := utf8.Valid(b) && !bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 || r == 0x7f })
		if !text {
			return
		}
		var got strings.Builder
		for _, k := range ks {
			if k.kind != keyRune {
				t.Fatalf("%q: key %v", b, k)
			}
			got.WriteRune(k.r)
		}
		if got.String() != string(b) {
			t.Fatalf("%q came back as %q", b, got.String())
		}
	})
}

func TestTopKeys(t *testing.T) {
	m := &topModel{view: View{SortCol: ColumnByKey("dev")}}
	press := func(s string) bool {
		q := false
		for _, k := range decodeKeys([]byte(s)) {
			q = q || m.key(k)
		}
		return q
	}
	n := len(Columns)
	if press("t"); m.view.SortCol != ColumnByKey("tx") {
		t.Errorf("t: column %d", m.view.SortCol)
	}
	press(">\x1b[C")
	if want := (ColumnByKey("tx") + 2) % n; m.view.SortCol != want {
		t.Errorf("> right: column %d, want %d", m.view.SortCol, want)
	}
	press("<\x1b[D")
	if m.view.SortCol != ColumnByKey("tx") {
		t.Errorf("< left: column %d", m.view.SortCol)
	}
	if press("i"); !m.view.Reverse {
		t.Error("i: not reversed")
	}
	if press(" "); !m.paused {
		t.Error("space: not paused")
	}
	// The filter takes q as text; backspace removes a whole character.
	if press("/rxé\x7fq\r") || m.view.Filter != "rxq" || m.filtering {
		t.Errorf("filter %q filtering %v", m.view.Filter, m.filtering)
	}
	if press("/\x1b"); m.view.Filter != "" {
		t.Errorf("Esc: filter %q", m.view.Filter)
	}
	// Help: any key closes it, q too, without quitting.
	if press("?"); !m.help || m.View() != Help {
		t.Error("?: no help")
	}
	if press("q") || m.help {
		t.Error("q on the help screen quit or left it open")
	}
	if !press("q") || !press("\x03") {
		t.Error("q or Ctrl-C does not quit")
	}
	m.help = true
	if !press("\x03") {
		t.Error("Ctrl-C on the help screen does not quit")
	}
}

func TestScreen(t *testing.T) {
	got := screen("a\nb\nc\n", 2)
	if want := "\x1b[Ha\x1b[K\r\nb\x1b[K\x1b[J"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// openPTY opens a pseudo-terminal of 24x100: the master end (the
// terminal's side) and the slave end (top's).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// ptyOut collects what top writes; the master must be read or top's
// writes block once the pty's buffer is full.
type ptyOut struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *ptyOut) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

func (p *ptyOut) wait(t *testing.T, what string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if strings.Contains(p.String(), what) {
			return
		}
	}
	t.Fatalf("no %q on the screen:\n%q", what, p.String())
}

// ptyTop runs topTerm on a pseudo-terminal with the captured rxe tree
// and returns its output, the master to type on and its end.
func ptyTop(t *testing.T, ctx context.Context, open func() (Inventory, error), iv time.Duration, n int) (*ptyOut, *os.File, <-chan error) {
	t.Helper()
	master, slave := openPTY(t)
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	out := &ptyOut{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			out.mu.Lock()
			out.buf.Write(b[:n])
			out.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if open == nil {
		open = func() (Inventory, error) { return inventory.Captured("../sysfs/testdata/rxe"), nil }
	}
	s := &Sampler{Open: open}
	done := make(chan error, 1)
	go func() { done <- topTerm(ctx, slave, slave, s, View{}, iv, n) }()
	end := make(chan error, 1)
	go func() {
		err := <-done
		// The terminal as it was before: cooked mode, echo, signals.
		after, terr := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if terr != nil || after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
			t.Errorf("terminal not restored: lflag %#x iflag %#x oflag %#x, was %#x %#x %#x (%v)",
				after.Lflag, after.Iflag, after.Oflag, before.Lflag, before.Iflag, before.Oflag, terr)
		}
		end <- err
	}()
	return out, master, end
}

func waitEnd(t *testing.T, end <-chan error) error {
	t.Helper()
	select {
	case err := <-end:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("top did not end")
		return nil
	}
}

// The screen on a pseudo-terminal: the alternate screen, a frame, the
// sort key, q; then Ctrl-C, the context (SIGINT, SIGTERM), -n and a
// sampler error, each leaving the terminal as it was.
func TestTopTerminal(t *testing.T) {
	ctx := context.Background()
	out, master, end := ptyTop(t, ctx, nil, 50*time.Millisecond, 0)
	out.wait(t, "\x1b[?1049h\x1b[?25l")
	out.wait(t, "rxe1/1")
	out.wait(t, "sort dev")
	master.WriteString("t")
	out.wait(t, "sort tx")
	master.WriteString("\x1b[C") // right arrow: the column after TX
	out.wait(t, "sort "+SortKeys()[(ColumnByKey("tx")+1)%len(Columns)])
	master.WriteString("q")
	if err := waitEnd(t, end); err != nil {
		t.Errorf("q: %v", err)
	}
	out.wait(t, "\x1b[?25h\x1b[?1049l")
	if s := out.String(); !strings.HasSuffix(s, "\x1b[?25h\x1b[?1049l") {
		t.Errorf("q: the screen not given back: %q", s[max(0, len(s)-40):])
	}

	out, master, end = ptyTop(t, ctx, nil, 50*time.Millisecond, 0)
	out.wait(t, "rxe1/1")
	master.Write([]byte{3})
	if err := waitEnd(t, end); err != nil {
		t.Errorf("Ctrl-C: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	out, _, end = ptyTop(t, cctx, nil, 50*time.Millisecond, 0)
	out.wait(t, "rxe1/1")
	cancel()
	if err := waitEnd(t, end); err != nil {
		t.Errorf("context: %v", err)
	}

	_, _, end = ptyTop(t, ctx, nil, 20*time.Millisecond, 2)
	if err := waitEnd(t, end); err != nil {
		t.Errorf("-n 2: %v", err)
	}

	bad := errors.New("the source is gone")
	_, _, end = ptyTop(t, ctx, func() (Inventory, error) { return nil, bad }, 20*time.Millisecond, 0)
	if err := waitEnd(t, end); !errors.Is(err, bad) {
		t.Errorf("sampler error: %v", err)
	}
}

// At most 10 redraws a second, however short the interval.
func TestTopRedrawRate(t *testing.T) {
	out, master, end := ptyTop(t, context.Background(), nil, 10*time.Millisecond, 0)
	out.wait(t, "rxe1/1")
	start := strings.Count(out.String(), escHome)
	time.Sleep(time.Second)
	n := strings.Count(out.String(), escHome) - start
	master.WriteString("q")
	if err := waitEnd(t, end); err != nil {
		t.Fatal(err)
	}
	if n > 11 || n < 3 {
		t.Errorf("%d redraws in a second at -i 10ms, want 10 at most (and some)", n)
	}
}
