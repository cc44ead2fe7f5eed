package desiredstate

import (
	"context"
	"maps"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1" //nolint:staticcheck // an older management cluster stores MachineHealthChecks at v1beta1; upstream's conversion writes them
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/apply"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/lifecycle"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/patches"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// setOwners decides who owns generated objects. Ours: the CAPI Cluster once it
// exists, the Topology before. Upstream's: the Cluster, and a shim Secret for a
// new InfrastructureCluster and control plane until the Cluster references them.
func (c *computation) setOwners() {
	if c.in.Dialect == contract.DialectUpstream {
		uid := ""
		if c.current.Cluster != nil {
			uid = string(c.current.Cluster.GetUID())
		}
		c.owner = &metav1.OwnerReference{APIVersion: c.core().APIVersion(), Kind: "Cluster", Name: c.cluster, UID: types.UID(uid)}
		if c.current.Cluster == nil || !hasRefs(c.current.Cluster) {
			c.shim = &metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: c.cluster + "-shim"}
		}
		return
	}
	if c.current.Cluster != nil && c.current.Cluster.GetUID() != "" {
		c.owner = &metav1.OwnerReference{APIVersion: c.core().APIVersion(), Kind: "Cluster", Name: c.cluster, UID: c.current.Cluster.GetUID()}
		return
	}
	c.owner = topologyOwner(c.topo, false)
}

func topologyOwner(t *v1alpha2.Topology, controller bool) *metav1.OwnerReference {
	ref := &metav1.OwnerReference{APIVersion: v1alpha2.GroupVersion.String(), Kind: v1alpha2.TopologyKind, Name: t.Name, UID: t.UID}
	if controller {
		yes := true
		ref.Controller, ref.BlockOwnerDeletion = &yes, &yes
	}
	return ref
}

func hasRefs(cluster *unstructured.Unstructured) bool {
	_, infra, _ := unstructured.NestedMap(cluster.Object, "spec", "infrastructureRef")
	_, cp, _ := unstructured.NestedMap(cluster.Object, "spec", "controlPlaneRef")
	return infra && cp
}

// labels and annotations of the control plane object and its Machines.
func (c *computation) controlPlaneMetadata() (map[string]string, map[string]string) {
	labels := mergeMaps(c.topo.Spec.ControlPlane.Metadata.Labels, c.class.Spec.ControlPlane.Metadata.Labels)
	labels[clusterv1.ClusterNameLabel] = c.cluster
	labels[clusterv1.ClusterTopologyOwnedLabel] = ""
	annotations := mergeMaps(c.topo.Spec.ControlPlane.Metadata.Annotations, c.class.Spec.ControlPlane.Metadata.Annotations)
	return labels, annotations
}

func (c *computation) workerMetadata(topo v1alpha2.ObjectMeta, class v1alpha2.ObjectMeta, nameLabel, name string) (map[string]string, map[string]string) {
	annotations := mergeMaps(topo.Annotations, class.Annotations)
	// The upgrade sequencing annotations steer the agent; they are not for the pool.
	delete(annotations, clusterv1.ClusterTopologyHoldUpgradeSequenceAnnotation)
	delete(annotations, clusterv1.ClusterTopologyDeferUpgradeAnnotation)
	labels := mergeMaps(topo.Labels, class.Labels)
	labels[clusterv1.ClusterNameLabel] = c.cluster
	labels[clusterv1.ClusterTopologyOwnedLabel] = ""
	labels[nameLabel] = name
	return labels, annotations
}

func (c *computation) clusterLabels() (map[string]string, map[string]string) {
	if c.in.Dialect == contract.DialectUpstream {
		labels := mergeMaps(c.current.Cluster.GetLabels())
		labels[clusterv1.ClusterNameLabel] = c.cluster
		labels[clusterv1.ClusterTopologyOwnedLabel] = ""
		return labels, c.current.Cluster.GetAnnotations()
	}
	labels := mergeMaps(c.topo.Labels)
	labels[clusterv1.ClusterNameLabel] = c.cluster
	labels[clusterv1.ClusterTopologyOwnedLabel] = ""
	annotations := mergeMaps(c.topo.Annotations)
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	// The agent's own marks are about the Topology, not for its Cluster:
	// that it made the Cluster, and the lifecycle hooks' bookkeeping.
	delete(annotations, v1alpha2.ClusterMadeAnnotation)
	delete(annotations, runtimev1.PendingHooksAnnotation)
	delete(annotations, runtimev1.OkToDeleteAnnotation)
	return labels, annotations
}

func metaOrNil(labels, annotations map[string]string) *v1alpha2.ObjectMeta {
	if len(labels) == 0 && len(annotations) == 0 {
		return nil
	}
	return &v1alpha2.ObjectMeta{Labels: labels, Annotations: annotations}
}

