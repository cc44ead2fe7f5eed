package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/apiwrites"
	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/controller"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
	topologywebhook "github.com/kubectl-topology/kubectl-topology/internal/webhook"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// refuseKubeadmControlPlanes installs an admission policy refusing the
// creation of KubeadmControlPlanes in ns, as a provider's webhook refusing a
// value the agent cannot know about would; dryRunToo also refuses dry runs.
func refuseKubeadmControlPlanes(t *testing.T, ns string, dryRunToo bool) {
	t.Helper()
	ctx := context.Background()
	expression := "false"
	if !dryRunToo {
		expression = "request.dryRun == true"
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-kcp-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"controlplane.cluster.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"kubeadmcontrolplanes"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: "the provider refuses this control plane"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, binding)
		_ = k8s.Delete(ctx, policy)
	})
	probe := &unstructured.Unstructured{}
	probe.SetGroupVersionKind(schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"})
	probe.SetNamespace(ns)
	probe.SetName("probe")
	_ = unstructured.SetNestedField(probe.Object, "v1.33.1", "spec", "version")
	_ = unstructured.SetNestedMap(probe.Object, map[string]any{}, "spec", "kubeadmConfigSpec")
	_ = unstructured.SetNestedMap(probe.Object, map[string]any{"infrastructureRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "DockerMachineTemplate", "name": "x"}}, "spec", "machineTemplate")
	waitFor(t, "the admission policy is in force", func(ctx context.Context) (bool, error) {
		err := k8s.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil && !dryRunToo {
			err = k8s.Create(ctx, probe.DeepCopy())
			if err == nil {
				_ = k8s.Delete(ctx, probe.DeepCopy())
			}
		}
		return err != nil && strings.Contains(err.Error(), "the provider refuses"), err
	})
}

// countKind counts the objects of kind labelled for cluster name in ns.
func countKind(ctx context.Context, ns, name, kind string) (int, error) {
	objs, err := fixture.Live(ctx, k8s, ns, name)
	n := 0
	for _, o := range objs {
		if o.GetKind() == kind {
			n++
		}
	}
	return n, err
}

// TestOneBadTopologyCreatesAtMostOneTemplate is the etcd flood: a
// Topology whose control plane the API server keeps refusing made a new
// machine template on every attempt, about 20 a second, forever. Now a
// clone of a failed pass is deleted again, after a failed pass the referrer
// is dry-run before its clone is made, failing reconciles back off, and the
// condition carries the API server's own reason. The first pass asks no dry
// run, so a refusal a dry run would show costs one template, once.
func TestOneBadTopologyCreatesAtMostOneTemplate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dryRunToo bool
	}{
		{"refused in a dry run too", true},
		{"refused only when written", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			agent := startAgentBinary(t)
			ex := exampleClass(t, "flood")
			ns := ex.Topology.Namespace
			refuseKubeadmControlPlanes(t, ns, tc.dryRunToo)
			createTopology(t, ex)
			most := 0
			failures := func() float64 {
				return agent.metric(t, "controller_runtime_reconcile_errors_total", `controller="topology"`)
			}
			applies := func() float64 {
				return agent.metric(t, apiwrites.MetricName, `resource="dockermachinetemplates"`, `verb="patch"`, `dry_run="false"`)
			}
			waitFor(t, "the agent has failed once", func(ctx context.Context) (bool, error) {
				n, err := countKind(ctx, ns, "dev", "DockerMachineTemplate")
				most = max(most, n)
				return failures() >= 1, err
			})
			afterFirst := applies()
			waitFor(t, "the agent has failed ten times", func(ctx context.Context) (bool, error) {
				n, err := countKind(ctx, ns, "dev", "DockerMachineTemplate")
				most = max(most, n)
				return failures() >= 10, err
			})
			// Every later attempt writes its clone when only a real write is
			// refused; when a dry run refuses too, none may.
			later := applies() - afterFirst
			if tc.dryRunToo && later != 0 {
				t.Errorf("the agent applied a DockerMachineTemplate %.0f times after the first refusal, want 0: a dry run should have stopped each attempt", later)
			}
			if !tc.dryRunToo && later == 0 {
				t.Errorf("no DockerMachineTemplate applied after the first refusal, though only a real write is refused: the count of applies is not what this test reads")
			}
			if most > 1 {
				t.Errorf("up to %d control plane machine templates existed at once, want at most 1", most)
			}
			if n, err := countKind(ctx, ns, "dev", "DockerMachineTemplate"); err != nil || n > 1 {
				t.Errorf("%d DockerMachineTemplates left (%v), want at most 1", n, err)
			}
			topo := &v1alpha2.Topology{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(ex.Topology), topo); err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(topo.Status.Conditions, controller.ReconciledCondition)
			if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "the provider refuses this control plane") {
				t.Errorf("condition %+v, want it False with the API server's reason", c)
			}
			t.Logf("after %.0f failed reconciles, at most %d template(s) existed at once, %.0f applied after the first failure", failures(), most, later)
		})
	}
}

