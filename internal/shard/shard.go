// Package shard says which part of a management cluster one agent
// reconciles. Like Cluster API's managers (--namespace, --watch-filter),
// several agents divide a shared management cluster: each takes the
// Topologies in its namespaces that carry its watch-filter label value.
package shard

import (
	"fmt"
	"slices"
	"strings"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// Annotations on an agent's heartbeat Lease that say which shard it
// reconciles, so that `status` and `install` can tell who watches what.
const (
	NamespacesAnnotation  = "topology.kubectl-topology.io/watch-namespaces"
	WatchFilterAnnotation = "topology.kubectl-topology.io/watch-filter"
)

// WatchLabel is the label whose value a watch filter selects: Cluster API's
// own, so that one label places a cluster with the same shard of ours and
// of upstream's managers.
const WatchLabel = clusterv1.WatchLabel

// Shard is what one agent reconciles: Topologies (and TopologyRollouts) in
// Namespaces, every namespace when empty, that carry WatchLabel with the
// value WatchFilter, whatever they carry when it is empty.
type Shard struct {
	Namespaces  []string
	WatchFilter string
}

// New is the shard of the given namespaces and filter, sorted and without
// empty or repeated names. clusterctl hands a variable's quoted empty
// default over literally (--namespace=""), so quotes are dropped.
func New(namespaces []string, filter string) Shard {
	s := Shard{WatchFilter: strings.Trim(filter, `"`)}
	for _, ns := range namespaces {
		for _, n := range strings.Split(ns, ",") {
			if n = strings.TrimSpace(strings.Trim(n, `"`)); n != "" {
				s.Namespaces = append(s.Namespaces, n)
			}
		}
	}
	slices.Sort(s.Namespaces)
	s.Namespaces = slices.Compact(s.Namespaces)
	return s
}

// AllNamespaces says the shard spans every namespace.
func (s Shard) AllNamespaces() bool { return len(s.Namespaces) == 0 }

// Watches says the shard's namespaces include namespace.
func (s Shard) Watches(namespace string) bool {
	return s.AllNamespaces() || slices.Contains(s.Namespaces, namespace)
}

// Selects says the shard's filter takes an object with these labels.
func (s Shard) Selects(labels map[string]string) bool {
	return s.WatchFilter == "" || labels[WatchLabel] == s.WatchFilter
}

// Owns says obj is this shard's to reconcile.
func (s Shard) Owns(obj client.Object) bool {
	return s.Watches(obj.GetNamespace()) && s.Selects(obj.GetLabels())
}

// Predicate lets through only the events of objects the shard owns.
func (s Shard) Predicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(s.Owns)
}

// Overlaps says some object could be owned by both shards: their namespaces
// meet and their filters do not tell them apart. Two agents that overlap
// would both write the same Cluster.
func (s Shard) Overlaps(o Shard) bool {
	meet := s.AllNamespaces() || o.AllNamespaces() || slices.ContainsFunc(s.Namespaces, o.Watches)
	return meet && (s.WatchFilter == "" || o.WatchFilter == "" || s.WatchFilter == o.WatchFilter)
}

// String says what the shard spans, for messages.
func (s Shard) String() string {
	where := "every namespace"
	if !s.AllNamespaces() {
		where = "namespace " + strings.Join(s.Namespaces, ", ")
		if len(s.Namespaces) > 1 {
			where = "namespaces " + strings.Join(s.Namespaces, ", ")
		}
	}
	if s.WatchFilter != "" {
		return fmt.Sprintf("%s, label %s=%s", where, WatchLabel, s.WatchFilter)
	}
	return where
}

// Annotate records the shard in annotations (a heartbeat Lease's).
func (s Shard) Annotate(annotations map[string]string) {
	annotations[NamespacesAnnotation] = strings.Join(s.Namespaces, ",")
	annotations[WatchFilterAnnotation] = s.WatchFilter
}

// FromAnnotations reads the shard Annotate recorded; an agent from before
// shards recorded none and spans every namespace.
func FromAnnotations(annotations map[string]string) Shard {
	return New([]string{annotations[NamespacesAnnotation]}, annotations[WatchFilterAnnotation])
}