// applyPatches patches copies of the class templates with the builtins of
// each use, before objects are built from them.
func (c *computation) applyPatches(ctx context.Context) error {
	cs := c.class.Spec
	clusterLabels, clusterAnnotations := c.clusterLabels()
	classNS := c.topo.GetClassKey().Namespace
	clusterUID := ""
	if c.current.Cluster != nil {
		clusterUID = string(c.current.Cluster.GetUID())
	}
	common := patches.Builtins{Cluster: &patches.ClusterBuiltins{
		Name:      c.cluster,
		Namespace: c.ns,
		UID:       clusterUID,
		Metadata:  metaOrNil(clusterLabels, clusterAnnotations),
		Topology:  &patches.ClusterTopology{Version: c.topo.Spec.Version, Class: c.topo.Spec.ClassRef.Name, ClassNamespace: classNS},
		Network:   networkBuiltins(c.topo.Spec.ClusterNetwork),
	}}

	cpLabels, cpAnnotations := c.controlPlaneMetadata()
	cpObjLabels := mergeMaps(cpLabels, templateLabels(c.tmpl.controlPlane))
	cpObjAnnotations := mergeMaps(cpAnnotations, templateAnnotations(c.tmpl.controlPlane))
	cpObjAnnotations[clusterv1.TemplateClonedFromNameAnnotation] = c.tmpl.controlPlane.GetName()
	cpObjAnnotations[clusterv1.TemplateClonedFromGroupKindAnnotation] = contract.GroupKindOf(c.tmpl.controlPlane.GetAPIVersion(), c.tmpl.controlPlane.GetKind())
	cpb := &patches.ControlPlaneBuiltins{
		Version:  c.sequence.ControlPlane.Version,
		Name:     c.plan.controlPlane,
		Metadata: metaOrNil(cpObjLabels, cpObjAnnotations),
	}
	if r := c.topo.Spec.ControlPlane.Replicas; r != nil {
		n := int64(*r)
		cpb.Replicas = &n
	}
	if c.tmpl.cpMachineInfra != nil {
		cpb.MachineTemplate = &patches.ControlPlaneMachines{InfrastructureRef: patches.NameRef{Name: c.plan.cpMachineInfra}}
	}
	cpBuiltins := &patches.Builtins{ControlPlane: cpb}
	var cpOverrides []v1alpha2.ClusterVariable
	if v := c.topo.Spec.ControlPlane.Variables; v != nil {
		cpOverrides = v.Overrides
	}

	c.patched = patchedTemplates{
		infraCluster: c.tmpl.infraCluster.DeepCopy(),
		controlPlane: c.tmpl.controlPlane.DeepCopy(),
	}
	// Holders are what external patches are told: the object that will refer
	// to what is made from the template, and by which field.
	clusterHolder := func(fieldPath string) patches.Holder {
		return patches.Holder{APIVersion: c.core().APIVersion(), Kind: "Cluster", Namespace: c.ns, Name: c.cluster, FieldPath: fieldPath}
	}
	targets := []*patches.Target{
		{Object: c.patched.infraCluster, Role: patches.InfrastructureCluster, Description: "InfrastructureCluster template " + c.tmpl.infraCluster.GetName(),
			Holder: clusterHolder("spec.infrastructureRef")},
		{Object: c.patched.controlPlane, Role: patches.ControlPlane, Builtins: cpBuiltins, Overrides: cpOverrides, Description: "control plane template " + c.tmpl.controlPlane.GetName(),
			Holder: clusterHolder("spec.controlPlaneRef")},
	}
	if c.tmpl.cpMachineInfra != nil {
		c.patched.cpMachineInfra = c.tmpl.cpMachineInfra.DeepCopy()
		targets = append(targets, &patches.Target{Object: c.patched.cpMachineInfra, Role: patches.ControlPlaneMachineInfrastructure, Builtins: cpBuiltins, Overrides: cpOverrides, Description: "control plane machine template " + c.tmpl.cpMachineInfra.GetName(),
			Holder: patches.Holder{APIVersion: c.tmpl.controlPlane.GetAPIVersion(), Kind: contract.TrimTemplateSuffix(c.tmpl.controlPlane.GetKind()), Namespace: c.ns, Name: c.plan.controlPlane, FieldPath: "spec.machineTemplate.infrastructureRef"}})
	}
	for _, p := range c.pools {
		labels, annotations := c.workerMetadata(p.metadata(), p.tmpl.metadata, p.nameLabel(), p.name())
		b := &patches.WorkerBuiltins{
			Version:           p.decision.Version,
			Metadata:          metaOrNil(labels, annotations),
			Class:             p.className(),
			Name:              p.names.object,
			TopologyName:      p.name(),
			Bootstrap:         &patches.BootstrapRef{ConfigRef: &patches.NameRef{Name: p.names.bootstrap}},
			InfrastructureRef: &patches.NameRef{Name: p.names.infrastructure},
		}
		if r := p.replicas(); r != nil {
			n := int64(*r)
			b.Replicas = &n
		}
		builtins := p.builtins(b)
		p.bootstrap, p.infrastructure = p.tmpl.bootstrap.DeepCopy(), p.tmpl.infrastructure.DeepCopy()
		bootstrapRole, infraRole := p.roles()
		what := p.kind() + " " + p.name()
		holder := func(fieldPath string) patches.Holder {
			return patches.Holder{APIVersion: c.core().APIVersion(), Kind: p.kind(), Namespace: c.ns, Name: p.names.object, FieldPath: fieldPath}
		}
		targets = append(targets,
			&patches.Target{Object: p.bootstrap, Role: bootstrapRole, WorkerClass: p.className(), Builtins: builtins, Overrides: p.overrides(), Description: what + " bootstrap template " + p.tmpl.bootstrap.GetName(),
				Holder: holder("spec.template.spec.bootstrap.configRef")},
			&patches.Target{Object: p.infrastructure, Role: infraRole, WorkerClass: p.className(), Builtins: builtins, Overrides: p.overrides(), Description: what + " infrastructure template " + p.tmpl.infrastructure.GetName(),
				Holder: holder("spec.template.spec.infrastructureRef")},
		)
	}
	err := patches.Apply(ctx, patches.Input{Patches: cs.Patches, Variables: c.vars, Builtins: common, Targets: targets, External: c.in.External})
	if pe, ok := err.(*patches.Error); ok {
		return c.invalid("TopologyClass", c.class, field.ErrorList{field.Invalid(field.NewPath(pe.Field), pe.Patch, pe.Reason())})
	}
	return err
}

