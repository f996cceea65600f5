package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// The terminal UI of top: a small loop of its own over golang.org/x/term
// (raw mode, window size). A TUI library's package initialisation would
// run in every rdmactl command; this costs nothing until top starts.

// Escape sequences (xterm; every terminal top is likely to meet).
const (
	escAltScreen  = "\x1b[?1049h" // alternate screen, cursor saved
	escMainScreen = "\x1b[?1049l"
	escHideCursor = "\x1b[?25l"
	escShowCursor = "\x1b[?25h"
	escHome       = "\x1b[H"
	escClearEOL   = "\x1b[K"
	escClearEOS   = "\x1b[J"
)

// minRedraw is the shortest time between two redraws: 10 a second at
// most. A frame changes once an interval and keys need no faster echo;
// each redraw costs CPU (the screen cost 1.3-2x top -b at 128 devices
// under TCG at bubbletea's default of 60).
const minRedraw = 100 * time.Millisecond

// keyKind is a decoded key press.
type keyKind int

const (
	keyRune keyKind = iota // r holds the character
	keyCtrlC
	keyEnter
	keyEsc
	keyBackspace
	keyLeft
	keyRight
	keyOther // an unbound control or escape sequence
)

type key struct {
	kind keyKind
	r    rune
}

// decodeKeys splits what one read from a raw-mode terminal returned into
// key presses. A read holds whole escape sequences (the terminal writes
// each at once), so a lone ESC at the end of a read is the Esc key.
func decodeKeys(b []byte) []key {
	var ks []key
	for len(b) > 0 {
		c := b[0]
		switch {
		case c == 0x1b:
			n, k := decodeEscape(b)
			ks = append(ks, k)
			b = b[n:]
			continue
		case c == 3:
			ks = append(ks, key{kind: keyCtrlC})
		case c == '\r' || c == '\n':
			ks = append(ks, key{kind: keyEnter})
		case c == 0x7f || c == 8:
			ks = append(ks, key{kind: keyBackspace})
		case c < 0x20:
			ks = append(ks, key{kind: keyOther})
		default:
			r, n := utf8.DecodeRune(b)
			if r == utf8.RuneError {
				ks = append(ks, key{kind: keyOther})
			} else {
				ks = append(ks, key{kind: keyRune, r: r})
			}
			b = b[n:]
			continue
		}
		b = b[1:]
	}
	return ks
}

// decodeEscape decodes the escape sequence at the start of b (b[0] is
// ESC) and returns how many bytes it took. CSI (ESC [) and SS3 (ESC O)
// sequences are consumed whole; the arrows are the only ones bound.
func decodeEscape(b []byte) (int, key) {
	if len(b) == 1 {
		return 1, key{kind: keyEsc}
	}
	switch b[1] {
	case 'O': // SS3: application cursor keys, ESC O C
		if len(b) < 3 {
			return 2, key{kind: keyOther}
		}
		return 3, arrow(b[2])
	case '[': // CSI: parameters 0x30-0x3f, intermediates 0x20-0x2f, final 0x40-0x7e
		i := 2
		for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
			i++
		}
		if i == len(b) || b[i] < 0x40 || b[i] > 0x7e {
			return i, key{kind: keyOther} // cut short or malformed
		}
		if i == 2 {
			return i + 1, arrow(b[i])
		}
		return i + 1, key{kind: keyOther} // modified arrows, function keys
	case 0x1b:
		return 1, key{kind: keyEsc} // Esc pressed twice
	}
	// Alt+key: ESC then the key; Alt+key is bound to nothing.
	_, n := utf8.DecodeRune(b[1:])
	return 1 + n, key{kind: keyOther}
}

func arrow(final byte) key {
	switch final {
	case 'C':
		return key{kind: keyRight}
	case 'D':
		return key{kind: keyLeft}
	}
	return key{kind: keyOther}
}

type topModel struct {
	view      View
	style     Style
	maxFrames int

	frame     *Frame
	shown     int
	err       error
	paused    bool
	help      bool
	filtering bool
	input     string
	w, h      int
}

