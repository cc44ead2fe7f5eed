package plan

import (
	"math"

	goyaml "go.yaml.in/yaml/v2"
)

// ObjectYAML writes an unstructured object's content as sigs.k8s.io/yaml's
// Marshal does, byte for byte, without the round trip Marshal takes (JSON
// out, then parsed back by the YAML parser), which was a fifth of a plan's
// CPU on the quick-start. Both sort keys as go-yaml does; what the round
// trip changes, an integral float turning into an integer, this does too.
func ObjectYAML(obj map[string]interface{}) ([]byte, error) {
	if !holdsIntegralFloat(obj) {
		return goyaml.Marshal(obj)
	}
	return goyaml.Marshal(withIntegers(obj))
}

// integralFloat tells a float64 that JSON prints without a fraction or an
// exponent, and so the YAML parser reads back as an integer.
func integralFloat(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1<<63
}

// holdsIntegralFloat tells whether v holds such a float anywhere; content
// decoded from JSON or YAML holds none, so it is rarely copied.
func holdsIntegralFloat(v interface{}) bool {
	switch v := v.(type) {
	case float64:
		return integralFloat(v)
	case map[string]interface{}:
		for _, e := range v {
			if holdsIntegralFloat(e) {
				return true
			}
		}
	case []interface{}:
		for _, e := range v {
			if holdsIntegralFloat(e) {
				return true
			}
		}
	}
	return false
}

// withIntegers is a copy of v with every integral float an int64.
func withIntegers(v interface{}) interface{} {
	switch v := v.(type) {
	case float64:
		if integralFloat(v) {
			return int64(v)
		}
	case map[string]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, e := range v {
			out[k] = withIntegers(e)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, e := range v {
			out[i] = withIntegers(e)
		}
		return out
	}
	return v
}