func templateLabels(t *unstructured.Unstructured) map[string]string {
	m, _, _ := unstructured.NestedStringMap(t.Object, "spec", "template", "metadata", "labels")
	return m
}

func templateAnnotations(t *unstructured.Unstructured) map[string]string {
	m, _, _ := unstructured.NestedStringMap(t.Object, "spec", "template", "metadata", "annotations")
	return m
}

func networkBuiltins(n *v1alpha2.ClusterNetwork) *patches.ClusterNetwork {
	if n == nil {
		return nil
	}
	out := &patches.ClusterNetwork{}
	if n.ServiceDomain != "" {
		sd := n.ServiceDomain
		out.ServiceDomain = &sd
	}
	if n.Services != nil {
		out.Services = n.Services.CIDRBlocks
	}
	if n.Pods != nil {
		out.Pods = n.Pods.CIDRBlocks
	}
	out.IPFamily = ipFamily(out.Services, out.Pods)
	return out
}

// ipFamily classifies the cluster's CIDR blocks like Cluster API does.
func ipFamily(services, pods []string) string {
	family := func(cidrs []string) string {
		v4, v6 := 0, 0
		for _, c := range cidrs {
			ip, _, err := net.ParseCIDR(c)
			if err != nil {
				return "Invalid"
			}
			if ip.To4() != nil {
				v4++
			} else {
				v6++
			}
		}
		switch {
		case len(cidrs) == 0:
			return ""
		case len(cidrs) > 2:
			return "Invalid"
		case v4 > 0 && v6 > 0:
			return "DualStack"
		case v6 > 0:
			return "IPv6"
		}
		return "IPv4"
	}
	s, p := family(services), family(pods)
	switch {
	case s == "" && p == "":
		return "IPv4"
	case s == "":
		return p
	case p == "":
		return s
	case s != p:
		return "Invalid"
	}
	return s
}

// objectFromTemplate builds an object (e.g. DockerCluster) from a template
// (DockerClusterTemplate): the template's spec.template, the patched spec,
// topology labels and the cloned-from annotations.
func (c *computation) objectFromTemplate(original, patched *unstructured.Unstructured, name string, labels, annotations map[string]string) *unstructured.Unstructured {
	tpl, _, _ := unstructured.NestedMap(original.Object, "spec", "template")
	if tpl == nil {
		tpl = map[string]any{} // v1beta2 omits an empty template
	}
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(tpl)}
	asNewCopy(obj)
	spec, _, _ := unstructured.NestedFieldCopy(patched.Object, "spec", "template", "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	obj.Object["spec"] = spec
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(original.GetAPIVersion())
	}
	if obj.GetKind() == "" {
		obj.SetKind(contract.TrimTemplateSuffix(original.GetKind()))
	}
	obj.SetName(name)
	obj.SetNamespace(c.ns)
	a := mergeMaps(annotations, obj.GetAnnotations())
	a[clusterv1.TemplateClonedFromNameAnnotation] = original.GetName()
	a[clusterv1.TemplateClonedFromGroupKindAnnotation] = contract.GroupKindOf(original.GetAPIVersion(), original.GetKind())
	obj.SetAnnotations(a)
	obj.SetLabels(c.topologyLabels(obj.GetLabels(), labels))
	return obj
}

// topologyLabels lays extra labels and the cluster-name and owned labels over
// the labels an object copied from its template.
func (c *computation) topologyLabels(copied, extra map[string]string) map[string]string {
	l := mergeMaps(extra, copied)
	l[clusterv1.ClusterNameLabel] = c.cluster
	l[clusterv1.ClusterTopologyOwnedLabel] = ""
	return l
}

