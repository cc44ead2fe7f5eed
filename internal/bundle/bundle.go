// Package bundle reads the objects a plan is made from — classes, topologies,
// provider templates and existing objects — in either dialect: ours
// (TopologyClass, Topology) or upstream Cluster API's (ClusterClass, Cluster
// with spec.topology), which it converts to ours.
package bundle

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/clusterstate"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// ClusterAPIGroup is upstream's API group.
const ClusterAPIGroup = "cluster.x-k8s.io"

// Class is a class in our form, with the dialect it was written in.
type Class struct {
	*v1alpha2.TopologyClass
	// Upstream is the original ClusterClass when the input was upstream's.
	Upstream *unstructured.Unstructured
	// Source names the file and document it came from.
	Source string
}

// Topology is a topology in our form, with the dialect it was written in.
type Topology struct {
	*v1alpha2.Topology
	// Upstream is the original Cluster when the input was upstream's.
	Upstream *unstructured.Unstructured
	// Source names the file and document it came from.
	Source string
}

// Dialect is the dialect the topology was written in.
func (t *Topology) Dialect() contract.Dialect {
	if t.Upstream != nil {
		return contract.DialectUpstream
	}
	return contract.DialectTopology
}

// Bundle is every object read from the inputs.
type Bundle struct {
	// Classes by namespace/name.
	Classes map[string]*Class
	// Topologies in input order.
	Topologies []*Topology
	// Extensions are the Runtime SDK extensions given (TopologyExtension or
	// upstream's ExtensionConfig), in input order: a plan of a class with
	// external patches calls them.
	Extensions []*v1alpha2.TopologyExtension
	// Objects are all other objects: templates and existing objects.
	Objects []*unstructured.Unstructured
	// Warnings name what converting upstream's v1beta1 objects dropped, and
	// each unknown field dropped as the API server prunes it.
	Warnings []string
	// Strict refuses an unknown field instead of dropping it with a warning,
	// as kubectl's --validate=strict does.
	Strict bool
}

// Supported apiVersions of upstream's kinds, for the error an unsupported one gets.
var upstreamVersions = map[string][]string{
	"ClusterClass":    {"cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1"},
	"Cluster":         {"cluster.x-k8s.io/v1beta2", "cluster.x-k8s.io/v1beta1"},
	"ExtensionConfig": {"runtime.cluster.x-k8s.io/v1beta2", "runtime.cluster.x-k8s.io/v1alpha1"},
}

// checkVersion refuses an apiVersion of a kind this reader converts but not at that version.
func checkVersion(gv schema.GroupVersion, kind string, versions []string) error {
	for _, v := range versions {
		if gv.String() == v {
			return nil
		}
	}
	return fmt.Errorf("%s %s is not supported: use one of %s", kind, gv.String(), strings.Join(versions, ", "))
}

// New returns an empty bundle.
func New() *Bundle {
	return &Bundle{Classes: map[string]*Class{}}
}

// Read adds the YAML or JSON documents of r, named source in errors.
// defaultNamespace is used for objects that set none.
func (b *Bundle) Read(r io.Reader, source, defaultNamespace string) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		where := fmt.Sprintf("%s (document %d)", source, doc)
		jsonRaw, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("%s: malformed YAML: %w", where, err)
		}
		if bytes.Equal(bytes.TrimSpace(jsonRaw), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(jsonRaw); err != nil {
			return fmt.Errorf("%s: not a Kubernetes object: %s", where, whyNotAnObject(jsonRaw, err))
		}
		if obj.IsList() {
			list, _ := obj.ToList()
			for i := range list.Items {
				if err := b.add(&list.Items[i], fmt.Sprintf("%s item %d", where, i), defaultNamespace); err != nil {
					return err
				}
			}
			continue
		}
		if err := b.add(obj, where, defaultNamespace); err != nil {
			return err
		}
	}
}

// whyNotAnObject says what a document lacks to be a Kubernetes object;
// apimachinery reports a bad apiVersion as a missing kind.
func whyNotAnObject(raw []byte, err error) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return "a document must be a YAML or JSON map with apiVersion and kind"
	}
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	switch {
	case kind == "":
		return "kind is missing"
	case apiVersion == "":
		return "apiVersion is missing"
	}
	if _, perr := schema.ParseGroupVersion(apiVersion); perr != nil {
		return fmt.Sprintf("apiVersion %q is not group/version: %v", apiVersion, perr)
	}
	return err.Error()
}

