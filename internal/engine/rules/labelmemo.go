package rules

import (
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/lru"
)

// maxKnownLabels bounds the label keys and values remembered as valid: enough
// for the shared keys and the names of a few thousand clusters, a few hundred
// KB at most.
const maxKnownLabels = 8192

// knownLabels remembers label keys and values found valid. Every pass checks
// the labels of every generated object: the same few keys on every cluster
// and each cluster's own names as values. The library's regular expressions
// were a twelfth of a desired state's CPU, paid again on each pass.
var knownLabels = labelMemo{known: lru.New(maxKnownLabels)}

// labelMemo remembers label keys and values known to be valid. A key and a
// value are checked apart by the library, so each is remembered apart.
type labelMemo struct {
	known *lru.Cache
}

// labelPart tells a remembered key from a remembered value of the same text.
type labelPart struct {
	key  bool
	text string
}

// validate returns what metav1validation.ValidateLabels returns for labels,
// checking only the keys and values not already known to be valid.
func (m labelMemo) validate(labels map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, v := range labels {
		_, keyKnown := m.known.Get(labelPart{key: true, text: k})
		_, valueKnown := m.known.Get(labelPart{text: v})
		if keyKnown && valueKnown {
			continue
		}
		if pairErrs := metav1validation.ValidateLabels(map[string]string{k: v}, p); len(pairErrs) > 0 {
			errs = append(errs, pairErrs...)
			continue
		}
		m.known.Add(labelPart{key: true, text: k}, nil)
		m.known.Add(labelPart{text: v}, nil)
	}
	return errs
}
