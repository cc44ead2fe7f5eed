package parity

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/harness/localcluster"
)

// HooksResult is the outcome of a lifecycle hooks case.
type HooksResult struct {
	// Name of the case.
	Name string
	// Calls are upstream's distinct hook calls, in order.
	Calls []string
	// Holds counts the holds both sides reached and were released from.
	Holds int
	// Upgrade is how long each side took from the version change until
	// every machine ran the new version, upstream's first.
	Upgrade [2]time.Duration
	// Problems says where the sides differ; none at parity.
	Problems []string
}

// CompareHooks runs the case in dir on both sides with upstream's test
// extension registered on each (an ExtensionConfig upstream, a
// TopologyExtension ours), behind a recorder that keeps every lifecycle
// hook call. Every blocking hook holds until both sides hold at it; the
// versions each side asks of its control plane and pools must then be the
// same, and it is released on both. It goes through creation, the upgrade
// the case names and deletion, and compares the calls each side made, in
// order, with their requests.
func CompareHooks(ctx context.Context, env Env, ext *localcluster.Extension, dir string) (HooksResult, error) {
	k8s, out := env.K8s, env.Out
	name := filepath.Base(filepath.Clean(dir)) + "-hooks"
	res := HooksResult{Name: name}
	fmt.Fprintf(out, "\n== %s (lifecycle hooks)\n", name)
	c, err := loadCase(ctx, env, dir, name)
	if err != nil {
		return res, err
	}
	up, ours, version, want, target := c.up, c.ours, c.version, c.want, c.target
	rec, err := newRecorder(ext.URL, ext.CABundle)
	if err != nil {
		return res, err
	}
	defer rec.Close()
	if err := createNamespaces(ctx, k8s, up, ours); err != nil {
		return res, err
	}
	for _, s := range []side{up, ours} {
		if err := register(ctx, k8s, s, rec); err != nil {
			return res, err
		}
	}
	if err := create(ctx, k8s, up.namespace, c.upObjs); err != nil {
		return res, err
	}
	if err := create(ctx, k8s, ours.namespace, c.ourObjs); err != nil {
		return res, err
	}

	d := &driver{k8s: k8s, rec: rec, up: up, ours: ours, out: out, released: map[string]map[string]bool{up.namespace: {}, ours.namespace: {}}, res: &res}
	if err := d.until(ctx, env.Timeout, "both sides provisioned", func(ctx context.Context) (bool, error) {
		return d.bothAt(ctx, want, version)
	}); err != nil {
		return res, err
	}
	fmt.Fprintf(out, "Upgrading both to %s...\n", target)
	if err := setVersion(ctx, k8s, up, ours, target, env.Timeout); err != nil {
		return res, err
	}
	start, took := time.Now(), map[string]time.Duration{}
	if err := d.until(ctx, 2*env.Timeout, "both sides upgraded, no hook owed", func(ctx context.Context) (bool, error) {
		done := true
		for _, s := range []side{up, ours} {
			at, err := allAt(ctx, k8s, s, want, target)
			if err != nil {
				return false, err
			}
			if at {
				if _, ok := took[s.label]; !ok {
					took[s.label] = time.Since(start)
				}
			}
			owed, err := owedHooks(ctx, k8s, s)
			if err != nil {
				return false, err
			}
			done = done && at && owed == ""
		}
		return done, nil
	}); err != nil {
		return res, err
	}
	res.Upgrade = [2]time.Duration{took["upstream"], took["ours"]}
	fmt.Fprintf(out, "upgrade with hooks held and released: upstream %v, ours %v\n", res.Upgrade[0].Round(time.Second), res.Upgrade[1].Round(time.Second))

	if err := deleteSide(ctx, k8s, up); err != nil {
		return res, err
	}
	if err := deleteSide(ctx, k8s, ours); err != nil {
		return res, err
	}
	if err := d.until(ctx, env.Timeout, "both Clusters deleted", func(ctx context.Context) (bool, error) {
		for _, s := range []side{up, ours} {
			if _, err := get(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}, s.cluster); !apierrors.IsNotFound(err) {
				return false, client.IgnoreNotFound(err)
			}
		}
		return true, nil
	}); err != nil {
		return res, err
	}

	upCalls, upFirst := rec.sequence(up.namespace)
	ourCalls, ourFirst := rec.sequence(ours.namespace)
	res.Calls = upCalls
	res.Problems = append(res.Problems, compareCalls(upCalls, ourCalls, upFirst, ourFirst)...)
	fmt.Fprintf(out, "hook calls (%d held and released on both):\n  upstream: %s\n  ours:     %s\n", res.Holds, strings.Join(upCalls, " → "), strings.Join(ourCalls, " → "))
	return res, nil
}

