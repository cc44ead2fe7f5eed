// Package names generates the names of the objects a topology creates, the way
// Cluster API's topology controller does: Go templates over the cluster and
// pool names plus a 5-character random suffix, never longer than 63 characters.
package names

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/lru"
)

const (
	// MaxLength is the longest name a generated object may have.
	MaxLength = 63
	// RandomLength is the length of the random suffix.
	RandomLength = 5
	maxPrefix    = MaxLength - RandomLength

	// DefaultInfrastructureTemplate names the InfrastructureCluster when the class does not.
	DefaultInfrastructureTemplate = "{{ .cluster.name }}-{{ .random }}"
	// DefaultControlPlaneTemplate names the control plane when the class does not.
	DefaultControlPlaneTemplate = "{{ .cluster.name }}-{{ .random }}"
	// DefaultMachineDeploymentTemplate names MachineDeployments when the class does not.
	DefaultMachineDeploymentTemplate = "{{ .cluster.name }}-{{ .machineDeployment.topologyName }}-{{ .random }}"
	// DefaultMachinePoolTemplate names MachinePools when the class does not.
	DefaultMachinePoolTemplate = "{{ .cluster.name }}-{{ .machinePool.topologyName }}-{{ .random }}"
)

// alphabet is the one Kubernetes uses for generated names: no vowels, no
// look-alike characters, so no words and no ambiguity.
const alphabet = "bcdfghjklmnpqrstvwxz2456789"

// Source supplies random numbers; tests inject a seeded one for stable names.
type Source interface {
	IntN(n int) int
}

// Generator makes names from one random source.
type Generator struct {
	rnd Source
}

// NewGenerator returns a Generator drawing from src; nil means a time-seeded source.
func NewGenerator(src Source) *Generator {
	if src == nil {
		src = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Generator{rnd: src}
}

// NewSeeded returns a Generator with a fixed seed, for reproducible output.
func NewSeeded(seed uint64) *Generator {
	return NewGenerator(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
}

// Random returns a random suffix of RandomLength characters.
func (g *Generator) Random() string {
	b := make([]byte, RandomLength)
	for i := range b {
		b[i] = alphabet[g.rnd.IntN(len(alphabet))]
	}
	return string(b)
}

// Simple returns prefix followed by a random suffix, cutting prefix so the
// result fits in MaxLength. Cloned templates are named this way.
func (g *Generator) Simple(prefix string) string {
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + g.Random()
}

// Vars are the values a naming template may use besides .cluster.name and .random.
type Vars struct {
	// Cluster is the name of the cluster.
	Cluster string
	// MachineDeployment is the topology name of the MachineDeployment, if any.
	MachineDeployment string
	// MachinePool is the topology name of the MachinePool, if any.
	MachinePool string
}

// Template renders a namingStrategy template. Names over MaxLength are cut and
// given a fresh random suffix, so they stay unique.
func (g *Generator) Template(tpl string, v Vars) (string, error) {
	t, err := Parse(tpl)
	if err != nil {
		return "", err
	}
	data := map[string]any{
		"cluster": map[string]any{"name": v.Cluster},
		"random":  g.Random(),
	}
	if v.MachineDeployment != "" {
		data["machineDeployment"] = map[string]any{"topologyName": v.MachineDeployment}
	}
	if v.MachinePool != "" {
		data["machinePool"] = map[string]any{"topologyName": v.MachinePool}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("rendering naming template %q: %w", tpl, err)
	}
	name := buf.String()
	if len(name) > MaxLength {
		name = name[:maxPrefix] + g.Random()
	}
	// Checked here, where every naming template is rendered, so that the
	// class webhook (with sample values) and the reconcile refuse alike.
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return "", fmt.Errorf("naming template %q renders %q, which is not a valid object name: %s", tpl, name, strings.Join(msgs, "; "))
	}
	return name, nil
}

// Parse parses a naming template the way Template does, so validation reports
// the same errors the controller would hit.
// A parsed template is kept by its text: a class's few naming templates are
// rendered for every new object, and parsing was most of the cost.
func Parse(tpl string) (*template.Template, error) {
	if t, ok := parsed.Get(tpl); ok {
		return t.(*template.Template), nil
	}
	t, err := template.New("name").Option("missingkey=error").Parse(tpl)
	if err != nil {
		return nil, fmt.Errorf("parsing naming template %q: %w", tpl, err)
	}
	parsed.Add(tpl, t)
	return t, nil
}

// parsed holds the naming templates last parsed, by their text; Execute on a
// parsed template is safe from several goroutines. Bounded, as the class
// webhook parses whatever templates it is sent.
var parsed = lru.New(256)
