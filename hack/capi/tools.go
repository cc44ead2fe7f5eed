//go:build tools

// Package capi pins the Cluster API release whose managers the local control
// plane runs beside the agent: core, kubeadm bootstrap, kubeadm control
// plane, and the Docker provider, whose in-memory backend fakes machines and
// workload clusters; and upstream's test extension, the Runtime SDK server
// its e2e tests answer lifecycle hooks with. `make capi-bins` builds them into bin/. It is a module of
// its own, so that its dependencies never move those of the Kubernetes build
// in hack/tools.
package capi

import (
	_ "sigs.k8s.io/cluster-api/bootstrap/kubeadm"
	_ "sigs.k8s.io/cluster-api/controlplane/kubeadm"
	_ "sigs.k8s.io/cluster-api/core"
	_ "sigs.k8s.io/cluster-api/test/extension"
	_ "sigs.k8s.io/cluster-api/test/infrastructure/docker"
)
