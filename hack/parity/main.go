// Command parity compares two plan output directories (ours and clusterctl
// v1.10's) modulo what legitimately differs: random name suffixes, fields a
// fake API server adds (resourceVersion, creationTimestamp: null, zero-valued
// status) and empty structs that typed serialization writes out.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

var suffix = regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2456789]{5}\b`)

// truncated is a name cut to the 63-character limit: 58 characters and a
// random suffix with no dash before it.
var truncated = regexp.MustCompile(`([_"/])([a-z0-9][a-z0-9.-]{57})[bcdfghjklmnpqrstvwxz2456789]{5}(["._\\])`)

// mask replaces random suffixes with XXXXX.
func mask(s string) string {
	s = truncated.ReplaceAllString(s, "${1}${2}XXXXX${3}")
	return suffix.ReplaceAllString(s, "-XXXXX")
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: parity OURS UPSTREAM")
		os.Exit(2)
	}
	ours, err1 := load(os.Args[1])
	theirs, err2 := load(os.Args[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, err1, err2)
		os.Exit(2)
	}
	failed := false
	for _, k := range union(ours, theirs) {
		a, b := ours[k], theirs[k]
		switch {
		case a == "":
			fmt.Printf("MISSING in ours: %s\n", k)
			failed = true
		case b == "":
			fmt.Printf("EXTRA in ours: %s\n", k)
			failed = true
		case a != b:
			fmt.Printf("DIFFERS: %s\n  ours:     %s\n  upstream: %s\n", k, a, b)
			failed = true
		default:
			fmt.Printf("same: %s\n", k)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func load(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !strings.HasSuffix(rel, ".yaml") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		normalize(obj)
		canon, _ := json.Marshal(obj)
		out[mask("/" + rel)[1:]] = mask(string(canon))
		return nil
	})
	return out, err
}

func normalize(obj map[string]any) {
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "creationTimestamp")
	}
	delete(obj, "status")
	if spec, ok := obj["spec"].(map[string]any); ok {
		if ep, ok := spec["controlPlaneEndpoint"].(map[string]any); ok && ep["host"] == "" && fmt.Sprint(ep["port"]) == "0" {
			delete(spec, "controlPlaneEndpoint")
		}
	}
	prune(obj)
}

// prune is written here, not taken from internal/engine: the check must not share
// the code it checks, or an engine bug would cancel out.
func prune(m map[string]any) bool {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if prune(t) {
				delete(m, k)
			}
		case []any:
			for _, i := range t {
				if im, ok := i.(map[string]any); ok {
					prune(im)
				}
			}
		}
	}
	return len(m) == 0
}

func union(a, b map[string]string) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
