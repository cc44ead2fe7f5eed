package names

import (
	"strings"
	"testing"
)

// fixedSource always returns the same number, so suffixes are predictable.
type fixedSource int

func (f fixedSource) IntN(n int) int { return int(f) % n }

func TestTemplate(t *testing.T) {
	long := strings.Repeat("c", 60)
	cases := []struct {
		name, tpl string
		vars      Vars
		want      string
		err       string
	}{
		{name: "control plane default", tpl: DefaultControlPlaneTemplate, vars: Vars{Cluster: "dev"}, want: "dev-bbbbb"},
		{name: "pool default", tpl: DefaultMachineDeploymentTemplate, vars: Vars{Cluster: "dev", MachineDeployment: "md-a"}, want: "dev-md-a-bbbbb"},
		{name: "machine pool", tpl: DefaultMachinePoolTemplate, vars: Vars{Cluster: "dev", MachinePool: "mp-0"}, want: "dev-mp-0-bbbbb"},
		{name: "sprig-free text", tpl: "{{ .cluster.name }}-gpu", vars: Vars{Cluster: "dev"}, want: "dev-gpu"},
		{name: "63 characters kept", tpl: "{{ .cluster.name }}", vars: Vars{Cluster: strings.Repeat("a", 63)}, want: strings.Repeat("a", 63)},
		{name: "64 characters cut to 58 plus a suffix", tpl: "{{ .cluster.name }}-{{ .random }}", vars: Vars{Cluster: long}, want: long[:58] + "bbbbb"},
		{name: "a field the pool does not have", tpl: "{{ .machineDeployment.topologyName }}", vars: Vars{Cluster: "dev"}, err: "map has no entry for key"},
		{name: "does not parse", tpl: "{{ .cluster.name", vars: Vars{Cluster: "dev"}, err: "parsing naming template"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NewGenerator(fixedSource(0)).Template(c.tpl, c.vars)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
			if len(got) > MaxLength {
				t.Errorf("%q is longer than %d", got, MaxLength)
			}
		})
	}
}

func TestSimple(t *testing.T) {
	g := NewGenerator(fixedSource(1))
	if got := g.Simple("dev-"); got != "dev-ccccc" {
		t.Errorf("Simple(dev-) = %q", got)
	}
	if got := g.Simple(strings.Repeat("x", 80)); len(got) != MaxLength || !strings.HasSuffix(got, "ccccc") {
		t.Errorf("Simple of 80 characters = %q (%d)", got, len(got))
	}
}

func TestRandomUsesOnlyTheAlphabet(t *testing.T) {
	g := NewSeeded(42)
	seen := map[string]bool{}
	for range 1000 {
		r := g.Random()
		if len(r) != RandomLength || strings.Trim(r, alphabet) != "" {
			t.Fatalf("suffix %q is not %d characters of %q", r, RandomLength, alphabet)
		}
		seen[r] = true
	}
	if len(seen) < 990 {
		t.Errorf("only %d distinct suffixes in 1000", len(seen))
	}
	a, b := NewSeeded(7).Random(), NewSeeded(7).Random()
	if a != b {
		t.Errorf("the same seed gave %q and %q", a, b)
	}
}
