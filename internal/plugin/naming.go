package plugin

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
)

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }

// capitalize starts a sentence with s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
