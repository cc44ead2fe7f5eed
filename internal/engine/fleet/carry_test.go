package fleet

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// A status goes through the annotation and comes back as it was, written
// the same way each time, so that an unchanged status writes nothing.
func TestACarriedStatusComesBackAsItWas(t *testing.T) {
	r := fleetRollout(t, 5, 2, time.Minute, "1", "100%")
	at := metav1.NewTime(t0)
	Start(&r.Status, 0, v1alpha2.RolloutChange{Version: "v1.33.1"}, t0)
	r.Status.Clusters[0].Phase, r.Status.Clusters[0].CompletedAt = v1alpha2.ClusterSucceeded, &at
	Summarize(r, &r.Status, t0)

	text, err := Carry(&r.Status)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Carry(r.Status.DeepCopy())
	if again != text {
		t.Error("the same status was carried as two different texts")
	}
	if Restoring(r) {
		t.Error("a rollout without the annotation reads as restoring")
	}
	restored := &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Annotations: map[string]string{v1alpha2.RolloutStatusAnnotation: text}}, Spec: r.Spec}
	if !Restoring(restored) {
		t.Error("a rollout created with the annotation and no status does not read as restoring")
	}
	st, ok, err := Carried(restored)
	if !ok || err != nil {
		t.Fatalf("Carried: %v, %v", ok, err)
	}
	if !equality.Semantic.DeepEqual(*st, r.Status) {
		t.Errorf("the status came back different:\n got %+v\nwant %+v", *st, r.Status)
	}
	restored.Status = *st
	if Restoring(restored) {
		t.Error("a rollout with its status back still reads as restoring")
	}
}

// Text the agent did not write is refused with the annotation's name and
// what to do, not read as an empty status.
func TestACarriedStatusThatIsNotOneIsRefused(t *testing.T) {
	for name, text := range map[string]string{
		"not base64":   "%%%",
		"not gzip":     base64.StdEncoding.EncodeToString([]byte(`{"phase":"Completed"}`)),
		"not a status": zipped(t, `["Completed"]`),
	} {
		r := &v1alpha2.TopologyRollout{ObjectMeta: metav1.ObjectMeta{Name: "prod", Annotations: map[string]string{v1alpha2.RolloutStatusAnnotation: text}}}
		_, ok, err := Carried(r)
		if !ok || err == nil || !strings.Contains(err.Error(), "annotation "+v1alpha2.RolloutStatusAnnotation+" of TopologyRollout prod") || !strings.Contains(err.Error(), "remove the annotation") {
			t.Errorf("%s: %v, %v", name, ok, err)
		}
	}
}

// The status of a rollout of 1,000 clusters, each with its times and
// messages, fits the annotation with room to spare, as MaxCarried says.
func TestTheStatusOfAThousandClustersFitsTheAnnotation(t *testing.T) {
	r := fleetRollout(t, 1000, 10, time.Minute, "1", "10%", "100%")
	for i := range r.Status.Clusters {
		Start(&r.Status, i, v1alpha2.RolloutChange{Version: "v1.33.1"}, t0.Add(time.Duration(i)*time.Second))
		c := &r.Status.Clusters[i]
		c.Message = fmt.Sprintf("soaking: healthy for %ds of 10m0s", i)
		c.ProgressMark = fmt.Sprintf("%016x", i*7919)
	}
	text, err := Carry(&r.Status)
	if err != nil {
		t.Fatal(err)
	}
	if len(text) > MaxCarried/2 {
		t.Errorf("1,000 clusters carry as %d bytes, over half of MaxCarried (%d)", len(text), MaxCarried)
	}
}

// zipped is text as the annotation would carry it.
func zipped(t *testing.T, text string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