func (b *Bundle) add(obj *unstructured.Unstructured, where, defaultNamespace string) error {
	if obj.GetName() == "" {
		return fmt.Errorf("%s: %s has no metadata.name", where, obj.GetKind())
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(defaultNamespace)
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		return fmt.Errorf("%s: apiVersion %q: %w", where, obj.GetAPIVersion(), err)
	}
	id := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	if versions, ok := upstreamVersions[obj.GetKind()]; ok && strings.HasPrefix(versions[0], gv.Group+"/") {
		if err := checkVersion(gv, obj.GetKind(), versions); err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
	}
	if gv.Group == v1alpha2.GroupVersion.Group && gv.Version != v1alpha2.GroupVersion.Version {
		return fmt.Errorf("%s: %s: %s is no longer served: write it as %s, whose fields are Cluster API v1beta2's", where, id, gv.String(), v1alpha2.GroupVersion.String())
	}
	switch {
	case gv.Group == v1alpha2.GroupVersion.Group && obj.GetKind() == v1alpha2.TopologyClassKind:
		c := &v1alpha2.TopologyClass{}
		if err := b.decode(obj.Object, c, id); err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
		return b.addClass(&Class{TopologyClass: c, Source: where})
	case gv.Group == ClusterAPIGroup && obj.GetKind() == "ClusterClass":
		c, warnings, err := classFromUpstream(obj, b.Strict)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
		b.Warnings = append(b.Warnings, warnings...)
		return b.addClass(&Class{TopologyClass: c, Upstream: obj, Source: where})
	case gv.Group == v1alpha2.GroupVersion.Group && obj.GetKind() == v1alpha2.TopologyKind:
		t := &v1alpha2.Topology{}
		if err := b.decode(obj.Object, t, id); err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
		b.Topologies = append(b.Topologies, &Topology{Topology: t, Source: where})
		return nil
	case gv.Group == v1alpha2.GroupVersion.Group && obj.GetKind() == v1alpha2.TopologyExtensionKind:
		e := &v1alpha2.TopologyExtension{}
		if err := b.decode(obj.Object, e, id); err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
		e.Namespace = "" // cluster-scoped
		return b.addExtension(e, where)
	case gv.Group == RuntimeAPIGroup && obj.GetKind() == "ExtensionConfig":
		e, warnings, err := extensionFromUpstream(obj, b.Strict)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", where, id, err)
		}
		b.Warnings = append(b.Warnings, warnings...)
		return b.addExtension(e, where)
	case gv.Group == ClusterAPIGroup && obj.GetKind() == "Cluster":
		if _, has, _ := unstructured.NestedMap(obj.Object, "spec", "topology"); has {
			t, warnings, err := topologyFromCluster(obj, b.Strict)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", where, id, err)
			}
			b.Warnings = append(b.Warnings, warnings...)
			b.Topologies = append(b.Topologies, &Topology{Topology: t, Upstream: obj, Source: where})
			return nil
		}
	}
	b.Objects = append(b.Objects, obj)
	return nil
}

func (b *Bundle) addExtension(e *v1alpha2.TopologyExtension, where string) error {
	for _, prev := range b.Extensions {
		if prev.Name == e.Name {
			return fmt.Errorf("%s: extension %s is given twice; give each extension once", where, e.Name)
		}
	}
	b.Extensions = append(b.Extensions, e)
	return nil
}

func (b *Bundle) addClass(c *Class) error {
	key := c.Namespace + "/" + c.Name
	if prev, ok := b.Classes[key]; ok {
		return fmt.Errorf("%s: class %s is also defined in %s; give each class once", c.Source, key, prev.Source)
	}
	b.Classes[key] = c
	return nil
}

// ClassFor finds the class of a topology.
func (b *Bundle) ClassFor(t *Topology) (*Class, error) {
	key := t.GetClassKey()
	ns := key.Namespace
	if c, ok := b.Classes[key.String()]; ok {
		return c, nil
	}
	known := make([]string, 0, len(b.Classes))
	for k := range b.Classes {
		known = append(known, k)
	}
	sort.Strings(known)
	kind := "Topology"
	field := "spec.classRef"
	if t.Upstream != nil {
		kind, field = "Cluster", "spec.topology.classRef"
		if isV1Beta1(t.Upstream.GetAPIVersion()) {
			field = "spec.topology.class"
		}
	}
	return nil, fmt.Errorf("%s %s/%s: %s: class %s/%s is not in the input (classes given: %v); add the file that defines it with -f",
		kind, t.Namespace, t.Name, field, ns, t.Spec.ClassRef.Name, known)
}

// Templates indexes every non-class, non-topology object, for template lookup.
func (b *Bundle) Templates() *clusterstate.TemplateIndex {
	return clusterstate.NewTemplateIndex(b.Objects...)
}

// decode decodes a whole object of ours into out, keeping the warnings for
// the fields it drops.
func (b *Bundle) decode(in map[string]any, out any, id string) error {
	d := &fieldDecoder{strict: b.Strict}
	if err := d.decode(in, out, ""); err != nil {
		return err
	}
	b.Warnings = append(b.Warnings, d.warnings(id)...)
	return nil
}

// InlineTemplates writes into every class the referenced templates inline
// chooses (contract.InlineTemplates) and drops from Objects each template so
// written that no class references any more. It returns one line per template
// written, naming the class and field, in class order.
func (b *Bundle) InlineTemplates(inline func(t *unstructured.Unstructured) (bool, error)) ([]string, error) {
	index := clusterstate.NewTemplateIndex(b.Objects...)
	keys := make([]string, 0, len(b.Classes))
	for k := range b.Classes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	written := map[*unstructured.Unstructured]bool{}
	for _, k := range keys {
		c := b.Classes[k]
		find := func(ref v1alpha2.ClusterClassTemplateReference) *unstructured.Unstructured {
			t, _ := index.Get(ref.APIVersion, ref.Kind, c.Namespace, ref.Name)
			return t
		}
		done, err := contract.InlineTemplates(c.TopologyClass, find, inline)
		if err != nil {
			return nil, fmt.Errorf("class %s: %w", k, err)
		}
		for _, d := range done {
			written[d.Template] = true
			lines = append(lines, fmt.Sprintf("%s %s/%s is written into class %s as %s", d.Template.GetKind(), d.Template.GetNamespace(), d.Template.GetName(), k, d.Field))
		}
	}
	// A template another class still references stays for it.
	referenced := map[*unstructured.Unstructured]bool{}
	for _, c := range b.Classes {
		for _, ref := range contract.ClassTemplateRefs(c.TopologyClass) {
			if t, ok := index.Get(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name); ok {
				referenced[t] = true
			}
		}
	}
	kept := b.Objects[:0]
	for _, o := range b.Objects {
		if written[o] && !referenced[o] {
			continue
		}
		kept = append(kept, o)
	}
	b.Objects = kept
	return lines, nil
}
