package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// plugin runs the built kubectl-topology binary as a user would.
func plugin(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return fixture.RunPlugin(pluginBin, kubeconfig, stdin, args...)
}

func mustPlugin(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := plugin(t, "", args...)
	if err != nil {
		t.Fatalf("kubectl topology %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// TestPluginWorkflow drives the plugin binary through a cluster's life:
// install the agent, list, follow and upgrade a Topology, and uninstall.
func TestPluginWorkflow(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopLocalAgent(state) })

	if help, err := exec.Command(pluginBin, "--help").Output(); err != nil || !strings.Contains(string(help), "kubectl topology [command]") {
		t.Errorf("run as kubectl-topology, help should speak of `kubectl topology` (%v):\n%s", err, help)
	}
	out := mustPlugin(t, "install", "--local", "--state-dir", state)
	if !strings.Contains(out, "The agent is ready; its webhooks are registered.") {
		t.Fatalf("install --local did not report a ready agent:\n%s", out)
	}
	if out := mustPlugin(t, "install", "--local", "--state-dir", state); !strings.Contains(out, "already running") {
		t.Errorf("a second install --local did not notice the running agent:\n%s", out)
	}
	// A hung agent (here stopped with SIGSTOP) is not "already running":
	// install --local replaces it, since every Topology write would fail in
	// its webhooks.
	hung, ok := process.ReadPID(localagent.PIDFile(state))
	if !ok {
		t.Fatal("install --local left no pid file")
	}
	if err := syscall.Kill(hung.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	out = mustPlugin(t, "install", "--local", "--state-dir", state)
	for _, want := range []string{fmt.Sprintf("The local agent (pid %d) runs but its probe endpoint", hung.PID), "stopping it and starting a new one", "The agent is ready"} {
		if !strings.Contains(out, want) {
			t.Errorf("install --local over a hung agent does not say %q:\n%s", want, out)
		}
	}
	if now, _ := process.ReadPID(localagent.PIDFile(state)); now.PID == hung.PID {
		t.Errorf("install --local kept the hung agent (pid %d)", hung.PID)
	}
	// Gone, or a zombie its new parent has not reaped yet: no executable left.
	if id, err := process.Identify(hung.PID); err == nil && id == hung.Identity {
		_ = syscall.Kill(hung.PID, syscall.SIGKILL)
		t.Errorf("the hung agent (pid %d) still runs", hung.PID)
	}
	out = mustPlugin(t, "version")
	for _, want := range []string{"agent: running out of cluster at https://localhost:", "API: topology.kubectl-topology.io/v1alpha2", "server: v1.36."} {
		if !strings.Contains(out, want) {
			t.Errorf("version lacks %q:\n%s", want, out)
		}
	}

	ex, err := fixture.LoadExample(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.CreateClass(ctx, k8s); err != nil {
		t.Fatal(err)
	}
	// The user writes the Topology with generate, from the class on the cluster.
	generated := mustPlugin(t, "generate", "dev", "-n", ns.Name, "--class", "docker-kubeadm", "--kubernetes-version", "v1.33.1",
		"--control-plane", "3", "--worker", "md-a:general=2", "--worker", "md-gpu:gpu=1", "--worker", "mp-0:pool=1")
	topo := &v1alpha2.Topology{}
	if err := yaml.UnmarshalStrict([]byte(generated), topo); err != nil {
		t.Fatalf("generate wrote something that is not a Topology: %v\n%s", err, generated)
	}
	if err := k8s.Create(ctx, topo); err != nil {
		t.Fatalf("the API server refused the generated Topology: %v", err)
	}
	ex.Topology = topo
	waitFor(t, "completion offers the Topology's name", func(context.Context) (bool, error) {
		out, _, err := plugin(t, "", "__complete", "status", "-n", ns.Name, "d")
		return err == nil && strings.HasPrefix(out, "dev\n"), fmt.Errorf("%s", out)
	})
	t.Run("completion offers pools, variables, versions and namespaces", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"scale", "dev", "-n", ns.Name, "--worker", ""}, []string{"md-a=", "md-gpu=", "mp-0="}},
			{[]string{"set", "variable", "dev", "-n", ns.Name, "image"}, []string{"imageRepository="}},
			{[]string{"upgrade", "dev", "-n", ns.Name, "--version", ""}, []string{"v1.33.2", "v1.34.0"}},
			{[]string{"get", "-n", ns.Name[:4]}, []string{ns.Name}},
		} {
			out, errOut, err := plugin(t, "", append([]string{"__complete"}, tc.args...)...)
			for _, want := range tc.want {
				if err != nil || !strings.Contains(out, want+"\n") {
					t.Errorf("completing %v: %v, want %q among:\n%s%s", tc.args, err, want, out, errOut)
				}
			}
		}
	})
	waitFor(t, "get lists the Topology, Provisioning", func(context.Context) (bool, error) {
		out, errOut, err := plugin(t, "", "get", "-n", ns.Name)
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) >= 6 && f[0] == "dev" && f[1] == "docker-kubeadm" && f[2] == "v1.33.1" && f[3] == "0/3" && f[5] == "Provisioning" {
				return err == nil, nil
			}
		}
		return false, fmt.Errorf("%s%s", out, errOut)
	})

	// No provider runs in this suite, so nothing is ever provisioned: the
	// status of real machines is followed in test/capi.
	waitFor(t, "status shows the parts, none of them ready", func(context.Context) (bool, error) {
		out, _, err := plugin(t, "", "status", "dev", "-n", ns.Name)
		return err == nil && strings.Contains(out, "├─ control-plane") && strings.Contains(out, "md-gpu") && !strings.Contains(out, "has not seen the latest change"), fmt.Errorf("%s", out)
	})
	// The agent that leads renews the heartbeat under its identity: out of
	// cluster its host's name and its process.
	rec, _ := process.ReadPID(localagent.PIDFile(state))
	if leader := localagent.Identity(rec.PID); !strings.Contains(mustPlugin(t, "status", "dev", "-n", ns.Name), "agent: "+leader+" leads, renewed ") {
		t.Errorf("status does not name the leading agent %s:\n%s", leader, mustPlugin(t, "status", "dev", "-n", ns.Name))
	}

	t.Run("plan shows no change for a converged Topology, and what a proposal changes", func(t *testing.T) {
		if out := mustPlugin(t, "plan", "dev", "-n", ns.Name); !strings.Contains(out, "No changes for "+ns.Name+"/dev.") {
			t.Errorf("live plan of a converged Topology:\n%s", out)
		}
		proposed := ex.Topology.DeepCopy()
		five := int32(5)
		proposed.Spec.Workers.MachineDeployments[0].Replicas = &five
		proposed.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind))
		data, err := yaml.Marshal(proposed)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "proposed.yaml")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		out := mustPlugin(t, "plan", "dev", "-n", ns.Name, "-f", file, "--output-directory", dir)
		if !strings.Contains(out, "MachineDeployment") || !strings.Contains(out, "modified") || strings.Count(out, "\n") != 2 {
			t.Errorf("plan of a replicas change should modify one MachineDeployment:\n%s", out)
		}
		diffs, _ := filepath.Glob(filepath.Join(dir, "modified", "MachineDeployment_*.diff"))
		if len(diffs) != 1 {
			t.Fatalf("no diff written for the MachineDeployment: %v", diffs)
		}
		diff, _ := os.ReadFile(diffs[0])
		if !strings.Contains(string(diff), "+  replicas: 5") {
			t.Errorf("diff does not show replicas 5:\n%s", diff)
		}
	})

	t.Run("scale and set preview, validate and apply", func(t *testing.T) {
		out := mustPlugin(t, "scale", "dev", "-n", ns.Name, "--worker", "md-a=4", "--yes")
		if !strings.Contains(out, "md-a (general) replicas: 2 → 4") || !strings.Contains(out, "modified") {
			t.Errorf("scale output:\n%s", out)
		}
		_, errOut, err := plugin(t, "", "scale", "dev", "-n", ns.Name, "--worker", "nope=1", "--yes")
		if err == nil || !strings.Contains(errOut, "no pool of that name; it has md-a, md-gpu, mp-0") {
			t.Errorf("scaling an unknown pool: %v %s", err, errOut)
		}
		_, errOut, err = plugin(t, "", "set", "variable", "dev", "-n", ns.Name, "nosuch=1", "--yes")
		if err == nil || !strings.Contains(errOut, "nothing was changed") || !strings.Contains(errOut, "spec.variables") {
			t.Errorf("setting an undefined variable: %v %s", err, errOut)
		}
		out = mustPlugin(t, "set", "variable", "dev", "-n", ns.Name, "imageRepository=registry.example.com", "--dry-run")
		if !strings.Contains(out, `imageRepository: "" → "registry.example.com"`) || !strings.Contains(out, "KubeadmControlPlane") || !strings.Contains(out, "Dry run") {
			t.Errorf("set variable --dry-run output:\n%s", out)
		}
		waitFor(t, "the scale is reconciled", func(context.Context) (bool, error) {
			out, _, err := plugin(t, "", "status", "dev", "-n", ns.Name)
			return err == nil && !strings.Contains(out, "has not seen the latest change") && strings.Contains(out, " 0/4 "), fmt.Errorf("%s", out)
		})
	})

	// Upgrades, and following them to the end, are tested where Cluster
	// API's own controllers carry them out: test/capi. Here no machine ever
	// comes up, so a bounded watch gives up and says which part holds it.
	t.Run("a watch that cannot settle gives up and says why", func(t *testing.T) {
		out, errOut, err := plugin(t, "", "status", "dev", "-n", ns.Name, "--watch", "--interval", "200ms", "--timeout", "1s")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "control-plane") {
			t.Fatalf("status --watch --timeout 1s: %v\n%s%s", err, out, errOut)
		}
		for _, want := range []string{"Topology " + ns.Name + "/dev did not settle within 1s: Provisioning", "md-a: Provisioning for ", "0/4 ready", "The rollout goes on"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("status --watch --timeout 1s says:\n%s\nwant it to contain %q", errOut, want)
			}
		}
	})

	t.Run("a watch reads again through answers the API server could not give, and stops at a refusal", func(t *testing.T) {
		topology := "/apis/" + v1alpha2.GroupVersion.String() + "/namespaces/" + ns.Name + "/topologies/dev"
		// Reads 1 to 3 of the Topology, and 6 and 7, get a gateway's bare
		// 504, as an overloaded API server behind a load balancer gives.
		slow := answeringProxy(t, topology, func(read int) answer {
			if read <= 3 || read == 6 || read == 7 {
				return answer{code: http.StatusGatewayTimeout}
			}
			return answer{}
		})
		out, errOut, err := fixture.RunPlugin(pluginBin, slow.kubeconfig, "", "status", "dev", "-n", ns.Name, "--watch", "--interval", "200ms", "--timeout", "8s")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "control-plane") {
			t.Fatalf("status --watch through a slow API server: %v\n%s%s", err, out, errOut)
		}
		for _, want := range []string{"did not settle within 8s: Provisioning", "The rollout goes on"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("status --watch through a slow API server says:\n%s\nwant it to give up at its timeout, saying %q", errOut, want)
			}
		}
		if n := strings.Count(errOut, "reading again every 200ms: the server was unable to return a response in the time allotted"); n != 2 {
			t.Errorf("status --watch said %d times that it reads again, want once for each of the two runs of failed reads:\n%s", n, errOut)
		}
		if got := slow.reads.Load(); got < 8 {
			t.Errorf("status --watch read the Topology %d times, want it to read on after both runs of failures", got)
		}

		// A refusal is not the API server's passing trouble: the watch ends.
		refusing := answeringProxy(t, topology, func(read int) answer {
			if read >= 2 {
				return answer{code: http.StatusForbidden}
			}
			return answer{}
		})
		out, errOut, err = fixture.RunPlugin(pluginBin, refusing.kubeconfig, "", "status", "dev", "-n", ns.Name, "--watch", "--interval", "200ms", "--timeout", "2m")
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(errOut, "forbidden") || !strings.Contains(errOut, "ask for RBAC") || strings.Contains(errOut, "did not settle") {
			t.Errorf("status --watch refused mid-way: %v, want it to end at once with the refusal\n%s%s", err, out, errOut)
		}
		if got := refusing.reads.Load(); got != 2 {
			t.Errorf("status --watch read the Topology %d times, want it to stop at the refusal, the second", got)
		}

		// --timeout bounds the wait for the rollout, not status's first
		// read: one slower than the timeout is shown, then the watch gives up.
		slowFirst := answeringProxy(t, topology, func(read int) answer {
			if read == 1 {
				return answer{delay: 1500 * time.Millisecond}
			}
			return answer{}
		})
		out, errOut, err = fixture.RunPlugin(pluginBin, slowFirst.kubeconfig, "", "status", "dev", "-n", ns.Name, "--watch", "--interval", "200ms", "--timeout", "1s")
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "control-plane") || !strings.Contains(errOut, "did not settle within 1s") {
			t.Errorf("status --watch --timeout 1s whose first read takes 1.5s: %v, want the tree, then that it did not settle\n%s%s", err, out, errOut)
		}
	})

	t.Run("errors say what to do", func(t *testing.T) {
		_, errOut, err := plugin(t, "", "get", "-n", ns.Name, "--as", "nobody")
		if err == nil || !strings.Contains(errOut, "forbidden") || !strings.Contains(errOut, "topologies") || !strings.Contains(errOut, "ask for RBAC") {
			t.Errorf("get without RBAC: %v %s", err, errOut)
		}
		_, errOut, err = plugin(t, "", "status", "nope", "-n", ns.Name)
		if err == nil || !strings.Contains(errOut, "Topology "+ns.Name+"/nope not found, nor a Cluster with spec.topology of that name; list them with `kubectl topology get -n "+ns.Name+"`") {
			t.Errorf("status of a missing Topology: %v %s", err, errOut)
		}
	})

	t.Run("a scale that takes the control plane away warns and asks even with --yes", func(t *testing.T) {
		out := mustPlugin(t, "scale", "dev", "-n", ns.Name, "--control-plane", "0", "--dry-run")
		if !strings.Contains(out, "WARNING: control plane replicas 0 deletes every control plane machine") {
			t.Errorf("scale --control-plane 0 --dry-run:\n%s", out)
		}
		_, errOut, err := plugin(t, "n\n", "scale", "dev", "-n", ns.Name, "--control-plane", "0", "--yes")
		if err == nil || !strings.Contains(errOut, "asked even with --yes; pass --force") {
			t.Errorf("scale --control-plane 0 --yes answered no: %v %s", err, errOut)
		}
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "dev"}, got); err != nil || *got.Spec.ControlPlane.Replicas != 3 {
			t.Errorf("after a refused scale to 0 the control plane asks for %v replicas (%v), want 3", got.Spec.ControlPlane.Replicas, err)
		}
	})

	t.Run("pause and resume", func(t *testing.T) {
		// get -w prints a row for each change from here on.
		watch := exec.Command(pluginBin, "get", "-w", "-n", ns.Name)
		watch.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		var rows fixture.SyncBuffer
		watch.Stdout, watch.Stderr = &rows, &rows
		if err := watch.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()
		waitFor(t, "get -w lists the Topology", func(context.Context) (bool, error) {
			return strings.Contains(rows.String(), "STATE") && strings.Contains(rows.String(), "\ndev "), fmt.Errorf("%s", rows.String())
		})
		out := mustPlugin(t, "pause", "dev", "-n", ns.Name, "--yes")
		if !strings.Contains(out, "paused: false → true") || !strings.Contains(out, "Paused: nothing will be applied while the Topology is paused.") || !strings.Contains(out, "until `kubectl topology resume dev") {
			t.Errorf("pause:\n%s", out)
		}
		waitFor(t, "get and status say Paused", func(context.Context) (bool, error) {
			get, _, err := plugin(t, "", "get", "-n", ns.Name)
			status, _, err2 := plugin(t, "", "status", "dev", "-n", ns.Name)
			return err == nil && err2 == nil && strings.Contains(get, "Paused") && strings.Contains(status, "· Paused") && strings.Contains(status, "TopologyReconciled=False Paused"), fmt.Errorf("%s%s", get, status)
		})
		waitFor(t, "get -w prints the Topology's new row", func(context.Context) (bool, error) {
			return strings.Contains(rows.String(), "Paused"), fmt.Errorf("%s", rows.String())
		})
		_, errOut, _ := plugin(t, "", "plan", "dev", "-n", ns.Name)
		if !strings.Contains(errOut, "is paused: nothing will be applied until `kubectl topology resume dev`") {
			t.Errorf("plan of a paused Topology does not say so:\n%s", errOut)
		}
		if out := mustPlugin(t, "resume", "dev", "-n", ns.Name, "--yes"); !strings.Contains(out, "paused: true → false") || !strings.Contains(out, "Applied.") {
			t.Errorf("resume:\n%s", out)
		}
		waitFor(t, "status no longer says Paused", func(context.Context) (bool, error) {
			status, _, err := plugin(t, "", "status", "dev", "-n", ns.Name)
			return err == nil && !strings.Contains(status, "Paused"), fmt.Errorf("%s", status)
		})
	})

	t.Run("uninstall is refused while a Topology exists", func(t *testing.T) {
		_, errOut, err := plugin(t, "", "uninstall", "--state-dir", state)
		if err == nil || !strings.Contains(errOut, ns.Name+"/dev") {
			t.Fatalf("got %v: %s", err, errOut)
		}
	})

	if err := k8s.Delete(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Topology is gone", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "dev"}, &v1alpha2.Topology{})
		return apierrors.IsNotFound(err), err
	})
	if out := mustPlugin(t, "uninstall", "--state-dir", state); !strings.Contains(out, "Stopped the local agent") {
		t.Errorf("uninstall did not stop the local agent:\n%s", out)
	}
	if out := mustPlugin(t, "version"); !strings.Contains(out, "agent: not installed") {
		t.Errorf("after uninstall, version says:\n%s", out)
	}
}

