// Command paritylive measures the agent against upstream's own topology
// controller on a live control plane: Cluster API's managers run with the
// core manager's ClusterTopology gate on, each parity case is applied both
// as upstream ClusterClass + Cluster.spec.topology and, converted by
// `kubectl topology convert`, as TopologyClass + Topology, and the objects
// each side generates are read back in their storage versions and compared
// field by field. Where the case's machines can run here (the in-memory
// backend), both sides are then upgraded to the next minor and the order in
// which their parts rolled is compared.
//
// It reports; it does not judge. The exit code is non-zero only when the
// comparison could not be made.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-topology/kubectl-topology/pkg/agent"
	"github.com/kubectl-topology/kubectl-topology/pkg/engine"
	"github.com/kubectl-topology/kubectl-topology/pkg/localcluster"
	"github.com/kubectl-topology/kubectl-topology/pkg/process"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// quickStart is upstream's quick-start ClusterClass (Docker provider) and a
// Cluster of it, in the shared fixtures beside this repository.
const quickStart = "../shared/fixtures/capi-v1beta1"

// options are the command's flags.
type options struct {
	dir, bin, crdDir string
	cases            []string
	timeout          time.Duration
	keep             bool
}

func run() error {
	o := options{}
	flag.StringVar(&o.dir, "dir", ".local-parity", "directory for the control plane's data, logs and kubeconfig")
	flag.StringVar(&o.bin, "bin-dir", "bin", "directory holding the control plane's, Cluster API's and kubectl-topology's binaries")
	flag.StringVar(&o.crdDir, "crd-dir", "manifests/crd", "directory of kubectl-topology's own CRDs")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long each side may take to generate, provision or upgrade a case")
	flag.BoolVar(&o.keep, "keep", false, "leave the control plane running afterwards, for a look at the objects")
	flag.Parse()
	o.cases = flag.Args()
	if len(o.cases) == 0 {
		o.cases = []string{"testdata/parity/in-memory", "testdata/parity/docker-kubeadm"}
		// Upstream's own quick-start class, where a checkout has ../shared.
		if _, err := os.Stat(quickStart); err == nil {
			o.cases = append(o.cases, quickStart)
		}
	}
	ctx := context.Background()
	if len(flag.Args()) == 0 {
		// Upstream v1.14.2's quick-start class in v1beta2, from its module.
		dir, err := v1beta2QuickStart(ctx)
		if err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(dir))
		o.cases = append(o.cases, dir)
	}
	ctrllog.SetLogger(logr.Discard())

	// Each run starts from nothing: a previous run's objects would be in the way.
	if err := process.Stop(filepath.Join(o.dir, "agent", "agent.pid")); err != nil {
		return err
	}
	if err := localcluster.StopDir(o.dir); err != nil {
		return err
	}
	if err := os.RemoveAll(o.dir); err != nil {
		return err
	}
	fmt.Printf("Starting a control plane with Cluster API %s, ClusterTopology on, in %s...\n", localcluster.ProvidersVersion, o.dir)
	c, err := localcluster.Start(ctx, localcluster.Options{
		Dir: o.dir, BinDir: o.bin,
		APIServerPort: 26443, EtcdPort: 22379, EtcdPeerPort: 22380, ControllerManagerPort: 20357,
		CRDDirs:   []string{o.crdDir},
		Providers: localcluster.ClusterAPIProviders(true),
	})
	if err != nil {
		return err
	}
	if !o.keep {
		defer func() { _ = c.Stop() }()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 50, 100
	k8s, err := client.New(cfg, client.Options{Scheme: agent.Scheme()})
	if err != nil {
		return err
	}
	state := filepath.Join(o.dir, "agent")
	plugin := filepath.Join(o.bin, "kubectl-topology")
	if _, err := runPlugin(plugin, c.Kubeconfig, "install", "--local", "--agent-binary", filepath.Join(o.bin, "agent"), "--state-dir", state); err != nil {
		return err
	}
	if !o.keep {
		defer func() { _ = process.Stop(filepath.Join(state, "agent.pid")) }()
	}

	var results []caseResult
	for _, dir := range o.cases {
		r, err := compareCase(ctx, k8s, plugin, c.Kubeconfig, dir, o.timeout)
		if err != nil {
			return fmt.Errorf("case %s: %w", dir, err)
		}
		results = append(results, r)
	}
	fmt.Println("\n== summary")
	for _, r := range results {
		fmt.Printf("%s: %d of %d objects equal", r.name, r.equal, r.objects)
		if r.order == "same" || r.order == "differs" {
			fmt.Printf(" (%d after the upgrade)", r.equalAfter)
		}
		fmt.Printf("; upgrade order %s\n", r.order)
	}
	if o.keep {
		fmt.Printf("The control plane keeps running: export KUBECONFIG=%s; stop it with go run ./hack/localcluster down -dir %s\n", c.Kubeconfig, o.dir)
	}
	return nil
}

