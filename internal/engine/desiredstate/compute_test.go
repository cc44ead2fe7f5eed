package desiredstate_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/desiredstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/names"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/upgrade"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// exampleWorld is the example class and topology, with a UID as the API
// server gives it.
type exampleWorld struct {
	ex   fixture.Example
	topo *v1alpha2.Topology
	core contract.CoreVersion
}

func newWorld(t *testing.T) exampleWorld {
	t.Helper()
	ex, err := fixture.LoadExample("default")
	if err != nil {
		t.Fatal(err)
	}
	topo := ex.Topology.DeepCopy()
	topo.UID = "topology-uid"
	return exampleWorld{ex: ex, topo: topo}
}

func (w *exampleWorld) compute(t *testing.T, current []*unstructured.Unstructured) *desiredstate.Result {
	t.Helper()
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{
		Topology: w.topo, Class: w.ex.Class, Templates: clusterstate.NewTemplateIndex(w.ex.Templates...),
		Current: desiredstate.StateFromObjects(w.topo.Name, w.topo.Namespace, current), Names: names.NewSeeded(7),
		CoreVersion: w.core,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// written is what the server holds after desired is written: the Cluster
// with a UID, and a control plane at version, provisioned.
func written(desired *clusterstate.State, version string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range desired.Objects() {
		o = o.DeepCopy()
		o.SetUID(types.UID("uid-" + o.GetName()))
		if o.GetKind() == "KubeadmControlPlane" {
			_ = unstructured.SetNestedField(o.Object, version, "status", "version")
		}
		out = append(out, o)
	}
	return out
}

func TestComputeOwnership(t *testing.T) {
	w := newWorld(t)
	first := w.compute(t, nil)
	for _, o := range first.Desired.Objects() {
		refs := o.GetOwnerReferences()
		switch {
		case o.GetKind() == "Cluster":
			if len(refs) != 1 || refs[0].Kind != "Topology" || refs[0].Controller == nil || !*refs[0].Controller {
				t.Errorf("the Cluster is owned by %v, want the Topology as controller", refs)
			}
		case len(refs) != 1 || refs[0].Kind != "Topology" || refs[0].UID != "topology-uid":
			t.Errorf("before the Cluster exists, %s %s is owned by %v, want the Topology", o.GetKind(), o.GetName(), refs)
		}
	}
	second := w.compute(t, written(first.Desired, w.topo.Spec.Version))
	for _, o := range second.Desired.Objects() {
		if o.GetKind() == "Cluster" {
			continue
		}
		if refs := o.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Cluster" || refs[0].UID != types.UID("uid-dev") {
			t.Errorf("once the Cluster exists, %s %s is owned by %v, want the Cluster", o.GetKind(), o.GetName(), refs)
		}
	}
	if got, want := second.Desired.Cluster.GetName(), "dev"; got != want {
		t.Errorf("Cluster %s, want %s", got, want)
	}
}

func TestComputeRotatesChangedTemplates(t *testing.T) {
	for _, core := range []contract.CoreVersion{contract.CoreV1Beta1, contract.CoreV1Beta2} {
		t.Run(string(core), func(t *testing.T) { testRotation(t, core) })
	}
}

func testRotation(t *testing.T, core contract.CoreVersion) {
	w := newWorld(t)
	w.core = core
	first := w.compute(t, nil)
	current := written(first.Desired, w.topo.Spec.Version)
	steady := w.compute(t, current)
	if len(steady.Rotated) != 0 {
		t.Fatalf("nothing changed, yet %v rotated", steady.Rotated)
	}
	// A class template's spec changes: the MachineDeployments' clones of it
	// get new names; the old ones stay until nothing uses them.
	for _, tpl := range w.ex.Templates {
		if tpl.GetKind() == "DockerMachineTemplate" && tpl.GetName() == "docker-kubeadm-worker" {
			_ = unstructured.SetNestedStringSlice(tpl.Object, []string{"extra:latest"}, "spec", "template", "spec", "preLoadImages")
		}
	}
	changed := w.compute(t, current)
	cur := desiredstate.StateFromObjects("dev", "default", current)
	for _, name := range []string{"md-a", "md-gpu"} {
		old, now := cur.MachineDeployments[name].Infrastructure.GetName(), changed.Desired.MachineDeployments[name].Infrastructure
		if now.GetName() == old {
			t.Errorf("%s's machine template kept its name %s after its spec changed", name, old)
		}
		if changed.Rotated[clusterstate.KeyOf(now)] != old {
			t.Errorf("%s: Rotated says %q replaces %q", name, changed.Rotated[clusterstate.KeyOf(now)], old)
		}
		ref, _, _ := unstructured.NestedMap(changed.Desired.MachineDeployments[name].Object.Object, "spec", "template", "spec", "infrastructureRef")
		if ref["name"] != now.GetName() {
			t.Errorf("%s refers to %s, want the new clone %s", name, ref["name"], now.GetName())
		}
		// v1beta2 names the group only; v1beta1 the apiVersion.
		if _, group := ref["apiGroup"]; group != core.IsV1Beta2() || (ref["apiVersion"] != nil) == core.IsV1Beta2() {
			t.Errorf("%s's reference %v is not a %s reference", name, ref, core)
		}
	}
	if got := changed.Desired.ControlPlane.InfrastructureMachineTemplate.GetName(); got != cur.ControlPlane.InfrastructureMachineTemplate.GetName() {
		t.Error("the control plane's machine template rotated, though its template did not change")
	}
}

func TestComputeHealthChecks(t *testing.T) {
	w := newWorld(t)
	res := w.compute(t, nil)
	cp := res.Desired.ControlPlane
	if cp.MachineHealthCheck == nil || cp.MachineHealthCheck.GetName() != cp.Object.GetName() {
		t.Fatalf("control plane health check %v, want one named after %s", cp.MachineHealthCheck, cp.Object.GetName())
	}
	if v, _, _ := unstructured.NestedString(cp.MachineHealthCheck.Object, "spec", "maxUnhealthy"); v != "33%" {
		t.Errorf("control plane maxUnhealthy %q, want the class's 33%%", v)
	}
	if res.Desired.MachineDeployments["md-a"].MachineHealthCheck == nil {
		t.Error("md-a has no health check though its class defines one")
	}
	if res.Desired.MachineDeployments["md-gpu"].MachineHealthCheck != nil {
		t.Error("md-gpu has a health check though the topology disables it")
	}
}

func TestComputeKeepsTheReferenceVersionsOfTheCluster(t *testing.T) {
	w := newWorld(t)
	first := w.compute(t, nil)
	current := written(first.Desired, w.topo.Spec.Version)
	for _, o := range fixture.OfKind(current, "Cluster") {
		// A provider moved its objects to a newer version; the Cluster says so.
		_ = unstructured.SetNestedField(o.Object, "infrastructure.cluster.x-k8s.io/v1beta2", "spec", "infrastructureRef", "apiVersion")
	}
	res := w.compute(t, current)
	if v, _, _ := unstructured.NestedString(res.Desired.Cluster.Object, "spec", "infrastructureRef", "apiVersion"); v != "infrastructure.cluster.x-k8s.io/v1beta2" {
		t.Errorf("infrastructureRef apiVersion %s, want the provider's v1beta2 kept", v)
	}
}

func TestComputeHoldsBackNewPoolsWhileTheControlPlaneProvisions(t *testing.T) {
	w := newWorld(t)
	first := w.compute(t, nil)
	current := written(first.Desired, "") // the control plane is still being provisioned
	var kept []*unstructured.Unstructured
	for _, o := range current {
		if o.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel] != "md-gpu" {
			kept = append(kept, o) // md-gpu was added after the first pass
		}
	}
	res := w.compute(t, kept)
	pending := res.Pending()
	if len(pending) == 0 {
		t.Fatal("nothing pending")
	}
	for _, p := range pending {
		if p.Part != "MachineDeployment md-gpu" || !strings.Contains(p.Reason, "control plane") {
			t.Errorf("pending %s %s (%s: %s), want only md-gpu's objects, waiting for the control plane", p.Object.GetKind(), p.Object.GetName(), p.Part, p.Reason)
		}
	}
	for _, o := range res.ToApply() {
		if o.GetLabels()[clusterv1.ClusterTopologyMachineDeploymentNameLabel] == "md-gpu" {
			t.Errorf("%s %s of the pending pool is to be applied", o.GetKind(), o.GetName())
		}
	}
	if len(res.ToApply())+len(pending) != len(res.Desired.Objects()) {
		t.Error("ToApply and Pending do not add up to the desired state")
	}
}