// TestTopologyIsAlwaysDeletable: a Topology admitted before its class (as
// GitOps tools apply in any order) with a value the class then refuses
// could not be deleted, since every update, even the one removing the
// finalizer, was refused. Neither the agent nor a person is refused now.
func TestTopologyIsAlwaysDeletable(t *testing.T) {
	ctx := context.Background()
	startAgentBinary(t)
	// The templates, not yet the class. (A class deleted and made again
	// would not do: a class owns its templates, as upstream's does, and the
	// garbage collector removes them with it.)
	ex := exampleIn(t, "deletable")
	for _, o := range ex.Templates {
		if err := k8s.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	invalid := func(name string) *v1alpha2.Topology {
		topo := ex.Topology.DeepCopy()
		topo.Name = name
		topo.Spec.Variables = append(topo.Spec.Variables, v1alpha2.ClusterVariable{Name: "maxPods", Value: apiextensionsv1.JSON{Raw: []byte(`"abc"`)}})
		if err := k8s.Create(ctx, topo); err != nil {
			t.Fatalf("a Topology before its class is admitted with a warning, got %v", err)
		}
		waitFor(t, name+" has the agent's finalizer", func(ctx context.Context) (bool, error) {
			got := &v1alpha2.Topology{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(topo), got)
			return err == nil && len(got.Finalizers) > 0, err
		})
		return topo
	}
	byAgent, byHand := invalid("by-agent"), invalid("by-hand")
	if err := k8s.Create(ctx, ex.Class.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent reports the value the class refuses", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(byAgent), got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, controller.ReconciledCondition)
		return c != nil && strings.Contains(c.Message, "spec.variables[maxPods].value"), fmt.Errorf("condition %+v", c)
	})
	deleteAndWait(t, byAgent)

	got := &v1alpha2.Topology{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(byHand), got); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Finalizers = nil
	if err := k8s.Patch(ctx, got, patch); err != nil {
		t.Fatalf("removing the finalizer by hand was refused: %v", err)
	}
	deleteAndWait(t, byHand)
}