// caseResult is one case's line in the summary.
type caseResult struct {
	name string
	// equal and equalAfter count the objects equal before and after the
	// upgrade, of objects.
	equal, equalAfter, objects int
	order                      string
}

// side is one way of applying a case: upstream's or ours.
type side struct {
	label, namespace string
	// upstream: the Cluster is reconciled by upstream's topology controller.
	upstream bool
	// cluster is the name of the Cluster both sides generate.
	cluster string
}

func compareCase(ctx context.Context, k8s client.Client, plugin, kubeconfig, dir string, timeout time.Duration) (caseResult, error) {
	name := filepath.Base(filepath.Clean(dir))
	res := caseResult{name: name, order: "not compared"}
	fmt.Printf("\n== %s\n", name)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return res, fmt.Errorf("no YAML files in %s", dir)
	}
	up := side{label: "upstream", namespace: "parity-" + name + "-upstream", upstream: true}
	ours := side{label: "ours", namespace: "parity-" + name + "-ours"}
	for _, s := range []side{up, ours} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return res, err
		}
	}
	var upstreamDocs []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return res, err
		}
		upstreamDocs = append(append(upstreamDocs, data...), []byte("\n---\n")...)
	}
	upObjs, err := decode(upstreamDocs)
	if err != nil {
		return res, err
	}
	args := []string{"convert", "-n", ours.namespace}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	converted, err := runPlugin(plugin, kubeconfig, args...)
	if err != nil {
		return res, err
	}
	ourObjs, err := decode([]byte(converted))
	if err != nil {
		return res, err
	}
	var version string
	var want int64 // machines the topology asks for
	for _, o := range upObjs {
		if o.GetKind() != "Cluster" {
			continue
		}
		up.cluster, ours.cluster = o.GetName(), o.GetName()
		version, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "version")
		n, _, _ := unstructured.NestedInt64(o.Object, "spec", "topology", "controlPlane", "replicas")
		want += n
		mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "workers", "machineDeployments")
		for _, md := range mds {
			n, _, _ := unstructured.NestedInt64(md.(map[string]any), "replicas")
			want += n
		}
	}
	if up.cluster == "" {
		return res, fmt.Errorf("%s has no Cluster", dir)
	}
	if err := create(ctx, k8s, up.namespace, upObjs); err != nil {
		return res, err
	}
	if err := create(ctx, k8s, ours.namespace, ourObjs); err != nil {
		return res, err
	}

	start := time.Now()
	upGen, upErr := generated(ctx, k8s, up, timeout)
	fmt.Printf("upstream: %d objects generated (%v)%s\n", len(upGen), time.Since(start).Round(time.Second), errNote(upErr))
	start = time.Now()
	ourGen, ourErr := generated(ctx, k8s, ours, timeout)
	fmt.Printf("ours:     %d objects generated (%v)%s\n", len(ourGen), time.Since(start).Round(time.Second), errNote(ourErr))
	if !provisions(upObjs) {
		res.equal, res.objects = compareObjects(os.Stdout, ourGen, upGen)
		fmt.Println("upgrade order: not compared (no provider here runs this case's machines)")
		return res, nil
	}
	// Compared once both are provisioned, so that what the providers add
	// to the generated objects is there on both sides.
	for _, s := range []side{up, ours} {
		if err := waitMachines(ctx, k8s, s, want, version, timeout); err != nil {
			res.equal, res.objects = compareObjects(os.Stdout, ourGen, upGen)
			res.order = "not compared (" + s.label + " never provisioned)"
			fmt.Printf("upgrade order: %s: %v\n", res.order, err)
			return res, nil
		}
	}
	if upGen, err = collect(ctx, k8s, up); err != nil {
		return res, err
	}
	if ourGen, err = collect(ctx, k8s, ours); err != nil {
		return res, err
	}
	fmt.Println("Both provisioned:")
	res.equal, res.objects = compareObjects(os.Stdout, ourGen, upGen)
	target := nextMinor(version)
	fmt.Printf("Upgrading both to %s...\n", target)
	if err := setVersion(ctx, k8s, up, ours, target, timeout); err != nil {
		return res, err
	}
	upgraded := time.Now()
	// Both sides are followed at once, so that each one's time is its own.
	sides := []side{up, ours}
	took := make([]time.Duration, len(sides))
	waited := make([]error, len(sides))
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waited[i] = waitMachines(ctx, k8s, s, want, target, timeout)
			took[i] = time.Since(upgraded)
		}()
	}
	wg.Wait()
	orders := map[string][]string{}
	for i, s := range sides {
		if waited[i] != nil {
			res.order = "not compared (" + s.label + " did not finish)"
			fmt.Printf("upgrade order: %s: %v\n", res.order, waited[i])
			return res, nil
		}
		if orders[s.label], err = rollOrder(ctx, k8s, s, target); err != nil {
			return res, err
		}
		fmt.Printf("%s: every machine at %s %v after the version change (polled each second)\n", s.label, target, took[i].Round(time.Second))
	}
	// Compared again: the upgrade rewrote the templates on both sides.
	if upGen, err = collect(ctx, k8s, up); err != nil {
		return res, err
	}
	if ourGen, err = collect(ctx, k8s, ours); err != nil {
		return res, err
	}
	fmt.Println("Both upgraded:")
	res.equalAfter, _ = compareObjects(os.Stdout, ourGen, upGen)
	u, o := strings.Join(orders["upstream"], " → "), strings.Join(orders["ours"], " → ")
	res.order = "differs"
	if u == o {
		res.order = "same"
	}
	fmt.Printf("upgrade order: %s\n  ours:     %s\n  upstream: %s\n", res.order, o, u)
	return res, nil
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

