package plugin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-topology/kubectl-topology/internal/components"
	"github.com/kubectl-topology/kubectl-topology/internal/live"
	"github.com/kubectl-topology/kubectl-topology/internal/localagent"
	"github.com/kubectl-topology/kubectl-topology/internal/version"
	"github.com/kubectl-topology/kubectl-topology/manifests"
	"github.com/kubectl-topology/kubectl-topology/pkg/api/v1alpha2"
)

// installFieldManager owns what `install` applies.
const installFieldManager = "kubectl-topology-install"

// InstallOptions are the inputs of `install`.
type InstallOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	// Version picks the agent image tag; Image overrides the whole image.
	Version, Image string
	// TargetNamespace is where the agent runs.
	TargetNamespace string
	// WatchNamespace limits the agent to one namespace; empty watches all.
	WatchNamespace string
	// DryRun "client" prints the components instead of applying them.
	DryRun string
	// Output is the format of --dry-run output: yaml or json.
	Output string
	// Wait waits until the agent is ready and its webhooks registered.
	Wait bool
	// Timeout bounds Wait.
	Timeout time.Duration
	// Local runs the agent binary out of cluster instead of a Deployment.
	Local bool
	// AgentBinary is the agent executable for Local.
	AgentBinary string
	// StateDir holds the local agent's pid file, log and certificates.
	StateDir string

	access *live.Cluster
	objs   []*unstructured.Unstructured
}

// NewInstallOptions returns the inputs of `install`, with their defaults.
func NewInstallOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *InstallOptions {
	return &InstallOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdInstall returns `install`.
func NewCmdInstall(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewInstallOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "install [--version V | --image IMAGE] [--target-namespace NS] [--watch-namespace NS] [--local]",
		Short: "Install or upgrade the agent: ServiceAccount, RBAC, Service and Deployment; it installs its CRDs and webhooks itself",
		Long: `Install applies the agent's clusterctl-contract components (the same YAML
clusterctl init --addon and GitOps use), with clusterctl's transformations:
variable substitution, target namespace and image. It is idempotent and
upgrades in place. The agent then installs its CRDs, serving certificate and
admission webhooks, and reports ready; --wait waits for that.

With --local, no Deployment is made: the agent binary runs on this machine
against the cluster and registers its webhooks by URL — for the local
control plane (make local-up), which has no nodes to run Pods.`,
		Example: `  kubectl topology install --wait
  kubectl topology install --watch-namespace team-a --target-namespace topology-team-a
  kubectl topology install --dry-run=client -o yaml > agent.yaml
  kubectl topology install --local --agent-binary bin/agent`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Version, "version", "", "Agent version (image tag) to install; default the plugin's")
	f.StringVar(&o.Image, "image", "", "Agent image, overriding --version")
	f.StringVar(&o.TargetNamespace, "target-namespace", components.Namespace, "Namespace the agent runs in")
	f.StringVar(&o.WatchNamespace, "watch-namespace", "", "Only reconcile Topologies in this namespace; default all")
	f.StringVar(&o.DryRun, "dry-run", "none", `"client" prints what would be applied, without applying it`)
	f.StringVarP(&o.Output, "output", "o", "yaml", "Format of --dry-run=client output: yaml or json")
	f.BoolVar(&o.Wait, "wait", true, "Wait until the agent is ready and its webhooks are registered")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long --wait waits")
	f.BoolVar(&o.Local, "local", false, "Run the agent binary on this machine instead of a Deployment (local control plane)")
	f.StringVar(&o.AgentBinary, "agent-binary", "", "Agent executable for --local; default: kubectl-topology-agent or agent next to this plugin")
	f.StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where --local keeps the agent's pid file, log and certificates")
	return cmd
}

func defaultStateDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ".kubectl-topology"
	}
	return filepath.Join(home, ".kube", "kubectl-topology")
}

// Complete renders the components and, unless printing, connects.
func (o *InstallOptions) Complete([]string) error {
	image := o.Image
	if image == "" {
		// The agent of the plugin's own release, unless told otherwise.
		tag := o.Version
		if tag == "" {
			tag = version.Get()
		}
		image = components.Image(tag)
	}
	objs, err := renderComponents(manifests.Components, map[string]string{"TOPOLOGY_WATCH_NAMESPACE": o.WatchNamespace}, o.TargetNamespace, image)
	if err != nil {
		return err
	}
	o.objs = objs
	if o.DryRun == "client" {
		return nil
	}
	o.access, err = live.Connect(o.configFlags)
	return err
}

