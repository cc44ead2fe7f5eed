package draft

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

func topology() *v1alpha2.Topology {
	three := int32(3)
	return &v1alpha2.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "default"},
		Spec: v1alpha2.TopologySpec{
			ClassRef: v1alpha2.ClassRef{Name: "c"}, Version: "v1.33.1",
			ControlPlane: v1alpha2.ControlPlaneTopology{Replicas: &three},
			Variables:    []v1alpha2.ClusterVariable{{Name: "audit", Value: apiextensionsv1.JSON{Raw: []byte(`{"enabled":true,"level":"Request"}`)}}},
			Workers:      &v1alpha2.WorkersTopology{MachineDeployments: []v1alpha2.MachineDeploymentTopology{{Name: "md-a", Class: "general", Replicas: &three}}},
		},
	}
}

func TestChanges(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*v1alpha2.Topology)
		wants []string
	}{
		{"nothing", func(*v1alpha2.Topology) {}, nil},
		{"the same JSON written otherwise is no change", func(t *v1alpha2.Topology) {
			t.Spec.Variables[0].Value.Raw = []byte(`{ "level": "Request", "enabled": true }`)
		}, nil},
		{"version", func(t *v1alpha2.Topology) { t.Spec.Version = "v1.34.0" }, []string{`version: v1.33.1 → v1.34.0`}},
		{"replicas", func(t *v1alpha2.Topology) {
			five := int32(5)
			*Replicas(t, Scope{Kind: MachineDeployment, Name: "md-a"}) = &five
		}, []string{`md-a (general) replicas: 3 → 5`}},
		{"a variable inside an object", func(t *v1alpha2.Topology) {
			if err := SetVariable(t, Scope{}, "audit", []any{"level"}, "None", true); err != nil {
				panic(err)
			}
		}, []string{`audit: {"enabled":true,"level":"Request"} → {"enabled":true,"level":"None"}`}},
		{"an override, the list made for it", func(t *v1alpha2.Topology) {
			if err := SetVariable(t, Scope{Kind: MachineDeployment, Name: "md-a"}, "maxPods", nil, 30, true); err != nil {
				panic(err)
			}
		}, []string{`override maxPods of md-a: (none) → 30`}},
		{"a pool removed is one change", func(t *v1alpha2.Topology) {
			t.Spec.Workers.MachineDeployments = RemoveMachineDeployment(t.Spec.Workers.MachineDeployments, "md-a")
		}, []string{`MachineDeployment md-a: general → (none)`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := topology()
			edited := orig.DeepCopy()
			tc.edit(edited)
			var got []string
			for _, c := range Changes(orig, edited) {
				got = append(got, c.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.wants, "\n") {
				t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.wants, "\n"))
			}
		})
	}
}

func TestRebaseKeepsTheUsersSettings(t *testing.T) {
	orig := topology()
	mine := orig.DeepCopy()
	mine.Spec.Version = "v1.34.0"
	_ = SetVariable(mine, Scope{}, "audit", []any{"level"}, "None", true)
	theirs := orig.DeepCopy()
	five := int32(5)
	theirs.Spec.ControlPlane.Replicas = &five
	_ = SetVariable(theirs, Scope{}, "audit", []any{"level"}, "Metadata", true)

	merged, server, both := Rebase(orig, mine, theirs)
	if merged.Spec.Version != "v1.34.0" || *merged.Spec.ControlPlane.Replicas != 5 {
		t.Errorf("merged has version %s and %d control plane replicas: want mine and theirs", merged.Spec.Version, *merged.Spec.ControlPlane.Replicas)
	}
	if v, _ := VariableValue(merged, Scope{}, "audit"); Canonical(v) != `{"enabled":true,"level":"None"}` {
		t.Errorf("audit %s: the user's value must be kept", Canonical(v))
	}
	if len(server) != 2 || strings.Join(both, ",") != "audit" {
		t.Errorf("server changed %v, both changed %v", server, both)
	}
}