func TestAdoptFindsWhatWasMadeBeforeTheCluster(t *testing.T) {
	w := newWorld(t)
	first := w.compute(t, nil)
	var made []*unstructured.Unstructured
	for _, o := range written(first.Desired, "") {
		if o.GetKind() != "Cluster" {
			made = append(made, o) // killed before the Cluster was written
		}
	}
	s := desiredstate.StateFromObjects("dev", "default", made)
	if s.ControlPlane.Object != nil {
		t.Fatal("without a Cluster nothing refers to the control plane")
	}
	desiredstate.Adopt(s, w.ex.Class, w.topo.UID, nil, made)
	if s.ControlPlane.Object == nil || s.InfrastructureCluster == nil || s.ControlPlane.InfrastructureMachineTemplate == nil {
		t.Fatalf("adopted control plane %v, infrastructure %v, machine template %v", s.ControlPlane.Object != nil, s.InfrastructureCluster != nil, s.ControlPlane.InfrastructureMachineTemplate != nil)
	}
	other := desiredstate.StateFromObjects("dev", "default", made)
	desiredstate.Adopt(other, w.ex.Class, types.UID("someone-else"), nil, made)
	if other.ControlPlane.Object != nil {
		t.Error("objects of another owner were adopted")
	}
}

// TestAdoptTakesWhatAnAdoptHandedOverByName: adopt hands upstream's objects
// to the Topology by setting their ownerReference, which the agent's cache
// may not hold yet when it sees the Topology resumed; the names recorded on
// the Topology find them all the same, and nothing else is taken by name.
func TestAdoptTakesWhatAnAdoptHandedOverByName(t *testing.T) {
	w := newWorld(t)
	first := w.compute(t, nil)
	var made []*unstructured.Unstructured
	for _, o := range written(first.Desired, "") {
		if o.GetKind() != "Cluster" {
			o.SetOwnerReferences(nil) // upstream's Cluster owned them; orphaned since
			made = append(made, o)
		}
	}
	infra, cp := first.Desired.InfrastructureCluster, first.Desired.ControlPlane.Object
	topo := w.topo.DeepCopy()
	desiredstate.HandOver(topo,
		map[string]any{"kind": infra.GetKind(), "name": infra.GetName()},
		map[string]any{"kind": cp.GetKind(), "name": cp.GetName()})
	if got := topo.Annotations[v1alpha2.HandedOverAnnotation]; got != infra.GetKind()+"/"+infra.GetName()+","+cp.GetKind()+"/"+cp.GetName() {
		t.Errorf("%s is %q", v1alpha2.HandedOverAnnotation, got)
	}

	s := desiredstate.StateFromObjects("dev", "default", made)
	desiredstate.Adopt(s, w.ex.Class, topo.UID, desiredstate.HandedOver(topo), made)
	if s.InfrastructureCluster == nil || s.InfrastructureCluster.GetName() != infra.GetName() {
		t.Errorf("the handed-over %s %s was not taken: %v", infra.GetKind(), infra.GetName(), s.InfrastructureCluster)
	}
	if s.ControlPlane.Object == nil || s.ControlPlane.Object.GetName() != cp.GetName() || s.ControlPlane.InfrastructureMachineTemplate == nil {
		t.Errorf("the handed-over %s %s (and its machine template) was not taken", cp.GetKind(), cp.GetName())
	}

	unrecorded := desiredstate.StateFromObjects("dev", "default", made)
	desiredstate.Adopt(unrecorded, w.ex.Class, topo.UID, nil, made)
	if unrecorded.InfrastructureCluster != nil || unrecorded.ControlPlane.Object != nil {
		t.Error("objects neither owned nor handed over were taken")
	}
}

