package plugin

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-topology/kubectl-topology/internal/live"
)

// connect builds a client from kubectl's flags (--kubeconfig, --context, -n, --as ...).
func connect(flags *genericclioptions.ConfigFlags) (*live.Cluster, error) {
	if err := kubeconfigEnvExists(flags); err != nil {
		return nil, err
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig: %w; set --kubeconfig or KUBECONFIG", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	live.WarnTo(cfg, os.Stderr)
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	raw, _ := flags.ToRawKubeConfigLoader().RawConfig()
	ctxName := raw.CurrentContext
	if flags.Context != nil && *flags.Context != "" {
		ctxName = *flags.Context
	}
	c, err := client.New(cfg, client.Options{Scheme: live.Scheme()})
	if err != nil {
		return nil, live.Explain(err, &live.Cluster{Config: cfg, Context: ctxName})
	}
	return &live.Cluster{Client: c, Config: cfg, Namespace: ns, Context: ctxName}, nil
}

// kubeconfigEnvExists refuses a KUBECONFIG whose files are all missing:
// client-go skips missing files there and would talk to localhost:8080, where
// --kubeconfig with the same path says the file is missing.
func kubeconfigEnvExists(flags *genericclioptions.ConfigFlags) error {
	if flags.KubeConfig != nil && *flags.KubeConfig != "" {
		return nil
	}
	env := os.Getenv("KUBECONFIG")
	if env == "" {
		return nil
	}
	for _, path := range filepath.SplitList(env) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
	}
	return fmt.Errorf("KUBECONFIG=%s: no such file; point KUBECONFIG or --kubeconfig at an existing kubeconfig", env)
}