// runPlugin runs kubectl-topology with the control plane's kubeconfig.
func runPlugin(plugin, kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl topology %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

func decode(data []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		// UnmarshalJSON keeps integers int64, as the API machinery does.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
}

// create makes objs in ns, the Cluster or Topology last so that its class
// and templates are there when it is admitted.
func create(ctx context.Context, k8s client.Client, ns string, objs []*unstructured.Unstructured) error {
	last := func(o *unstructured.Unstructured) bool { return o.GetKind() == "Cluster" || o.GetKind() == "Topology" }
	sort.SliceStable(objs, func(i, j int) bool { return !last(objs[i]) && last(objs[j]) })
	for _, o := range objs {
		o.SetNamespace(ns)
		if err := k8s.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
	}
	return nil
}

// provisions says whether this control plane's providers run the case's
// machines: only the Docker provider's in-memory backend can here.
func provisions(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if o.GetKind() == "DevClusterTemplate" {
			return true
		}
	}
	return false
}

// object is a generated object and the part of the cluster it plays.
type object struct {
	role string
	obj  *unstructured.Unstructured
}

// generated waits until side's Cluster has its control plane, every pool
// its MachineDeployment or MachinePool, and returns every generated
// object keyed by role.
func generated(ctx context.Context, k8s client.Client, s side, timeout time.Duration) (map[string]object, error) {
	var objs map[string]object
	var last error
	var failingSince time.Time
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		objs, _ = collect(ctx, k8s, s)
		err := reconciled(ctx, k8s, s)
		var failed *failedError
		switch {
		case errors.As(err, &failed):
			// A controller that keeps failing the same way will not get
			// further: compare what it made and say why.
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			last = err
			return time.Since(failingSince) > 20*time.Second, nil
		case err != nil:
			failingSince, last = time.Time{}, err
			return false, nil
		}
		objs, last = collect(ctx, k8s, s)
		return last == nil, nil
	})
	if err != nil {
		return objs, fmt.Errorf("incomplete after %v: %v", timeout, last)
	}
	return objs, last
}