// TestComputeTakesAnEmptyV1Beta2Template: v1beta2 omits an empty
// spec.template (a KubeadmConfigTemplate with nothing to configure reads back
// as spec: {}); its clone is an empty template, as upstream makes it.
func TestComputeTakesAnEmptyV1Beta2Template(t *testing.T) {
	w := newWorld(t)
	w.ex.Class.Spec.Patches = nil // they add under spec.template, which must exist for them
	for _, tpl := range w.ex.Templates {
		if tpl.GetKind() == "KubeadmConfigTemplate" {
			tpl.Object["spec"] = map[string]any{}
		}
	}
	res := w.compute(t, nil)
	bs := res.Desired.MachineDeployments["md-a"].Bootstrap
	if bs == nil || bs.GetKind() != "KubeadmConfigTemplate" {
		t.Fatalf("md-a's bootstrap template is %v, want a KubeadmConfigTemplate clone", bs)
	}
	if spec, found, _ := unstructured.NestedMap(bs.Object, "spec", "template", "spec"); found && len(spec) > 0 {
		t.Errorf("the clone of an empty template has spec %v", spec)
	}
}

// TestComputeClonesDropTemplateOnlyAnnotations: a template read in an older
// version carries Cluster API's conversion data, and one applied by kubectl
// its last-applied copy; neither belongs on a clone (the conversion data
// would restore the template's fields on it and make every reconcile write
// it again), while the template's other annotations are kept.
func TestComputeClonesDropTemplateOnlyAnnotations(t *testing.T) {
	w := newWorld(t)
	for _, tpl := range w.ex.Templates {
		tpl.SetAnnotations(map[string]string{
			contract.ConversionDataAnnotation:  `{"spec":{"template":{"spec":{}}}}`,
			corev1.LastAppliedConfigAnnotation: "{}",
			"team.example.com/owner":           "platform",
		})
	}
	res := w.compute(t, nil)
	clones := 0
	for _, o := range res.Desired.Objects() {
		a := o.GetAnnotations()
		if _, cloned := a[clusterv1.TemplateClonedFromNameAnnotation]; !cloned || !strings.HasSuffix(o.GetKind(), "Template") {
			continue
		}
		clones++
		if _, ok := a[contract.ConversionDataAnnotation]; ok {
			t.Errorf("%s %s keeps its template's conversion data", o.GetKind(), o.GetName())
		}
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			t.Errorf("%s %s keeps its template's last-applied copy", o.GetKind(), o.GetName())
		}
		if a["team.example.com/owner"] != "platform" {
			t.Errorf("%s %s lost its template's other annotations: %v", o.GetKind(), o.GetName(), a)
		}
	}
	if clones < 3 {
		t.Fatalf("%d template clones in the desired state, want the control plane's and each pool's", clones)
	}
}

