package upstream

import (
	"reflect"
	"testing"
)

func TestForeignFinalizers(t *testing.T) {
	u := cluster(t)
	u.SetFinalizers([]string{"cluster.cluster.x-k8s.io", "topology.cluster.x-k8s.io/finalizer", "orphan", "backup.example.com/keep"})
	if got := ForeignFinalizers(u); !reflect.DeepEqual(got, []string{"backup.example.com/keep"}) {
		t.Errorf("foreign finalizers %v, want only backup.example.com/keep", got)
	}
}

func TestNonClusterAPIFinalizers(t *testing.T) {
	got := nonClusterAPIFinalizers([]string{"cluster.cluster.x-k8s.io", "orphan", "backup.example.com/keep"})
	if !reflect.DeepEqual(got, []string{"orphan", "backup.example.com/keep"}) {
		t.Errorf("kept %v, want orphan and backup.example.com/keep", got)
	}
	if got := nonClusterAPIFinalizers([]string{"cluster.cluster.x-k8s.io", "topology.cluster.x-k8s.io/finalizer"}); len(got) != 0 {
		t.Errorf("kept %v of Cluster API's own finalizers", got)
	}
}