// reconciled says why side's topology controller has not yet reconciled
// the latest generation of its input, or nil: upstream's TopologyReconciled
// condition on the Cluster, our Reconciled condition on the Topology.
func reconciled(ctx context.Context, k8s client.Client, s side) error {
	gk := schema.GroupKind{Group: "topology.kubectl-topology.io", Kind: "Topology"}
	if s.upstream {
		gk = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}
	}
	o, err := get(ctx, k8s, s.namespace, gk, s.cluster)
	if err != nil {
		return err
	}
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "TopologyReconciled" {
			continue
		}
		if gen, _, _ := unstructured.NestedInt64(m, "observedGeneration"); m["status"] == "True" && gen == o.GetGeneration() {
			return nil
		}
		err := fmt.Errorf("%s %s: TopologyReconciled is %v (%v: %v)", gk.Kind, s.cluster, m["status"], m["reason"], m["message"])
		if reason, _ := m["reason"].(string); strings.HasSuffix(reason, "Failed") {
			return &failedError{err}
		}
		return err
	}
	return fmt.Errorf("%s %s: no TopologyReconciled condition yet", gk.Kind, s.cluster)
}

// failedError is a topology controller's report that it failed, as
// opposed to not having got there yet.
type failedError struct{ error }

func (e *failedError) Unwrap() error { return e.error }

// collect reads side's generated objects by following references from the
// Cluster, in each kind's preferred (storage) version.
func collect(ctx context.Context, k8s client.Client, s side) (map[string]object, error) {
	out := map[string]object{}
	cluster, err := get(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, s.cluster)
	if err != nil {
		return out, err
	}
	out["Cluster"] = object{"Cluster", cluster}
	topo, _, _ := unstructured.NestedMap(cluster.Object, "spec", "topology")
	follow := func(role string, from *unstructured.Unstructured, path ...string) (*unstructured.Unstructured, error) {
		ref, found, _ := unstructured.NestedMap(from.Object, path...)
		if !found {
			return nil, fmt.Errorf("%s %s has no %s yet", from.GetKind(), from.GetName(), strings.Join(path, "."))
		}
		group, _ := ref["apiGroup"].(string)
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		o, err := get(ctx, k8s, s.namespace, schema.GroupKind{Group: group, Kind: kind}, name)
		if err == nil {
			out[role] = object{role, o}
		}
		return o, err
	}
	if _, err := follow("InfrastructureCluster", cluster, "spec", "infrastructureRef"); err != nil {
		return out, err
	}
	cp, err := follow("ControlPlane", cluster, "spec", "controlPlaneRef")
	if err != nil {
		return out, err
	}
	if _, err := follow("ControlPlane/MachineTemplate", cp, "spec", "machineTemplate", "spec", "infrastructureRef"); err != nil {
		return out, err
	}
	names := map[string]string{cp.GetName(): "control-plane"}
	for _, pool := range []struct{ kind, label, field, infraRole, bootstrapRole string }{
		{"MachineDeployment", "topology.cluster.x-k8s.io/deployment-name", "machineDeployments", "MachineTemplate", "BootstrapTemplate"},
		{"MachinePool", "topology.cluster.x-k8s.io/pool-name", "machinePools", "MachinePool", "BootstrapConfig"},
	} {
		want, _, _ := unstructured.NestedSlice(topo, "workers", pool.field)
		items, err := list(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: pool.kind}, s.cluster)
		if err != nil {
			return out, err
		}
		for _, o := range items {
			name := o.GetLabels()[pool.label]
			role := pool.kind + " " + name
			out[role] = object{role, o}
			names[o.GetName()] = name
			if _, err := follow(name+"/"+pool.infraRole, o, "spec", "template", "spec", "infrastructureRef"); err != nil {
				return out, err
			}
			if _, err := follow(name+"/"+pool.bootstrapRole, o, "spec", "template", "spec", "bootstrap", "configRef"); err != nil {
				return out, err
			}
		}
		if len(items) < len(want) {
			return out, fmt.Errorf("%d of %d %ss made", len(items), len(want), pool.kind)
		}
	}
	mhcs, err := list(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "MachineHealthCheck"}, s.cluster)
	if err != nil {
		return out, err
	}
	for _, o := range mhcs {
		role := "MachineHealthCheck " + names[o.GetName()]
		out[role] = object{role, o}
	}
	return out, nil
}