// stopLocalAgent ends an agent install --local started, if still running.
func stopLocalAgent(state string) { _ = localagent.Stop(state) }

// TestInstallInCluster applies the in-cluster components with the plugin. The
// local control plane runs no Pods, so it does not wait for the agent; it
// checks the transformations, idempotence, version and uninstall.
func TestInstallInCluster(t *testing.T) {
	ctx := context.Background()
	for range 2 { // the second run upgrades in place
		out := mustPlugin(t, "install", "--wait=false", "--target-namespace", "topology-e2e", "--watch-namespace", "team-a", "--version", "v9.9.9")
		if !strings.Contains(out, "deployment/topology-controller-manager applied") {
			t.Fatalf("install output:\n%s", out)
		}
	}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: "topology-e2e", Name: "topology-controller-manager"}, d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "kubectl-topology/agent:v9.9.9" || !strings.Contains(strings.Join(c.Args, " "), "--namespace=team-a") {
		t.Errorf("Deployment container %s %v", c.Image, c.Args)
	}
	if out := mustPlugin(t, "version"); !strings.Contains(out, "agent: kubectl-topology/agent:v9.9.9 (Deployment topology-e2e/topology-controller-manager") {
		t.Errorf("version:\n%s", out)
	}
	mustPlugin(t, "uninstall", "--target-namespace", "topology-e2e")
	err := k8s.Get(ctx, client.ObjectKey{Namespace: "topology-e2e", Name: "topology-controller-manager"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment survived uninstall: %v", err)
	}
}

