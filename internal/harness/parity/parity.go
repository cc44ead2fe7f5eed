// Package parity compares the agent with upstream's own topology controller
// on a live control plane where Cluster API's managers run with the core
// manager's ClusterTopology gate on: each case is applied both as upstream
// ClusterClass + Cluster.spec.topology and, converted by `kubectl topology
// convert`, as TopologyClass + Topology; the objects each side generates are
// read back in their storage versions and compared field by field. Where the
// case's machines can run here (the in-memory backend), both sides are then
// upgraded — to the version in the case's `upgrade` file, or the next minor
// — and the order in which their parts rolled, each intermediate version of
// a chained upgrade included, is compared. `make parity-live` prints it; the
// test/upstream suite judges it.
package parity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
)

// Env is where cases run: a control plane with Cluster API's managers
// (ClusterTopology on) and the agent installed.
type Env struct {
	// K8s reads and writes the control plane; its scheme needs no types.
	K8s client.Client
	// Plugin is the kubectl-topology binary, Kubeconfig the control plane's.
	Plugin, Kubeconfig string
	// Timeout bounds each side's generating, provisioning or upgrading.
	Timeout time.Duration
	// Out receives the report as the comparison goes.
	Out io.Writer
}

// Result is one case's outcome.
type Result struct {
	// Name of the case: its directory's base name.
	Name string
	// Equal and EqualAfter count the objects equal before and after the
	// upgrade, of Objects.
	Equal, EqualAfter, Objects int
	// Order says how the upgrade order compared: same, differs, or not
	// compared (with why).
	Order string
	// Runs is true where the case's machines run here, so that both sides
	// are provisioned and upgraded.
	Runs bool
	// Differing lists each role whose objects differ, with the fields.
	Differing []string
	// SentConversionData lists the roles of objects the agent wrote with
	// Cluster API's conversion annotation: data it must never send, which
	// made it rewrite them on every reconcile.
	SentConversionData []string
	// BothRefused is set when each side's topology controller reported that
	// it failed the case; Refusals holds what each said, upstream's first.
	BothRefused bool
	Refusals    [2]string
}

// side is one way of applying a case: upstream's or ours.
type side struct {
	label, namespace string
	// upstream: the Cluster is reconciled by upstream's topology controller.
	upstream bool
	// cluster is the name of the Cluster both sides generate.
	cluster string
}