// addFrame takes a sampled frame and reports whether top is done.
func (m *topModel) addFrame(f *Frame, err error) bool {
	if err != nil {
		m.err = err
		return true
	}
	if m.paused {
		return false
	}
	m.frame = f
	if f.Interval > 0 {
		m.shown++
	}
	return m.maxFrames > 0 && m.shown >= m.maxFrames
}

// key handles one key press and reports whether it quits.
func (m *topModel) key(k key) bool {
	if k.kind == keyCtrlC {
		return true
	}
	if m.help {
		m.help = false
		return false
	}
	if m.filtering {
		switch k.kind {
		case keyEnter:
			m.filtering, m.view.Filter = false, m.input
		case keyEsc:
			m.filtering, m.input, m.view.Filter = false, "", ""
		case keyBackspace:
			if m.input != "" {
				_, n := utf8.DecodeLastRuneInString(m.input)
				m.input = m.input[:len(m.input)-n]
			}
		case keyRune:
			m.input += string(k.r)
		}
		return false
	}
	n := len(Columns)
	switch k.kind {
	case keyLeft:
		m.view.SortCol = (m.view.SortCol + n - 1) % n
	case keyRight:
		m.view.SortCol = (m.view.SortCol + 1) % n
	case keyRune:
		switch k.r {
		case 'q':
			return true
		case '<':
			m.view.SortCol = (m.view.SortCol + n - 1) % n
		case '>':
			m.view.SortCol = (m.view.SortCol + 1) % n
		case 't':
			m.view.SortCol = ColumnByKey("tx")
		case 'r':
			m.view.SortCol = ColumnByKey("rx")
		case 'e':
			m.view.SortCol = ColumnByKey("errors")
		case 'n':
			m.view.SortCol = ColumnByKey("dev")
		case 'i':
			m.view.Reverse = !m.view.Reverse
		case ' ', 'p':
			m.paused = !m.paused
		case 'h', '?':
			m.help = true
		case '/':
			m.filtering, m.input = true, m.view.Filter
		}
	}
	return false
}

func (m *topModel) View() string {
	if m.help {
		return Help
	}
	if m.frame == nil {
		return "rdmactl top: reading the counters...\n"
	}
	h := m.h - 1 // the status line
	out := Render(m.frame, m.view, m.style, m.w, max(h, 0))
	status := "h help  q quit"
	switch {
	case m.filtering:
		status = "filter: " + m.input + "_"
	case m.paused:
		status = "PAUSED (space resumes)  " + status
	}
	return out + status
}

// screen is the text of a whole redraw: from the top left corner, each
// line cleared to its end, at most h lines (one more would scroll the
// alternate screen), "\r\n" between them (raw mode has no output
// processing), the rest of the screen cleared.
func screen(view string, h int) string {
	lines := strings.Split(strings.TrimSuffix(view, "\n"), "\n")
	if h > 0 && len(lines) > h {
		lines = lines[:h]
	}
	var b strings.Builder
	b.WriteString(escHome)
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
		b.WriteString(escClearEOL)
	}
	b.WriteString(escClearEOS)
	return b.String()
}

// topStyle is the color scheme, or none with NO_COLOR (no-color.org: set
// and non-empty) or TERM=dumb.
func topStyle() Style {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return Plain
	}
	sgr := func(code string) func(string) string {
		return func(s string) string { return "\x1b[" + code + "m" + s + "\x1b[0m" }
	}
	return Style{Header: sgr("30;46"), Heading: sgr("1"), Sorted: sgr("1;33")}
}

type sampled struct {
	f        *Frame
	err      error
	panicked any // a panic in Sample, with its stack
	stack    []byte
}

// sampleLoop samples now and then iv after each frame, as long as done is
// open; sampling runs apart from the key loop so that keys stay quick
// while a frame of many devices is read.
func sampleLoop(s *Sampler, iv time.Duration, out chan<- sampled, done <-chan struct{}) {
	// A panic here would end the process without the main goroutine's
	// deferred calls: the terminal would stay raw. It is handed over.
	defer func() {
		if p := recover(); p != nil {
			select {
			case out <- sampled{panicked: p, stack: debug.Stack()}:
			case <-done:
			}
		}
	}()
	for {
		f, err := s.Sample()
		select {
		case out <- sampled{f: f, err: err}:
		case <-done:
			return
		}
		if err != nil {
			return
		}
		select {
		case <-time.After(iv):
		case <-done:
			return
		}
	}
}

