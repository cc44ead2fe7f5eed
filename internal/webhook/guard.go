package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// MaxObjectBytes is the largest Topology or TopologyClass the webhooks admit.
// etcd refuses requests over 1.5 MiB with an error that names no field; the
// object grows on the way (managed fields, status), so the bound is lower.
const MaxObjectBytes = 1 << 20

// guard runs before a webhook decodes the object: an object too large to
// store, or one that does not decode (a duration such as "5 minutes"), gets
// an answer that names the field, never a 500 or Go's decoder text. A
// mutating webhook lets such an object through unchanged, so that the API
// server's schema validation, which runs after it, names the field itself.
func guard(h admission.Handler, gk schema.GroupKind, into reflect.Type, mutating bool) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Delete || len(req.Object.Raw) == 0 {
			return h.Handle(ctx, req)
		}
		if n := len(req.Object.Raw); n > MaxObjectBytes {
			if mutating {
				return admission.Allowed("")
			}
			return refuse(gk, req.Name, field.ErrorList{field.Invalid(largestField(req.Object.Raw), fmt.Sprintf("<%d bytes>", n),
				fmt.Sprintf("the %s is %d bytes, most of them here; at most %d are admitted, as etcd cannot store much more: move values into templates or split it", gk.Kind, n, MaxObjectBytes))})
		}
		if fe := decodeError(req.Object.Raw, into); fe != nil {
			if mutating {
				return admission.Allowed("")
			}
			return refuse(gk, req.Name, field.ErrorList{fe})
		}
		return h.Handle(ctx, req)
	})
}

func refuse(gk schema.GroupKind, name string, errs field.ErrorList) admission.Response {
	status := apierrors.NewInvalid(gk, name, errs).Status()
	status.Code = http.StatusUnprocessableEntity
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
}

// largestField is the field that holds most of an oversized object: from
// the root, the child holding over half of its parent, as deep as that goes.
func largestField(raw []byte) *field.Path {
	var cur any
	if json.Unmarshal(raw, &cur) != nil {
		return field.NewPath("metadata")
	}
	size := len(raw)
	var p *field.Path
	for {
		obj, ok := cur.(map[string]any)
		if !ok {
			break
		}
		best, bestSize := "", 0
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			data, _ := json.Marshal(obj[k])
			if len(data) > bestSize {
				best, bestSize = k, len(data)
			}
		}
		if best == "" || bestSize*2 < size {
			break
		}
		p, cur, size = child(p, best), obj[best], bestSize
	}
	if p == nil {
		return field.NewPath("metadata")
	}
	return p
}

// decodeError is the field at which raw fails to decode into a value of type
// t, with why, or nil when it decodes.
func decodeError(raw []byte, t reflect.Type) *field.Error {
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err == nil {
		return nil
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return field.Invalid(nil, "", "not a JSON object: "+err.Error())
	}
	return locate(t, doc, nil)
}

// locate descends from a value that does not decode into t to the innermost
// field that does not, so the error names it rather than the whole object.
func locate(t reflect.Type, v any, p *field.Path) *field.Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch obj := v.(type) {
	case map[string]any:
		if t.Kind() == reflect.Struct {
			for _, name := range slices.Sorted(maps.Keys(obj)) {
				sub := obj[name]
				ft, ok := fieldType(t, name)
				if !ok || decodes(ft, sub) {
					continue
				}
				return locate(ft, sub, child(p, name))
			}
		}
		if t.Kind() == reflect.Map {
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if sub := obj[k]; !decodes(t.Elem(), sub) {
					return locate(t.Elem(), sub, child(p, "").Key(k))
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, sub := range obj {
				if !decodes(t.Elem(), sub) {
					return locate(t.Elem(), sub, indexOf(p, i))
				}
			}
		}
	}
	raw, _ := json.Marshal(v)
	err := json.Unmarshal(raw, reflect.New(t).Interface())
	msg := "cannot be read"
	if err != nil {
		msg = strings.TrimPrefix(err.Error(), "json: ")
	}
	return field.Invalid(p, string(raw), msg+hint(t, p))
}

// hint says what a field of type t takes, for the types whose Go errors do not.
func hint(t reflect.Type, p *field.Path) string {
	switch {
	case t.PkgPath() == "k8s.io/apimachinery/pkg/apis/meta/v1" && t.Name() == "Duration":
		return `: a duration is written like "30s", "5m" or "1h30m"`
	case t.Kind() == reflect.Int32 && strings.HasSuffix(p.String(), "Seconds"):
		return ": give whole seconds as a number, such as 300"
	}
	return ""
}

func decodes(t reflect.Type, v any) bool {
	raw, err := json.Marshal(v)
	if err != nil {
		return false
	}
	return json.Unmarshal(raw, reflect.New(t).Interface()) == nil
}

// fieldType finds the type of the struct field whose JSON name is name,
// looking into inline (embedded) fields.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f.Type, true
		}
		if tag == "" && (f.Anonymous || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if sub, ok := fieldType(ft, name); ok {
					return sub, true
				}
			}
		}
	}
	return nil, false
}

func child(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	if name == "" {
		return p
	}
	return p.Child(name)
}

func indexOf(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath("items").Index(i)
	}
	return p.Index(i)
}
