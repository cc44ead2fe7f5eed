package gcpercent

import (
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// TestInitSetsTheTarget checks what init left: Percent, unless the
// environment set GOGC, which wins.
func TestInitSetsTheTarget(t *testing.T) {
	want := Percent
	if v, set := os.LookupEnv("GOGC"); set {
		switch n, err := strconv.Atoi(v); {
		case v == "off":
			want = -1
		case err != nil:
			want = 100 // the runtime ignores a GOGC it cannot read
		default:
			want = n
		}
	}
	got := debug.SetGCPercent(want)
	if got != want {
		t.Errorf("the GC target after init is %d, want %d", got, want)
	}
}
