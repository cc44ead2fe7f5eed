package rules

import (
	"sync"
	"sync/atomic"

	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxKnownLabels bounds the label keys and values remembered as valid: enough
// for the shared keys and the names of a few thousand clusters, a few hundred
// KB at most.
const maxKnownLabels = 8192

// knownLabels remembers label keys and values found valid. Every pass checks
// the labels of every generated object: the same few keys on every cluster
// and each cluster's own names as values. The library's regular expressions
// were a twelfth of a desired state's CPU, paid again on each pass.
var knownLabels = labelMemo{limit: maxKnownLabels}

// labelMemo is a bounded set of label keys and values known to be valid.
type labelMemo struct {
	keys, values sync.Map
	size         atomic.Int64
	limit        int64
}

// validate returns what metav1validation.ValidateLabels returns for labels,
// checking only the keys and values not already known to be valid.
func (m *labelMemo) validate(labels map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, v := range labels {
		_, keyKnown := m.keys.Load(k)
		_, valueKnown := m.values.Load(v)
		if keyKnown && valueKnown {
			continue
		}
		pairErrs := metav1validation.ValidateLabels(map[string]string{k: v}, p)
		if len(pairErrs) > 0 {
			errs = append(errs, pairErrs...)
			continue
		}
		if m.size.Load() < m.limit {
			if _, loaded := m.keys.LoadOrStore(k, struct{}{}); !loaded {
				m.size.Add(1)
			}
			if _, loaded := m.values.LoadOrStore(v, struct{}{}); !loaded {
				m.size.Add(1)
			}
		}
	}
	return errs
}
