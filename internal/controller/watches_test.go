package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// startedInformers is a cache that records the kinds whose informers were
// asked for, and fails for one.
type startedInformers struct {
	cache.Cache
	started []schema.GroupVersionKind
	failFor schema.GroupVersionKind
}

func (c *startedInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk == c.failFor {
		return nil, errors.New("refused")
	}
	c.started = append(c.started, gvk)
	return nil, nil
}

// watchedKinds is a controller that records the sources it is asked to
// watch, not yet started, as the agent's is when the caches are warmed.
type watchedKinds struct {
	controller.Controller
	sources []source.TypedSource[reconcile.Request]
}

func (c *watchedKinds) Watch(src source.TypedSource[reconcile.Request]) error {
	c.sources = append(c.sources, src)
	return nil
}

// TestWarm: Warm starts the informer of each installed kind once, skips the
// kinds the API server does not serve, and reports one it could not start
// while starting the others. Each kind it started is watched from then on,
// so that a controller not yet started lists it before its first worker.
func TestWarm(t *testing.T) {
	dockerCluster := schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta1", Kind: "DockerCluster"}
	kcp := schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta1", Kind: "KubeadmControlPlane"}
	machineSet := schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineSet"}
	notInstalled := schema.GroupVersionKind{Group: "infrastructure.example.com", Version: "v1", Kind: "ExampleCluster"}
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{dockerCluster, kcp, machineSet} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	c := &startedInformers{failFor: kcp}
	ctl := &watchedKinds{}
	w := NewDynamicWatches(ctl, c, mapper, nil, machineSet)

	err := w.Warm(context.Background(), dockerCluster, notInstalled, kcp, machineSet)
	if err == nil || !strings.Contains(err.Error(), "KubeadmControlPlane: refused") {
		t.Errorf("Warm: %v, want the KubeadmControlPlane informer's error", err)
	}
	if want := []schema.GroupVersionKind{dockerCluster, machineSet}; !slices.Equal(c.started, want) {
		t.Errorf("started %v, want %v", c.started, want)
	}
	// MachineSet is a kind the controller was built watching.
	if !w.seen[dockerCluster] || len(ctl.sources) != 1 {
		t.Errorf("%d watches added (DockerCluster watched: %v), want one, of DockerCluster", len(ctl.sources), w.seen[dockerCluster])
	}

	c.failFor = schema.GroupVersionKind{}
	if err := w.Warm(context.Background(), machineSet, kcp, dockerCluster); err != nil {
		t.Fatal(err)
	}
	if want := []schema.GroupVersionKind{dockerCluster, machineSet, kcp}; !slices.Equal(c.started, want) {
		t.Errorf("after a second Warm, started %v, want %v: each kind once, the one that failed again", c.started, want)
	}
	if !w.seen[kcp] || len(ctl.sources) != 2 {
		t.Errorf("%d watches added (KubeadmControlPlane watched: %v), want two, DockerCluster's and KubeadmControlPlane's", len(ctl.sources), w.seen[kcp])
	}
}
