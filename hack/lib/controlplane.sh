#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the pinned wrapper module in
# hack/controlplane, caching the binaries outside the work tree. The cache key
# is a digest of go.mod and go.sum, so a new pin rebuilds and nothing else does.
set -euo pipefail

KRT_ROOT="${KRT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KRT_CACHE="${KRT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes-console}"

controlplane_bin_dir() {
	local key
	key=$(cat "$KRT_ROOT/hack/controlplane/go.mod" "$KRT_ROOT/hack/controlplane/go.sum" | sha256sum | cut -c1-16)
	echo "$KRT_CACHE/controlplane-$key"
}

controlplane_build() {
	local dir
	dir=$(controlplane_bin_dir)
	if [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]]; then
		echo "$dir"
		return 0
	fi
	mkdir -p "$dir.tmp"
	local version
	version=$(awk '$1 == "k8s.io/kubernetes" {print $2; exit}' "$KRT_ROOT/hack/controlplane/go.mod")
	(
		cd "$KRT_ROOT/hack/controlplane"
		export CGO_ENABLED=0 GOFLAGS=-mod=mod
		echo "building etcd (once per pin)..." >&2
		go build -trimpath -o "$dir.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
		echo "building kube-apiserver $version (once per pin; several minutes)..." >&2
		go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34" \
			-o "$dir.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
	)
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	echo "$dir"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	controlplane_build
fi