// templateFromTemplate clones a template for this cluster (e.g. the
// DockerMachineTemplate of a MachineDeployment) with the patched spec.
func (c *computation) templateFromTemplate(original, patched *unstructured.Unstructured, name string, extraLabels map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(original.Object)}
	asNewCopy(obj)
	if spec, found, _ := unstructured.NestedFieldCopy(patched.Object, "spec", "template", "spec"); found {
		_ = unstructured.SetNestedField(obj.Object, spec, "spec", "template", "spec")
	}
	obj.SetLabels(c.topologyLabels(obj.GetLabels(), extraLabels))
	a := mergeMaps(obj.GetAnnotations())
	a[clusterv1.TemplateClonedFromNameAnnotation] = original.GetName()
	a[clusterv1.TemplateClonedFromGroupKindAnnotation] = contract.GroupKindOf(original.GetAPIVersion(), original.GetKind())
	delete(a, corev1.LastAppliedConfigAnnotation)
	// A template read in an older version than the stored one carries its
	// own conversion data; on the clone it would restore the template's
	// fields, not the clone's, and differ from what the clone reads back.
	delete(a, contract.ConversionDataAnnotation)
	obj.SetAnnotations(a)
	c.setOwner(obj, c.owner)
	obj.SetName(name)
	obj.SetNamespace(c.ns)
	return obj
}

// StripServerFields drops what the API server sets on an object and no
// client writes: identity, versions, timestamps, field ownership, status.
// Previews compare objects without them.
func StripServerFields(obj *unstructured.Unstructured) {
	for _, f := range []string{"resourceVersion", "uid", "selfLink", "creationTimestamp", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	delete(obj.Object, "status")
}

// asNewCopy makes obj, a copy of a template, something to create anew: no
// server fields, and not the original's owners or finalizers.
func asNewCopy(obj *unstructured.Unstructured) {
	StripServerFields(obj)
	unstructured.RemoveNestedField(obj.Object, "metadata", "ownerReferences")
	unstructured.RemoveNestedField(obj.Object, "metadata", "finalizers")
}

func (c *computation) setOwner(obj *unstructured.Unstructured, owner *metav1.OwnerReference) {
	if owner == nil {
		return
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{*owner})
}

// carryShim keeps a shim owner reference an existing object already has, so
// that applying the desired state does not drop it.
func (c *computation) carryShim(obj, current *unstructured.Unstructured) {
	if current == nil {
		if c.shim != nil {
			c.setOwner(obj, c.shim)
		}
		return
	}
	for _, r := range current.GetOwnerReferences() {
		if r.Kind == "Secret" && r.Name == c.cluster+"-shim" {
			obj.SetOwnerReferences([]metav1.OwnerReference{r})
		}
	}
}

func (c *computation) computeInfrastructureCluster(context.Context) error {
	obj := c.objectFromTemplate(c.tmpl.infraCluster, c.patched.infraCluster, c.plan.infraCluster, nil, nil)
	if c.in.Dialect == contract.DialectUpstream {
		c.carryShim(obj, c.current.InfrastructureCluster)
	} else {
		c.setOwner(obj, c.owner)
	}
	dropUnsetEndpoint(obj)
	c.desired.InfrastructureCluster = prune(obj)
	return nil
}

// dropUnsetEndpoint leaves an infrastructure cluster's endpoint to its
// provider when the template does not set one. A v1beta1 template read
// through conversion carries it as {host: "", port: 0}; written back, that
// would own the field and clear the endpoint the provider sets.
func dropUnsetEndpoint(obj *unstructured.Unstructured) {
	ep, found, _ := unstructured.NestedMap(obj.Object, "spec", "controlPlaneEndpoint")
	if !found {
		return
	}
	host, _ := ep["host"].(string)
	port, _, _ := unstructured.NestedFieldNoCopy(ep, "port")
	if host == "" && (port == nil || port == int64(0) || port == float64(0)) {
		unstructured.RemoveNestedField(obj.Object, "spec", "controlPlaneEndpoint")
	}
}

func (c *computation) computeControlPlane(context.Context) error {
	cs := c.class.Spec.ControlPlane
	tp := c.topo.Spec.ControlPlane
	labels, annotations := c.controlPlaneMetadata()
	obj := c.objectFromTemplate(c.tmpl.controlPlane, c.patched.controlPlane, c.plan.controlPlane, labels, annotations)
	if c.in.Dialect == contract.DialectUpstream {
		c.carryShim(obj, c.current.ControlPlane.Object)
	} else {
		c.setOwner(obj, c.owner)
	}
	objContract := c.in.Contracts.Of(obj, c.core())
	at := func(field ...string) []string { return contract.MachineTemplatePath(objContract, field...) }
	if c.tmpl.cpMachineInfra != nil {
		tmpl := c.templateFromTemplate(c.tmpl.cpMachineInfra, c.patched.cpMachineInfra, c.plan.cpMachineInfra, nil)
		c.desired.ControlPlane.InfrastructureMachineTemplate = prune(tmpl)
		_ = unstructured.SetNestedField(obj.Object, contract.ContractRef(tmpl, objContract, tmpl.GetAPIVersion()), at("infrastructureRef")...)
		ml, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "machineTemplate", "metadata", "labels")
		ma, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "machineTemplate", "metadata", "annotations")
		meta := map[string]any{}
		if l := mergeMaps(labels, ml); len(l) > 0 {
			meta["labels"] = apply.StringMapToAny(l)
		}
		if a := mergeMaps(annotations, ma); len(a) > 0 {
			meta["annotations"] = apply.StringMapToAny(a)
		}
		_ = unstructured.SetNestedField(obj.Object, meta, "spec", "machineTemplate", "metadata")
	}
	if tp.Replicas != nil {
		_ = unstructured.SetNestedField(obj.Object, int64(*tp.Replicas), "spec", "replicas")
	}
	if gates := firstNonNilList(tp.ReadinessGates, cs.ReadinessGates); gates != nil {
		_ = unstructured.SetNestedField(obj.Object, toMap(gates), at("readinessGates")...)
	}
	if taints := firstNonNilList(tp.Taints, cs.Taints); taints != nil && objContract == contract.ContractV1Beta2 {
		_ = unstructured.SetNestedField(obj.Object, toMap(taints), at("taints")...)
	}
	for field, d := range deletionTimeouts(tp.Deletion, cs.Deletion) {
		if d == nil {
			continue
		}
		if objContract == contract.ContractV1Beta2 {
			_ = unstructured.SetNestedField(obj.Object, int64(*d), at("deletion", field+"Seconds")...)
		} else {
			_ = unstructured.SetNestedField(obj.Object, seconds(d), at(field)...)
		}
	}
	if after := tp.Rollout.After; !after.IsZero() {
		path := []string{"spec", "rolloutAfter"}
		if objContract == contract.ContractV1Beta2 {
			path = []string{"spec", "rollout", "after"}
		}
		_ = unstructured.SetNestedField(obj.Object, after.UTC().Format(time.RFC3339), path...)
	}
	_ = unstructured.SetNestedField(obj.Object, c.sequence.ControlPlane.Version, "spec", "version")
	c.desired.ControlPlane.Object = prune(obj)

	if c.tmpl.cpMachineInfra != nil {
		if mhc, ok := controlPlaneHealthCheck(cs.HealthCheck, tp.HealthCheck); ok {
			c.desired.ControlPlane.MachineHealthCheck = c.machineHealthCheck(obj.GetName(), map[string]string{clusterv1.MachineControlPlaneLabel: "", clusterv1.ClusterTopologyOwnedLabel: ""}, mhc)
		}
	}
	return nil
}