// get reads one object in its kind's preferred version.
func get(ctx context.Context, k8s client.Client, ns string, gk schema.GroupKind, name string) (*unstructured.Unstructured, error) {
	m, err := k8s.RESTMapper().RESTMapping(gk)
	if err != nil {
		return nil, err
	}
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(m.GroupVersionKind)
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, o); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", gk.Kind, ns, name, err)
	}
	return o, nil
}

// list reads the objects of a kind that belong to cluster.
func list(ctx context.Context, k8s client.Client, ns string, gk schema.GroupKind, cluster string) ([]*unstructured.Unstructured, error) {
	m, err := k8s.RESTMapper().RESTMapping(gk)
	if err != nil {
		return nil, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(gk.Kind + "List"))
	if err := k8s.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": cluster}); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, &l.Items[i])
	}
	return out, nil
}

// compareObjects prints, role by role, whether ours and upstream's object
// are equal once normalised, or the fields that differ; it returns how many
// were equal and how many roles there were.
func compareObjects(w io.Writer, ours, upstream map[string]object) (equal, total int) {
	sorted := sortedKeys(ours, upstream)
	oursNames, upNames := nameRoles(ours), nameRoles(upstream)
	for _, role := range sorted {
		a, inOurs := ours[role]
		b, inUp := upstream[role]
		switch {
		case !inOurs:
			fmt.Fprintf(w, "%-45s only upstream makes it (%s)\n", role, b.obj.GetKind())
			continue
		case !inUp:
			fmt.Fprintf(w, "%-45s only ours makes it (%s)\n", role, a.obj.GetKind())
			continue
		}
		fa, fb := flatten(normalise(a.obj, oursNames)), flatten(normalise(b.obj, upNames))
		var diffs []string
		for _, p := range sortedKeys(fa, fb) {
			va, okA := fa[p]
			vb, okB := fb[p]
			switch {
			case !okA:
				diffs = append(diffs, fmt.Sprintf("    %s: only upstream: %s", p, short(vb)))
			case !okB:
				diffs = append(diffs, fmt.Sprintf("    %s: only ours: %s", p, short(va)))
			case va != vb:
				diffs = append(diffs, fmt.Sprintf("    %s: ours %s, upstream %s", p, short(va), short(vb)))
			}
		}
		if a.obj.GetAPIVersion() != b.obj.GetAPIVersion() || a.obj.GetKind() != b.obj.GetKind() {
			diffs = append([]string{fmt.Sprintf("    kind: ours %s %s, upstream %s %s", a.obj.GetAPIVersion(), a.obj.GetKind(), b.obj.GetAPIVersion(), b.obj.GetKind())}, diffs...)
		}
		if len(diffs) == 0 {
			equal++
			fmt.Fprintf(w, "%-45s equal (%s)\n", role, a.obj.GetKind())
			continue
		}
		fmt.Fprintf(w, "%-45s %d field(s) differ (%s)\n%s\n", role, len(diffs), a.obj.GetKind(), strings.Join(diffs, "\n"))
	}
	return equal, len(sorted)
}