func TestWriteIsGuardedByTheReadVersion(t *testing.T) {
	ctx := context.Background()
	c, read := storeAndRead(t, fake.NewClientBuilder())
	// Someone else scales the control plane after our read.
	theirs := read.DeepCopy()
	five := int32(5)
	theirs.Spec.ControlPlane.Replicas = &five
	if err := c.Update(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	mine := read.DeepCopy()
	mine.Spec.Version = "v1.34.0"
	_, err := Write(ctx, TopologyStore{Client: c}, read, mine)
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("got %v, want a ConflictError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `control plane replicas: 3 → 5`) || !strings.Contains(msg, "nothing was written") {
		t.Errorf("message %q does not say what the server changed and that nothing was written", msg)
	}
	if conflict.Rebased.Spec.Version != "v1.34.0" || *conflict.Rebased.Spec.ControlPlane.Replicas != 5 {
		t.Error("the rebased edit lost a side")
	}
	if now := onServer(t, c); now.Spec.Version != "v1.33.1" {
		t.Fatal("the conflicting write went through")
	}
	written, err := Write(ctx, TopologyStore{Client: c}, conflict.Latest, conflict.Rebased)
	if err != nil || written.Spec.Version != "v1.34.0" {
		t.Fatalf("writing the rebased edit: %v", err)
	}
}

func TestAConflictWithOnlyMetadataSaysSo(t *testing.T) {
	latest := topology()
	err := &ConflictError{Latest: latest, Rebased: latest}
	if !strings.Contains(err.Error(), "only its metadata or status changed") {
		t.Errorf("message %q names no change", err.Error())
	}
}

func clientKey() client.ObjectKey { return client.ObjectKey{Namespace: "default", Name: "dev"} }

// storeAndRead builds b's fake client holding topology() and reads it back,
// as an edit starts.
func storeAndRead(t *testing.T, b *fake.ClientBuilder) (client.Client, *v1alpha2.Topology) {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(v1alpha2.AddToScheme(scheme))
	c := b.WithScheme(scheme).WithObjects(topology()).Build()
	return c, onServer(t, c)
}

// onServer is the Topology as c has it now.
func onServer(t *testing.T, c client.Client) *v1alpha2.Topology {
	t.Helper()
	now := &v1alpha2.Topology{}
	if err := c.Get(context.Background(), clientKey(), now); err != nil {
		t.Fatal(err)
	}
	return now
}

// TestWriteGoesThroughAStatusOnlyChange: the agent writes the Topology's
// status all the time; a user's edit read before such a write is still
// theirs to make, and is written without a conflict.
func TestWriteGoesThroughAStatusOnlyChange(t *testing.T) {
	ctx := context.Background()
	c, read := storeAndRead(t, fake.NewClientBuilder().WithStatusSubresource(&v1alpha2.Topology{}))
	// The agent reports progress after our read.
	progress := read.DeepCopy()
	progress.Status.ObservedGeneration = 7
	if err := c.Status().Update(ctx, progress); err != nil {
		t.Fatal(err)
	}
	mine := read.DeepCopy()
	mine.Spec.Version = "v1.34.0"
	written, err := Write(ctx, TopologyStore{Client: c}, read, mine)
	if err != nil {
		t.Fatalf("a status-only change refused the edit: %v", err)
	}
	now := onServer(t, c)
	if now.Spec.Version != "v1.34.0" || written.Spec.Version != "v1.34.0" {
		t.Errorf("the edit was not written: server has %s", now.Spec.Version)
	}
	if now.Status.ObservedGeneration != 7 {
		t.Errorf("the agent's status was lost: observedGeneration %d", now.Status.ObservedGeneration)
	}
}

// TestWriteGoesThroughTheAgentsMarks: right after a create or an adopt the
// agent adds its finalizer and marks the Topology (the Cluster it made, the
// hooks owed); a user's edit of the spec read before is still theirs to
// make, and the marks stay. Anyone else's metadata is still a conflict.
func TestWriteGoesThroughTheAgentsMarks(t *testing.T) {
	ctx := context.Background()
	c, read := storeAndRead(t, fake.NewClientBuilder())
	marked := read.DeepCopy()
	marked.Finalizers = append(marked.Finalizers, "topology.kubectl-topology.io/cluster")
	metav1.SetMetaDataAnnotation(&marked.ObjectMeta, v1alpha2.ClusterMadeAnnotation, "dev")
	metav1.SetMetaDataAnnotation(&marked.ObjectMeta, runtimev1.PendingHooksAnnotation, "AfterControlPlaneInitialized")
	if err := c.Update(ctx, marked); err != nil {
		t.Fatal(err)
	}
	mine := read.DeepCopy()
	mine.Spec.Version = "v1.34.0"
	written, err := Write(ctx, TopologyStore{Client: c}, read, mine)
	if err != nil {
		t.Fatalf("the agent's marks refused the edit: %v", err)
	}
	now := onServer(t, c)
	if now.Spec.Version != "v1.34.0" {
		t.Errorf("the edit was not written: server has %s", now.Spec.Version)
	}
	if len(now.Finalizers) != 1 || now.Annotations[v1alpha2.ClusterMadeAnnotation] != "dev" || now.Annotations[runtimev1.PendingHooksAnnotation] == "" {
		t.Errorf("the agent's marks were lost: finalizers %v, annotations %v", now.Finalizers, now.Annotations)
	}

	// Someone labels it after the next read: that is theirs, and a conflict.
	labelled := written.DeepCopy()
	metav1.SetMetaDataLabel(&labelled.ObjectMeta, "team", "a")
	if err := c.Update(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	again := written.DeepCopy()
	again.Spec.Version = "v1.35.0"
	var conflict *ConflictError
	if _, err := Write(ctx, TopologyStore{Client: c}, written, again); !errors.As(err, &conflict) {
		t.Fatalf("a label someone else set: got %v, want a ConflictError", err)
	}
}
