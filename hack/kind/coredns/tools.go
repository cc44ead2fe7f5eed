//go:build tools

// Package coredns pins CoreDNS for the kind path's node image. kubeadm
// v1.36 asks for coredns v1.14.2, which the module proxy does not have; the
// nearest release it has is built and tagged as kubeadm expects.
package coredns

import (
	_ "github.com/coredns/coredns"
)
