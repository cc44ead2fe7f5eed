package patches

import (
	"strings"
	"testing"
)

func TestTemplateReads(t *testing.T) {
	cases := []struct {
		text string
		want string // the paths read, or "-" when the template cannot be keyed
	}{
		{`{{ .builtin.machineDeployment.version }}`, "builtin.machineDeployment.version"},
		{`{{ if .a.enabled }}x{{ else }}{{ .b }}{{ end }}`, "a.enabled b"},
		{`{{ default .x .y | replace "+" "_" }}`, "x y"},
		{`{{ $v := .x }}{{ $v }}-{{ $.y }}`, "x y"},
		{`{{ . }}`, "-"},
		{`{{ range .items }}{{ .name }}{{ end }}`, "-"},
		{`{{ with .a }}{{ .b }}{{ end }}`, "-"},
		{`{{ toJson $ }}`, "-"},
		{`{{ (index .m "k").x }}`, "-"},
	}
	for _, c := range cases {
		tpl, err := Parse(c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		reads, ok := templateReads(tpl)
		got := "-"
		if ok {
			var paths []string
			for _, r := range reads {
				paths = append(paths, strings.Join(r, "."))
			}
			got = strings.Join(paths, " ")
		}
		if got != c.want {
			t.Errorf("%s: reads %q, want %q", c.text, got, c.want)
		}
	}
}

// TestRendererMemoKeysByValuesRead renders one template for targets with
// different and equal inputs: equal inputs share a result, different ones
// never do, and an unkeyable template still renders per target.
func TestRendererMemoKeysByValuesRead(t *testing.T) {
	r := newRenderer()
	md := func(name, version string) map[string]any {
		return map[string]any{"other": name, "builtin": map[string]any{"machineDeployment": map[string]any{"name": name, "version": version}}}
	}
	text := `{{ .builtin.machineDeployment.name }}-{{ .builtin.machineDeployment.version }}`
	for _, c := range []struct{ name, version, want string }{
		{"a", "v1.33.1", "a-v1.33.1"}, {"b", "v1.33.1", "b-v1.33.1"}, {"a", "v1.34.0", "a-v1.34.0"}, {"a", "v1.33.1", "a-v1.33.1"},
	} {
		got, err := r.render(text, md(c.name, c.version))
		if err != nil || got != c.want {
			t.Errorf("render for %s %s = %v, %v; want %s", c.name, c.version, got, err, c.want)
		}
	}
	if len(r.rendered) != 3 {
		t.Errorf("%d results memoised, want one per distinct input (3)", len(r.rendered))
	}
	missing, err := r.render(`{{ .nope }}`, md("a", "v1"))
	if err != nil || missing != "<no value>" {
		t.Errorf("a missing variable renders %v, %v", missing, err)
	}
	for _, name := range []string{"first", "second"} {
		got, err := r.render(`{{ range $k, $v := . }}{{ if eq $k "other" }}{{ $v }}{{ end }}{{ end }}`, md(name, "v1"))
		if err != nil || got != name {
			t.Errorf("an unkeyable template rendered %v, %v for %s", got, err, name)
		}
	}
}
