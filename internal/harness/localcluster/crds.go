package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/selfinstall"
)

// ClusterAPIVersion is the Cluster API release whose CRDs the local control
// plane installs: core, kubeadm bootstrap and control plane, and CAPD.
const ClusterAPIVersion = "v1.10.10"

// ContractLabel is the label a provider CRD carries to say which Cluster API
// contract version maps to which of its API versions. Upstream's kustomization
// adds it; the CRDs in config/crd/bases lack it.
const ContractLabel = contract.ContractLabel

// ClusterAPICRDDirs returns the CRD directories of Cluster API and CAPD at
// ClusterAPIVersion, downloading the modules into the module cache if needed.
func ClusterAPICRDDirs(ctx context.Context) ([]string, error) {
	core, err := moduleDir(ctx, "sigs.k8s.io/cluster-api@"+ClusterAPIVersion)
	if err != nil {
		return nil, err
	}
	test, err := moduleDir(ctx, "sigs.k8s.io/cluster-api/test@"+ClusterAPIVersion)
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(core, "config", "crd", "bases"),
		filepath.Join(core, "bootstrap", "kubeadm", "config", "crd", "bases"),
		filepath.Join(core, "controlplane", "kubeadm", "config", "crd", "bases"),
		filepath.Join(test, "infrastructure", "docker", "config", "crd", "bases"),
	}, nil
}

// ModuleDir is the directory of module mod ("path@version") in the module
// cache, downloading it first if needed.
func ModuleDir(ctx context.Context, mod string) (string, error) { return moduleDir(ctx, mod) }

func moduleDir(ctx context.Context, mod string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w: %s", mod, err, stderr.String())
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	return info.Dir, nil
}

// ReadCRDs reads every CRD in the YAML files of dirs, sorted by name. Cluster
// API CRDs get the contract label upstream's release YAML carries.
func ReadCRDs(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := readCRDFiles(dirs...)
	for _, crd := range crds {
		if strings.HasSuffix(crd.Spec.Group, "cluster.x-k8s.io") {
			labelContract(crd)
			if p := providerOf(crd.Annotations[sourceDirAnnotation]); p != "" {
				crd.Labels[ProviderLabel] = p
				crd.Labels[ClusterctlLabel] = ""
			}
		}
		delete(crd.Annotations, sourceDirAnnotation)
	}
	return crds, err
}

// sourceDirAnnotation carries, while CRDs are read, the directory each came from.
const sourceDirAnnotation = "localcluster.kubectl-topology.io/source-dir"

// readCRDFiles reads every CRD in the YAML files of dirs as they are, sorted
// by name.
func readCRDFiles(dirs ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if info, err := os.Stat(dir); err == nil && !info.IsDir() {
			files = []string{dir} // a file of CRDs, e.g. a provider's crds-labeled.yaml
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				if len(bytes.TrimSpace(doc)) == 0 {
					continue
				}
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := yaml.UnmarshalStrict(doc, crd); err != nil {
					return nil, fmt.Errorf("reading CRD from %s: %w", f, err)
				}
				if crd.Kind != "CustomResourceDefinition" {
					continue
				}
				if crd.Annotations == nil {
					crd.Annotations = map[string]string{}
				}
				crd.Annotations[sourceDirAnnotation] = dir
				crds = append(crds, crd)
			}
		}
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}

// ProviderLabel names the clusterctl provider a CRD belongs to, as upstream's
// kustomizations label them.
const ProviderLabel = "cluster.x-k8s.io/provider"

// ClusterctlLabel is on every object `clusterctl init` installs; clusterctl
// move reads the kinds of the CRDs that carry it.
const ClusterctlLabel = "clusterctl.cluster.x-k8s.io"

// providerOf names the provider whose CRD directory dir is.
func providerOf(dir string) string {
	switch {
	case strings.Contains(dir, filepath.Join("infrastructure", "docker")):
		return "infrastructure-docker"
	case strings.Contains(dir, filepath.Join("infrastructure", "inmemory")):
		return "infrastructure-in-memory"
	case strings.Contains(dir, filepath.Join("bootstrap", "kubeadm")):
		return "bootstrap-kubeadm"
	case strings.Contains(dir, filepath.Join("controlplane", "kubeadm")):
		return "control-plane-kubeadm"
	case strings.Contains(dir, "cluster-api@"):
		return "cluster-api"
	}
	return ""
}

// labelContract maps contract v1beta1 to the CRD's storage version.
func labelContract(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			if _, set := crd.Labels[ContractLabel]; !set {
				crd.Labels[ContractLabel] = v.Name
			}
		}
	}
}

// InstallCRDs creates or updates the CRDs found in dirs and waits until the
// API server serves all of them.
func InstallCRDs(ctx context.Context, cfg *rest.Config, dirs ...string) error {
	crds, err := ReadCRDs(dirs...)
	if err != nil {
		return err
	}
	return selfinstall.ApplyCRDs(ctx, cfg, crds)
}
