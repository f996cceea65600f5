package main

import (
	"context"
	"errors"
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/rdmactl/rdmactl/internal/top"
)

// The terminal UI of top: bubbletea runs the loop (raw mode, the
// alternate screen, restoring the terminal on q, Ctrl-C, errors and
// panics); everything shown comes from internal/top.

type frameMsg struct {
	f   *top.Frame
	err error
}

type tickMsg struct{}

type topModel struct {
	s         *top.Sampler
	view      top.View
	style     top.Style
	iv        time.Duration
	maxFrames int

	frame     *top.Frame
	shown     int
	err       error
	paused    bool
	help      bool
	filtering bool
	input     string
	w, h      int
}

func (m *topModel) sample() tea.Cmd {
	return func() tea.Msg {
		f, err := m.s.Sample()
		return frameMsg{f, err}
	}
}

func (m *topModel) Init() tea.Cmd { return m.sample() }

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
	case frameMsg:
		if msg.err != nil {
			m.err = msg.err
			return m, tea.Quit
		}
		if !m.paused {
			m.frame = msg.f
			if msg.f.Interval > 0 {
				m.shown++
			}
			if m.maxFrames > 0 && m.shown >= m.maxFrames {
				return m, tea.Quit
			}
		}
		return m, tea.Tick(m.iv, func(time.Time) tea.Msg { return tickMsg{} })
	case tickMsg:
		return m, m.sample()
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// key handles one key press; a non-nil Cmd is tea.Quit.
func (m *topModel) key(k tea.KeyMsg) tea.Cmd {
	s := k.String()
	if s == "ctrl+c" {
		return tea.Quit
	}
	if m.help {
		m.help = false
		return nil
	}
	if m.filtering {
		switch k.Type {
		case tea.KeyEnter:
			m.filtering, m.view.Filter = false, m.input
		case tea.KeyEsc:
			m.filtering, m.input, m.view.Filter = false, "", ""
		case tea.KeyBackspace:
			if m.input != "" {
				m.input = m.input[:len(m.input)-1]
			}
		case tea.KeyRunes:
			m.input += string(k.Runes)
		}
		return nil
	}
	n := len(top.Columns)
	switch s {
	case "q":
		return tea.Quit
	case "<", "left":
		m.view.SortCol = (m.view.SortCol + n - 1) % n
	case ">", "right":
		m.view.SortCol = (m.view.SortCol + 1) % n
	case "t":
		m.view.SortCol = top.ColumnByKey("tx")
	case "r":
		m.view.SortCol = top.ColumnByKey("rx")
	case "e":
		m.view.SortCol = top.ColumnByKey("errors")
	case "n":
		m.view.SortCol = top.ColumnByKey("dev")
	case "i":
		m.view.Reverse = !m.view.Reverse
	case " ", "p":
		m.paused = !m.paused
	case "h", "?":
		m.help = true
	case "/":
		m.filtering, m.input = true, m.view.Filter
	}
	return nil
}

func (m *topModel) View() string {
	if m.help {
		return top.Help
	}
	if m.frame == nil {
		return "rdmactl top: reading the counters...\n"
	}
	h := m.h - 1 // the status line
	out := top.Render(m.frame, m.view, m.style, m.w, max(h, 0))
	status := "h help  q quit"
	switch {
	case m.filtering:
		status = "filter: " + m.input + "_"
	case m.paused:
		status = "PAUSED (space resumes)  " + status
	}
	return out + status
}

// topStyle is the color scheme, or none with NO_COLOR (no-color.org: set
// and non-empty) or TERM=dumb.
func topStyle() top.Style {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return top.Plain
	}
	sgr := func(code string) func(string) string {
		return func(s string) string { return "\x1b[" + code + "m" + s + "\x1b[0m" }
	}
	return top.Style{Header: sgr("30;46"), Heading: sgr("1"), Sorted: sgr("1;33")}
}

func runTopUI(ctx context.Context, a *app, s *top.Sampler, v top.View, iv time.Duration, n int) error {
	m := &topModel{s: s, view: v, style: topStyle(), iv: iv, maxFrames: n, w: 80, h: 24}
	// 10 redraws a second at most, not bubbletea's 60: a frame changes
	// once an interval, keys need no faster echo, and each redraw tick is
	// a wakeup (the screen cost 1.3-2x top -b at 128 devices under TCG).
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(ctx), tea.WithOutput(a.stdout), tea.WithFPS(10))
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) {
		return nil // SIGTERM or the context: the terminal is restored
	}
	if err != nil {
		return err
	}
	if m.err != nil {
		return m.err
	}
	return nil
}
