//go:build tools

// Package tools pins the commands built by test/cluster/build.sh so that
// `go mod tidy` keeps their dependencies in go.mod/go.sum.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet" // the real node (build-node.sh)
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
