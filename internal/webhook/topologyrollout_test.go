package webhook

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

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
