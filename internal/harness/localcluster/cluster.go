// Package localcluster runs a real Kubernetes control plane on this machine —
// etcd, kube-apiserver and kube-controller-manager built by hack/tools — with
// the Cluster API CRDs installed. Tests and `make local-up` use it where no
// kind node image can be pulled; provider controllers are not run, so tests
// play their part, as upstream's own topology tests do.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
)

// Options configure a local control plane.
type Options struct {
	// Dir holds data, certificates, logs, pid files and the kubeconfig.
	Dir string
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	BinDir string
	// APIServerPort, EtcdPort, EtcdPeerPort and ControllerManagerPort are the
	// loopback ports to use; 0 picks a free one.
	APIServerPort, EtcdPort, EtcdPeerPort, ControllerManagerPort int
	// CRDDirs are directories of CRD YAML installed once the API server is up.
	CRDDirs []string
	// StartTimeout bounds the wait for each component to become healthy.
	StartTimeout time.Duration
	// Providers are the Cluster API managers to run beside the control
	// plane, with their CRDs (see ClusterAPIProviders); none for a bare one.
	Providers []Provider
	// PivotFrom is a running control plane with providers, as the target of
	// a `clusterctl move` from it: this one gets its providers' CRDs and
	// webhooks, served by its managers on their ports with the certificates
	// the two share, and no managers of its own until PivotProviders moves
	// them here. Providers is then ignored.
	PivotFrom *Cluster
	// GOGC, when not 0 and the environment sets none, is every component's
	// GOGC. The test suites give 200: under Cluster API's status writes the
	// API server spent about a third of its CPU collecting garbage (a CPU
	// profile, 2026-11-27), and with suites side by side on two cores CPU is
	// what runs out, not memory. Measurements (bench-scale) leave Go's default.
	GOGC int
}

// Cluster is a running local control plane.
type Cluster struct {
	opts Options
	// Kubeconfig is the path of an admin kubeconfig.
	Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config
	procs  []*component
	// lock is the fixed ports' lock a test suite holds while its providers run.
	lock *os.File
}

// Component names, also used for log and pid files.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
)

// PortInUseError says which component could not get its port.
type PortInUseError struct {
	Component string
	Port      int
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d for %s is in use on 127.0.0.1: stop whatever listens there (ss -ltnp 'sport = :%d') or choose another port", e.Port, e.Component, e.Port)
}