// nameRoles maps each generated object's name (random suffix and all) to
// its role, so that names compare by what they name.
func nameRoles(objs map[string]object) map[string]string {
	out := map[string]string{}
	for role, o := range objs {
		// A MachineHealthCheck is named after what it checks.
		if role != "Cluster" && o.obj.GetKind() != "MachineHealthCheck" {
			out[o.obj.GetName()] = "<" + role + ">"
		}
	}
	return out
}

// normalise drops what the API server sets and what differs by nature
// (namespace, uids, random names) from a copy of o.
func normalise(o *unstructured.Unstructured, names map[string]string) any {
	c := o.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "namespace", "name"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	// Owners compare by kind and name: the version a reference was written
	// in, its uid and flags are not what is generated. The Cluster's owner
	// (our Topology) and its spec.topology are each side's input.
	var owners []any
	for _, r := range c.GetOwnerReferences() {
		owners = append(owners, r.Kind+"/"+r.Name)
	}
	unstructured.RemoveNestedField(c.Object, "metadata", "ownerReferences")
	if len(owners) > 0 && c.GetKind() != "Cluster" {
		c.Object["metadata"].(map[string]any)["ownerReferences"] = owners
	}
	if c.GetKind() == "Cluster" {
		unstructured.RemoveNestedField(c.Object, "spec", "topology")
	}
	// Finalizers are a set; a provider's endpoint is the port it happened
	// to allocate.
	if f := c.GetFinalizers(); len(f) > 0 {
		sort.Strings(f)
		c.SetFinalizers(f)
	}
	if _, found, _ := unstructured.NestedMap(c.Object, "spec", "controlPlaneEndpoint"); found {
		_ = unstructured.SetNestedField(c.Object, "<set by the provider>", "spec", "controlPlaneEndpoint")
	}
	ns := o.GetNamespace()
	longest := make([]string, 0, len(names))
	for n := range names {
		longest = append(longest, n)
	}
	sort.Slice(longest, func(i, j int) bool { return len(longest[i]) > len(longest[j]) })
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		case string:
			for _, n := range longest {
				t = strings.ReplaceAll(t, n, names[n])
			}
			return strings.ReplaceAll(t, ns, "<namespace>")
		}
		return v
	}
	return walk(c.Object)
}

// flatten turns a JSON value into dotted paths and their JSON leaves.
func flatten(v any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out[prefix] = "{}"
			}
			for k, e := range t {
				walk(prefix+"."+k, e)
			}
		case []any:
			if len(t) == 0 {
				out[prefix] = "[]"
			}
			for i, e := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), e)
			}
		default:
			data, _ := json.Marshal(t)
			out[prefix] = string(data)
		}
	}
	walk("", v)
	return out
}

// sortedKeys are the keys of a and b together, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	all := make(map[string]V, len(a)+len(b))
	maps.Copy(all, a)
	maps.Copy(all, b)
	return slices.Sorted(maps.Keys(all))
}

func short(s string) string {
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return s
}

// machine is what the upgrade order is read from.
type machine struct {
	part, version, phase string
	created              time.Time
}

func machines(ctx context.Context, k8s client.Client, s side) ([]machine, error) {
	items, err := list(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Machine"}, s.cluster)
	if err != nil {
		return nil, err
	}
	out := make([]machine, 0, len(items))
	for _, m := range items {
		part := m.GetLabels()["topology.cluster.x-k8s.io/deployment-name"]
		if _, cp := m.GetLabels()["cluster.x-k8s.io/control-plane"]; cp {
			part = "control-plane"
		}
		version, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
		out = append(out, machine{part: part, version: version, phase: phase, created: m.GetCreationTimestamp().Time})
	}
	return out, nil
}

// waitMachines waits until the want machines of side's cluster run version.
func waitMachines(ctx context.Context, k8s client.Client, s side, want int64, version string, timeout time.Duration) error {
	var last string
	said := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if time.Since(said) > 30*time.Second {
			fmt.Printf("  %s: %s\n", s.label, last)
			said = time.Now()
		}
		ms, err := machines(ctx, k8s, s)
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		running := int64(0)
		for _, m := range ms {
			if m.version == version && m.phase == "Running" {
				running++
			}
		}
		last = fmt.Sprintf("%d of %d machines running %s, %d in all", running, want, version, len(ms))
		return running == want && int64(len(ms)) == want, nil
	})
	if err != nil {
		return fmt.Errorf("%s: %s after %v", s.label, last, timeout)
	}
	return nil
}

