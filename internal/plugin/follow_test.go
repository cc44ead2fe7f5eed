package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// A read the client's rate limiter refuses because it would end after the
// watch's deadline ends the watch at its timeout, with what it says then,
// not with the limiter's error; any other failure still ends it as it is.
func TestFollowEndsAtItsTimeoutWhenAReadIsRefusedForTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		readErr error
		want    string
	}{
		{"refused by the rate limiter", fmt.Errorf("client rate limiter Wait returned an error: %w", errors.New("rate: Wait(n=1) would exceed context deadline")), "did not settle: Provisioning"},
		{"forbidden", errors.New(`topologies "dev" is forbidden`), `topologies "dev" is forbidden`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			var out, errOut bytes.Buffer
			f := follower[string]{
				read:   func(context.Context) (string, error) { return "", tc.readErr },
				render: func(w io.Writer, v string) error { _, err := io.WriteString(w, v+"\n"); return err },
				done:   func(string) (bool, error) { return false, nil },
				gaveUp: func(v string) error { return fmt.Errorf("did not settle: %s", v) },
			}
			err := follow(ctx, genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, 10*time.Millisecond, "Provisioning", f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("follow ended with %v, want %q", err, tc.want)
			}
		})
	}
}