// Compare runs the case in dir: its YAML files are upstream's ClusterClass,
// templates and Cluster; an optional file named upgrade holds the version
// to upgrade both sides to.
func Compare(ctx context.Context, env Env, dir string) (Result, error) {
	k8s, timeout, out := env.K8s, env.Timeout, env.Out
	name := filepath.Base(filepath.Clean(dir))
	res := Result{Name: name, Order: "not compared"}
	fmt.Fprintf(out, "\n== %s\n", name)
	c, err := loadCase(ctx, env, dir, name)
	if err != nil {
		return res, err
	}
	up, ours, upObjs, ourObjs, version, want := c.up, c.ours, c.upObjs, c.ourObjs, c.version, c.want
	if err := createNamespaces(ctx, k8s, up, ours); err != nil {
		return res, err
	}
	if err := create(ctx, k8s, up.namespace, upObjs); err != nil {
		return res, err
	}
	if err := create(ctx, k8s, ours.namespace, ourObjs); err != nil {
		return res, err
	}

	start := time.Now()
	// Where no provider here runs the machines, a side may wait for good
	// (a pool's creation deferred until a control plane that never comes
	// up): what it made by then is compared once its condition holds still.
	waitsForMachines := !provisions(upObjs)
	upGen, upErr := generated(ctx, k8s, up, timeout, waitsForMachines)
	fmt.Fprintf(out, "upstream: %d objects generated (%v)%s\n", len(upGen), time.Since(start).Round(time.Second), errNote(upErr))
	start = time.Now()
	ourGen, ourErr := generated(ctx, k8s, ours, timeout, waitsForMachines)
	fmt.Fprintf(out, "ours:     %d objects generated (%v)%s\n", len(ourGen), time.Since(start).Round(time.Second), errNote(ourErr))
	var upFailed, ourFailed *failedError
	if errors.As(upErr, &upFailed) && errors.As(ourErr, &ourFailed) {
		res.BothRefused, res.Refusals = true, [2]string{upFailed.Error(), ourFailed.Error()}
		fmt.Fprintln(out, "both sides refuse the case: nothing to compare")
		return res, nil
	}
	if !provisions(upObjs) {
		if upErr == nil && ourErr == nil {
			// Cluster API's own controllers go on after the topology
			// controllers: upstream's shim Secret leaves the objects it owned
			// once the garbage collector sees it gone, and the MachineDeployment
			// controller adds the Cluster as owner. Compared once that settled.
			upGen, ourGen = settled(ctx, k8s, up, ours, upGen, ourGen)
		}
		res.SentConversionData = sentConversionData(out, ourGen)
		res.Equal, res.Objects, res.Differing = compareObjects(out, ourGen, upGen)
		fmt.Fprintln(out, "upgrade order: not compared (no provider here runs this case's machines)")
		return res, nil
	}
	res.Runs = true
	// Compared once both are provisioned, so that what the providers add
	// to the generated objects is there on both sides.
	for _, s := range []side{up, ours} {
		if err := waitMachines(ctx, k8s, out, s, want, version, timeout, nil); err != nil {
			res.Equal, res.Objects, res.Differing = compareObjects(out, ourGen, upGen)
			res.Order = "not compared (" + s.label + " never provisioned)"
			fmt.Fprintf(out, "upgrade order: %s: %v\n", res.Order, err)
			return res, nil
		}
	}
	if upGen, err = collect(ctx, k8s, up); err != nil {
		return res, err
	}
	if ourGen, err = collect(ctx, k8s, ours); err != nil {
		return res, err
	}
	fmt.Fprintln(out, "Both provisioned:")
	res.SentConversionData = sentConversionData(out, ourGen)
	res.Equal, res.Objects, res.Differing = compareObjects(out, ourGen, upGen)
	target := c.target
	fmt.Fprintf(out, "Upgrading both to %s...\n", target)
	if err := setVersion(ctx, k8s, up, ours, target, timeout); err != nil {
		return res, err
	}
	upgraded := time.Now()
	// Both sides are followed at once, so that each one's time is its own.
	sides := []side{up, ours}
	took := make([]time.Duration, len(sides))
	waited := make([]error, len(sides))
	seen := []*history{{}, {}}
	var wg sync.WaitGroup
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waited[i] = waitMachines(ctx, k8s, out, s, want, target, timeout, seen[i])
			took[i] = time.Since(upgraded)
		}()
	}
	wg.Wait()
	orders := map[string][]string{}
	for i, s := range sides {
		if waited[i] != nil {
			res.Order = "not compared (" + s.label + " did not finish)"
			fmt.Fprintf(out, "upgrade order: %s: %v\n", res.Order, waited[i])
			return res, nil
		}
		orders[s.label] = seen[i].order(version)
		fmt.Fprintf(out, "%s: every machine at %s %v after the version change (polled each second)\n", s.label, target, took[i].Round(time.Second))
	}
	// Compared again once each side's upgrade is over, AfterClusterUpgrade
	// answered (upstream keeps its upgrade-step mark until then): the
	// upgrade rewrote the templates on both sides.
	for _, s := range sides {
		if err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			owed, err := owedHooks(ctx, k8s, s)
			if err != nil || owed != "" {
				return false, nil //nolint:nilerr // asked again until the timeout
			}
			cluster, err := get(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, s.cluster)
			if err != nil {
				return false, nil //nolint:nilerr // asked again until the timeout
			}
			_, marked := cluster.GetAnnotations()[clusterv1.ClusterTopologyUpgradeStepAnnotation]
			return !marked, nil
		}); err != nil {
			return res, fmt.Errorf("%s still owes lifecycle hooks after the upgrade: %w", s.label, err)
		}
	}
	if upGen, err = collect(ctx, k8s, up); err != nil {
		return res, err
	}
	if ourGen, err = collect(ctx, k8s, ours); err != nil {
		return res, err
	}
	fmt.Fprintln(out, "Both upgraded:")
	var after []string
	res.EqualAfter, _, after = compareObjects(out, ourGen, upGen)
	res.Differing = append(res.Differing, after...)
	u, o := strings.Join(orders["upstream"], " → "), strings.Join(orders["ours"], " → ")
	res.Order = "differs"
	if u == o {
		res.Order = "same"
	}
	fmt.Fprintf(out, "upgrade order: %s\n  ours:     %s\n  upstream: %s\n", res.Order, o, u)
	return res, nil
}