// Validate checks the flags.
func (o *InstallOptions) Validate() error {
	switch o.DryRun {
	case "none", "client":
	default:
		return fmt.Errorf(`--dry-run=%s is not supported; use "client" to print the components`, o.DryRun)
	}
	if o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q is not supported; use yaml or json", o.Output)
	}
	if o.Local && (o.Image != "" || o.Version != "") {
		return fmt.Errorf("--local runs the agent binary; --image and --version apply to the Deployment only")
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	return nil
}

// Run applies (or prints) the components and waits.
func (o *InstallOptions) Run(ctx context.Context) error {
	if o.DryRun == "client" {
		return printObjects(o.Out, o.objs, o.Output)
	}
	if o.Local {
		return o.runLocal(ctx)
	}
	for _, obj := range o.objs {
		if err := o.access.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner(installFieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, o.access))
		}
		fmt.Fprintf(o.Out, "%s/%s applied\n", strings.ToLower(obj.GetKind()), obj.GetName())
	}
	if err := grantProviders(ctx, o.Out, o.access); err != nil {
		return err
	}
	if !o.Wait {
		fmt.Fprintln(o.Out, "The agent installs its CRDs and webhooks when it starts; `kubectl topology version` shows when it is ready.")
		return nil
	}
	fmt.Fprintf(o.Out, "Waiting up to %s for the agent in %s to be ready...\n", o.Timeout, o.TargetNamespace)
	err := wait.PollUntilContextTimeout(ctx, time.Second, o.Timeout, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := o.access.Client.Get(ctx, client.ObjectKey{Namespace: o.TargetNamespace, Name: components.DeploymentName}, d); err != nil {
			return false, nil //nolint:nilerr // keep waiting until the deadline
		}
		return d.Status.ReadyReplicas > 0 && live.WebhooksRegistered(ctx, o.access.Client), nil
	})
	if err != nil {
		return fmt.Errorf("the agent did not become ready within %s: look at `kubectl -n %s describe deployment %s` and its logs", o.Timeout, o.TargetNamespace, components.DeploymentName)
	}
	fmt.Fprintln(o.Out, "The agent is ready; its webhooks are registered.")
	live.ProviderReport(ctx, o.Out, o.access)
	return nil
}

// grantProviders lets the agent manage the kinds of every infrastructure
// provider installed now (by their CRDs' provider label), one ClusterRole
// each, aggregated into the agent's role: explicit resources, never a whole
// API group. A provider installed later is granted by `grant` (or install).
func grantProviders(ctx context.Context, out io.Writer, ca *live.Cluster) error {
	crds := &metav1.PartialObjectMetadataList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := ca.Client.List(ctx, crds, client.HasLabels{live.ProviderLabel}); err != nil {
		return fmt.Errorf("finding installed providers: %w", live.Explain(err, ca))
	}
	byProvider := map[string]map[string][]string{} // provider -> group -> resources
	for _, crd := range crds.Items {
		provider := crd.Labels[live.ProviderLabel]
		if !strings.HasPrefix(provider, "infrastructure-") {
			continue // core is in the agent's own rules, kubeadm in its own role
		}
		plural, group, ok := strings.Cut(crd.Name, ".")
		if !ok {
			continue
		}
		if byProvider[provider] == nil {
			byProvider[provider] = map[string][]string{}
		}
		byProvider[provider][group] = append(byProvider[provider][group], plural)
	}
	for _, provider := range slices.Sorted(maps.Keys(byProvider)) {
		var kinds []components.ProviderKinds
		for _, group := range slices.Sorted(maps.Keys(byProvider[provider])) {
			kinds = append(kinds, components.ProviderKinds{Group: group, Resources: slices.Sorted(slices.Values(byProvider[provider][group]))})
		}
		role := components.ProviderRole(strings.TrimPrefix(provider, "infrastructure-"), kinds)
		// Not clusterctl's: its upgrade deletes whatever carries the agent's
		// provider label and installs the components, which hold no grant.
		delete(role.Labels, live.ProviderLabel)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(role)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: obj}
		if err := ca.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(installFieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("granting the agent provider %s: %w", provider, live.Explain(err, ca))
		}
		fmt.Fprintf(out, "clusterrole/%s applied (provider %s)\n", role.Name, provider)
	}
	return nil
}