// Start brings up etcd, kube-apiserver and kube-controller-manager, writes an
// admin kubeconfig to Dir/kubeconfig and installs the CRDs. On error every
// process it started is stopped again.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	for _, bin := range []string{Etcd, APIServer, ControllerManager} {
		if _, err := os.Stat(filepath.Join(opts.BinDir, bin)); err != nil {
			return nil, fmt.Errorf("%s is not in %s: run `make control-plane-bins` to build it", bin, opts.BinDir)
		}
	}
	for _, p := range opts.Providers {
		if _, err := os.Stat(filepath.Join(opts.BinDir, p.Name)); err != nil {
			return nil, fmt.Errorf("%s is not in %s: run `make capi-bins` to build Cluster API %s's managers", p.Name, opts.BinDir, ProvidersVersion)
		}
	}
	ports := []struct {
		name string
		port *int
	}{{Etcd, &opts.EtcdPort}, {Etcd + " peer", &opts.EtcdPeerPort}, {APIServer, &opts.APIServerPort}, {ControllerManager, &opts.ControllerManagerPort}}
	if opts.PivotFrom != nil {
		// The source's managers, ports and all: they serve both until the pivot.
		opts.Providers = opts.PivotFrom.opts.Providers
		if err := copyPKI(filepath.Join(opts.PivotFrom.opts.Dir, "pki"), filepath.Join(opts.Dir, "pki")); err != nil {
			return nil, err
		}
	}
	opts.Providers = slices.Clone(opts.Providers)
	// A pivot target's managers are the source's, on ports they hold already.
	ownManagers := opts.PivotFrom == nil
	for i := range opts.Providers {
		if p := &opts.Providers[i]; ownManagers {
			ports = append(ports, []struct {
				name string
				port *int
			}{{p.Name + " webhooks", &p.WebhookPort}, {p.Name + " health", &p.HealthPort}, {p.Name + " diagnostics", &p.DiagnosticsPort}}...)
		}
	}
	// Every listener is held until all ports are claimed: one closed at once
	// can come back from the kernel as the next "free" port.
	var held []net.Listener
	picker := freeport.New()
	for _, p := range ports {
		l, err := claimPort(picker, p.name, *p.port)
		if err != nil {
			freeport.Close(held)
			return nil, err
		}
		held = append(held, l)
		*p.port = l.Addr().(*net.TCPAddr).Port
	}
	freeport.Close(held)
	if ownManagers {
		if err := checkFixedPorts(opts.Providers); err != nil {
			return nil, err
		}
	}
	for i := range opts.Providers {
		if opts.Providers[i].config != "" {
			continue
		}
		// Found once, before anything starts: `go mod download` runs for it.
		if opts.Providers[i].config, err = providerConfig(ctx, opts.Providers[i]); err != nil {
			return nil, err
		}
	}
	pkiDir := filepath.Join(opts.Dir, "pki")
	pk, err := loadOrNewPKI(pkiDir, time.Now())
	if err != nil {
		return nil, err
	}
	if err := pk.write(pkiDir); err != nil {
		return nil, fmt.Errorf("writing certificates to %s: %w", pkiDir, err)
	}
	c = &Cluster{opts: opts, Kubeconfig: filepath.Join(opts.Dir, "kubeconfig")}
	// A failed start returns a nil Cluster: stop what was started by its
	// directory, so that nothing is left half-running.
	defer func() {
		if err != nil {
			_ = StopDir(opts.Dir)
		}
	}()
	if err := c.writeKubeconfig(pk); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, pkiDir); err != nil {
		return nil, err
	}
	// CRDs before the controller manager: its garbage collector then watches
	// their kinds from the start instead of after its next discovery resync.
	if len(opts.CRDDirs) > 0 {
		if err := InstallCRDs(ctx, c.Config, opts.CRDDirs...); err != nil {
			return nil, err
		}
	}
	if len(opts.Providers) > 0 {
		if err := c.installProviderCRDs(ctx, pk.ca.certPEM()); err != nil {
			return nil, err
		}
	}
	if err := c.startControllerManager(ctx, pkiDir); err != nil {
		return nil, err
	}
	switch {
	case opts.PivotFrom != nil:
		if err := c.registerProviderWebhooks(ctx, pk.ca.certPEM()); err != nil {
			return nil, err
		}
	case len(opts.Providers) > 0:
		if err := c.startProviders(ctx, pkiDir, pk.ca.certPEM()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkFixedPorts says which provider's port no flag moves is taken.
func checkFixedPorts(providers []Provider) error {
	for _, p := range providers {
		for _, port := range p.FixedPorts {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
			if err != nil {
				return fixedPortError(p, port)
			}
			_ = l.Close()
		}
	}
	return nil
}

// copyPKI copies the certificates and keys of one control plane to the
// directory of another.
func copyPKI(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("reading the certificates to share: %w", err)
	}
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// PivotProviders moves the managers of the control plane this one was
// started to pivot from (Options.PivotFrom) here: they stop there and start
// against this one, with the same ports and certificates, as a management
// cluster's providers take over after `clusterctl move`.
func (c *Cluster) PivotProviders(ctx context.Context) error {
	from := c.opts.PivotFrom
	if from == nil {
		return fmt.Errorf("the control plane in %s was not started to pivot from another", c.opts.Dir)
	}
	if err := from.StopProviders(); err != nil {
		return err
	}
	return c.StartProviders(ctx)
}

// StopProviders stops every Cluster API manager beside this control plane,
// which keeps running.
func (c *Cluster) StopProviders() error {
	var errs []error
	for _, p := range c.opts.Providers {
		if err := process.Stop(filepath.Join(c.opts.Dir, p.Name+".pid")); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// StartProviders starts the Cluster API managers against this control
// plane, after StopProviders or a pivot, and waits until each is ready.
func (c *Cluster) StartProviders(ctx context.Context) error {
	pkiDir := filepath.Join(c.opts.Dir, "pki")
	pk, err := readPKI(pkiDir)
	if err != nil {
		return fmt.Errorf("reading the certificates of the control plane in %s: %w", c.opts.Dir, err)
	}
	return c.startProviders(ctx, pkiDir, pk.ca.certPEM())
}

// claimPort listens on a fixed port, to check it is free, or on a free one
// below the ephemeral range for 0; the caller closes the listener before the
// component binds it.
func claimPort(picker *freeport.Picker, component string, port int) (net.Listener, error) {
	if port == 0 {
		held, err := picker.Claim(1)
		if err != nil {
			return nil, fmt.Errorf("finding a port for %s: %w", component, err)
		}
		return held[0], nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, &PortInUseError{Component: component, Port: port}
	}
	return l, nil
}

func (c *Cluster) url(port int, scheme string) string {
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)
}

func (c *Cluster) writeKubeconfig(pk *pki) error {
	key, err := pk.admin.keyPEM()
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.url(c.opts.APIServerPort, "https"), CertificateAuthorityData: pk.ca.certPEM()}
	cfg.AuthInfos["local-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: pk.admin.certPEM(), ClientKeyData: key}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "local-admin", Namespace: "default"}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", c.Kubeconfig, err)
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return err
	}
	c.Config.QPS, c.Config.Burst = 500, 1000
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client, peer := c.url(c.opts.EtcdPort, "http"), c.url(c.opts.EtcdPeerPort, "http")
	p, err := c.start(Etcd,
		"--name=local",
		"--data-dir="+filepath.Join(c.opts.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=local="+peer,
		"--listen-metrics-urls=",
		// The local control plane holds nothing worth an fsync per write.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	return p.waitHTTP(ctx, client+"/health", nil, c.opts.StartTimeout)
}

func (c *Cluster) startAPIServer(ctx context.Context, pkiDir string) error {
	f := func(name string) string { return filepath.Join(pkiDir, name) }
	p, err := c.start(APIServer,
		"--etcd-servers="+c.url(c.opts.EtcdPort, "http"),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.opts.APIServerPort),
		"--tls-cert-file="+f("apiserver.crt"), "--tls-private-key-file="+f("apiserver.key"),
		"--client-ca-file="+f("ca.crt"),
		"--service-account-key-file="+f("sa.pub"),
		"--service-account-signing-key-file="+f("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// No kubelets or pods here; admission that expects them gets in the way.
		"--disable-admission-plugins=ServiceAccount",
		"--v=0",
	)
	if err != nil {
		return err
	}
	if err := p.waitHTTP(ctx, c.url(c.opts.APIServerPort, "https")+"/readyz", c.Config, c.opts.StartTimeout); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) startControllerManager(ctx context.Context, pkiDir string) error {
	p, err := c.start(ControllerManager,
		"--kubeconfig="+c.Kubeconfig,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.opts.ControllerManagerPort),
		"--leader-elect=false",
		// Garbage collection, namespace deletion and ClusterRole aggregation are
		// what tests rely on; service accounts make namespaces look real.
		"--controllers=garbagecollector,namespace,serviceaccount,serviceaccount-token,clusterrole-aggregation",
		"--service-account-private-key-file="+filepath.Join(pkiDir, "sa.key"),
		"--root-ca-file="+filepath.Join(pkiDir, "ca.crt"),
		"--use-service-account-credentials=false",
		"--concurrent-gc-syncs=5",
		"--v=0",
	)
	if err != nil {
		return err
	}
	return p.waitHTTP(ctx, c.url(c.opts.ControllerManagerPort, "https")+"/healthz", nil, c.opts.StartTimeout)
}

// Stop ends the control plane's processes, newest first.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	return StopDir(c.opts.Dir)
}

// StopDir ends the processes of the control plane whose state is in dir,
// whether this process or an earlier `make local-up` started them: those its
// pid files record, the agent `install --local` runs for it, and any other
// whose command line names a path under dir — a component restarted by hand
// has the same arguments and no pid file.
func StopDir(dir string) error {
	var errs []error
	for _, name := range processNames(dir) {
		if err := process.Stop(filepath.Join(dir, name+".pid")); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", name, err))
		}
	}
	if err := localagent.Stop(filepath.Join(dir, "agent")); err != nil {
		errs = append(errs, fmt.Errorf("stopping the local agent: %w", err))
	}
	for _, pid := range Strays(dir) {
		if err := process.StopPID(pid); err != nil {
			errs = append(errs, fmt.Errorf("stopping process %d, which runs on %s: %w", pid, dir, err))
		}
	}
	return errors.Join(errs...)
}

