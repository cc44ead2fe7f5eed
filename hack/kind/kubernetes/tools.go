//go:build tools

// Package kubernetes pins the Kubernetes release of the kind path's node
// image: kubelet, kubeadm and the control-plane components it runs as static
// pods, all built from the Go module proxy. Its go.mod starts as a copy of
// hack/tools' (same release, same replaces), kept apart so that the node's
// extra commands never move the local control plane's dependencies.
package kubernetes

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
