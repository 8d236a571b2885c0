//go:build tools

// Package controlplane pins the control-plane binaries built for hack/testenv.
package controlplane

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