// varPattern matches clusterctl's ${VAR} and ${VAR:=default}.
var varPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:=([^}]*))?\}`)

// renderComponents applies clusterctl's transformations to the components:
// variables, target namespace and image.
func renderComponents(data []byte, vars map[string]string, namespace, image string) ([]*unstructured.Unstructured, error) {
	var missing []string
	out := varPattern.ReplaceAllFunc(data, func(m []byte) []byte {
		sub := varPattern.FindSubmatch(m)
		name := string(sub[1])
		if v, ok := vars[name]; ok && v != "" {
			return []byte(v)
		}
		if sub[2] != nil {
			return []byte(strings.Trim(string(sub[3]), `"`))
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the components need variables %v; set them", missing)
	}
	objs, err := components.Decode(out)
	if err != nil {
		return nil, err
	}
	for _, u := range objs {
		retarget(u, namespace)
		if image != "" && u.GetKind() == "Deployment" {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for i := range containers {
				if c, ok := containers[i].(map[string]any); ok && c["name"] == "manager" {
					c["image"] = image
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
		}
	}
	return objs, nil
}

// retarget moves an object from the components' namespace to namespace.
func retarget(u *unstructured.Unstructured, namespace string) {
	if namespace == "" || namespace == components.Namespace {
		return
	}
	if u.GetKind() == "Namespace" {
		u.SetName(namespace)
		return
	}
	if u.GetNamespace() == components.Namespace {
		u.SetNamespace(namespace)
	}
	if subjects, found, _ := unstructured.NestedSlice(u.Object, "subjects"); found {
		for i := range subjects {
			if s, ok := subjects[i].(map[string]any); ok && s["namespace"] == components.Namespace {
				s["namespace"] = namespace
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, subjects, "subjects")
	}
}

func printObjects(w interface{ Write([]byte) (int, error) }, objs []*unstructured.Unstructured, format string) error {
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
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// runLocal starts the agent binary out of cluster, detached, unless one runs
// that serves this cluster.
func (o *InstallOptions) runLocal(ctx context.Context) error {
	if rec, ok := localagent.Find(o.StateDir); ok {
		problem := localagent.Problem(ctx, o.access.Client, rec)
		if problem == nil {
			fmt.Fprintf(o.Out, "The local agent is already running (pid %d).\n", rec.PID)
			return nil
		}
		// A running agent nobody can reach is worse than none: every
		// Topology write would fail in its webhook. Replace it.
		fmt.Fprintf(o.Out, "The local agent (pid %d) runs but %v; stopping it and starting a new one.\n", rec.PID, problem)
		if err := localagent.Stop(o.StateDir); err != nil {
			return fmt.Errorf("stopping the local agent (pid %d) that does not answer: %w; stop it by hand and run install --local again", rec.PID, err)
		}
	}
	bin, err := localagent.Binary(o.AgentBinary)
	if err != nil {
		return err
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	if o.configFlags.KubeConfig != nil && *o.configFlags.KubeConfig != "" {
		kubeconfig = *o.configFlags.KubeConfig
	}
	agent, err := localagent.Start(localagent.Options{Binary: bin, StateDir: o.StateDir, Kubeconfig: kubeconfig,
		AgentNamespace: o.TargetNamespace, WatchNamespace: o.WatchNamespace})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "Started the agent out of cluster (pid %d, log %s).\n", agent.PID, agent.LogPath)
	if !o.Wait {
		return nil
	}
	if err := agent.WaitReady(ctx, o.access.Client, o.Timeout); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "The agent is ready; its webhooks are registered.")
	live.ProviderReport(ctx, o.Out, o.access)
	return nil
}

// deleteAndWait deletes objs with foreground propagation and waits until
// they are gone, so that the agent's Pods have stopped.
func (o *UninstallOptions) deleteAndWait(ctx context.Context, ca *live.Cluster, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		err := ca.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationForeground))
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, ca))
		}
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := ca.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopy())
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("%s %s/%s is still there after 2m; nothing else was removed: look at `kubectl -n %s get pods`", obj.GetKind(), obj.GetNamespace(), obj.GetName(), obj.GetNamespace())
		}
	}
	return nil
}

// UninstallOptions are the inputs of `uninstall`.
type UninstallOptions struct {
	configFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	// TargetNamespace is where the agent runs.
	TargetNamespace string
	// StateDir is where a --local agent keeps its pid file.
	StateDir string
	// IncludeCRDs deletes the CRDs too (there are no Topologies left to lose).
	IncludeCRDs bool
}