// Purge stops what runs on dir, as StopDir does, and removes what the
// control plane and the demo made there (etcd's data, certificates, the
// agent's state), keeping the logs, so the next start begins empty.
func Purge(dir string) error {
	if err := StopDir(dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "logs" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Strays are the processes, other than this one and its ancestors (`go run
// ./hack/localcluster down -dir .local` names the dir itself), whose command
// line names a path under dir, relative arguments read from the process's
// own working directory. Only where /proc exists; elsewhere none are found.
func Strays(dir string) []int {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	mine := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !mine[pid]; pid = process.Parent(pid) {
		mine[pid] = true
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || mine[pid] {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if namesPathUnder(strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")[1:], cwd, abs) {
			out = append(out, pid)
		}
	}
	return out
}

// namesPathUnder tells whether an argument (or a flag's value) is a path
// under dir, read from cwd when relative.
func namesPathUnder(args []string, cwd, dir string) bool {
	for _, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if !filepath.IsAbs(a) {
			if cwd == "" {
				continue
			}
			a = filepath.Join(cwd, a)
		}
		if rel, err := filepath.Rel(dir, filepath.Clean(a)); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// Running reports whether the control plane in dir is up, and its kubeconfig.
func Running(ctx context.Context, dir string) (bool, string) {
	for _, name := range processNames(dir) {
		if _, up := process.Running(filepath.Join(dir, name+".pid")); !up {
			return false, filepath.Join(dir, "kubeconfig")
		}
	}
	return Reachable(ctx, dir), filepath.Join(dir, "kubeconfig")
}

// Reachable reports whether the API server of the control plane in dir
// answers ready, whatever the other components do.
func Reachable(ctx context.Context, dir string) bool {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return false
	}
	return healthy(ctx, strings.TrimSuffix(cfg.Host, "/")+"/readyz", cfg) == nil
}

// Restart stops the control plane and starts it again on the same ports and
// data. With newCA it also makes a new PKI, as a CA rotation would: clients
// configured before then no longer trust the API server.
func (c *Cluster) Restart(ctx context.Context, newCA bool) error {
	if err := c.Stop(); err != nil {
		return err
	}
	if newCA {
		if err := os.RemoveAll(filepath.Join(c.opts.Dir, "pki")); err != nil {
			return err
		}
	}
	restarted, err := Start(ctx, c.opts)
	if err != nil {
		return err
	}
	*c = *restarted
	return nil
}