// TestVersionTellsWhetherTheLocalAgentRuns: version said a local agent was
// running after it had stopped, while every Topology write was refused.
func TestVersionTellsWhetherTheLocalAgentRuns(t *testing.T) {
	state := t.TempDir()
	mustPlugin(t, "install", "--local", "--state-dir", state)
	t.Cleanup(func() { mustPlugin(t, "uninstall", "--state-dir", state) })
	if out := mustPlugin(t, "version", "--state-dir", state); !strings.Contains(out, "agent: running out of cluster at https://localhost:") || !strings.Contains(out, ", ready") {
		t.Errorf("version of a running local agent:\n%s", out)
	}
	stopLocalAgent(state)
	if out := mustPlugin(t, "version", "--state-dir", state); !strings.Contains(out, "NOT RUNNING") || !strings.Contains(out, "kubectl topology install --local") {
		t.Errorf("version of a stopped local agent does not say so and what to do:\n%s", out)
	}
}

// TestDistInstallsItsOwnRelease: a released plugin installed the
// development image. The archive make dist builds for this platform must
// install the agent of its own release.
func TestDistInstallsItsOwnRelease(t *testing.T) {
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dist := exec.Command("hack/dist.sh")
	dist.Dir = root
	dist.Env = append(os.Environ(), "VERSION=v0.2.0", "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH, "DIST="+dir)
	if out, err := dist.CombinedOutput(); err != nil {
		t.Fatalf("hack/dist.sh: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, fmt.Sprintf("kubectl-topology_v0.2.0_%s_%s.tar.gz", runtime.GOOS, runtime.GOARCH))
	if out, err := exec.Command("tar", "-xzf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", archive, err, out)
	}
	released := filepath.Join(dir, "kubectl-topology")
	out, err := exec.Command(released, "install", "--dry-run=client", "-o", "yaml").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "image: kubectl-topology/agent:v0.2.0") {
		t.Errorf("install --dry-run of the v0.2.0 plugin (%v) does not name the v0.2.0 image:\n%s", err, out)
	}
	if out, err := exec.Command(released, "version", "--client").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "plugin: v0.2.0" {
		t.Errorf("version --client: %v %s", err, out)
	}
}
