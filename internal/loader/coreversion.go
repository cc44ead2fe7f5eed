package loader

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
)

// DetectCoreVersion asks discovery which Cluster API core version the
// management cluster serves: v1beta2 from Cluster API v1.11 on, where v1beta1
// is deprecated, else v1beta1. A cluster without Cluster API gets v1beta2,
// what any Cluster API installed today brings.
func DetectCoreVersion(d discovery.DiscoveryInterface) (contract.CoreVersion, error) {
	for _, v := range []contract.CoreVersion{contract.CoreV1Beta2, contract.CoreV1Beta1} {
		_, err := d.ServerResourcesForGroupVersion(v.APIVersion())
		switch {
		case err == nil:
			return v, nil
		case apierrors.IsNotFound(err):
			continue
		default:
			return "", fmt.Errorf("asking the API server whether it serves %s: %w", v.APIVersion(), err)
		}
	}
	return contract.CoreV1Beta2, nil
}
