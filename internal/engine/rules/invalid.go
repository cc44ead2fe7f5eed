package rules

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// InvalidError is bad input, with every problem and the field it is in.
type InvalidError struct {
	// Kind of the object at fault: Topology, Cluster or TopologyClass.
	Kind string
	// Object names the object at fault, e.g. Topology default/qs1.
	Object string
	// Errors are the field errors.
	Errors field.ErrorList
}

func (e *InvalidError) Error() string {
	msgs := make([]string, 0, len(e.Errors))
	for _, fe := range e.Errors {
		msgs = append(msgs, fe.Error())
	}
	return fmt.Sprintf("%s is invalid: %s", e.Object, strings.Join(msgs, "; "))
}

// Describe names an object of kind in messages: "Kind namespace/name".
func Describe(kind string, m metav1.Object) string {
	if m.GetNamespace() == "" {
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
}