// Problems says where the case falls short of parity, or nothing: every
// generated object equal, before and after the upgrade, and the parts
// rolled in the same order, each step of a chain included.
func (r Result) Problems() []string {
	if r.BothRefused {
		return []string{"both sides refused the case"}
	}
	var out []string
	if r.Objects == 0 {
		out = append(out, "no objects were compared")
	}
	if r.Equal != r.Objects {
		out = append(out, fmt.Sprintf("%d of %d objects differ", r.Objects-r.Equal, r.Objects))
	}
	upgraded := r.Order == "same" || r.Order == "differs"
	if upgraded && r.EqualAfter != r.Objects {
		out = append(out, fmt.Sprintf("%d of %d objects differ after the upgrade", r.Objects-r.EqualAfter, r.Objects))
	}
	if r.Runs && r.Order != "same" {
		out = append(out, "upgrade order "+r.Order)
	}
	if len(r.SentConversionData) > 0 {
		out = append(out, "the agent wrote Cluster API's conversion data on "+strings.Join(r.SentConversionData, ", "))
	}
	return out
}

// sentConversionData lists the roles of gen whose field ownership says the
// agent wrote the conversion annotation, and reports them on out. Storage
// versions never show the annotation itself (the webhook consumes it), but
// the ownership of an apply in an older version keeps it.
func sentConversionData(out io.Writer, gen map[string]object) []string {
	var roles []string
	for _, role := range slices.Sorted(maps.Keys(gen)) {
		for _, mf := range gen[role].obj.GetManagedFields() {
			if mf.Manager == apply.FieldManager && mf.FieldsV1 != nil &&
				strings.Contains(mf.FieldsV1.String(), `"f:`+contract.ConversionDataAnnotation+`"`) {
				roles = append(roles, role)
				break
			}
		}
	}
	if len(roles) > 0 {
		fmt.Fprintf(out, "ours: the agent wrote Cluster API's conversion data on %s\n", strings.Join(roles, ", "))
	}
	return roles
}

// settled reads both sides again until their objects compare equal, for at
// most a minute, and returns the last reading of each.
func settled(ctx context.Context, k8s client.Client, up, ours side, upGen, ourGen map[string]object) (map[string]object, map[string]object) {
	_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, errU := collect(ctx, k8s, up)
		o, errO := collect(ctx, k8s, ours)
		if errU != nil || errO != nil {
			return false, nil
		}
		upGen, ourGen = u, o
		equal, total, _ := compareObjects(io.Discard, ourGen, upGen)
		return equal == total, nil
	})
	return upGen, ourGen
}

func errNote(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}

// RunPlugin runs kubectl-topology with the control plane's kubeconfig.
func RunPlugin(plugin, kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(plugin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kubectl topology %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// Decode reads YAML or JSON documents into objects, integers as int64.
func Decode(data []byte) ([]*unstructured.Unstructured, error) {
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
		// A class named in the case's own namespace ("default") is the one
		// made beside it in ns.
		for _, path := range [][]string{{"spec", "topology", "classNamespace"}, {"spec", "topology", "classRef", "namespace"}, {"spec", "classRef", "namespace"}} {
			if v, found, _ := unstructured.NestedString(o.Object, path...); found && v != "" {
				_ = unstructured.SetNestedField(o.Object, ns, path...)
			}
		}
		// A webhook that answers too slowly on a loaded machine fails the
		// create with an internal error; a client asks again, as here.
		err := retry.OnError(wait.Backoff{Duration: time.Second, Factor: 2, Steps: 6}, apierrors.IsInternalError, func() error {
			return k8s.Create(ctx, o)
		})
		if err != nil {
			return fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), ns, o.GetName(), err)
		}
	}
	return nil
}

