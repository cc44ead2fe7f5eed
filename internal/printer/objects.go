package printer

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Objects writes objs as a YAML stream (documents split by ---) or, with
// format "json", one JSON object a line: what `install --dry-run=client`
// prints for kubectl apply or a GitOps repository.
func Objects(w io.Writer, objs []*unstructured.Unstructured, format string) error {
	for i, o := range objs {
		var data []byte
		var err error
		if format == "json" {
			data, err = o.MarshalJSON()
			data = append(data, '\n')
		} else {
			data, err = yaml.Marshal(o.Object)
			if i > 0 {
				data = append([]byte("---\n"), data...)
			}
		}
		if err != nil {
			return fmt.Errorf("printing %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}
