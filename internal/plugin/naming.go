package plugin

import (
	"strings"
)

// capitalize starts a sentence with s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
