package cachetransform

import "sync"

// maxInterned bounds each table of interned strings. Past the bound a table
// starts over, which costs sharing for a while, never correctness.
const maxInterned = 8192

// maxInternedValue is the longest value interned: kinds, API versions,
// label values, names. Longer ones (annotations' documents) rarely repeat.
const maxInternedValue = 64

// interner keeps one copy of the strings the metadata of cached objects
// repeats: label and annotation keys and values, owners' kinds and names,
// finalizers. Decoding gives every object its own copy of each.
type interner struct {
	mu     sync.Mutex
	keys   map[string]string
	values map[string]any // boxed once: an interface holding a string allocates
}

func newInterner() *interner {
	return &interner{keys: map[string]string{}, values: map[string]any{}}
}

// object rebuilds obj with interned keys and short string values: a key of
// a Go map cannot be swapped in place.
func (in *interner) object(obj map[string]any) map[string]any {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.mapOf(obj)
}

func (in *interner) mapOf(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k == "managedFields" {
			out[in.key(k)] = v // its trees are shared already
			continue
		}
		out[in.key(k)] = in.value(v)
	}
	return out
}

func (in *interner) value(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return in.mapOf(x)
	case []any:
		for i := range x {
			x[i] = in.value(x[i])
		}
		return x
	case string:
		if len(x) > maxInternedValue {
			return v
		}
		return oneCopy(in.values, x, v)
	}
	return v
}

func (in *interner) key(k string) string {
	return oneCopy(in.keys, k, k)
}

// oneCopy is the copy of k's value that table holds, v when it holds none.
func oneCopy[V any](table map[string]V, k string, v V) V {
	if one, ok := table[k]; ok {
		return one
	}
	if len(table) >= maxInterned {
		clear(table)
	}
	table[k] = v
	return v
}
