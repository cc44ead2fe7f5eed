package fleet

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// MaxCarried is the longest status annotation written: the API server
// refuses annotations over 256 KiB in all, and the rollout's others need
// room. A gzipped status of 1,000 clusters is about a tenth of it.
const MaxCarried = 200 << 10

// Carry encodes st for v1alpha2.RolloutStatusAnnotation: gzip, then
// base64, of its JSON. The same status always gives the same text.
func Carry(st *v1alpha2.TopologyRolloutStatus) (string, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding the rollout's status: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return "", fmt.Errorf("compressing the rollout's status: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("compressing the rollout's status: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// Carried is the status r's annotation carries; false when it has none.
func Carried(r *v1alpha2.TopologyRollout) (*v1alpha2.TopologyRolloutStatus, bool, error) {
	text, ok := r.Annotations[v1alpha2.RolloutStatusAnnotation]
	if !ok {
		return nil, false, nil
	}
	fail := func(err error) (*v1alpha2.TopologyRolloutStatus, bool, error) {
		return nil, true, fmt.Errorf("annotation %s of TopologyRollout %s is not a status the agent wrote (%w): remove the annotation to start the rollout anew", v1alpha2.RolloutStatusAnnotation, r.Name, err)
	}
	zipped, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return fail(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return fail(err)
	}
	// A status is bounded by the CRD's limits; a bomb is not read whole.
	raw, err := io.ReadAll(io.LimitReader(zr, 64<<20))
	if err != nil {
		return fail(err)
	}
	st := &v1alpha2.TopologyRolloutStatus{}
	if err := json.Unmarshal(raw, st); err != nil {
		return fail(err)
	}
	return st, true, nil
}

// Restoring tells whether r was created by a restore (clusterctl move, or
// a backup read back): it carries a status and has none of its own yet.
func Restoring(r *v1alpha2.TopologyRollout) bool {
	_, carried := r.Annotations[v1alpha2.RolloutStatusAnnotation]
	return carried && r.Status.Phase == "" && len(r.Status.Clusters) == 0
}