func (c *computation) machineHealthCheck(name string, selector map[string]string, mhc *healthCheck) *unstructured.Unstructured {
	spec := machineHealthCheckSpec(c.cluster, selector, mhc)
	var obj *unstructured.Unstructured
	if c.core().IsV1Beta2() {
		obj = &unstructured.Unstructured{Object: map[string]any{"spec": toMap(spec)}}
	} else {
		obj = &unstructured.Unstructured{Object: map[string]any{"spec": toMap(c.machineHealthCheckSpecV1Beta1(spec))}}
	}
	obj.SetAPIVersion(c.core().APIVersion())
	obj.SetKind("MachineHealthCheck")
	obj.SetName(name)
	obj.SetNamespace(c.ns)
	obj.SetLabels(map[string]string{clusterv1.ClusterNameLabel: c.cluster, clusterv1.ClusterTopologyOwnedLabel: ""})
	c.setOwner(obj, c.owner)
	return obj
}

// machineHealthCheckSpec is the spec as upstream's v1beta2 type. v1beta2
// leaves the remediation trigger unset unless asked (v1beta1 defaulted
// maxUnhealthy to 100%) and defaults only the node startup timeout, as its
// webhook does.
func machineHealthCheckSpec(cluster string, selector map[string]string, mhc *healthCheck) clusterv1.MachineHealthCheckSpec {
	timeout := defaultNodeStartupTimeout
	if mhc.Checks.NodeStartupTimeoutSeconds != nil {
		timeout = *mhc.Checks.NodeStartupTimeoutSeconds
	}
	spec := clusterv1.MachineHealthCheckSpec{
		ClusterName: cluster,
		Selector:    metav1.LabelSelector{MatchLabels: selector},
		Checks:      clusterv1.MachineHealthCheckChecks{NodeStartupTimeoutSeconds: &timeout},
		Remediation: clusterv1.MachineHealthCheckRemediation{
			TriggerIf: clusterv1.MachineHealthCheckRemediationTriggerIf{
				UnhealthyLessThanOrEqualTo: mhc.TriggerIf.UnhealthyLessThanOrEqualTo,
				UnhealthyInRange:           mhc.TriggerIf.UnhealthyInRange,
			},
		},
	}
	for _, u := range mhc.Checks.UnhealthyNodeConditions {
		spec.Checks.UnhealthyNodeConditions = append(spec.Checks.UnhealthyNodeConditions, clusterv1.UnhealthyNodeCondition{Type: u.Type, Status: u.Status, TimeoutSeconds: u.TimeoutSeconds})
	}
	for _, u := range mhc.Checks.UnhealthyMachineConditions {
		spec.Checks.UnhealthyMachineConditions = append(spec.Checks.UnhealthyMachineConditions, clusterv1.UnhealthyMachineCondition{Type: u.Type, Status: u.Status, TimeoutSeconds: u.TimeoutSeconds})
	}
	if r := mhc.TemplateRef; r.IsDefined() {
		spec.Remediation.TemplateRef = clusterv1.MachineHealthCheckRemediationTemplateReference{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name}
	}
	return spec
}