// NewUninstallOptions returns the inputs of `uninstall`, with their defaults.
func NewUninstallOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *UninstallOptions {
	return &UninstallOptions{configFlags: flags, IOStreams: streams}
}

// NewCmdUninstall returns `uninstall`.
func NewCmdUninstall(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewUninstallOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "uninstall [--include-crds]",
		Short: "Remove the agent; refused while Topologies exist",
		Args:  cobra.NoArgs,
		RunE:  runE(o),
	}
	cmd.Flags().StringVar(&o.TargetNamespace, "target-namespace", components.Namespace, "Namespace the agent runs in")
	cmd.Flags().StringVar(&o.StateDir, "state-dir", defaultStateDir(), "Where a --local agent keeps its pid file")
	cmd.Flags().BoolVar(&o.IncludeCRDs, "include-crds", false, "Delete kubectl-topology's CRDs too")
	return cmd
}

// Complete has nothing to fill in: the command takes no arguments.
func (o *UninstallOptions) Complete([]string) error { return nil }

// Validate has nothing to check: the command takes no arguments.
func (o *UninstallOptions) Validate() error { return nil }

// Run refuses while Topologies exist, then deletes the components, the
// webhook registrations and a local agent.
func (o *UninstallOptions) Run(ctx context.Context) error {
	ca, err := live.Connect(o.configFlags)
	if err != nil {
		return err
	}
	list := &v1alpha2.TopologyList{}
	if err := ca.Client.List(ctx, list); err != nil && !live.IsTopologyAPIMissing(err) && !isNoMatch(err) {
		return live.Explain(err, ca)
	}
	if len(list.Items) > 0 {
		var names []string
		for _, t := range list.Items {
			names = append(names, t.Namespace+"/"+t.Name)
		}
		sort.Strings(names)
		return fmt.Errorf("refusing to uninstall: %d Topologies still exist (%s); without the agent their clusters would be unmanaged. Delete them first", len(names), strings.Join(names, ", "))
	}
	if rec, ok := localagent.Find(o.StateDir); ok {
		pid := rec.PID
		if err := localagent.Stop(o.StateDir); err != nil {
			return fmt.Errorf("stopping the local agent (pid %d): %w", pid, err)
		}
		fmt.Fprintf(o.Out, "Stopped the local agent (pid %d).\n", pid)
	}
	objs, err := renderComponents(manifests.Components, nil, o.TargetNamespace, "")
	if err != nil {
		return err
	}
	// The agent goes first: it restores its webhook configurations when they
	// are deleted under it.
	var deployment []*unstructured.Unstructured
	var rest []*unstructured.Unstructured
	for _, obj := range reverse(objs) {
		if obj.GetKind() == "Deployment" {
			deployment = append(deployment, obj)
		} else {
			rest = append(rest, obj)
		}
	}
	if err := o.deleteAndWait(ctx, ca, deployment); err != nil {
		return err
	}
	var webhooks []*unstructured.Unstructured
	for _, k := range []struct{ kind, name string }{{"ValidatingWebhookConfiguration", components.ValidatingWebhookName}, {"MutatingWebhookConfiguration", components.MutatingWebhookName}} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(k.kind)
		u.SetName(k.name)
		webhooks = append(webhooks, u)
	}
	roles := &unstructured.UnstructuredList{}
	roles.SetAPIVersion("rbac.authorization.k8s.io/v1")
	roles.SetKind("ClusterRoleList")
	if err := ca.Client.List(ctx, roles, client.MatchingLabels{components.AggregateLabel: "true"}); err != nil {
		return fmt.Errorf("listing the agent's provider roles: %w", live.Explain(err, ca))
	}
	for i := range roles.Items {
		if strings.HasPrefix(roles.Items[i].GetName(), "topology-manager-provider-") {
			rest = append(rest, &roles.Items[i])
		}
	}
	if o.IncludeCRDs {
		for _, name := range components.CRDNames {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("apiextensions.k8s.io/v1")
			u.SetKind("CustomResourceDefinition")
			u.SetName(name)
			rest = append(rest, u)
		}
	}
	for _, obj := range append(webhooks, rest...) {
		if err := ca.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !isNoMatch(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), obj.GetName(), live.Explain(err, ca))
		}
	}
	fmt.Fprintln(o.Out, "The agent is uninstalled.")
	return nil
}

func reverse(in []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(in))
	for i, o := range in {
		out[len(in)-1-i] = o
	}
	return out
}
