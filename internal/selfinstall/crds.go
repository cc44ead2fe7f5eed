// Package selfinstall is how the agent installs itself at start: it applies
// the CRDs embedded in the binary and registers its admission webhooks. The
// local control plane uses the same code for the CRDs it installs.
package selfinstall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ApplyCRDs creates or updates crds and waits until each is Established.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if crd.Annotations == nil {
			crd.Annotations = map[string]string{}
		}
		crd.Annotations[HashAnnotation] = hashOf(crd)
		existing, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, crd, metav1.CreateOptions{})
		case err == nil && existing.Annotations[HashAnnotation] == hashOf(crd):
			continue // already as wanted: a restart writes nothing
		case err == nil:
			crd.ResourceVersion = existing.ResourceVersion
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // keep polling until the deadline
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s did not become established: %w", crd.Name, err)
		}
	}
	return nil
}

// ReadCRDsFS reads every CRD in the YAML files of fsys, sorted by name.
func ReadCRDsFS(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	files, err := fs.Glob(fsys, "*/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("reading CRD from %s: %w", f, err)
		}
		crds = append(crds, crd)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}

// HashAnnotation records the hash of the CRD as installed, so that an
// unchanged CRD is not rewritten: the API server defaults fields, so the
// stored spec never equals the file's.
const HashAnnotation = "topology.kubectl-topology.io/installed-hash"

func hashOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	c := crd.DeepCopy()
	delete(c.Annotations, HashAnnotation)
	if len(c.Annotations) == 0 {
		c.Annotations = nil // no annotations and an empty map are the same
	}
	c.ResourceVersion = ""
	h, _ := Hash(struct {
		Labels, Annotations map[string]string
		Spec                apiextensionsv1.CustomResourceDefinitionSpec
	}{c.Labels, c.Annotations, c.Spec})
	return h
}

// Hash is a short digest of what an object is installed as, for
// HashAnnotation.
func Hash(v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}
