package stock

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/fixture"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestFleetRolloutWritesAgainWhenAWebhookCannotAnswer puts a validating
// webhook in front of the fleet's Topologies that answers the rollout's
// write of the new version with an HTTP 500 three times, as a webhook that
// is restarting does; the API server turns each into an internal error.
// The rollout writes again and completes, the cluster changed once and never
// failed, rather than halting on a failure budget of 0.
func TestFleetRolloutWritesAgainWhenAWebhookCannotAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns, _ := suite.InMemoryFleet(t, "fleet-webhook", "c1")
	suite.Settle(t, ns, "c1")
	topo := &v1alpha2.Topology{}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, topo); err != nil {
		t.Fatal(err)
	}
	generation := topo.Generation
	const version, refusals = "v1.34.0", 3

	hook := &versionRefuser{version: version, refusals: refusals}
	srv := httptest.NewTLSServer(hook)
	t.Cleanup(srv.Close)
	registerWebhook(t, ns, srv)
	// The API server calls a webhook only once its informer has the
	// registration: a dry run of the change reaches it then.
	fixture.Eventually(t, time.Minute, "the API server calls the test's webhook", func(ctx context.Context) (bool, error) {
		probe := &v1alpha2.Topology{}
		if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, probe); err != nil {
			return false, err
		}
		probe.Spec.Version = version
		if err := suite.K8s.Update(ctx, probe, client.DryRunAll); err != nil {
			return false, err
		}
		return hook.probed(), errors.New("a dry run of the change did not reach it")
	})

	name := "webhook-" + ns
	suite.MustTopology(t, "rollout", "create", name, "-l", "fleet="+ns, "--version", version, "--yes")
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	ro := suite.WaitRollout(t, name, fixture.SettleTimeout, "completes or halts", func(ro *v1alpha2.TopologyRollout) bool {
		return ro.Status.Phase == v1alpha2.RolloutCompleted || ro.Status.Phase == v1alpha2.RolloutHalted
	})
	if ro.Status.Phase != v1alpha2.RolloutCompleted {
		t.Fatalf("the rollout did not complete: %s", fixture.RolloutProgress(ro))
	}
	if c := fixture.RolloutCluster(ro, "c1"); c.Phase != v1alpha2.ClusterSucceeded || c.Attempt != 1 {
		t.Errorf("c1: %s after %d attempt(s), want Succeeded after 1", c.Phase, c.Attempt)
	}
	if refused, allowed := hook.counts(); refused != refusals || allowed < 1 {
		t.Errorf("the webhook refused the new version %d time(s) and let it through %d time(s); want %d, then at least 1", refused, allowed, refusals)
	}
	if err := suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, topo); err != nil {
		t.Fatal(err)
	}
	if topo.Spec.Version != version || topo.Generation != generation+1 {
		t.Errorf("c1: version %s at generation %d; want %s written once, at generation %d", topo.Spec.Version, topo.Generation, version, generation+1)
	}
}

// versionRefuser is a validating webhook that answers HTTP 500 to the first
// refusals writes that move a Topology to version, and allows everything
// else. Dry runs of that move are let through and counted.
type versionRefuser struct {
	version  string
	refusals int

	mu               sync.Mutex
	dryRuns          int
	refused, allowed int
}

func (v *versionRefuser) probed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.dryRuns > 0
}

func (v *versionRefuser) counts() (refused, allowed int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.refused, v.allowed
}

func (v *versionRefuser) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	if v.refuse(review.Request) {
		http.Error(w, "restarting", http.StatusInternalServerError)
		return
	}
	allow(w, review)
}

// refuse counts a request that moves a Topology to v.version and tells
// whether it is one of the first v.refusals writes.
func (v *versionRefuser) refuse(req *admissionv1.AdmissionRequest) bool {
	var obj, old struct {
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	_ = json.Unmarshal(req.Object.Raw, &obj)
	_ = json.Unmarshal(req.OldObject.Raw, &old)
	if obj.Spec.Version != v.version || old.Spec.Version == v.version {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case ptr.Deref(req.DryRun, false):
		v.dryRuns++
		return false
	case v.refused < v.refusals:
		v.refused++
		return true
	default:
		v.allowed++
		return false
	}
}

func allow(w http.ResponseWriter, review *admissionv1.AdmissionReview) {
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(review)
}

// registerWebhook sends every update of a Topology in namespace ns to srv,
// failing closed, until the test ends.
func registerWebhook(t *testing.T, ns string, srv *httptest.Server) {
	t.Helper()
	url := srv.URL
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "refuser-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "refuser.test.kubectl-topology.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{v1alpha2.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"topologies"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if err := suite.K8s.Create(context.Background(), cfg); err != nil {
		t.Fatalf("registering the test's webhook: %v", err)
	}
	t.Cleanup(func() { _ = suite.K8s.Delete(context.Background(), cfg) })
}
