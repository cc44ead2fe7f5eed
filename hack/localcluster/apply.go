package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
	"sigs.k8s.io/yaml"
)

// apply server-side applies every object in the YAML files (or directories of
// them) to the local control plane, as `kubectl apply --server-side` would;
// the local control plane has no kubectl.
func apply(ctx context.Context, kubeconfig string, paths []string) error {
	return eachObject(ctx, kubeconfig, paths, func(c client.Client, u *unstructured.Unstructured) error {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("localcluster-apply"), client.ForceOwnership); err != nil {
			return err
		}
		fmt.Printf("%s/%s applied\n", strings.ToLower(u.GetKind()), u.GetName())
		return nil
	})
}

// remove deletes every object in the YAML files, as `kubectl delete -f` would.
func remove(ctx context.Context, kubeconfig string, paths []string) error {
	return eachObject(ctx, kubeconfig, paths, func(c client.Client, u *unstructured.Unstructured) error {
		if err := client.IgnoreNotFound(c.Delete(ctx, u)); err != nil {
			return err
		}
		fmt.Printf("%s/%s deleted\n", strings.ToLower(u.GetKind()), u.GetName())
		return nil
	})
}

// clientFor is a client of the control plane kubeconfig points at.
func clientFor(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{})
}

// removeTopologies deletes every Topology of every namespace: the demo is the
// user's sandbox, and the agent's uninstall is refused while any remains.
func removeTopologies(ctx context.Context, kubeconfig string) error {
	c, err := clientFor(kubeconfig)
	if err != nil {
		return err
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind + "List"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil // the agent's CRDs are not installed: no Topology to delete
		}
		return fmt.Errorf("listing Topologies: %w", err)
	}
	for i := range list.Items {
		u := &list.Items[i]
		if err := client.IgnoreNotFound(c.Delete(ctx, u)); err != nil {
			return fmt.Errorf("deleting Topology %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		fmt.Printf("topology/%s deleted (namespace %s)\n", u.GetName(), u.GetNamespace())
	}
	return nil
}

func eachObject(ctx context.Context, kubeconfig string, paths []string, do func(client.Client, *unstructured.Unstructured) error) error {
	c, err := clientFor(kubeconfig)
	if err != nil {
		return err
	}
	var files []string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			matches, _ := filepath.Glob(filepath.Join(p, "*.yaml"))
			files = append(files, matches...)
			continue
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return fmt.Errorf("nothing to apply: give -f FILE or -f DIR")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if u.GetNamespace() == "" {
				u.SetNamespace("default")
			}
			if err := do(c, u); err != nil {
				return fmt.Errorf("%s: %s %s: %w", f, u.GetKind(), u.GetName(), err)
			}
		}
	}
	return nil
}
