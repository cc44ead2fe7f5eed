package plan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestObjectYAMLIsSigsYAMLByteForByte holds ObjectYAML to what it replaces,
// sigs.k8s.io/yaml's Marshal, on every object in the repository's test data
// (the providers' classes, templates and CRDs, the parity cases) and on the
// values the JSON round trip changes.
func TestObjectYAMLIsSigsYAMLByteForByte(t *testing.T) {
	objects := map[string]map[string]interface{}{
		"floats": {
			"integral": 3.0, "large": 1e6, "negativeZero": -1 * 0.0, "fraction": 0.25, "tiny": 1e-7,
			"beyondInt64": 1e20, "huge": 1e300, "int": int64(7), "nested": []interface{}{2.0, map[string]interface{}{"f": 5.0, "s": "5.0"}},
		},
		"strings": {
			"yes": "yes", "on": "on", "number": "10", "octal": "0755", "date": "2026-11-27", "html": "<a & b>",
			"multi": "line one\nline two\n", "colon": "a: b", "empty": "", "tilde": "~", "unicode": "héllo ✓",
		},
		"keys": {"b": 1, "a10": 2, "a2": 3, "A": 4, "1": 5, "true": nil, "list": []interface{}{}, "map": map[string]interface{}{}},
	}
	err := filepath.WalkDir(filepath.Join("..", "..", "testdata"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			u := &unstructured.Unstructured{}
			if j, err := yaml.YAMLToJSON(doc); err != nil || string(j) == "null" || u.UnmarshalJSON(j) != nil {
				continue // not an object: a list, a comment, a template
			}
			objects[fmt.Sprintf("%s#%d", path, i)] = u.Object
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) < 150 {
		t.Fatalf("read %d objects from testdata, want the providers' classes and CRDs among them", len(objects))
	}
	for name, obj := range objects {
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := ObjectYAML(obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: ObjectYAML differs from sigs.k8s.io/yaml:\n--- got\n%s\n--- want\n%s", name, got, want)
		}
	}
	if f := objects["floats"]; f["integral"] != 3.0 {
		t.Errorf("ObjectYAML changed the object it wrote: integral is %v (%T)", f["integral"], f["integral"])
	}
}