// TestWebhookRegistrationsAreRestored: with its webhook configuration
// deleted, the agent admitted anything until restarted. It now restores
// what it installed, and its readiness says when it is not in force.
func TestWebhookRegistrationsAreRestored(t *testing.T) {
	ctx := context.Background()
	agent := startAgentBinary(t)
	ex := exampleClass(t, "restore")
	restored := func(what string, ok func() (bool, error)) {
		t.Helper()
		waitFor(t, what, func(context.Context) (bool, error) { return ok() })
	}

	if err := k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: components.ValidatingWebhookName}}); err != nil {
		t.Fatal(err)
	}
	restored("the validating webhooks are registered again, with their CA", func() (bool, error) {
		v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: components.ValidatingWebhookName}, v); err != nil {
			return false, err
		}
		for _, w := range v.Webhooks {
			if len(w.ClientConfig.CABundle) == 0 {
				return false, fmt.Errorf("%s has no CA bundle", w.Name)
			}
		}
		// Every webhook the agent registers: Topology, TopologyClass, TopologyRollout.
		_, want := topologywebhook.Configurations(func(string) admissionregistrationv1.WebhookClientConfig {
			return admissionregistrationv1.WebhookClientConfig{}
		})
		return len(v.Webhooks) == len(want.Webhooks), fmt.Errorf("%d webhooks registered, want %d", len(v.Webhooks), len(want.Webhooks))
	})
	restored("a bad Topology is refused again", func() (bool, error) {
		topo := ex.Topology.DeepCopy()
		topo.Spec.ClusterNetwork.Pods.CIDRBlocks = []string{"not-a-cidr"}
		err := k8s.Create(ctx, topo)
		if err == nil {
			_ = k8s.Delete(ctx, topo)
		}
		return err != nil && strings.Contains(err.Error(), "spec.clusterNetwork.pods.cidrBlocks[0]"), err
	})

	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: components.MutatingWebhookName}, m); err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	m.Webhooks[0].FailurePolicy = &ignore
	if err := k8s.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	restored("a relaxed failure policy is put back", func() (bool, error) {
		got := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: components.MutatingWebhookName}, got); err != nil {
			return false, err
		}
		p := got.Webhooks[0].FailurePolicy
		return p != nil && *p == admissionregistrationv1.Fail && len(got.Webhooks[0].ClientConfig.CABundle) > 0, fmt.Errorf("failure policy %v", p)
	})

	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "topologyextensions.topology.kubectl-topology.io"}}
	if err := k8s.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	restored("a deleted CRD is installed again", func() (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return false, err
		}
		return got.DeletionTimestamp.IsZero(), nil
	})
	if code, body := agent.readyz("readyz"); code != 200 {
		t.Errorf("the agent is not ready after restoring: %d %s", code, body)
	}
}

// TestAgentNoticesACAChange: after the API server's CA changed, the agent
// logged certificate errors for ever while its probes said all was well. Now
// readiness fails at once and liveness after a grace, so that the kubelet
// restarts it with the new CA.
func TestAgentNoticesACAChange(t *testing.T) {
	ctx := context.Background()
	c, err := localcluster.StartForTests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Cleanup() })
	// The agent keeps the kubeconfig it started with, as a Pod keeps its
	// service account's CA until it restarts.
	own := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, data, 0o600); err != nil {
		t.Fatal(err)
	}
	agent := startAgentBinary(t, "--kubeconfig", own, "--api-server-check-interval", "500ms")

	// make local-down, make local-up: the CA is kept, and the agent goes on
	// serving — its webhooks answer the restarted API server.
	if err := c.Restart(ctx, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	restarted, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agent's webhook refuses a Topology without a class after a restart that keeps the CA", func(ctx context.Context) (bool, error) {
		code, body := agent.readyz("readyz")
		err := restarted.Create(ctx, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-class"}}, client.DryRunAll)
		return code == 200 && err != nil && strings.Contains(err.Error(), "spec.classRef") && !strings.Contains(err.Error(), "failed calling webhook"), fmt.Errorf("readyz %d %s; create: %v", code, body, err)
	})

	if err := c.Restart(ctx, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "readiness fails, and the log says why", func(context.Context) (bool, error) {
		code, body := agent.readyz("readyz")
		return code != 200 && strings.Contains(body, "[-]apiserver failed") && agent.logged("certificate signed by unknown authority"), fmt.Errorf("readyz %d: %s", code, body)
	})
	waitFor(t, "liveness fails once the grace is over", func(context.Context) (bool, error) {
		code, body := agent.readyz("healthz")
		return code != 200 && strings.Contains(body, "[-]apiserver-certificate failed") && agent.logged("restart the agent"), fmt.Errorf("healthz %d: %s", code, body)
	})
	// Killed here: its cleanup must not wait on a control plane it cannot reach.
	agent.kill()
}

// deleteTopologiesAtEnd deletes every Topology in ns when the test ends and
// waits until the agent has let them go. Register it after starting the
// agent: cleanups run last-registered first, so the agent still runs then.
func deleteTopologiesAtEnd(t *testing.T, ns string) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.Background()
		_ = k8s.DeleteAllOf(ctx, &v1alpha2.Topology{}, client.InNamespace(ns))
		waitFor(t, "the Topologies of "+ns+" are deleted", func(ctx context.Context) (bool, error) {
			list := &v1alpha2.TopologyList{}
			err := k8s.List(ctx, list, client.InNamespace(ns))
			return err == nil && len(list.Items) == 0, fmt.Errorf("%d left (%v)", len(list.Items), err)
		})
	})
}