// readKeys reads the terminal until done is closed. It polls instead of
// blocking in read so that it stops reading before the terminal goes
// back to the shell (a blocked read would take the next key typed).
func readKeys(fd int, out chan<- []key, done <-chan struct{}) {
	buf := make([]byte, 256)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		select {
		case <-done:
			return
		default:
		}
		n, err := unix.Poll(pfd, 100)
		if err == unix.EINTR || n == 0 {
			continue
		}
		if err != nil {
			return
		}
		if pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && pfd[0].Revents&unix.POLLIN == 0 {
			return // the terminal is gone; ctx (SIGHUP) or q ends top
		}
		r, err := unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil || r == 0 {
			return
		}
		select {
		case out <- decodeKeys(buf[:r]):
		case <-done:
			return
		}
	}
}

// RunScreen shows top's screen on stdout, which must be a terminal, with
// keys from standard input, until q, Ctrl-C or ctx; n > 0 frames at most.
func RunScreen(ctx context.Context, stdout io.Writer, s *Sampler, v View, iv time.Duration, n int) error {
	out, ok := stdout.(*os.File)
	if !ok {
		return errors.New("top: the screen needs a terminal on standard output")
	}
	return topTerm(ctx, os.Stdin, out, s, v, iv, n)
}

// topTerm runs the screen with keys from the terminal inFile and frames
// drawn on out (the same terminal, or tests' pseudo-terminal).
func topTerm(ctx context.Context, inFile, out *os.File, s *Sampler, v View, iv time.Duration, n int) (err error) {
	in := int(inFile.Fd())
	old, err := term.MakeRaw(in)
	if err != nil {
		return fmt.Errorf("top: raw mode: %w", err)
	}
	// The terminal is given back on every way out: q, Ctrl-C, SIGINT and
	// SIGTERM (ctx), errors and panics (deferred calls run while a panic
	// unwinds).
	defer func() {
		_, _ = io.WriteString(out, escShowCursor+escMainScreen)
		if rerr := term.Restore(in, old); rerr != nil && err == nil {
			err = fmt.Errorf("top: restoring the terminal: %w", rerr)
		}
	}()
	if _, err := io.WriteString(out, escAltScreen+escHideCursor); err != nil {
		return err
	}

	m := &topModel{view: v, style: topStyle(), maxFrames: n, w: 80, h: 24}
	size := func() {
		if w, h, err := term.GetSize(int(out.Fd())); err == nil && w > 0 && h > 0 {
			m.w, m.h = w, h
		}
	}
	size()

	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	done := make(chan struct{})
	defer close(done)
	frames := make(chan sampled)
	keys := make(chan []key)
	go sampleLoop(s, iv, frames, done)
	go readKeys(in, keys, done)

	// Redraws: at once when the last was minRedraw ago or more, else when
	// the timer fires; no timer runs while nothing changes.
	var last time.Time
	redraw := time.NewTimer(time.Hour)
	redraw.Stop()
	pending := false
	draw := func() error {
		pending, last = false, time.Now()
		_, err := io.WriteString(out, screen(m.View(), m.h))
		return err
	}
	changed := func() error {
		if pending {
			return nil
		}
		if wait := minRedraw - time.Since(last); wait > 0 {
			pending = true
			redraw.Reset(wait)
			return nil
		}
		return draw()
	}
	if err := draw(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil // SIGINT or SIGTERM: the terminal is restored
		case sm := <-frames:
			if sm.panicked != nil {
				// Again in this goroutine, so that the deferred restore runs.
				panic(fmt.Sprintf("%v\n\nsampler goroutine:\n%s", sm.panicked, sm.stack))
			}
			if m.addFrame(sm.f, sm.err) {
				return m.err
			}
		case ks := <-keys:
			for _, k := range ks {
				if m.key(k) {
					return nil
				}
			}
		case <-winch:
			size()
		case <-redraw.C:
			if err := draw(); err != nil {
				return err
			}
			continue
		}
		if err := changed(); err != nil {
			return err
		}
	}
}