// TestComputeV1Beta2Taints: taints, which only v1beta2 has, reach the
// MachineDeployment's machine spec and, for a control plane on the v1beta2
// contract, spec.machineTemplate.spec; the topology's replace the class's.
func TestComputeV1Beta2Taints(t *testing.T) {
	w := newWorld(t)
	w.core = contract.CoreV1Beta2
	taint := v1alpha2.MachineTaint{Key: "dedicated", Value: "batch", Effect: "NoSchedule", Propagation: "Always"}
	w.ex.Class.Spec.Workers.MachineDeployments[0].Taints = []v1alpha2.MachineTaint{{Key: "class", Effect: "NoSchedule", Propagation: "Always"}}
	w.topo.Spec.Workers.MachineDeployments[0].Taints = []v1alpha2.MachineTaint{taint}
	w.topo.Spec.ControlPlane.Taints = []v1alpha2.MachineTaint{taint}
	res, err := desiredstate.Compute(context.Background(), desiredstate.Input{
		Topology: w.topo, Class: w.ex.Class, Templates: clusterstate.NewTemplateIndex(w.ex.Templates...), Names: names.NewSeeded(7),
		CoreVersion: contract.CoreV1Beta2,
		Contracts:   contract.Contracts{{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}: contract.ContractV1Beta2},
	})
	if err != nil {
		t.Fatal(err)
	}
	md := res.Desired.MachineDeployments["md-a"].Object
	if got, _, _ := unstructured.NestedSlice(md.Object, "spec", "template", "spec", "taints"); len(got) != 1 || got[0].(map[string]any)["key"] != "dedicated" {
		t.Errorf("md-a's machine taints are %v, want the topology's", got)
	}
	cp := res.Desired.ControlPlane.Object
	if got, _, _ := unstructured.NestedSlice(cp.Object, "spec", "machineTemplate", "spec", "taints"); len(got) != 1 {
		t.Errorf("control plane taints are %v, want the topology's under spec.machineTemplate.spec", got)
	}
	if _, found, _ := unstructured.NestedMap(cp.Object, "spec", "machineTemplate", "spec", "infrastructureRef"); !found {
		t.Error("a v1beta2-contract control plane has no spec.machineTemplate.spec.infrastructureRef")
	}
}

