package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/fleet"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestAnApprovalIsGivenOnlyInTheSendersName: the webhook admits an approval
// added by the user it names, refuses one in another's name, and does not
// judge approvals already there by who sends the update.
func TestAnApprovalIsGivenOnlyInTheSendersName(t *testing.T) {
	old := &v1alpha2.TopologyRollout{}
	old.Name = "prod"
	old.Spec.Change.Version = "v1.35.0"
	old.Spec.Strategy.Waves = []v1alpha2.RolloutWave{{Clusters: intstr.FromInt32(1)}, {Clusters: intstr.FromInt32(1), Approval: true}, {Clusters: intstr.FromString("100%"), Approval: true}}
	as := func(user string) context.Context {
		return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UserInfo: authenticationv1.UserInfo{Username: user}}})
	}
	w := &TopologyRollout{}

	approved := old.DeepCopy()
	approved.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 2, By: "alice"}}
	if _, err := w.ValidateUpdate(as("alice"), old, approved); err != nil {
		t.Errorf("alice approving in her name: %v", err)
	}
	_, err := w.ValidateUpdate(as("mallory"), old, approved)
	if err == nil || !strings.Contains(err.Error(), "spec.approvals[0].by: Forbidden: an approval is given by the user who sends it (mallory), not alice") {
		t.Errorf("mallory approving in alice's name: %v", err)
	}
	// Bob approves wave 3; alice's approval of wave 2 stands as it was.
	both := approved.DeepCopy()
	both.Spec.Approvals = append(both.Spec.Approvals, v1alpha2.RolloutApproval{Wave: 3, By: "bob"})
	if _, err := w.ValidateUpdate(as("bob"), approved, both); err != nil {
		t.Errorf("bob approving wave 3 after alice approved wave 2: %v", err)
	}
	if _, err := w.ValidateUpdate(context.Background(), old, approved); err == nil || !strings.Contains(err.Error(), "the request's user is unknown") {
		t.Errorf("an approval without a request: %v", err)
	}
}

// TestARestoredRolloutIsAdmittedWithoutItsFleet: clusterctl move creates a
// rollout before its clusters, carrying its status in the annotation: the
// webhook admits it without reading the fleet (this one has no reader, as
// none of its clusters is there), approvals of others included, and says so.
// A carried status the agent did not write, or a strategy that is not one,
// is refused by name.
func TestARestoredRolloutIsAdmittedWithoutItsFleet(t *testing.T) {
	ro := &v1alpha2.TopologyRollout{}
	ro.Name = "prod"
	ro.Spec.Change.Version = "v1.35.0"
	ro.Spec.Paused = true
	ro.Spec.Strategy.Waves = []v1alpha2.RolloutWave{{Clusters: intstr.FromInt32(1)}, {Clusters: intstr.FromString("100%"), Approval: true}}
	ro.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 2, By: "alice"}}
	ro.Status.Phase, ro.Status.Wave = v1alpha2.RolloutPaused, 2
	text, err := fleet.Carry(&ro.Status)
	if err != nil {
		t.Fatal(err)
	}
	ro.Status = v1alpha2.TopologyRolloutStatus{}
	ro.Annotations = map[string]string{v1alpha2.RolloutStatusAnnotation: text}
	ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UserInfo: authenticationv1.UserInfo{Username: "system:admin"}}})
	w := &TopologyRollout{}
	warnings, err := w.ValidateCreate(ctx, ro)
	if err != nil {
		t.Fatalf("a restored rollout was refused: %v", err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "TopologyRollout prod is restored") {
		t.Errorf("warnings: %q", warnings)
	}

	corrupt := ro.DeepCopy()
	corrupt.Annotations[v1alpha2.RolloutStatusAnnotation] = "not a status"
	if _, err := w.ValidateCreate(ctx, corrupt); err == nil || !strings.Contains(err.Error(), "metadata.annotations["+v1alpha2.RolloutStatusAnnotation+"]") {
		t.Errorf("a corrupt carried status: %v", err)
	}
	badWaves := ro.DeepCopy()
	badWaves.Spec.Approvals = []v1alpha2.RolloutApproval{{Wave: 1, By: "alice"}}
	if _, err := w.ValidateCreate(ctx, badWaves); err == nil || !strings.Contains(err.Error(), "wave 1 needs no approval") {
		t.Errorf("an approval of a wave that needs none, restored: %v", err)
	}
}
