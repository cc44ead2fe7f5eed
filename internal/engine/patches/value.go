package patches

import (
	"fmt"
	"strconv"
	"strings"
)

// Lookup resolves a variable path such as "builtin.cluster.name" or
// "nodes[0].name" in decoded variables, the syntax valueFrom.variable takes.
func Lookup(vars map[string]any, path string) (any, error) {
	segments := strings.Split(path, ".")
	var cur any = vars
	for i, seg := range segments {
		name, index, err := parseSegment(seg)
		if err != nil {
			return nil, fmt.Errorf("variable path %q: %w", path, err)
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("variable path %q: %q is not an object", path, strings.Join(segments[:i], "."))
		}
		next, ok := obj[name]
		if !ok {
			if i == 0 {
				return nil, fmt.Errorf("variable %q is not set", name)
			}
			return nil, fmt.Errorf("variable path %q: %q has no field %q", path, strings.Join(segments[:i], "."), name)
		}
		cur = next
		if index >= 0 {
			arr, ok := cur.([]any)
			if !ok {
				return nil, fmt.Errorf("variable path %q: %q is not an array", path, name)
			}
			if index >= len(arr) {
				return nil, fmt.Errorf("variable path %q: array %q has no index %d", path, name, index)
			}
			cur = arr[index]
		}
	}
	return cur, nil
}

// parseSegment splits "name[3]" into name and index; index is -1 without brackets.
func parseSegment(seg string) (string, int, error) {
	open, close := strings.Index(seg, "["), strings.Index(seg, "]")
	switch {
	case open < 0 && close < 0:
		if seg == "" {
			return "", 0, fmt.Errorf("empty segment")
		}
		return seg, -1, nil
	case open < 0 || close < open || close != len(seg)-1:
		return "", 0, fmt.Errorf("segment %q is malformed", seg)
	}
	idx, err := strconv.Atoi(seg[open+1 : close])
	if err != nil || idx < 0 {
		return "", 0, fmt.Errorf("segment %q has an invalid array index", seg)
	}
	return seg[:open], idx, nil
}