// TestComputeChainsAnUpgrade: a version two minors ahead, with the class
// listing the versions between, moves the control plane one minor at a
// time, the workers once at the end, and marks the Cluster with the step
// in progress (v1beta2) until the last pool is there.
func TestComputeChainsAnUpgrade(t *testing.T) {
	w := newWorld(t)
	w.core = contract.CoreV1Beta2
	w.topo.Spec.Version = "v1.32.3"
	w.ex.Class.Spec.KubernetesVersions = []string{"v1.32.3", "v1.33.0", "v1.33.2", "v1.34.1"}
	current := written(w.compute(t, nil).Desired, "v1.32.3")
	w.topo.Spec.Version = "v1.34.1"

	versions := func(res *desiredstate.Result) (cp string, mds []string, step string) {
		cp, _, _ = unstructured.NestedString(res.Desired.ControlPlane.Object.Object, "spec", "version")
		for _, md := range fixture.OfKind(res.Desired.Objects(), "MachineDeployment") {
			v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
			mds = append(mds, v)
		}
		return cp, mds, res.Desired.Cluster.GetAnnotations()[clusterv1.ClusterTopologyUpgradeStepAnnotation]
	}
	steps := []struct {
		cpAt, wantCP, wantStep string
		wantMDs                []string
	}{
		{"v1.32.3", "v1.33.2", "v1.33.2", []string{"v1.32.3", "v1.32.3"}},
		{"v1.33.2", "v1.34.1", "v1.34.1", []string{"v1.32.3", "v1.32.3"}},
		// The workers skip v1.33: two minors behind is within the skew.
		{"v1.34.1", "v1.34.1", "v1.34.1", []string{"v1.34.1", "v1.32.3"}},
	}
	for i, s := range steps {
		res := w.compute(t, current)
		cp, mds, step := versions(res)
		if cp != s.wantCP || step != s.wantStep || strings.Join(mds, " ") != strings.Join(s.wantMDs, " ") {
			t.Fatalf("step %d (control plane at %s): control plane %s, pools %v, upgrade-step %q; want %s, %v, %q (plan %+v)",
				i+1, s.cpAt, cp, mds, step, s.wantCP, s.wantMDs, s.wantStep, res.Sequence.Plan)
		}
		next := s.cpAt
		if i+1 < len(steps) {
			next = steps[i+1].cpAt
		}
		current = written(res.Desired, next)
	}
	// Every pool there: the plan is done and the mark is gone.
	for _, o := range current {
		if o.GetKind() == "MachineDeployment" {
			_ = unstructured.SetNestedField(o.Object, "v1.34.1", "spec", "template", "spec", "version")
		}
	}
	res := w.compute(t, current)
	if _, _, step := versions(res); step != "" || !res.Sequence.Plan.IsZero() {
		t.Errorf("after the upgrade: upgrade-step %q, plan %+v; want neither", step, res.Sequence.Plan)
	}

	// A version the class does not list is refused, saying which it lists.
	w.topo.Spec.Version = "v1.35.0"
	_, err := desiredstate.Compute(context.Background(), desiredstate.Input{
		Topology: w.topo, Class: w.ex.Class, Templates: clusterstate.NewTemplateIndex(w.ex.Templates...),
		Current: desiredstate.StateFromObjects(w.topo.Name, w.topo.Namespace, current), Names: names.NewSeeded(7), CoreVersion: w.core,
	})
	if err == nil || !strings.Contains(err.Error(), `supported values: "v1.32.3", "v1.33.0", "v1.33.2", "v1.34.1"`) {
		t.Errorf("v1.35.0: %v, want a refusal naming kubernetesVersions", err)
	}
}

// TestComputeClusterLeavesTheAgentsMark: a Topology's annotations go to its
// Cluster, but for the marks the agent sets on the Topology (it made the
// Cluster; the lifecycle hooks owed, or let the deletion go on): they say
// something of the Topology, and on the Cluster they would differ from
// upstream's.
func TestComputeClusterLeavesTheAgentsMark(t *testing.T) {
	w := newWorld(t)
	w.topo.SetAnnotations(map[string]string{v1alpha2.ClusterMadeAnnotation: w.topo.Name, "team.example.com/owner": "platform",
		runtimev1.PendingHooksAnnotation: lifecycle.AfterControlPlaneInitialized, runtimev1.OkToDeleteAnnotation: ""})
	res := w.compute(t, nil)
	a := res.Desired.Cluster.GetAnnotations()
	for _, mark := range []string{v1alpha2.ClusterMadeAnnotation, runtimev1.PendingHooksAnnotation, runtimev1.OkToDeleteAnnotation} {
		if _, ok := a[mark]; ok {
			t.Errorf("the Cluster carries the Topology's %s", mark)
		}
	}
	if a["team.example.com/owner"] != "platform" {
		t.Errorf("the Cluster lost the Topology's other annotations: %v", a)
	}
}

