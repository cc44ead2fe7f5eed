package rules

import (
	"context"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/variables"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// CompiledClass is a validated TopologyClass with its compiled variables.
type CompiledClass struct {
	// Class is the class as read; never modified.
	Class *v1alpha2.TopologyClass
	// Catalog holds the compiled variable schemas.
	Catalog *variables.Catalog
}

// ClassCache compiles each generation of a class once: with a thousand
// topologies of one class, schemas and CEL programs are built once, not a
// thousand times.
type ClassCache struct {
	mu      sync.Mutex
	entries map[types.UID]classEntry
}

type classEntry struct {
	generation int64
	// discovered fingerprints the variables extensions defined, which live
	// in status and so change without a new generation.
	discovered string
	catalog    *variables.Catalog
}

// discoveredFingerprint is "" for a class without discovered variables.
func discoveredFingerprint(class *v1alpha2.TopologyClass) string {
	vs := DiscoveredVariables(class)
	if len(vs) == 0 {
		return ""
	}
	raw, _ := json.Marshal(vs)
	return string(raw)
}

// NewClassCache returns an empty cache.
func NewClassCache() *ClassCache {
	return &ClassCache{entries: map[types.UID]classEntry{}}
}

// Get validates and compiles class, or returns the cached compilation of its
// generation. An invalid class comes back as an *InvalidError.
func (c *ClassCache) Get(ctx context.Context, class *v1alpha2.TopologyClass) (*CompiledClass, error) {
	c.mu.Lock()
	e, ok := c.entries[class.UID]
	c.mu.Unlock()
	discovered := discoveredFingerprint(class)
	if ok && e.generation == class.Generation && class.Generation != 0 && e.discovered == discovered {
		return &CompiledClass{Class: class, Catalog: e.catalog}, nil
	}
	cat, err := CompileClass(ctx, class)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.entries[class.UID] = classEntry{generation: class.Generation, discovered: discovered, catalog: cat}
	c.mu.Unlock()
	return &CompiledClass{Class: class, Catalog: cat}, nil
}
