package bundle

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"
)

// fieldDecoder decodes input into our typed objects the way the API server
// stores a custom resource: a field the type does not have is pruned, and
// named so the user sees it, or refused when strict (kubectl's
// --validate=strict). Published classes carry such fields (Metal3's v1beta2
// class keeps v1beta1's spec.controlPlane.machineHealthCheck).
type fieldDecoder struct {
	strict bool
	// pruned are the paths of the fields dropped so far.
	pruned []string
}

// fieldPather is the strict error sigs.k8s.io/json returns for an unknown field.
type fieldPather interface{ FieldPath() string }

// decode decodes in into out; prefix is the path of in within its object
// ("spec" for a ClusterClass's spec), so the names are the object's paths.
func (d *fieldDecoder) decode(in map[string]any, out any, prefix string) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, out, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("cannot decode: %w", err)
	}
	var unknown []string
	for _, e := range strictErrs {
		fp, ok := e.(fieldPather)
		if !ok {
			return fmt.Errorf("cannot decode: %w", e)
		}
		path := fp.FieldPath()
		if prefix != "" {
			path = prefix + "." + path
		}
		unknown = append(unknown, path)
	}
	sort.Strings(unknown)
	if d.strict && len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = fmt.Sprintf("%q", u)
		}
		return fmt.Errorf("unknown field %s: remove it, or leave out --strict to drop it as the API server does", strings.Join(quoted, ", "))
	}
	d.pruned = append(d.pruned, unknown...)
	return nil
}

// warnings says, for object, which fields were dropped, one message each.
func (d *fieldDecoder) warnings(object string) []string {
	out := make([]string, 0, len(d.pruned))
	for _, p := range d.pruned {
		out = append(out, fmt.Sprintf("%s: unknown field %q is dropped, as the API server prunes it (--strict refuses it)", object, p))
	}
	return out
}