// machineHealthCheckSpecV1Beta1 is spec in the v1beta1 core, through
// upstream's conversion, with what v1beta1's webhook defaults: maxUnhealthy
// 100%, and the remediation template in the MachineHealthCheck's namespace.
func (c *computation) machineHealthCheckSpecV1Beta1(spec clusterv1.MachineHealthCheckSpec) clusterv1beta1.MachineHealthCheckSpec {
	var old clusterv1beta1.MachineHealthCheckSpec
	// The conversion of a spec cannot fail: every field has its place.
	_ = clusterv1beta1.Convert_v1beta2_MachineHealthCheckSpec_To_v1beta1_MachineHealthCheckSpec(&spec, &old, nil)
	if old.MaxUnhealthy == nil { //nolint:staticcheck // v1beta1's own field, defaulted by its webhook: desired must equal live
		maxUnhealthy := defaultMaxUnhealthy
		old.MaxUnhealthy = &maxUnhealthy //nolint:staticcheck // as above
	}
	if old.RemediationTemplate != nil {
		old.RemediationTemplate.Namespace = c.ns
	}
	return old
}

func (c *computation) computeCluster(context.Context) error {
	labels, annotations := c.clusterLabels()
	var obj *unstructured.Unstructured
	if c.in.Dialect == contract.DialectUpstream {
		obj = c.current.Cluster.DeepCopy()
		obj.SetLabels(labels)
		if shim := c.shimSecret(); shim != nil {
			c.desired.Extra = append(c.desired.Extra, shim)
		}
	} else {
		obj = &unstructured.Unstructured{Object: map[string]any{"apiVersion": c.core().APIVersion(), "kind": "Cluster", "spec": map[string]any{}}}
		obj.SetName(c.cluster)
		obj.SetNamespace(c.ns)
		obj.SetLabels(labels)
		if len(annotations) > 0 {
			obj.SetAnnotations(annotations)
		}
		obj.SetOwnerReferences([]metav1.OwnerReference{*topologyOwner(c.topo, true)})
		if n := c.topo.Spec.ClusterNetwork; n != nil {
			_ = unstructured.SetNestedField(obj.Object, toMap(n), "spec", "clusterNetwork")
		}
		if c.topo.Spec.Paused {
			_ = unstructured.SetNestedField(obj.Object, true, "spec", "paused")
		}
		if g := c.class.Spec.AvailabilityGates; len(g) > 0 {
			_ = unstructured.SetNestedField(obj.Object, toMap(g), "spec", "availabilityGates")
		}
	}
	if c.core().IsV1Beta2() {
		c.markUpgradeStep(obj)
		_ = unstructured.SetNestedField(obj.Object, contract.ContractRef(c.desired.InfrastructureCluster, contract.ContractV1Beta2, ""), "spec", "infrastructureRef")
		_ = unstructured.SetNestedField(obj.Object, contract.ContractRef(c.desired.ControlPlane.Object, contract.ContractV1Beta2, ""), "spec", "controlPlaneRef")
	} else {
		_ = unstructured.SetNestedField(obj.Object, keepRefVersion(c.current.Cluster, c.desired.InfrastructureCluster, "spec", "infrastructureRef"), "spec", "infrastructureRef")
		_ = unstructured.SetNestedField(obj.Object, keepRefVersion(c.current.Cluster, c.desired.ControlPlane.Object, "spec", "controlPlaneRef"), "spec", "controlPlaneRef")
	}
	c.desired.Cluster = obj
	return nil
}