// TestSlowExtensionDoesNotStallTheFleet: an extension that asked for a
// timeout of 68 years and never answered held every worker, so that
// Topologies not using it went unreconciled and deletes stalled. Discovery
// now refuses such a timeout, calls are capped at 30 s, and at most half
// the workers wait on one extension.
func TestSlowExtensionDoesNotStallTheFleet(t *testing.T) {
	ctx := context.Background()
	startAgentBinary(t, "--concurrency", "4")

	greedy := fixture.StartExtensionServer()
	t.Cleanup(greedy.Close)
	greedy.AdvertiseTimeout(2147483647)
	greedyExt := registerExtension(t, "greedy", greedy)
	waitFor(t, "discovery refuses a 68-year timeout", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.TopologyExtension{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: greedyExt}, got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, controller.DiscoveredCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "must be between 0 and 30"), fmt.Errorf("condition %+v", c)
	})

	slow := fixture.StartExtensionServer()
	t.Cleanup(slow.Close)
	t.Cleanup(slow.Release)
	slow.AdvertiseTimeout(30)
	slow.Hang()
	slowExt := registerExtension(t, "slow", slow)
	ex := exampleClass(t, "slow-ext")
	ns := ex.Topology.Namespace
	deleteTopologiesAtEnd(t, ns)
	slowClass := ex.Class.DeepCopy()
	slowClass.Name = "slow"
	slowClass.Spec.Patches = append(slowClass.Spec.Patches, v1alpha2.ClusterClassPatch{Name: "slow", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: ptrTo("generate." + slowExt)}})
	if err := k8s.Create(ctx, slowClass); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		topo := ex.Topology.DeepCopy()
		topo.Name, topo.Spec.ClassRef.Name = fmt.Sprintf("slow-%d", i), "slow"
		if err := k8s.Create(ctx, topo); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "calls to the slow extension hang", func(context.Context) (bool, error) { return slow.InFlight() >= 2, nil })
	unrelated := ex.Topology.DeepCopy()
	unrelated.Name = "unrelated"
	if err := k8s.Create(ctx, unrelated); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a Topology not using the extension reconciles meanwhile", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(unrelated), got); err != nil {
			return false, err
		}
		c, current := fixture.Reconciled(got)
		return current && c.Reason != controller.ReasonFailed, fmt.Errorf("condition %+v", c)
	})
	if n := slow.InFlight(); n == 0 || n > 2 {
		t.Errorf("%d calls to the slow extension under way, want 1 or 2 (half the 4 workers at most)", n)
	}
	deleteAndWait(t, &v1alpha2.Topology{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow-0"}})
	if slow.InFlight() == 0 {
		t.Error("the slow calls ended before the deletion: the test proved nothing")
	}

	broken := fixture.StartExtensionServer()
	t.Cleanup(broken.Close)
	broken.Break()
	brokenExt := registerExtension(t, "broken", broken)
	brokenClass := ex.Class.DeepCopy()
	brokenClass.Name = "broken"
	brokenClass.Spec.Patches = append(brokenClass.Spec.Patches, v1alpha2.ClusterClassPatch{Name: "broken", External: &v1alpha2.ExternalPatchDefinition{GeneratePatchesExtension: ptrTo("generate." + brokenExt)}})
	if err := k8s.Create(ctx, brokenClass); err != nil {
		t.Fatal(err)
	}
	topo := ex.Topology.DeepCopy()
	topo.Name, topo.Spec.ClassRef.Name = "broken-0", "broken"
	if err := k8s.Create(ctx, topo); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failing extension shows on its class", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.TopologyClass{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(brokenClass), got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, controller.ExternalPatchesReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "500"), fmt.Errorf("condition %+v", c)
	})
	waitFor(t, "and on the Topology", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(topo), got); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(got.Status.Conditions, controller.ReconciledCondition)
		return c != nil && strings.Contains(c.Message, "generate."+brokenExt), fmt.Errorf("condition %+v", c)
	})
}

