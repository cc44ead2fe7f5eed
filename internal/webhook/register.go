package webhook

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/contract"
	"github.com/kubectl-topology/kubectl-topology/internal/engine/rules"
	"github.com/kubectl-topology/kubectl-topology/internal/membership"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// Paths the webhooks are served on, and the names of their configurations.
const (
	TopologyDefaultPath         = "/mutate-topology-kubectl-topology-io-v1alpha2-topology"
	TopologyValidatePath        = "/validate-topology-kubectl-topology-io-v1alpha2-topology"
	TopologyClassValidatePath   = "/validate-topology-kubectl-topology-io-v1alpha2-topologyclass"
	TopologyRolloutValidatePath = "/validate-topology-kubectl-topology-io-v1alpha2-topologyrollout"
	MutatingConfigurationName   = components.MutatingWebhookName
	ValidatingConfigurationName = components.ValidatingWebhookName
)

// Register serves the webhooks on srv. They read through cached, the
// agent's cache (which indexes Topologies by class, see
// v1alpha2.ClassKeyField); uncached is only asked for a class the cache does
// not have yet, so that a class created just before its Topology is used,
// and for a template a class references, which writer then asks the
// cluster whether it would store (a dry run).
func Register(srv webhook.Server, scheme *runtime.Scheme, cached, uncached client.Reader, writer client.Client, classes *rules.ClassCache, core contract.CoreVersion) {
	r := classReader{cached: cached, uncached: uncached}
	t := &Topology{classes: r, Classes: classes}
	topology := v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyKind).GroupKind()
	class := v1alpha2.GroupVersion.WithKind("TopologyClass").GroupKind()
	srv.Register(TopologyDefaultPath, guarded(admission.WithDefaulter[*v1alpha2.Topology](scheme, t), topology, typeOfTopology, true))
	srv.Register(TopologyValidatePath, guarded(admission.WithValidator[*v1alpha2.Topology](scheme, t), topology, typeOfTopology, false))
	srv.Register(TopologyClassValidatePath, guarded(admission.WithValidator[*v1alpha2.TopologyClass](scheme, &TopologyClass{Client: cached, Templates: &TemplateStore{Reader: uncached, Writer: writer}}), class, reflect.TypeFor[v1alpha2.TopologyClass](), false))
	rollout := v1alpha2.GroupVersion.WithKind(v1alpha2.TopologyRolloutKind).GroupKind()
	srv.Register(TopologyRolloutValidatePath, guarded(admission.WithValidator[*v1alpha2.TopologyRollout](scheme, &TopologyRollout{Members: membership.Reader{Client: writer, CoreVersion: core}}), rollout, reflect.TypeFor[v1alpha2.TopologyRollout](), false))
}

var typeOfTopology = reflect.TypeFor[v1alpha2.Topology]()

func guarded(w *admission.Webhook, gk schema.GroupKind, into reflect.Type, mutating bool) *admission.Webhook {
	w.Handler = guard(w.Handler, gk, into, mutating)
	return w
}

// Configurations returns the webhook registrations, pointed at the agent by
// clientConfig (a Service in-cluster, a URL when run locally). The CA bundle
// is filled in by the certificate rotator.
func Configurations(clientConfig func(path string) admissionregistrationv1.WebhookClientConfig) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	// Every field the API server would default is set, so that what is
	// stored equals what is wanted and a changed registration can be told
	// from an unchanged one.
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	equivalent := admissionregistrationv1.Equivalent
	never := admissionregistrationv1.NeverReinvocationPolicy
	scope := admissionregistrationv1.AllScopes
	// Kubernetes' default, as Cluster API's webhooks use: on a loaded
	// management cluster 5 s refused classes and Topologies for a slow answer.
	timeout := int32(10)
	// A rollout's admission reads every cluster it selects and their classes.
	rolloutTimeout := int32(15)
	rule := func(resource string, ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: ops,
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{v1alpha2.GroupVersion.Group}, APIVersions: []string{v1alpha2.GroupVersion.Version}, Resources: []string{resource}, Scope: &scope,
			},
		}}
	}
	meta := func(name string) metav1.ObjectMeta {
		// clusterctl's labels, as on the components: clusterctl delete and
		// upgrade remove what carries both.
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/name": "kubectl-topology", "cluster.x-k8s.io/provider": "addon-kubectl-topology", "clusterctl.cluster.x-k8s.io": ""}}
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: meta(MutatingConfigurationName),
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:          "default.topology.topology.kubectl-topology.io",
			ClientConfig:  clientConfig(TopologyDefaultPath),
			Rules:         rule("topologies", admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy: &fail, SideEffects: &none, TimeoutSeconds: &timeout, MatchPolicy: &equivalent, ReinvocationPolicy: &never,
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "spec-changed", Expression: specChanged}},
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: meta(ValidatingConfigurationName),
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:          "validate.topology.topology.kubectl-topology.io",
			ClientConfig:  clientConfig(TopologyValidatePath),
			Rules:         rule("topologies", admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy: &fail, SideEffects: &none, TimeoutSeconds: &timeout, MatchPolicy: &equivalent,
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "spec-or-checked-annotations-changed", Expression: specOrCheckedAnnotationsChanged()}},
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name:          "validate.topologyclass.topology.kubectl-topology.io",
			ClientConfig:  clientConfig(TopologyClassValidatePath),
			Rules:         rule("topologyclasses", admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete),
			FailurePolicy: &fail, SideEffects: &none, TimeoutSeconds: &timeout, MatchPolicy: &equivalent,
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			AdmissionReviewVersions: []string{"v1"},
		}, {
			Name:          "validate.topologyrollout.topology.kubectl-topology.io",
			ClientConfig:  clientConfig(TopologyRolloutValidatePath),
			Rules:         rule("topologyrollouts", admissionregistrationv1.Create, admissionregistrationv1.Update),
			FailurePolicy: &fail, SideEffects: &none, TimeoutSeconds: &rolloutTimeout, MatchPolicy: &equivalent,
			NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mutating, validating
}

// specChanged matches what the Topology webhooks can act on: a create or a
// spec change. Metadata alone is neither defaulted nor refused (but for
// rules.CheckedAnnotations), so asking costs a round trip and, with no
// replica answering, refuses even a finalizer's removal. The has() guards
// keep out errors, which the failure policy would make refusals.
const specChanged = `request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec`

// specOrCheckedAnnotationsChanged is specChanged, or an update of one of
// the annotations rules.ValidateTopologyMetadata checks (absent and empty
// told apart).
func specOrCheckedAnnotationsChanged() string {
	var b strings.Builder
	b.WriteString(specChanged)
	value := func(obj, key string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations ? [%[1]s.metadata.annotations[%[2]q]] : [])", obj, key)
	}
	for _, key := range rules.CheckedAnnotations {
		fmt.Fprintf(&b, " || %s != %s", value("object", key), value("oldObject", key))
	}
	return b.String()
}

// classReader reads TopologyClasses from the cache, and from the API server
// only when the cache does not have one (yet).
type classReader struct{ cached, uncached client.Reader }

func (r classReader) get(ctx context.Context, key client.ObjectKey, c *v1alpha2.TopologyClass) error {
	err := r.cached.Get(ctx, key, c)
	if apierrors.IsNotFound(err) && r.uncached != nil {
		err = r.uncached.Get(ctx, key, c)
	}
	return err
}
