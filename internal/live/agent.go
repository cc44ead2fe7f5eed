package live

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
)

// AgentInstall is how the agent is installed on the cluster, as a user may
// read it.
type AgentInstall struct {
	// Deployment is the agent's Deployment; nil when it runs out of the
	// cluster (install --local) or not at all.
	Deployment *appsv1.Deployment
	// URL is where the webhooks call an agent out of the cluster; "" when
	// it runs in the cluster or not at all.
	URL string
	// Release is the agent's release as its webhook configuration records
	// it; "" when unknown.
	Release string
}

// AgentInstall finds the agent: its Deployment by the provider label, in
// whatever namespace it was installed to, and its webhook configuration.
// A user who may not list Deployments gets what the rest says.
func (ca *Cluster) AgentInstall(ctx context.Context) (AgentInstall, error) {
	var out AgentInstall
	deployments := &appsv1.DeploymentList{}
	if err := ca.Client.List(ctx, deployments, client.MatchingLabels{"cluster.x-k8s.io/provider": components.ProviderLabelValue}); err != nil && !apierrors.IsForbidden(err) {
		return out, Explain(err, ca)
	}
	for i := range deployments.Items {
		if deployments.Items[i].Name == components.DeploymentName {
			out.Deployment = &deployments.Items[i]
			break
		}
	}
	wh := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := ca.Client.Get(ctx, client.ObjectKey{Name: components.ValidatingWebhookName}, wh); err == nil {
		out.Release = wh.Annotations[components.AgentVersionAnnotation]
		if len(wh.Webhooks) > 0 && wh.Webhooks[0].ClientConfig.URL != nil {
			out.URL = *wh.Webhooks[0].ClientConfig.URL
		}
	}
	return out, nil
}