// registerExtension creates a TopologyExtension for srv and waits until the
// agent has looked at it; it is deleted when the test ends.
func registerExtension(t *testing.T, prefix string, srv *fixture.ExtensionServer) string {
	t.Helper()
	ctx := context.Background()
	ext := &v1alpha2.TopologyExtension{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}, Spec: v1alpha2.TopologyExtensionSpec{ClientConfig: srv.ClientConfig()}}
	if err := k8s.Create(ctx, ext); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ext) })
	waitFor(t, "the agent discovers "+ext.Name, func(ctx context.Context) (bool, error) {
		got := &v1alpha2.TopologyExtension{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ext), got); err != nil {
			return false, err
		}
		return meta.FindStatusCondition(got.Status.Conditions, controller.DiscoveredCondition) != nil, nil
	})
	return ext.Name
}

func ptrTo[T any](v T) *T { return &v }

// kubeconfigFor writes a kubeconfig that authenticates with token.
func kubeconfigFor(t *testing.T, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name].ClientCertificateData, cfg.AuthInfos[name].ClientKeyData = nil, nil
		cfg.AuthInfos[name].Token = token
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAgentRunsWithItsOwnRole runs the agent binary as the ServiceAccount
// `kubectl topology install` creates, with only the roles the components
// and install grant it: it builds a cluster, and it cannot read Secrets
// outside its namespace, change other CRDs or webhooks, or touch Cluster API
// kinds it was not granted. Its metrics answer only authorized callers.
func TestAgentRunsWithItsOwnRole(t *testing.T) {
	ctx := context.Background()
	const agentNS = "topology-rbac"
	out := mustPlugin(t, "install", "--wait=false", "--target-namespace", agentNS)
	if !strings.Contains(out, "clusterrole/topology-manager-provider-docker applied") {
		t.Fatalf("install granted no role for the Docker provider:\n%s", out)
	}
	t.Cleanup(func() { mustPlugin(t, "uninstall", "--target-namespace", agentNS) })
	// grant makes the same role again, as after clusterctl init --addon,
	// whose components hold none, and without clusterctl's provider label,
	// so that a clusterctl upgrade of the agent does not delete it.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "topology-manager-provider-docker"}}
	if err := k8s.Delete(ctx, role); err != nil {
		t.Fatal(err)
	}
	if out := mustPlugin(t, "grant"); !strings.Contains(out, "clusterrole/topology-manager-provider-docker applied") {
		t.Fatalf("grant granted no role for the Docker provider:\n%s", out)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if p, ok := role.Labels["cluster.x-k8s.io/provider"]; ok {
		t.Errorf("the granted role carries clusterctl's provider label %q: clusterctl upgrade would delete it", p)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: agentNS, Name: "topology-manager"}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(3600))}}
	if err := k8s.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	agent := startAgentBinary(t, "--kubeconfig", kubeconfigFor(t, token), "--agent-namespace", agentNS, "--metrics-secure=true")

	ex := exampleClass(t, "rbac")
	createTopology(t, ex)
	waitFor(t, "the agent builds the cluster with its own role", func(ctx context.Context) (bool, error) {
		objs, err := fixture.Live(ctx, k8s, ex.Topology.Namespace, "dev")
		return len(objs) >= 8, fmt.Errorf("%s (%v)", fixture.KindCounts(objs), err)
	})

	user := "system:serviceaccount:" + agentNS + ":topology-manager"
	for _, tc := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: agentNS, Verb: "get", Resource: "secrets"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "clusters.cluster.x-k8s.io"}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions", Name: "topologies.topology.kubectl-topology.io"}, true},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "someone-elses"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "infrastructure.cluster.x-k8s.io", Resource: "dockermachinetemplates"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "create", Group: "infrastructure.cluster.x-k8s.io", Resource: "awsclusters"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "default", Verb: "delete", Group: "cluster.x-k8s.io", Resource: "machines"}, false},
	} {
		attrs := tc.attrs
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts"}, ResourceAttributes: &attrs}}
		if err := k8s.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		if sar.Status.Allowed != tc.want {
			t.Errorf("%s %s/%s %s in %q: allowed %v, want %v", attrs.Verb, attrs.Group, attrs.Resource, attrs.Name, attrs.Namespace, sar.Status.Allowed, tc.want)
		}
	}

	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the agent's metrics certificate is self-signed
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", agent.metricPort), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous GET /metrics: %d, want 401 or 403", code)
	}
	if code := get(token); code != http.StatusForbidden {
		t.Errorf("GET /metrics by an identity without the right: %d, want 403", code)
	}
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "topology-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "topology-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: reader.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: agentNS, Name: "topology-manager"}}}
	for _, o := range []client.Object{reader, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), o) })
	}
	waitFor(t, "an authorized caller reads the metrics", func(context.Context) (bool, error) {
		code := get(token)
		return code == http.StatusOK, fmt.Errorf("HTTP %d", code)
	})
}