// parityCase is a case as both sides take it: upstream's objects and ours
// converted from them, into a namespace of each side.
type parityCase struct {
	up, ours        side
	upObjs, ourObjs []*unstructured.Unstructured
	version, target string // the Cluster's version, and the one to upgrade to
	want            int64  // machines the topology asks for
}

// ConvertFlagsFile is the file of a case holding the flags its conversion
// takes besides the namespace and the files.
const ConvertFlagsFile = "convert-flags"

// loadCase reads the case in dir (its YAML files, an optional file named
// upgrade holding the version to upgrade to, and an optional ConvertFlagsFile) and converts it to ours
// with the plugin, for sides named after name.
func loadCase(ctx context.Context, env Env, dir, name string) (*parityCase, error) {
	c := &parityCase{
		up:   side{label: "upstream", namespace: "parity-" + name + "-upstream", upstream: true},
		ours: side{label: "ours", namespace: "parity-" + name + "-ours"},
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no YAML files in %s", dir)
	}
	var docs []byte
	args := []string{"convert", "-n", c.ours.namespace}
	// A case may convert as on another cluster: its convert-flags file holds
	// the flags (--inline=all: every template inline, as a stock cluster
	// that refuses them all would have it).
	if flags, err := os.ReadFile(filepath.Join(dir, ConvertFlagsFile)); err == nil {
		args = append(args, strings.Fields(string(flags))...)
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(append(docs, data...), []byte("\n---\n")...)
		args = append(args, "-f", f)
	}
	if c.upObjs, err = Decode(docs); err != nil {
		return nil, err
	}
	converted, err := RunPlugin(env.Plugin, env.Kubeconfig, args...)
	if err != nil {
		return nil, err
	}
	if c.ourObjs, err = Decode([]byte(converted)); err != nil {
		return nil, err
	}
	for _, o := range c.upObjs {
		if o.GetKind() != "Cluster" {
			continue
		}
		c.up.cluster, c.ours.cluster = o.GetName(), o.GetName()
		c.version, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "version")
		c.want, _, _ = unstructured.NestedInt64(o.Object, "spec", "topology", "controlPlane", "replicas")
		mds, _, _ := unstructured.NestedSlice(o.Object, "spec", "topology", "workers", "machineDeployments")
		for _, md := range mds {
			n, _, _ := unstructured.NestedInt64(md.(map[string]any), "replicas")
			c.want += n
		}
	}
	if c.up.cluster == "" {
		return nil, fmt.Errorf("%s has no Cluster", dir)
	}
	c.target = nextMinor(c.version)
	if data, err := os.ReadFile(filepath.Join(dir, "upgrade")); err == nil {
		c.target = strings.TrimSpace(string(data))
	}
	return c, nil
}

// createNamespaces creates each side's namespace, unless it exists.
func createNamespaces(ctx context.Context, k8s client.Client, sides ...side) error {
	for _, s := range sides {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// extensionName is the registration of the test extension for side s, and
// the extensionConfigName its ConfigMaps are named with.
func extensionName(s side) string { return "parity-hooks-" + s.label }

// register registers the recorder for s's namespace: an ExtensionConfig for
// upstream's topology controller, a TopologyExtension for the agent, every
// blocking hook holding by default; and waits until its handlers are
// discovered.
func register(ctx context.Context, k8s client.Client, s side, rec *recorder) error {
	o := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"clientConfig":      map[string]any{"url": rec.URL, "caBundle": base64.StdEncoding.EncodeToString(rec.CABundle())},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: s.namespace}},
			"settings":          map[string]any{"extensionConfigName": extensionName(s), "defaultAllHandlersToBlocking": "true"},
		},
	}}
	if s.upstream {
		o.SetAPIVersion("runtime.cluster.x-k8s.io/v1beta2")
		o.SetKind("ExtensionConfig")
	} else {
		o.SetAPIVersion("topology.kubectl-topology.io/v1alpha2")
		o.SetKind("TopologyExtension")
	}
	o.SetName(extensionName(s))
	if err := k8s.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering the test extension for %s: %w", s.label, err)
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got := o.DeepCopy()
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
			return false, nil //nolint:nilerr // asked again until it is discovered
		}
		handlers, _, _ := unstructured.NestedSlice(got.Object, "status", "handlers")
		return len(handlers) > 0, nil
	})
}

// driver releases both sides' holds in step.
type driver struct {
	k8s      client.Client
	rec      *recorder
	up, ours side
	out      io.Writer
	released map[string]map[string]bool
	res      *HooksResult
}

