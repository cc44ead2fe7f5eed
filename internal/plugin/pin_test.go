package plugin

import (
	"strings"
	"testing"
)

// Bad command lines are refused before any cluster is asked, naming the
// argument and what to give instead.
func TestSetVersionRefusesBadArguments(t *testing.T) {
	for args, want := range map[string]string{
		"dev":                              "nothing to set: give POOL=VERSION or --unpin POOL",
		"dev md-a":                         `"md-a": give POOL=VERSION, e.g. md-gpu=v1.33.1`,
		"dev md-a=1.33.1":                  `md-a=1.33.1: version "1.33.1" must start with v`,
		"dev md-a=v1.33.1 md-a=v1.34.0":    "md-a is given twice",
		"dev md-a=v1.33.1 --unpin md-a":    "md-a is both pinned and unpinned",
		"dev =v1.33.1":                     `"=v1.33.1": give POOL=VERSION`,
		"dev md-a=v1.33 --kubeconfig /dev": "md-a=v1.33:",
	} {
		_, stderr, code := runPlugin(t, append([]string{"set", "version"}, strings.Fields(args)...)...)
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("set version %s: exit %d, %q; want it refused saying %q", args, code, stderr, want)
		}
	}
}
