package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/transient"
	"github.com/kubectl-topology/kubectl-topology/internal/tui/watch"
)

// follower is what a watch outside a terminal needs of the thing it
// follows: a read, how it prints (without ages, which would make every read
// a change), whether it is over, and what to say when the time runs out.
type follower[T any] struct {
	read   func(context.Context) (T, error)
	render func(io.Writer, T) error
	// done says whether the watch ends at v, and with what error.
	done func(v T) (bool, error)
	// gaveUp is the error when the watch's deadline passes at v.
	gaveUp func(v T) error
}

// follow prints v, then reads again every interval and prints each time
// what it prints changes, until done says so or ctx ends: a deadline ends
// it with gaveUp, an interruption without an error. It reads again after
// an answer the API server could not give now; a read that fails otherwise
// ends the watch with its error.
func follow[T any](ctx context.Context, streams genericiooptions.IOStreams, interval time.Duration, v T, f follower[T]) error {
	last := ""
	for {
		var b strings.Builder
		if err := f.render(&b, v); err != nil {
			return err
		}
		if b.String() != last {
			if last != "" {
				fmt.Fprintln(streams.Out)
			}
			_, _ = io.WriteString(streams.Out, b.String())
			last = b.String()
		}
		if done, err := f.done(v); done {
			return err
		}
		select {
		case <-ctx.Done():
			return stopped(ctx, v, f)
		case <-time.After(interval):
		}
		next, err := f.read(ctx)
		next, err = readAgain(ctx, streams.ErrOut, interval, f.read, next, err)
		if err != nil {
			if _, bounded := ctx.Deadline(); bounded && refusedForDeadline(err) {
				<-ctx.Done() // near: the read was refused for it
			}
			if ctx.Err() != nil {
				return stopped(ctx, v, f)
			}
			return err
		}
		v = next
	}
}

// refusedForDeadline says whether a read was refused before it was sent
// because it could not end before the watch's deadline: client-go's rate
// limiter says so without wrapping context.DeadlineExceeded, while the
// context has not ended yet. The watch then ends at its timeout, as any
// read cut short by it does, not with the limiter's words.
func refusedForDeadline(err error) bool {
	return strings.Contains(err.Error(), "would exceed context deadline")
}

// readAgain follows a read that gave v and err. While err says the API
// server could not answer now, it says so once on errOut and reads again
// every interval, until a read succeeds, fails for another reason, or ctx
// ends; any other result it returns as it is. A watch of a rollout that
// takes an hour must not die of one slow answer.
func readAgain[T any](ctx context.Context, errOut io.Writer, interval time.Duration, read func(context.Context) (T, error), v T, err error) (T, error) {
	for said := ""; transient.Is(err) && ctx.Err() == nil; {
		if err.Error() != said {
			fmt.Fprintf(errOut, "reading again every %s: %v\n", interval, err)
			said = err.Error()
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(interval):
		}
		v, err = read(ctx)
	}
	return v, err
}

// watchDeadline bounds a watch by --timeout, 0 meaning no bound. It is
// taken after the watch's first read: --timeout bounds the wait for the
// rollout, not that read, however slow the API server is to answer it.
func watchDeadline(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, timeout)
}

// followLive runs a live view m over the watch w in a terminal and ends as
// follow does: with gaveUp at the deadline, nothing when interrupted or
// quit, and what done says once w is done.
func followLive[T any](ctx context.Context, streams genericiooptions.IOStreams, m tea.Model, w *watch.Model[T], v T, f follower[T]) error {
	w.Seed(v)
	_, err := tea.NewProgram(m, tea.WithInput(streams.In), tea.WithOutput(streams.Out), tea.WithContext(ctx)).Run()
	if w.HasValue {
		v = w.Last
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return f.gaveUp(v)
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil // interrupted: the rollout goes on without us
	case err != nil:
		return err
	case w.Done:
		_, err := f.done(v)
		return err
	}
	return nil
}

func stopped[T any](ctx context.Context, v T, f follower[T]) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return f.gaveUp(v)
	}
	return nil
}