// provisions says whether this control plane's providers run the case's
// machines: only the Docker provider's in-memory backend can here.
func provisions(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if _, inMemory, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec", "backend", "inMemory"); o.GetKind() == "DevClusterTemplate" && inMemory {
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
func generated(ctx context.Context, k8s client.Client, s side, timeout time.Duration, acceptWaiting bool) (map[string]object, error) {
	var objs map[string]object
	var last error
	var failingSince, waitingSince time.Time
	var waitingFor string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		objs, _ = collect(ctx, k8s, s)
		err := reconciled(ctx, k8s, s)
		if ctx.Err() != nil {
			return false, nil // the deadline's own error says nothing of the case
		}
		var failed *failedError
		var waiting *waitingError
		switch {
		case acceptWaiting && errors.As(err, &waiting):
			if waiting.Error() != waitingFor {
				waitingSince, waitingFor = time.Now(), waiting.Error()
			}
			if time.Since(waitingSince) < 15*time.Second {
				return false, nil
			}
			// What it made before it began to wait, pools it defers aside.
			objs, _ = collect(ctx, k8s, s)
			last = fmt.Errorf("compared as it waits: %w", waiting)
			return true, nil
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
		objs, err = collect(ctx, k8s, s)
		if ctx.Err() == nil {
			last = err
		}
		return err == nil, nil
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
		if gen, _, _ := unstructured.NestedInt64(m, "observedGeneration"); gen == o.GetGeneration() {
			return &waitingError{err}
		}
		return err
	}
	return fmt.Errorf("%s %s: no TopologyReconciled condition yet", gk.Kind, s.cluster)
}

// failedError is a topology controller's report that it failed, as
// opposed to not having got there yet.
type failedError struct{ error }

func (e *failedError) Unwrap() error { return e.error }

// waitingError is a topology controller's report, for the latest
// generation, that it waits for something, e.g. a control plane to come up.
type waitingError struct{ error }

func (e *waitingError) Unwrap() error { return e.error }

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
	// A managed control plane (EKS, AKS, GKE, Kamaji) has no machines, so no
	// machine template; one side without it shows in the ControlPlane's own
	// comparison, and collect runs only once both report reconciled.
	if _, has, _ := unstructured.NestedMap(cp.Object, "spec", "machineTemplate", "spec", "infrastructureRef"); has {
		if _, err := follow("ControlPlane/MachineTemplate", cp, "spec", "machineTemplate", "spec", "infrastructureRef"); err != nil {
			return out, err
		}
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
			if _, err := follow(name+"/"+pool.infraRole, o, contract.PoolInfrastructureRefPath...); err != nil {
				return out, err
			}
			if _, err := follow(name+"/"+pool.bootstrapRole, o, contract.PoolBootstrapRefPath...); err != nil {
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
func compareObjects(w io.Writer, ours, upstream map[string]object) (equal, total int, differing []string) {
	sorted := sortedKeys(ours, upstream)
	oursNames, upNames := nameRoles(ours), nameRoles(upstream)
	for _, role := range sorted {
		a, inOurs := ours[role]
		b, inUp := upstream[role]
		switch {
		case !inOurs:
			fmt.Fprintf(w, "%-45s only upstream makes it (%s)\n", role, b.obj.GetKind())
			differing = append(differing, role+": only upstream makes it")
			continue
		case !inUp:
			fmt.Fprintf(w, "%-45s only ours makes it (%s)\n", role, a.obj.GetKind())
			differing = append(differing, role+": only ours makes it")
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
		differing = append(differing, role+":\n"+strings.Join(diffs, "\n"))
	}
	return equal, len(sorted), differing
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
	// Conversion data is a provider's own bookkeeping of a read in an older
	// version (timestamps and all); whether the agent wrote any is judged
	// apart, from the field managers (SentConversionData).
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", contract.ConversionDataAnnotation)
	// The hooks still owed are bookkeeping upstream keeps on its Cluster and
	// the agent on the Topology; CompareHooks compares the calls themselves.
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", runtimev1.PendingHooksAnnotation)
	if a, found, _ := unstructured.NestedMap(c.Object, "metadata", "annotations"); found && len(a) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
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
	name, part, version, phase string
	created                    time.Time
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
		out = append(out, machine{name: m.GetName(), part: part, version: version, phase: phase, created: m.GetCreationTimestamp().Time})
	}
	return out, nil
}

// waitMachines waits until the want machines of side's cluster run
// version; every machine it sees on the way goes into seen, when given.
func waitMachines(ctx context.Context, k8s client.Client, out io.Writer, s side, want int64, version string, timeout time.Duration, seen *history) error {
	var last string
	said := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		if time.Since(said) > 30*time.Second {
			fmt.Fprintf(out, "  %s: %s\n", s.label, last)
			said = time.Now()
		}
		ms, err := machines(ctx, k8s, s)
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		seen.add(ms)
		running := runningAt(ms, version)
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

// history is every machine a side had during an upgrade, by name: the
// in-memory backend replaces machines in seconds, so each poll adds some.
type history struct {
	mu       sync.Mutex
	machines map[string]machine
}

func (h *history) add(ms []machine) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.machines == nil {
		h.machines = map[string]machine{}
	}
	for _, m := range ms {
		h.machines[m.name] = m
	}
}

// order lists part@version in the order the first machine of each was
// created, leaving out the version the upgrade started from: for a
// chained upgrade it shows each intermediate step.
func (h *history) order(from string) []string {
	first := map[string]time.Time{}
	for _, m := range h.machines {
		if m.version == from {
			continue
		}
		key := m.part + "@" + m.version
		if t, ok := first[key]; !ok || m.created.Before(t) {
			first[key] = m.created
		}
	}
	keys := slices.Collect(maps.Keys(first))
	sort.Slice(keys, func(i, j int) bool {
		if !first[keys[i]].Equal(first[keys[j]]) {
			return first[keys[i]].Before(first[keys[j]])
		}
		return keys[i] < keys[j]
	})
	return keys
}

// nextMinor is the first patch of the minor after v.
func nextMinor(v string) string {
	sv, err := upgrade.ParseVersion(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("v%d.%d.0", sv.Major, sv.Minor+1)
}

// UpstreamQuickStart assembles a case of upstream v1.14.2's own quick-start
// ClusterClass, as its e2e tests ship it in v1beta2, with the v1beta2 Cluster
// of testdata/upstream-v1beta2. The class's ${VAR:-default} placeholders take
// their defaults, as clusterctl would substitute them.
// root is this repository's checkout.
func UpstreamQuickStart(ctx context.Context, root string) (string, error) {
	return upstreamQuickStart(ctx, root, "quick-start-v1beta2", "")
}

// UpstreamQuickStartInline is UpstreamQuickStart converted with every
// template inline, as on a stock cluster whose providers refuse them: the
// objects made from the inline templates must be annotated as cloned from
// the templates they were, as upstream's are.
func UpstreamQuickStartInline(ctx context.Context, root string) (string, error) {
	return upstreamQuickStart(ctx, root, "quick-start-v1beta2-inline", "--inline=all")
}

func upstreamQuickStart(ctx context.Context, root, name, convertFlags string) (string, error) {
	mod, err := localcluster.ModuleDir(ctx, "sigs.k8s.io/cluster-api/test@"+localcluster.ProvidersVersion)
	if err != nil {
		return "", err
	}
	class, err := os.ReadFile(filepath.Join(mod, "e2e", "data", "infrastructure-docker", "main", "clusterclass-quick-start.yaml"))
	if err != nil {
		return "", err
	}
	cluster, err := os.ReadFile(filepath.Join(root, "testdata", "upstream-v1beta2", "quick-start-cluster.yaml"))
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "parity-")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if convertFlags != "" {
		if err := os.WriteFile(filepath.Join(dir, ConvertFlagsFile), []byte(convertFlags+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	placeholder := regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)
	if err := os.WriteFile(filepath.Join(dir, "class.yaml"), placeholder.ReplaceAll(class, []byte("$1")), 0o644); err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, "cluster.yaml"), cluster, 0o644)
}
