package components_test

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/manifests"
)

// componentObjects parses addon-components.yaml with the watch namespace
// variable substituted as clusterctl would.
func componentObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := components.Transform(manifests.Components, nil, components.Namespace, "")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestComponentsFollowTheClusterctlContract(t *testing.T) {
	byKind := map[string]*unstructured.Unstructured{}
	for _, o := range componentObjects(t) {
		if o.GetLabels()["cluster.x-k8s.io/provider"] != "addon-kubectl-topology" {
			t.Errorf("%s %s lacks the cluster.x-k8s.io/provider label", o.GetKind(), o.GetName())
		}
		byKind[o.GetKind()] = o
	}
	if ns := byKind["Namespace"]; ns == nil || ns.GetName() != "topology-system" {
		t.Fatalf("no topology-system Namespace in the components")
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(byKind["Deployment"].Object, d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "manager" {
		t.Errorf("container %q, the contract wants \"manager\"", c.Name)
	}
	if !strings.Contains(string(manifests.Components), `--namespace=${TOPOLOGY_WATCH_NAMESPACE:=""}`) {
		t.Error("--namespace is not wired to ${TOPOLOGY_WATCH_NAMESPACE:=\"\"}")
	}
	sc, psc := c.SecurityContext, d.Spec.Template.Spec.SecurityContext
	if sc == nil || psc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || len(sc.Capabilities.Drop) != 1 || !*psc.RunAsNonRoot || psc.SeccompProfile == nil {
		t.Errorf("container is not hardened: %+v, pod %+v", sc, psc)
	}
	if c.Resources.Limits.Memory().IsZero() || c.Resources.Requests.Cpu().IsZero() || c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Error("container lacks resource requests/limits or probes")
	}
	var memoryLimit *corev1.ResourceFieldSelector
	for _, e := range c.Env {
		if e.Name == components.MemoryLimitEnv && e.ValueFrom != nil {
			memoryLimit = e.ValueFrom.ResourceFieldRef
		}
	}
	if memoryLimit == nil || memoryLimit.Resource != "limits.memory" || memoryLimit.ContainerName != c.Name {
		t.Errorf("%s is not the container's memory limit from the downward API: %+v", components.MemoryLimitEnv, memoryLimit)
	}
	if !bytes.Contains(manifests.Metadata, []byte("contract: v1beta2")) {
		t.Error("metadata.yaml does not map a release series to contract v1beta2, Cluster API v1.14's")
	}
}

// TestComponentsGrantLeastPrivilege: the agent's role once aggregated Cluster
// API's manager role, and with it every Secret in the cluster and every kind
// of the bootstrap, control plane and infrastructure groups.
func TestComponentsGrantLeastPrivilege(t *testing.T) {
	for _, o := range componentObjects(t) {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatal(err)
		}
		if a := role.AggregationRule; a != nil {
			for _, sel := range a.ClusterRoleSelectors {
				if _, ok := sel.MatchLabels["cluster.x-k8s.io/aggregate-to-manager"]; ok || len(sel.MatchLabels) != 1 || sel.MatchLabels[components.AggregateLabel] != "true" {
					t.Errorf("%s aggregates %v; only roles labelled %s=true may be", role.Name, sel.MatchLabels, components.AggregateLabel)
				}
			}
		}
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				if res == "*" || res == "secrets" {
					t.Errorf("%s grants %v on %s cluster-wide", role.Name, r.Verbs, res)
				}
				writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "update" || v == "patch" || v == "delete" })
				if (res == "customresourcedefinitions" || strings.HasSuffix(res, "webhookconfigurations")) && writes && len(r.ResourceNames) == 0 {
					t.Errorf("%s may change any %s; only its own (resourceNames)", role.Name, res)
				}
			}
			if slices.Contains(r.APIGroups, "*") {
				t.Errorf("%s grants a rule on every API group", role.Name)
			}
		}
	}
}

func TestComponentsAreGeneratedFromTheirSource(t *testing.T) {
	want, err := components.Render(components.DefaultImage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, manifests.Components) || string(manifests.Metadata) != components.Metadata {
		t.Fatal("manifests/ is stale: run make manifests")
	}
}

func TestProviderRoleNamesItsResources(t *testing.T) {
	role := components.ProviderRole("docker", []components.ProviderKinds{{Group: "infrastructure.cluster.x-k8s.io", Resources: []string{"dockerclusters", "dockermachinetemplates"}}})
	if role.Name != "topology-manager-provider-docker" || role.Labels[components.AggregateLabel] != "true" {
		t.Errorf("role %s labels %v", role.Name, role.Labels)
	}
	if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].Resources, []string{"dockerclusters", "dockermachinetemplates"}) {
		t.Errorf("rules %+v", role.Rules)
	}
}

