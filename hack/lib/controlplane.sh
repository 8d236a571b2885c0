#!/usr/bin/env bash
# Builds the Kubernetes binaries (etcd, kube-apiserver and, for hack/cluster,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy) from the
# pinned wrapper module in hack/controlplane, caching them outside the work
# tree (hack/lib/gobuild.sh: keyed by go.mod and go.sum, so a new pin rebuilds
# and nothing else does; each binary is built when first asked for, and the
# ones asked for together in one `go build`).
#
#   controlplane_build [BINARY...]   # default: etcd kube-apiserver; prints the directory
#   controlplane_testenv_bins        # etcd, kube-apiserver and hack/helm's Helm
set -euo pipefail

KRT_ROOT="${KRT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
source "$KRT_ROOT/hack/lib/gobuild.sh"

controlplane_bin_dir() { gobuild_dir controlplane; }

controlplane_build() {
	local names=("$@")
	[[ ${#names[@]} -gt 0 ]] || names=(etcd kube-apiserver)
	local version
	version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$KRT_ROOT/hack/controlplane/go.mod")
	local stamp="-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
	local name specs=()
	for name in "${names[@]}"; do
		case "$name" in
		etcd) specs+=("etcd=go.etcd.io/etcd/server/v3") ;;
		kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy)
			specs+=("$name=k8s.io/kubernetes/cmd/$name") ;;
		*) echo "controlplane: no package for $name" >&2; return 1 ;;
		esac
	done
	gobuild_many controlplane "$stamp" "${specs[@]}"
}

# What hack/testenv runs: etcd and kube-apiserver, and Helm (it renders the
# chart's RBAC and APIService).
controlplane_testenv_bins() {
	controlplane_build etcd kube-apiserver >/dev/null
	"$KRT_ROOT/hack/helm" version --short >/dev/null
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	controlplane_build "$@"
fi
