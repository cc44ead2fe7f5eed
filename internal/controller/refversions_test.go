package controller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// TestRefVersionsCondition: on Cluster API v1.14 an outdated template
// reference is reported, naming the template, the field, both versions and
// what to do, instead of being moved under the class's patch selectors.
func TestRefVersionsCondition(t *testing.T) {
	class := &v1alpha2.TopologyClass{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	if c := refVersionsCondition(class, nil); c.Status != metav1.ConditionTrue || c.Reason != ReasonRefVersionsUpToDate || c.ObservedGeneration != 4 {
		t.Errorf("no outdated reference: %+v", c)
	}
	c := refVersionsCondition(class, []refChange{{field: "spec.infrastructure.templateRef", kind: "DockerClusterTemplate", name: "qs", from: "v1beta1", to: "v1beta2"}})
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonRefVersionsNotUpToDate {
		t.Fatalf("an outdated reference: %+v", c)
	}
	for _, want := range []string{"DockerClusterTemplate qs (spec.infrastructure.templateRef): v1beta1, newest v1beta2", "with the patch selectors naming it"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("message %q lacks %q", c.Message, want)
		}
	}
}
