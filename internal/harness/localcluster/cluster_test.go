package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// TestLocalControlPlane starts the real control plane once and checks what the
// rest of the suite relies on: the version the API server reports, the CRDs
// with their contract label, garbage collection by kube-controller-manager,
// and a clean stop.
func TestLocalControlPlane(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	c, err := StartForTests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Cleanup(); err != nil {
			t.Error(err)
		}
	}()
	cs := kubernetes.NewForConfigOrDie(c.Config)

	t.Run("reports its real version", func(t *testing.T) {
		v, err := discovery.NewDiscoveryClientForConfigOrDie(c.Config).ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.Major != "1" || v.Minor != "36" || !strings.HasPrefix(v.GitVersion, "v1.36.") {
			t.Errorf("server version %+v, want v1.36.x with major 1 minor 36", v)
		}
	})

	t.Run("serves Cluster API CRDs with the contract label", func(t *testing.T) {
		crds, err := ReadCRDs(c.opts.CRDDirs...)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]string{}
		for _, crd := range crds {
			found[crd.Name] = crd.Labels[ContractLabel]
		}
		for name, want := range map[string]string{
			"clusters.cluster.x-k8s.io":                              "v1beta1",
			"dockermachinetemplates.infrastructure.cluster.x-k8s.io": "v1beta1",
			"kubeadmcontrolplanes.controlplane.cluster.x-k8s.io":     "v1beta1",
			"kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io":      "v1beta1",
			"topologies.topology.kubectl-topology.io":                "",
		} {
			got, ok := found[name]
			if !ok || got != want {
				t.Errorf("CRD %s: present %v, contract label %q, want %q", name, ok, got, want)
			}
		}
		_, err = discovery.NewDiscoveryClientForConfigOrDie(c.Config).ServerResourcesForGroupVersion("infrastructure.cluster.x-k8s.io/v1beta1")
		if err != nil {
			t.Errorf("CAPD API not served: %v", err)
		}
	})

	t.Run("garbage collects dependents", func(t *testing.T) {
		owner, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("dependent ConfigMap was not garbage collected: %v", err)
		}
	})

	t.Run("a restart keeps the CA, so what trusted it still does", func(t *testing.T) {
		before, err := os.ReadFile(c.opts.Dir + "/pki/ca.crt")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, false); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(c.opts.Dir + "/pki/ca.crt")
		if err != nil {
			t.Fatal(err)
		}
		if string(before) != string(after) {
			t.Fatal("the restarted control plane has a new CA: clients configured before the restart no longer trust it")
		}
		if _, err := kubernetes.NewForConfigOrDie(c.Config).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Fatalf("the restarted control plane does not answer: %v", err)
		}
	})

	t.Run("a taken port is named", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		dir := t.TempDir()
		_, err = Start(ctx, Options{Dir: dir, BinDir: c.opts.BinDir, APIServerPort: port})
		var inUse *PortInUseError
		if !errors.As(err, &inUse) || inUse.Port != port || inUse.Component != APIServer {
			t.Fatalf("got %v, want a PortInUseError for %s port %d", err, APIServer, port)
		}
		if _, err := os.Stat(dir + "/etcd"); !os.IsNotExist(err) {
			t.Errorf("a failed start left etcd data behind: %v", err)
		}
	})
}

// TestStopDirStopsAComponentRestartedByHand: a process that runs on the
// control plane's directory but no pid file records — a manager restarted by
// hand — is stopped with the rest, and one that only names the directory
// itself (as `go run ./hack/localcluster down -dir .local` does) is not.
func TestStopDirStopsAComponentRestartedByHand(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("finding processes by their arguments needs /proc")
	}
	dir := t.TempDir()
	stray := helperProcess("--kubeconfig=" + filepath.Join(dir, "kubeconfig"))
	bystander := helperProcess(dir)
	// Until exec completes a child's /proc cmdline is still this test's, so
	// each helper says it runs before Strays looks.
	for _, c := range []*exec.Cmd{stray, bystander} {
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "running\n" {
			t.Fatalf("helper %d said %q (%v), want it to say it runs", c.Process.Pid, line, err)
		}
	}
	strayDone, bystanderDone := make(chan error, 1), make(chan error, 1)
	go func() { strayDone <- stray.Wait() }()
	go func() { bystanderDone <- bystander.Wait() }()
	t.Cleanup(func() { _ = bystander.Process.Kill() })

	if got := Strays(dir); len(got) != 1 || got[0] != stray.Process.Pid {
		t.Fatalf("strays %v, want only the process with an argument under %s (%d)", got, dir, stray.Process.Pid)
	}
	if err := StopDir(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-strayDone:
		t.Logf("the process restarted by hand ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the process restarted by hand still runs after StopDir")
	}
	select {
	case err := <-bystanderDone:
		t.Errorf("StopDir stopped a process that only names the directory: %v", err)
	default:
	}
}

// helperProcess runs this test binary as a process that only waits, with
// args on its command line.
func helperProcess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "LOCALCLUSTER_HELPER_PROCESS=1")
	return cmd
}

// TestHelperProcess is helperProcess's body, not a test of its own.
func TestHelperProcess(*testing.T) {
	if os.Getenv("LOCALCLUSTER_HELPER_PROCESS") != "1" {
		return
	}
	fmt.Println("running")
	time.Sleep(5 * time.Minute)
	os.Exit(0)
}
