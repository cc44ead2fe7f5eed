package plugin

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
)

// golden compares got with testdata/golden/NAME, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	fixture.Golden(t, "./internal/plugin", name, got, *update)
}

func TestConfirm(t *testing.T) {
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, "n\n": false, "": false, "maybe\n": false} {
		if got := confirm(strings.NewReader(in), &bytes.Buffer{}, "go?"); got != want {
			t.Errorf("answer %q: confirm = %v, want %v", in, got, want)
		}
	}
}

func TestInstallDryRun(t *testing.T) {
	stdout, stderr, code := runPlugin(t, "install", "--dry-run=client", "--target-namespace", "topology-team-a", "--watch-namespace", "team-a", "--version", "v0.1.0")
	if code != 0 {
		t.Fatalf("install --dry-run failed: %s", stderr)
	}
	golden(t, "install-dry-run.yaml", stdout)
	for _, want := range []string{"- --namespace=team-a", "image: kubectl-topology/agent:v0.1.0", "namespace: topology-team-a"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry-run output lacks %q", want)
		}
	}
	if strings.Contains(stdout, "topology-system") {
		t.Error("the target namespace did not replace topology-system everywhere")
	}
}

// TestInstallReplicas: two agent Pods unless told otherwise.
func TestInstallReplicas(t *testing.T) {
	for flag, want := range map[string]string{"": "  replicas: 2\n", "--replicas=3": "  replicas: 3\n", "--replicas=1": "  replicas: 1\n"} {
		args := []string{"install", "--dry-run=client"}
		if flag != "" {
			args = append(args, flag)
		}
		stdout, stderr, code := runPlugin(t, args...)
		if code != 0 || strings.Count(stdout, "replicas:") != 1 || !strings.Contains(stdout, want) {
			t.Errorf("install %s: exit %d %s; want the Deployment's %q", flag, code, stderr, strings.TrimSpace(want))
		}
	}
}

// TestUnsettledSaysWhereTheRolloutStands: a watch that times out names the
// phase and every condition that is not true, and says the rollout goes on.
func TestUnsettledSaysWhereTheRolloutStands(t *testing.T) {
	err := (&StatusOptions{Timeout: 30 * time.Minute, now: func() time.Time { return fixture.StatusNow }}).unsettled(fixture.MidUpgrade())
	want := "Topology default/dev did not settle within 30m0s: RollingOut\n" +
		"  TopologyReconciled=False ClusterUpgrading: Cluster is upgrading to v1.34.0; MachineDeployment md-b pending upgrade to version v1.34.0\n" +
		"  md-a: RollingOut for 8m, 2/2 ready, 1 up to date, 2 machines\n" +
		"  md-b: Waiting for 20m, 2/2 ready, 0 up to date, 2 machines\n" +
		"  md-gpu: Deferred for 20m, 1/- ready, 0 up to date, 1 machines\n" +
		"  mp-0: Waiting for 20m, 1/1 ready, 0 up to date, 1 machines\n" +
		"The rollout goes on; follow it with `kubectl topology status dev -n default --watch`"
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
}

// TestMissingKubeconfigSaysSo: a KUBECONFIG that names no file is reported
// as --kubeconfig with the same path is, not as an unreachable localhost.
func TestMissingKubeconfigSaysSo(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent")
	_, stderr, code := runPlugin(t, "get")
	if code == 0 || !strings.Contains(stderr, "KUBECONFIG=/nonexistent: no such file") || strings.Contains(stderr, "localhost:8080") {
		t.Errorf("KUBECONFIG=/nonexistent: exit %d, %q", code, stderr)
	}
	_, stderr, code = runPlugin(t, "get", "--kubeconfig", "/nonexistent")
	if code == 0 || !strings.Contains(stderr, "/nonexistent") {
		t.Errorf("--kubeconfig /nonexistent: exit %d, %q", code, stderr)
	}
}