// markUpgradeStep sets, while an upgrade is in progress, the version the
// control plane is at on the Cluster, and clears it afterwards, as upstream
// v1.14 does.
//
// With the lifecycle hooks (the agent's Hooks), an upgrade is in progress
// while AfterClusterUpgrade is owed, as upstream reads it with RuntimeSDK
// on; without them, while versions are left to take.
func (c *computation) markUpgradeStep(cluster *unstructured.Unstructured) {
	annotations := cluster.GetAnnotations()
	done := c.sequence.Plan.IsZero()
	if c.in.Hooks != nil {
		done = !c.hooks.Pending.Has(lifecycle.AfterClusterUpgrade)
	}
	if done {
		if _, ok := annotations[clusterv1.ClusterTopologyUpgradeStepAnnotation]; ok {
			delete(annotations, clusterv1.ClusterTopologyUpgradeStepAnnotation)
			cluster.SetAnnotations(annotations)
		}
		return
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[clusterv1.ClusterTopologyUpgradeStepAnnotation] = c.sequence.ControlPlane.Version
	cluster.SetAnnotations(annotations)
}

// shimSecret is upstream's placeholder owner for objects created before the
// Cluster references them; it is only emitted while a reference is missing.
func (c *computation) shimSecret() *unstructured.Unstructured {
	if c.shim == nil {
		return nil
	}
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": string(clusterv1.ClusterSecretType)}}
	s.SetName(c.shim.Name)
	s.SetNamespace(c.ns)
	c.setOwner(s, c.owner)
	return s
}

// keepRefVersion points at obj, but keeps the apiVersion of the reference the
// existing object holds at path when group and kind match: providers may
// move objects to a newer version, and the engine must not undo that.
func keepRefVersion(holder, obj *unstructured.Unstructured, path ...string) map[string]any {
	r := contract.Ref(obj)
	if holder == nil {
		return r
	}
	cur, found, _ := unstructured.NestedMap(holder.Object, path...)
	if !found {
		return r
	}
	curAV, _ := cur["apiVersion"].(string)
	gvCur, err1 := schema.ParseGroupVersion(curAV)
	gvNew, err2 := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err1 == nil && err2 == nil && gvCur.Group == gvNew.Group && cur["kind"] == obj.GetKind() {
		r["apiVersion"] = curAV
	}
	return r
}

// computePools builds each MachineDeployment or MachinePool with its
// bootstrap and infrastructure objects and, for MachineDeployments, its health check.
func (c *computation) computePools(context.Context) error {
	for _, p := range c.pools {
		ws := &clusterstate.Worker{}
		extra := map[string]string{p.nameLabel(): p.name()}
		if p.isDeployment() {
			// MachineDeployments reference cloned templates ...
			ws.Bootstrap = prune(c.templateFromTemplate(p.tmpl.bootstrap, p.bootstrap, p.names.bootstrap, extra))
			ws.Infrastructure = prune(c.templateFromTemplate(p.tmpl.infrastructure, p.infrastructure, p.names.infrastructure, extra))
		} else {
			// ... MachinePools reference objects made from the templates.
			bs := c.objectFromTemplate(p.tmpl.bootstrap, p.bootstrap, p.names.bootstrap, extra, nil)
			inf := c.objectFromTemplate(p.tmpl.infrastructure, p.infrastructure, p.names.infrastructure, extra, nil)
			c.setOwner(bs, c.owner)
			c.setOwner(inf, c.owner)
			ws.Bootstrap, ws.Infrastructure = prune(bs), prune(inf)
		}
		labels, annotations := c.workerMetadata(p.metadata(), p.tmpl.metadata, p.nameLabel(), p.name())
		var curObj *unstructured.Unstructured
		if p.current != nil {
			curObj = p.current.Object
		}
		v1beta2 := c.core().IsV1Beta2()
		machineSpec := map[string]any{
			"clusterName":       c.cluster,
			"version":           p.decision.Version,
			"bootstrap":         map[string]any{"configRef": keepRefVersion(curObj, ws.Bootstrap, contract.PoolBootstrapRefPath...)},
			"infrastructureRef": keepRefVersion(curObj, ws.Infrastructure, contract.PoolInfrastructureRefPath...),
		}
		if v1beta2 {
			machineSpec["bootstrap"] = map[string]any{"configRef": c.poolRef(ws.Bootstrap)}
			machineSpec["infrastructureRef"] = c.poolRef(ws.Infrastructure)
			if t := p.taints(); t != nil {
				machineSpec["taints"] = toMap(t)
			}
		}
		deletion := map[string]any{}
		for field, d := range p.timeouts() {
			switch {
			case d == nil:
			case v1beta2:
				deletion[field+"Seconds"] = int64(*d)
			default:
				machineSpec[field] = seconds(d)
			}
		}
		if len(deletion) > 0 {
			machineSpec["deletion"] = deletion
		}
		templateMeta := map[string]any{"labels": apply.StringMapToAny(labels)}
		if len(annotations) > 0 {
			templateMeta["annotations"] = apply.StringMapToAny(annotations)
		}
		spec := map[string]any{
			"clusterName": c.cluster,
			"template":    map[string]any{"metadata": templateMeta, "spec": machineSpec},
		}
		if r := p.replicas(); r != nil {
			spec["replicas"] = int64(*r)
		}
		if m := p.minReadySeconds(); m != nil && v1beta2 {
			machineSpec["minReadySeconds"] = int64(*m)
		} else if m != nil {
			spec["minReadySeconds"] = int64(*m)
		}
		if p.isDeployment() {
			c.deploymentSpec(p, spec, machineSpec)
		} else if fd := firstNonNilList(p.mp.FailureDomains, p.mpc.FailureDomains); fd != nil {
			spec["failureDomains"] = toMap(fd)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": c.core().APIVersion(), "kind": p.kind(), "spec": spec}}
		obj.SetName(p.names.object)
		obj.SetNamespace(c.ns)
		obj.SetLabels(labels)
		if len(annotations) > 0 {
			obj.SetAnnotations(annotations)
		}
		if c.in.Dialect == contract.DialectTopology {
			c.setOwner(obj, c.owner)
		}
		ws.Object = obj
		if p.isDeployment() {
			if mhc, ok := machineDeploymentHealthCheck(p.mdc.HealthCheck, p.md.HealthCheck); ok {
				ws.MachineHealthCheck = c.machineHealthCheck(p.names.object, map[string]string{clusterv1.ClusterTopologyMachineDeploymentNameLabel: p.name(), clusterv1.ClusterTopologyOwnedLabel: ""}, mhc)
			}
			c.desired.MachineDeployments[p.name()] = ws
		} else {
			c.desired.MachinePools[p.name()] = ws
		}
	}
	return nil
}

// deploymentSpec adds what only MachineDeployments have: the selector,
// strategy, failure domain and readiness gates.
func (c *computation) deploymentSpec(p *pool, spec, machineSpec map[string]any) {
	spec["selector"] = map[string]any{"matchLabels": map[string]any{
		clusterv1.ClusterNameLabel: c.cluster, clusterv1.ClusterTopologyOwnedLabel: "", clusterv1.ClusterTopologyMachineDeploymentNameLabel: p.name(),
	}}
	if c.core().IsV1Beta2() {
		p.rolloutV1Beta2(spec)
	} else if s := p.strategy(); s != nil {
		spec["strategy"] = s
	}
	if fd := firstNonNil(p.md.FailureDomain, p.mdc.FailureDomain); fd != nil {
		machineSpec["failureDomain"] = *fd
	}
	if g := firstNonNilList(p.md.ReadinessGates, p.mdc.ReadinessGates); g != nil {
		machineSpec["readinessGates"] = toMap(g)
	}
}

// firstNonNil returns the topology's value when set, else the class's:
// the override rule of every field a topology can override.
func firstNonNil[T any](topo, class *T) *T {
	if topo != nil {
		return topo
	}
	return class
}

// firstNonNilList is firstNonNil for list fields; an empty list set on the
// topology still overrides.
func firstNonNilList[T any](topo, class []T) []T {
	if topo != nil {
		return topo
	}
	return class
}

// rotateTemplates gives a cloned template a new name when its spec changed:
// templates are immutable by contract, so Machines roll to the new clone and
// the old one is deleted once unused.
func (c *computation) rotateTemplates(context.Context) error {
	rotate := func(cur, desired *unstructured.Unstructured, prefix string) bool {
		if cur == nil || desired == nil || cur.GetName() != desired.GetName() {
			return false
		}
		curSpec, _, _ := unstructured.NestedFieldNoCopy(cur.Object, "spec")
		desSpec, _, _ := unstructured.NestedFieldNoCopy(desired.Object, "spec")
		if apply.Contains(curSpec, desSpec) {
			return false
		}
		desired.SetName(c.names.Simple(prefix))
		if c.rotated == nil {
			c.rotated = map[clusterstate.Key]string{}
		}
		c.rotated[clusterstate.KeyOf(desired)] = cur.GetName()
		return true
	}
	if cp := c.desired.ControlPlane; cp.InfrastructureMachineTemplate != nil {
		if rotate(c.current.ControlPlane.InfrastructureMachineTemplate, cp.InfrastructureMachineTemplate, c.cluster+"-") {
			cpContract := c.in.Contracts.Of(cp.Object, c.core())
			t := cp.InfrastructureMachineTemplate
			_ = unstructured.SetNestedField(cp.Object.Object, contract.ContractRef(t, cpContract, t.GetAPIVersion()), contract.MachineTemplatePath(cpContract, "infrastructureRef")...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.desired.MachineDeployments)) {
		ws := c.desired.MachineDeployments[name]
		cur := c.current.MachineDeployments[name]
		if cur == nil {
			continue
		}
		if rotate(cur.Bootstrap, ws.Bootstrap, c.cluster+"-"+name+"-") {
			_ = unstructured.SetNestedField(ws.Object.Object, c.poolRef(ws.Bootstrap), contract.PoolBootstrapRefPath...)
		}
		if rotate(cur.Infrastructure, ws.Infrastructure, c.cluster+"-"+name+"-") {
			_ = unstructured.SetNestedField(ws.Object.Object, c.poolRef(ws.Infrastructure), contract.PoolInfrastructureRefPath...)
		}
	}
	return nil
}

// seconds renders a v1beta2 seconds field as the duration string its v1beta1
// counterpart holds, the way upstream's conversion does ("5m0s").
func seconds(s *int32) string {
	return (time.Duration(*s) * time.Second).String()
}

// deletionTimeouts are a part's Machine deletion timeouts by their v1beta1
// field names, the topology's winning over the class's one by one.
func deletionTimeouts(topo, class v1alpha2.MachineDeletion) map[string]*int32 {
	return map[string]*int32{
		"nodeDrainTimeout":        firstNonNil(topo.NodeDrainTimeoutSeconds, class.NodeDrainTimeoutSeconds),
		"nodeVolumeDetachTimeout": firstNonNil(topo.NodeVolumeDetachTimeoutSeconds, class.NodeVolumeDetachTimeoutSeconds),
		"nodeDeletionTimeout":     firstNonNil(topo.NodeDeletionTimeoutSeconds, class.NodeDeletionTimeoutSeconds),
	}
}

// poolRef is a pool's reference to one of its templates in the core version.
func (c *computation) poolRef(o *unstructured.Unstructured) map[string]any {
	if c.core().IsV1Beta2() {
		return contract.ContractRef(o, contract.ContractV1Beta2, "")
	}
	return contract.Ref(o)
}

// core is the core API version objects are written in.
func (c *computation) core() contract.CoreVersion { return c.in.CoreVersion.OrDefault() }