// TestCategoriesShadowNoResourceName: kubectl expands a category before it
// looks a resource up, so a category named like a resource (the old
// `topology`) made `kubectl get topology dev` fail with "you must specify
// only one resource".
func TestCategoriesShadowNoResourceName(t *testing.T) {
	files, err := fs.Glob(manifests.CRDs, "crd/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs embedded: %v", err)
	}
	var crds []apiextensionsv1.CustomResourceDefinition
	names := map[string]string{}
	for _, f := range files {
		data, err := manifests.CRDs.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crds = append(crds, crd)
		n := crd.Spec.Names
		for _, name := range append([]string{n.Singular, n.Plural, strings.ToLower(n.Kind)}, n.ShortNames...) {
			names[name] = crd.Name
		}
	}
	for _, crd := range crds {
		if !slices.Contains(crd.Spec.Names.Categories, "cluster-api") {
			t.Errorf("%s is not in the cluster-api category, so `kubectl get cluster-api` leaves it out", crd.Name)
		}
		for _, c := range crd.Spec.Names.Categories {
			if owner, ok := names[c]; ok {
				t.Errorf("%s's category %q is also a name of %s: `kubectl get %s NAME` would fail", crd.Name, c, owner, c)
			}
		}
	}
}

// TestTransformSetsVariablesOrRefuses: the components as clusterctl reads
// them, variables defaulted; a variable with neither value nor default is
// named.
func TestTransformSetsVariablesOrRefuses(t *testing.T) {
	objs, err := components.Transform(manifests.Components, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	// Namespace, ServiceAccount, the agent's rules, the kubeadm providers'
	// role, the aggregated role and its binding, the leader-election Role and
	// its binding, Service, Deployment, PodDisruptionBudget.
	if len(objs) != 11 {
		t.Errorf("%d objects, want 11", len(objs))
	}
	_, err = components.Transform([]byte("a: ${NEEDED}\n"), nil, "", "")
	if err == nil || !strings.Contains(err.Error(), "NEEDED") {
		t.Errorf("a variable without default and value: got %v, want an error naming it", err)
	}
}

// TestComponentsRunReplicasThatSurviveADrain: two replicas by default, or
// as many as the variable says; spread across nodes where there are
// several; a disruption budget that lets a drain take one at a time.
func TestComponentsRunReplicasThatSurviveADrain(t *testing.T) {
	deployment := func(vars map[string]string) (*appsv1.Deployment, *policyv1.PodDisruptionBudget) {
		t.Helper()
		objs, err := components.Transform(manifests.Components, vars, components.Namespace, "")
		if err != nil {
			t.Fatal(err)
		}
		d, pdb := &appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}
		for _, o := range objs {
			switch o.GetKind() {
			case "Deployment":
				err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d)
			case "PodDisruptionBudget":
				err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, pdb)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return d, pdb
	}
	d, pdb := deployment(nil)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != components.DefaultReplicas || components.DefaultReplicas < 2 {
		t.Errorf("replicas %v by default, want %d (two or more)", d.Spec.Replicas, components.DefaultReplicas)
	}
	if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, "--leader-elect") {
		t.Error("the agent runs several replicas without --leader-elect")
	}
	spread := d.Spec.Template.Spec.TopologySpreadConstraints
	if len(spread) != 1 || spread[0].TopologyKey != corev1.LabelHostname || spread[0].WhenUnsatisfiable != corev1.ScheduleAnyway || !equality.Semantic.DeepEqual(spread[0].LabelSelector, d.Spec.Selector) {
		t.Errorf("spread %+v, want the Deployment's pods across hostnames, scheduled anyway", spread)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil || !equality.Semantic.DeepEqual(pdb.Spec.Selector, d.Spec.Selector) || pdb.Namespace != d.Namespace {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1 over the Deployment's pods", pdb.Spec)
	}
	if d, _ := deployment(map[string]string{components.ReplicasVar: "3"}); *d.Spec.Replicas != 3 {
		t.Errorf("%s=3 gives %d replicas", components.ReplicasVar, *d.Spec.Replicas)
	}
}

// TestAShardHasItsOwnClusterRoles: an agent installed into another namespace
// (a shard) binds its own ClusterRole to its own ServiceAccount, so that a
// second install does not take the first agent's grants away, and its rules
// let it read its own role (the owner of the webhooks it may register).
func TestAShardHasItsOwnClusterRoles(t *testing.T) {
	objs, err := components.Transform(manifests.Components, nil, "topology-team-b", "")
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := components.Transform(manifests.Components, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	for _, u := range defaults {
		if u.GetNamespace() == "" {
			taken[u.GetKind()+"/"+u.GetName()] = true
		}
	}
	var binding rbacv1.ClusterRoleBinding
	readsOwnRole := false
	for _, u := range objs {
		if u.GetNamespace() == "" && taken[u.GetKind()+"/"+u.GetName()] {
			t.Errorf("the shard's %s %s has the default agent's name", u.GetKind(), u.GetName())
		}
		switch u.GetKind() {
		case "ClusterRoleBinding":
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &binding); err != nil {
				t.Fatal(err)
			}
		case "ClusterRole":
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
				t.Fatal(err)
			}
			for _, r := range role.Rules {
				readsOwnRole = readsOwnRole || slices.Equal(r.ResourceNames, []string{components.ManagerRole("topology-team-b")})
			}
		}
	}
	if binding.RoleRef.Name != components.ManagerRole("topology-team-b") || binding.RoleRef.Name == components.ManagerRoleName {
		t.Errorf("the shard's binding refers to %q, want its own role %q", binding.RoleRef.Name, components.ManagerRole("topology-team-b"))
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Namespace != "topology-team-b" {
		t.Errorf("the shard's binding binds %+v, want its ServiceAccount in topology-team-b", binding.Subjects)
	}
	if !readsOwnRole {
		t.Errorf("no rule of the shard lets it get ClusterRole %s", components.ManagerRole("topology-team-b"))
	}
}