// TestMetadataUpdatesNeedNoAgent: every update of a Topology went to both
// of its webhooks, the agent's own finalizer and marks included, so that
// with no replica answering (failing closed) not even a finalizer could be
// removed. The webhooks are now asked only about a create, a spec change or
// a change of an annotation they check: the rest is admitted without them,
// and what they check still is, and still fails closed without them.
func TestMetadataUpdatesNeedNoAgent(t *testing.T) {
	ctx := context.Background()
	agent := startAgentBinary(t)
	ex := exampleClass(t, "metadata")
	if err := k8s.Create(ctx, ex.Topology.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(ex.Topology)
	waitFor(t, "the agent has reconciled the Topology", func(ctx context.Context) (bool, error) {
		got := &v1alpha2.Topology{}
		if err := k8s.Get(ctx, key, got); err != nil {
			return false, err
		}
		c, current := fixture.Reconciled(got)
		return len(got.Finalizers) > 0 && current, fmt.Errorf("finalizers %v, condition %+v", got.Finalizers, c)
	})
	update := func(change func(*v1alpha2.Topology)) error { return fixture.ChangeTopology(ctx, k8s, key, change) }
	setAnnotation := func(value string) func(*v1alpha2.Topology) {
		return func(topo *v1alpha2.Topology) {
			if topo.Annotations == nil {
				topo.Annotations = map[string]string{}
			}
			topo.Annotations[clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation] = value
		}
	}
	asked := func() float64 {
		m := agent.metrics(t)
		return m.WebhookRequests(topologywebhook.TopologyDefaultPath) + m.WebhookRequests(topologywebhook.TopologyValidatePath)
	}

	before := asked()
	if err := update(func(topo *v1alpha2.Topology) { topo.Labels = map[string]string{"team": "a"} }); err != nil {
		t.Fatalf("labelling the Topology was refused: %v", err)
	}
	if after := asked(); after != before {
		t.Errorf("a label change was sent to the Topology webhooks (%v requests before, %v after)", before, after)
	}
	if err := update(setAnnotation("abc")); err == nil || !strings.Contains(err.Error(), "upgrade-concurrency") {
		t.Errorf("an upgrade concurrency of abc: got %v, want a refusal naming the annotation", err)
	}
	if err := update(setAnnotation("2")); err != nil {
		t.Fatalf("an upgrade concurrency of 2 was refused: %v", err)
	}

	agent.kill()
	if err := update(func(topo *v1alpha2.Topology) { topo.Labels["team"] = "b" }); err != nil {
		t.Errorf("with no agent answering, a label change was refused: %v", err)
	}
	for name, change := range map[string]func(*v1alpha2.Topology){
		"a version change":            func(topo *v1alpha2.Topology) { topo.Spec.Version = "v1.34.0" },
		"an upgrade concurrency of 3": setAnnotation("3"),
		"removing the upgrade concurrency": func(topo *v1alpha2.Topology) {
			delete(topo.Annotations, clusterv1.ClusterTopologyUpgradeConcurrencyAnnotation)
		},
	} {
		if err := update(change); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Errorf("with no agent answering, %s: got %v, want it refused as the webhook cannot be called", name, err)
		}
	}
	if err := update(func(topo *v1alpha2.Topology) { topo.Finalizers = nil }); err != nil {
		t.Fatalf("with no agent answering, removing the finalizer was refused: %v", err)
	}
	deleteAndWait(t, ex.Topology.DeepCopy())
}
