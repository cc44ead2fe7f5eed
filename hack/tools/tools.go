//go:build tools

// Package tools pins the build-time tools of kubectl-topology so that `go build`
// in this module produces the exact versions the Makefile expects: controller-gen;
// the kube-apiserver, kube-controller-manager and etcd of the local control plane;
// and kubectl, which the e2e suite runs against the CRDs as a user would.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