// setVersion upgrades both sides at once: the Cluster's topology upstream,
// the Topology ours.
func setVersion(ctx context.Context, k8s client.Client, up, ours side, version string, timeout time.Duration) error {
	// Each side's admission refuses a version change while its control
	// plane is not stable yet; ask again until it is.
	patch := func(gvk schema.GroupVersionKind, ns, name, body string) error {
		o := &unstructured.Unstructured{}
		o.SetGroupVersionKind(gvk)
		o.SetNamespace(ns)
		o.SetName(name)
		var last error
		err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			last = k8s.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(body)))
			return last == nil, nil
		})
		if err != nil {
			return last
		}
		return nil
	}
	if err := patch(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}, up.namespace, up.cluster,
		fmt.Sprintf(`{"spec":{"topology":{"version":%q}}}`, version)); err != nil {
		return fmt.Errorf("upgrading upstream's Cluster: %w", err)
	}
	if err := patch(schema.GroupVersionKind{Group: "topology.kubectl-topology.io", Version: "v1alpha2", Kind: "Topology"}, ours.namespace, ours.cluster,
		fmt.Sprintf(`{"spec":{"version":%q}}`, version)); err != nil {
		return fmt.Errorf("upgrading our Topology: %w", err)
	}
	return nil
}

// rollOrder lists the parts in the order their first machine at version
// was created.
func rollOrder(ctx context.Context, k8s client.Client, s side, version string) ([]string, error) {
	ms, err := machines(ctx, k8s, s)
	if err != nil {
		return nil, err
	}
	first := map[string]time.Time{}
	for _, m := range ms {
		if t, ok := first[m.part]; m.version == version && (!ok || m.created.Before(t)) {
			first[m.part] = m.created
		}
	}
	parts := make([]string, 0, len(first))
	for p := range first {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool {
		if !first[parts[i]].Equal(first[parts[j]]) {
			return first[parts[i]].Before(first[parts[j]])
		}
		return parts[i] < parts[j]
	})
	return parts, nil
}

// nextMinor is the first patch of the minor after v.
func nextMinor(v string) string {
	sv, err := engine.ParseVersion(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("v%d.%d.0", sv.Major, sv.Minor+1)
}

// v1beta2QuickStart assembles a case of upstream v1.14.2's own quick-start
// ClusterClass, as its e2e tests ship it in v1beta2, with the v1beta2 Cluster
// of testdata/upstream-v1beta2. The class's ${VAR:-default} placeholders take
// their defaults, as clusterctl would substitute them.
func v1beta2QuickStart(ctx context.Context) (string, error) {
	mod, err := localcluster.ModuleDir(ctx, "sigs.k8s.io/cluster-api/test@"+localcluster.ProvidersVersion)
	if err != nil {
		return "", err
	}
	class, err := os.ReadFile(filepath.Join(mod, "e2e", "data", "infrastructure-docker", "main", "clusterclass-quick-start.yaml"))
	if err != nil {
		return "", err
	}
	cluster, err := os.ReadFile("testdata/upstream-v1beta2/quick-start-cluster.yaml")
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "parity-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "quick-start-v1beta2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	placeholder := regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)
	if err := os.WriteFile(filepath.Join(dir, "class.yaml"), placeholder.ReplaceAll(class, []byte("$1")), 0o644); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "cluster.yaml"), cluster, 0o644)
}