// until releases holds as both sides reach them, until done holds or
// timeout passes. A hold on one side only is waited on: the other side may
// be slower to get there.
func (d *driver) until(ctx context.Context, timeout time.Duration, what string, done func(context.Context) (bool, error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		if err != nil || ok {
			return ok, err
		}
		hu, ho := d.rec.holding(d.up.namespace, d.released[d.up.namespace]), d.rec.holding(d.ours.namespace, d.released[d.ours.namespace])
		last = fmt.Sprintf("upstream holds at %q, ours at %q", hu, ho)
		if hu == "" || ho == "" {
			return false, nil
		}
		if hu != ho {
			d.res.Problems = append(d.res.Problems, fmt.Sprintf("the sides hold at different hooks: upstream at %s, ours at %s", hu, ho))
		} else {
			su, err := snapshot(ctx, d.k8s, d.up)
			if err != nil {
				return false, err
			}
			so, err := snapshot(ctx, d.k8s, d.ours)
			if err != nil {
				return false, err
			}
			fmt.Fprintf(d.out, "  both hold at %s: %s\n", hu, su)
			if su != so {
				d.res.Problems = append(d.res.Problems, fmt.Sprintf("while %s holds, upstream asks %s, ours %s", hu, su, so))
			}
			d.res.Holds++
		}
		for _, s := range []struct {
			side side
			key  string
		}{{d.up, hu}, {d.ours, ho}} {
			if err := answer(ctx, d.k8s, s.side, s.key); err != nil {
				return false, err
			}
			d.released[s.side.namespace][s.key] = true
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (%s)", what, err, last)
	}
	return nil
}

// answer makes the test extension let key of side's cluster go on.
func answer(ctx context.Context, k8s client.Client, s side, key string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: fmt.Sprintf("%s-%s-test-extension-hookresponses", s.cluster, extensionName(s))}}
	body := fmt.Sprintf(`{"data":{%q:"{\"Status\": \"Success\", \"RetryAfterSeconds\": 0}"}}`, key+"-preloadedResponse")
	return k8s.Patch(ctx, cm, client.RawPatch(types.MergePatchType, []byte(body)))
}

// snapshot is what side's control plane and pools are asked to run, and
// whether the control plane is being deleted.
func snapshot(ctx context.Context, k8s client.Client, s side) (string, error) {
	var parts []string
	cps, err := list(ctx, k8s, s.namespace, schema.GroupKind{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}, s.cluster)
	if err != nil {
		return "", err
	}
	for _, cp := range cps {
		v, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
		parts = append(parts, fmt.Sprintf("control plane %s (deleting %v)", v, !cp.GetDeletionTimestamp().IsZero()))
	}
	mds, err := list(ctx, k8s, s.namespace, schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "MachineDeployment"}, s.cluster)
	if err != nil {
		return "", err
	}
	var pools []string
	for _, md := range mds {
		v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
		pools = append(pools, md.GetLabels()["topology.cluster.x-k8s.io/deployment-name"]+" "+v)
	}
	sort.Strings(pools)
	if len(parts) == 0 {
		parts = append(parts, "no control plane")
	}
	return strings.Join(append(parts, pools...), ", "), nil
}

// bothAt reports whether each side's want machines run version.
func (d *driver) bothAt(ctx context.Context, want int64, version string) (bool, error) {
	for _, s := range []side{d.up, d.ours} {
		ok, err := allAt(ctx, d.k8s, s, want, version)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func allAt(ctx context.Context, k8s client.Client, s side, want int64, version string) (bool, error) {
	ms, err := machines(ctx, k8s, s)
	if err != nil {
		return false, err
	}
	return runningAt(ms, version) == want && int64(len(ms)) == want, nil
}

// runningAt counts the machines of ms running version.
func runningAt(ms []machine, version string) int64 {
	running := int64(0)
	for _, m := range ms {
		if m.version == version && m.phase == "Running" {
			running++
		}
	}
	return running
}

// owedHooks is the pending-hooks annotation of side: on upstream's Cluster,
// on our Topology.
func owedHooks(ctx context.Context, k8s client.Client, s side) (string, error) {
	gk := schema.GroupKind{Group: "topology.kubectl-topology.io", Kind: "Topology"}
	if s.upstream {
		gk = schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "Cluster"}
	}
	o, err := get(ctx, k8s, s.namespace, gk, s.cluster)
	if err != nil {
		return "", err
	}
	return o.GetAnnotations()[runtimev1.PendingHooksAnnotation], nil
}

// deleteSide deletes what the user created of side: upstream's Cluster,
// our Topology.
func deleteSide(ctx context.Context, k8s client.Client, s side) error {
	gvk := schema.GroupVersionKind{Group: "topology.kubectl-topology.io", Version: "v1alpha2", Kind: "Topology"}
	if s.upstream {
		gvk = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	}
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(s.namespace)
	o.SetName(s.cluster)
	return client.IgnoreNotFound(k8s.Delete(ctx, o))
}