// TestPlanLeavesKubectlsClusterFlag: kubectl's global --cluster (the
// kubeconfig cluster) is not shadowed; plan picks a topology with --topology.
func TestPlanLeavesKubectlsClusterFlag(t *testing.T) {
	root := NewRootCommand(genericiooptions.IOStreams{})
	plan, _, err := root.Find([]string{"plan"})
	if err != nil {
		t.Fatal(err)
	}
	if f := plan.InheritedFlags().Lookup("cluster"); f == nil || f.Usage != "The name of the kubeconfig cluster to use" || plan.LocalFlags().Lookup("cluster") != nil {
		t.Errorf("plan --cluster is %+v; want kubectl's global flag", f)
	}
	if plan.Flags().Lookup("topology") == nil {
		t.Error("plan has no --topology")
	}
}

func TestLiveCommandsRefuseBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"upgrade", "dev"}, "--version is required"},
		{[]string{"upgrade", "dev", "--version", "1.34"}, "not a Kubernetes version"},
		{[]string{"install", "--dry-run=server"}, `--dry-run=server is not supported`},
		{[]string{"install", "--local", "--image", "x"}, "--image and --version apply to the Deployment only"},
		{[]string{"install", "--dry-run=client", "--replicas", "0"}, "--replicas 0: run at least one agent"},
		{[]string{"install", "--dry-run=client", "--replicas", "two"}, `"two" is not a whole number`},
		{[]string{"get", "a", "-A", "--kubeconfig", "../../testdata/kubeconfig-unreachable"}, "cannot be combined"},
		{[]string{"status", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"status", "dev", "-A"}, "a NAME and --all-namespaces cannot be combined"},
		{[]string{"status", "--watch"}, "--watch follows one Topology: give its NAME"},
		{[]string{"status", "dev", "-o", "xml"}, `--output "xml" is not supported; use json or yaml`},
		{[]string{"status", "dev", "--watch", "-o", "json"}, "--watch and --output cannot be combined"},
		{[]string{"get", "-w", "-o", "yaml"}, "--watch prints table rows"},
		{[]string{"status", "dev", "--timeout", "1m"}, "--timeout bounds --watch"},
		{[]string{"status", "dev", "--watch", "--timeout", "-1s"}, "--timeout must be 0 (wait on) or positive, got -1s"},
		{[]string{"upgrade", "dev", "--version", "v1.34.0", "--timeout", "1m"}, "--timeout bounds --wait"},
		{[]string{"get", "-o", "xml", "--kubeconfig", "../../testdata/kubeconfig-unreachable"}, `--output "xml" is not supported`},
		{[]string{"get", "--kubeconfig", "../../testdata/kubeconfig-unreachable"}, `cannot reach the cluster of context "unreachable" at https://127.0.0.1:1`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, stderr, code := runPlugin(t, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr, tc.want)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	stdout, stderr, code := runPlugin(t, "generate", "dev", "--class", "docker-kubeadm", "--kubernetes-version", "v1.33.1",
		"--control-plane", "3", "--worker", "md-a:general=2", "--worker", "mp-0:pool=1", "--set", "imageRepository=registry.example.com", "-f", exampleDir+"/class.yaml")
	if code != 0 {
		t.Fatalf("generate failed: %s", stderr)
	}
	golden(t, "generate-dev.yaml", stdout)
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--worker", "md-a=2"}, `class docker-kubeadm has no worker class "md-a"; it has general, gpu, pool`},
		{[]string{"--set", "maxPods=many"}, "spec.variables[maxPods].value"},
		{[]string{"--set", "nosuch=1"}, "nosuch"},
		{[]string{"--worker", "md-a:general=-1"}, "N a whole number"},
	}
	for _, tc := range bad {
		args := append([]string{"generate", "dev", "--class", "docker-kubeadm", "--kubernetes-version", "v1.33.1", "-f", exampleDir + "/class.yaml"}, tc.args...)
		if _, stderr, code := runPlugin(t, args...); code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("generate %v: exit %d, %q; want an error containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestGenerateOneErrorPerCause: an undefined variable is reported once, and
// does not make a required variable that has a default read as missing.
func TestGenerateOneErrorPerCause(t *testing.T) {
	_, stderr, code := runPlugin(t, "generate", "dev", "--class", "docker-kubeadm", "--kubernetes-version", "v1.33.1", "-f", exampleDir+"/class.yaml", "--set", "nosuch=1")
	if code == 0 || strings.Count(stderr, "nosuch") != 2 || strings.Count(stderr, "not defined in the class") != 1 || strings.Contains(stderr, "must be set") {
		t.Errorf("generate --set nosuch=1: exit %d, %q; want one error naming nosuch", code, stderr)
	}
}

// TestGenerateSaysWhichFlagIsMissing: without --kubernetes-version the
// error names the flag, not an empty version.
func TestGenerateSaysWhichFlagIsMissing(t *testing.T) {
	_, stderr, code := runPlugin(t, "generate", "dev", "--class", "docker-kubeadm", "-f", exampleDir+"/class.yaml")
	if code == 0 || !strings.Contains(stderr, "--kubernetes-version is required, e.g. --kubernetes-version v1.33.1") || strings.Contains(stderr, `""`) {
		t.Errorf("generate without --kubernetes-version: exit %d, %q", code, stderr)
	}
}

func TestEditNeedsATerminal(t *testing.T) {
	_, stderr, code := runPlugin(t, "edit", "dev")
	if code == 0 || !strings.Contains(stderr, "edit needs a terminal; without one, use `kubectl topology scale`, `set variable` or `upgrade`") {
		t.Errorf("edit without a terminal: exit %d, %q", code, stderr)
	}
}

// TestParseVariable: JSON where it parses, a plain string otherwise, and an
// error where the value looks like JSON but is not.
func TestParseVariable(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "replicas=3", want: "3"},
		{in: "registry=example.com", want: `"example.com"`},
		{in: `audit={"enabled":true}`, want: `{"enabled":true}`},
		{in: `sans=["a","b"]`, want: `["a","b"]`},
		{in: "empty=", want: `""`},
		{in: `audit={"level": Request}`, err: `variable audit: {"level": Request} is not valid JSON`},
		{in: `sans=["a",`, err: "variable sans"},
		{in: `name="unterminated`, err: "variable name"},
		{in: "=3", err: "give NAME=VALUE"},
	}
	for _, tc := range cases {
		name, raw, err := parseVariable(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseVariable(%q) = %q, %v; want an error containing %q", tc.in, raw, err, tc.err)
		case tc.err == "" && (err != nil || string(raw) != tc.want || name == ""):
			t.Errorf("parseVariable(%q) = %q %q, %v; want %s", tc.in, name, raw, err, tc.want)
		}
	}
}

// TestNoCommandShadowsKubectlFlags: no command defines a flag, or a
// shorthand, that kubectl's global flags already use.
func TestNoCommandShadowsKubectlFlags(t *testing.T) {
	root := NewRootCommand(genericiooptions.IOStreams{})
	global := root.PersistentFlags()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if global.Lookup(f.Name) != nil {
				t.Errorf("%s --%s shadows kubectl's global --%s", c.CommandPath(), f.Name, f.Name)
			}
			if f.Shorthand != "" && global.ShorthandLookup(f.Shorthand) != nil {
				t.Errorf("%s -%s (--%s) shadows kubectl's global -%s", c.CommandPath(), f.Shorthand, f.Name, f.Shorthand)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// TestWithPrefix: completions keep what the user has begun typing, with the
// suffix that lets them go on (KEY=).
func TestWithPrefix(t *testing.T) {
	if got := strings.Join(withPrefix("md-", "=", "md-a", "mp-0", "md-b"), " "); got != "md-a= md-b=" {
		t.Errorf("withPrefix = %q", got)
	}
	if got := withPrefix("x", "", "a"); got != nil {
		t.Errorf("no match gives %v, want none", got)
	}
}
