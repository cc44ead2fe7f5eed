// Package watch is what every live view shares: it reads what it watches
// every interval until that is done, keeps the last value read and the
// last read's error, and quits on the watch keys. `status --watch` and
// `rollout status --watch` draw their own views over it.
package watch

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kubectl-topology/kubectl-topology/internal/tui/keymap"
)

// Model reads a T every interval until done holds for it.
type Model[T any] struct {
	fetch    func(context.Context) (T, error)
	interval time.Duration
	done     func(T) bool
	keys     keymap.Watch
	// Last is the latest value read, Err the latest read's error (a failed
	// read keeps the value before it); HasValue says a value was read.
	Last     T
	Err      error
	HasValue bool
	// Done is true once done held for the value read.
	Done bool
}

// New watches through fetch every interval until done holds.
func New[T any](fetch func(context.Context) (T, error), interval time.Duration, done func(T) bool) *Model[T] {
	return &Model[T]{fetch: fetch, interval: interval, done: done, keys: keymap.DefaultWatch()}
}

type readMsg[T any] struct {
	v   T
	err error
}

// Fetch reads once, as a message for Update.
func (m *Model[T]) Fetch() tea.Msg {
	v, err := m.fetch(context.Background())
	return readMsg[T]{v: v, err: err}
}

// Seed starts the watch from v, a value already read, so that its first
// frame shows v rather than waiting on the next read: on a loaded API server
// that read may take longer than a short --timeout.
func (m *Model[T]) Seed(v T) { m.Last, m.HasValue = v, true }

// Init starts with a read.
func (m *Model[T]) Init() tea.Cmd { return m.Fetch }

// Update takes a read or a key and returns what comes next: the next read
// after the interval, or quitting once done or asked to.
func (m *Model[T]) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		if key.Matches(msg, m.keys.Quit) {
			return tea.Quit
		}
	case readMsg[T]:
		m.Err = msg.err
		if msg.err == nil {
			m.Last, m.HasValue = msg.v, true
		}
		if m.HasValue && m.done(m.Last) {
			m.Done = true
			return tea.Quit
		}
		return tea.Tick(m.interval, func(time.Time) tea.Msg { return m.Fetch() })
	}
	return nil
}

// ShortHelp is the watch's help line.
func (m *Model[T]) ShortHelp() []key.Binding { return m.keys.ShortHelp() }

// FullHelp is the watch's full help.
func (m *Model[T]) FullHelp() [][]key.Binding { return m.keys.FullHelp() }
