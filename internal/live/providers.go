package live

import (
	"context"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/templateprobe"
)

// ProviderReport writes the cluster's Cluster API providers: how each runs
// (its Deployment's image and feature gates, when it has one here), the
// template kinds it refuses to store, and what the product does about them.
// It is a report: what it cannot read it says, and the command goes on.
func ProviderReport(ctx context.Context, w io.Writer, ca *Cluster) {
	providers, err := templateprobe.Survey(ctx, ca.Client, metav1.NamespaceDefault)
	if err != nil {
		fmt.Fprintf(w, "Cluster API providers: cannot be read: %v\n", Explain(err, ca))
		return
	}
	if len(providers) == 0 {
		fmt.Fprintln(w, "Cluster API providers: none found (no CRD carries the clusterctl provider label)")
		return
	}
	running := ProviderDeployments(ctx, ca)
	fmt.Fprintln(w, "Cluster API providers:")
	refused := 0
	for _, p := range providers {
		how, ok := running[p.Name]
		if !ok {
			how = "no Deployment in this cluster"
		}
		fmt.Fprintf(w, "  %s (%s): ", p.Name, how)
		switch {
		case len(p.Refused) > 0:
			kinds := make([]string, len(p.Refused))
			for i, r := range p.Refused {
				kinds[i] = r.Kind
			}
			fmt.Fprintf(w, "refuses %s (%s)\n", strings.Join(kinds, ", "), p.Refused[0].Message)
			refused += len(kinds)
		case len(p.Templates) > 0:
			fmt.Fprintf(w, "stores its template kinds (%s)\n", strings.Join(p.Templates, ", "))
		default:
			fmt.Fprintln(w, "no template kind")
		}
	}
	if refused > 0 {
		fmt.Fprintln(w, "A class holds a refused kind inline (template: beside templateRef:); `kubectl topology convert` writes it so, and the agent refuses a class that references one.")
	}
}

// ProviderDeployments says how each provider with a Deployment here runs:
// its image and feature gates. A provider run outside the cluster has none.
func ProviderDeployments(ctx context.Context, ca *Cluster) map[string]string {
	list := &appsv1.DeploymentList{}
	out := map[string]string{}
	if err := ca.Client.List(ctx, list, client.HasLabels{ProviderLabel}); err != nil {
		return out
	}
	for _, d := range list.Items {
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			gates := "every feature gate at its default"
			for _, a := range c.Args {
				if g, ok := strings.CutPrefix(a, "--feature-gates="); ok {
					gates = "feature gates " + g
				}
			}
			out[d.Labels[ProviderLabel]] = c.Image + ", " + gates
		}
	}
	return out
}

// ProviderLabel is the clusterctl provider label on provider CRDs.
const ProviderLabel = "cluster.x-k8s.io/provider"
