package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kubectl-topology/kubectl-topology/internal/freeport"
	"github.com/kubectl-topology/kubectl-topology/internal/process"
)

// TestExtensionName is the binary of upstream's test extension
// (sigs.k8s.io/cluster-api/test/extension, built by make capi-bins): the
// Runtime SDK server upstream's e2e tests drive lifecycle hooks with. It
// answers each hook from the ConfigMap <cluster>-<extensionConfigName>-
// test-extension-hookresponses and records there what it was asked.
const TestExtensionName = "capi-test-extension"

// Extension is a Runtime SDK extension server running beside the control
// plane, serving on 127.0.0.1 with a certificate of the local CA.
type Extension struct {
	// URL is where it serves its handlers.
	URL string
	// CABundle is the PEM CA its certificate is signed with.
	CABundle []byte

	c                       *Cluster
	webhookPort, healthPort int
	diagnosticsPort         int
}

// StartTestExtension starts upstream's test extension; it stops with the
// control plane, or with Stop.
func (c *Cluster) StartTestExtension(ctx context.Context) (*Extension, error) {
	if _, err := os.Stat(c.Binary(TestExtensionName)); err != nil {
		return nil, fmt.Errorf("%s is not in %s: run `make capi-bins` to build Cluster API %s's test extension", TestExtensionName, c.opts.BinDir, ProvidersVersion)
	}
	ports, err := freeport.New().Ports(3)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(filepath.Join(c.opts.Dir, "pki", "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("reading the local CA for the test extension: %w", err)
	}
	e := &Extension{URL: "https://127.0.0.1:" + strconv.Itoa(ports[0]), CABundle: ca, c: c, webhookPort: ports[0], healthPort: ports[1], diagnosticsPort: ports[2]}
	return e, e.Start(ctx)
}

// Start starts the extension again after Stop, on the same port.
func (e *Extension) Start(ctx context.Context) error {
	c := e.c
	certDir := filepath.Join(c.opts.Dir, "extension-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	for src, dst := range map[string]string{"apiserver.crt": "tls.crt", "apiserver.key": "tls.key"} {
		data, err := os.ReadFile(filepath.Join(c.opts.Dir, "pki", src))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(certDir, dst), data, 0o600); err != nil {
			return err
		}
	}
	proc, err := c.startWithEnv(TestExtensionName, []string{"KUBECONFIG=" + c.Kubeconfig},
		"--webhook-port="+strconv.Itoa(e.webhookPort),
		"--webhook-cert-dir="+certDir,
		"--health-addr=127.0.0.1:"+strconv.Itoa(e.healthPort),
		"--diagnostics-address=127.0.0.1:"+strconv.Itoa(e.diagnosticsPort),
		"--insecure-diagnostics",
		"--leader-elect=false",
		"--v=2",
	)
	if err != nil {
		return err
	}
	return proc.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", e.healthPort), nil, c.opts.StartTimeout)
}

// Stop stops the extension, as an outage would.
func (e *Extension) Stop() error {
	return process.Stop(filepath.Join(e.c.opts.Dir, TestExtensionName+".pid"))
}