// TestComputeHoldsAPartPendingItsUpgrade: a control plane that waits to
// take a new version (here, for a MachineDeployment still rolling) is left
// as it is, its machine template too, though its class template changed,
// as upstream leaves it, so that its Machines roll once, with the version;
// the old template is kept. Once it may take the version, both changes go
// out together.
func TestComputeHoldsAPartPendingItsUpgrade(t *testing.T) {
	w := newWorld(t)
	w.core = contract.CoreV1Beta2
	current := written(w.compute(t, nil).Desired, w.topo.Spec.Version)
	cur := desiredstate.StateFromObjects("dev", "default", current)
	oldTemplate := cur.ControlPlane.InfrastructureMachineTemplate
	w.topo.Spec.Version = "v1.34.0"
	for _, tpl := range w.ex.Templates {
		if tpl.GetKind() == "DockerMachineTemplate" && tpl.GetName() == "docker-kubeadm-control-plane" {
			_ = unstructured.SetNestedStringSlice(tpl.Object, []string{"extra:latest"}, "spec", "template", "spec", "preLoadImages")
		}
	}
	computeWith := func(obs *upgrade.Observed) *desiredstate.Result {
		res, err := desiredstate.Compute(context.Background(), desiredstate.Input{
			Topology: w.topo, Class: w.ex.Class, Templates: clusterstate.NewTemplateIndex(w.ex.Templates...),
			Current: cur, Observed: obs, Names: names.NewSeeded(7), CoreVersion: w.core,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	at := func(v string) upgrade.PartObserved {
		return upgrade.PartObserved{Exists: true, SpecVersion: v, StatusVersion: v}
	}
	pools := map[string]upgrade.PartObserved{}
	for name := range cur.MachineDeployments {
		pools[name] = upgrade.PartObserved{Exists: true, SpecVersion: "v1.33.1"}
	}
	rolling := maps.Clone(pools)
	rolling["md-a"] = upgrade.PartObserved{Exists: true, SpecVersion: "v1.33.1", Upgrading: true}

	held := computeWith(&upgrade.Observed{ControlPlane: at("v1.33.1"), MachineDeployments: rolling})
	if !held.Sequence.ControlPlane.PendingUpgrade {
		t.Fatalf("the control plane waits for md-a, yet is not pending its upgrade: %+v", held.Sequence.ControlPlane)
	}
	for _, o := range held.ToApply() {
		if o.GetKind() == "KubeadmControlPlane" || clusterstate.KeyOf(o) == clusterstate.KeyOf(held.Desired.ControlPlane.InfrastructureMachineTemplate) {
			t.Errorf("%s %s is written while the control plane waits for its upgrade", o.GetKind(), o.GetName())
		}
	}
	kept := false
	for _, o := range held.Held() {
		kept = kept || clusterstate.KeyOf(o) == clusterstate.KeyOf(oldTemplate)
	}
	if !kept {
		t.Errorf("the control plane's template %s in use is not kept while the control plane is held", oldTemplate.GetName())
	}

	free := computeWith(&upgrade.Observed{ControlPlane: at("v1.33.1"), MachineDeployments: pools})
	var wrote []string
	for _, o := range free.ToApply() {
		if o.GetKind() == "KubeadmControlPlane" || clusterstate.KeyOf(o) == clusterstate.KeyOf(free.Desired.ControlPlane.InfrastructureMachineTemplate) {
			wrote = append(wrote, o.GetKind())
		}
	}
	if len(wrote) != 2 || free.Desired.ControlPlane.InfrastructureMachineTemplate.GetName() == oldTemplate.GetName() {
		t.Errorf("once free, the control plane and its new template go out together: wrote %v, template %s (was %s)", wrote, free.Desired.ControlPlane.InfrastructureMachineTemplate.GetName(), oldTemplate.GetName())
	}
}
