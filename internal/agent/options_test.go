package agent

import (
	"strings"
	"testing"
	"time"
)

// TestOptionsRefuseAnElectionThatCannotHold: with leader election, the
// retry period must be shorter than the renew deadline and that than the
// Lease, or a leader loses its Lease while it still reconciles; without
// it the timings do not matter. An agent must have an identity to beat with.
func TestOptionsRefuseAnElectionThatCannotHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"defaults elect", func(o *Options) { o.LeaderElect = true }, ""},
		{"renew deadline past the Lease", func(o *Options) { o.LeaderElect, o.RenewDeadline = true, 20*time.Second }, "--leader-elect-renew-deadline (20s) < --leader-elect-lease-duration (15s)"},
		{"no retry period", func(o *Options) { o.LeaderElect, o.RetryPeriod = true, 0 }, "0 < --leader-elect-retry-period (0s)"},
		{"timings unused without election", func(o *Options) { o.RenewDeadline = 20 * time.Second }, ""},
		{"no identity", func(o *Options) { o.Identity = "" }, "identity must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Defaults()
			tc.change(&o)
			err := o.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
