#!/usr/bin/env bash
# cert-manager on hack/cluster: its controller and CA injector built from the
# pinned module of hack/cert-manager (a wrapper module with mains of its own,
# hack/cert-manager/controller/main.go says why), each binary once per pin
# under ~/.cache/kruntimes-console (certmanager_bin_dir), and its CRDs from
# that module's deploy/crds. Both run out of cluster with the cluster's admin
# kubeconfig, as one replica each (no leader election), with output in
# STATE/log/cert-manager-{controller,cainjector}.log. cert-manager's
# admission webhook is not run: nothing of the suites needs its defaulting or
# validation. The caller defines STATE, K (kubectl on the cluster) and log(),
# and sources proc.sh and gobuild.sh (for KRT_CACHE).

CERTMANAGER_NAMESPACE=cert-manager

certmanager_version() {
	awk '$1 == "require" {$0 = substr($0, 9)} $1 == "github.com/cert-manager/cert-manager" {print $2; exit}' "$KRT_ROOT/hack/cert-manager/go.mod"
}

# The pinned module's directory in the Go module cache (downloaded once).
certmanager_module_dir() {
	local v
	v=$(certmanager_version)
	[[ -n $v ]] || { log "no cert-manager version in hack/cert-manager/go.mod"; return 1; }
	(cd "$KRT_ROOT/hack/cert-manager" && GOFLAGS=-mod=mod go mod download -json "github.com/cert-manager/cert-manager@$v") |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}

# The binaries' directory: keyed by the wrapper module's go.mod, go.sum and
# its own mains (unlike gobuild_dir, since the mains here are ours).
certmanager_bin_dir() {
	local m="$KRT_ROOT/hack/cert-manager" key
	key=$(cat "$m/go.mod" "$m/go.sum" "$m/controller/main.go" "$m/cainjector/main.go" | sha256sum | cut -c1-16)
	echo "$KRT_CACHE/cert-manager-$key"
}

certmanager_build() {
	local dir
	dir=$(certmanager_bin_dir)
	mkdir -p "$dir"
	# Concurrent callers (hack/test builds it in the background while a step
	# may start cert-manager) wait for one build.
	(
		exec 9>"$dir.lock"
		flock 9
		local name
		for name in controller cainjector; do
			[[ -x "$dir/cert-manager-$name" ]] && continue
			log "building cert-manager's $name from hack/cert-manager (once per pin; minutes)..."
			(
				cd "$KRT_ROOT/hack/cert-manager" || exit 1
				export CGO_ENABLED=0 GOFLAGS=-mod=mod
				go build -trimpath -ldflags "-s -w" -o "$dir/cert-manager-$name.tmp.$$" "./$name" >&2
			) || exit 1
			mv "$dir/cert-manager-$name.tmp.$$" "$dir/cert-manager-$name"
		done
	)
}

# certmanager_up: idempotent; returns once the CRDs are Established and both
# processes run.
certmanager_up() {
	local dir crds bin
	certmanager_build
	bin=$(certmanager_bin_dir)
	dir=$(certmanager_module_dir)
	crds="$dir/deploy/crds"
	[[ -d $crds ]] || { log "no $crds in the cert-manager module"; return 1; }
	# Server-side: the Certificate CRD is larger than client-side apply's annotation.
	K apply --server-side --force-conflicts -f "$crds" >/dev/null
	K wait --for condition=Established --timeout 60s -f "$crds" >/dev/null
	K create namespace "$CERTMANAGER_NAMESPACE" --dry-run=client -o yaml | K apply -f - >/dev/null
	if ! alive cert-manager-controller; then
		start cert-manager-controller "$bin/cert-manager-controller" \
			--kubeconfig "$STATE/kubeconfig" --cluster-resource-namespace "$CERTMANAGER_NAMESPACE"
	fi
	if ! alive cert-manager-cainjector; then
		start cert-manager-cainjector "$bin/cert-manager-cainjector" --kubeconfig "$STATE/kubeconfig"
	fi
	sleep 2
	local name
	for name in cert-manager-controller cert-manager-cainjector; do
		alive "$name" || { log "$name exited: $(tail -n 20 "$STATE/log/$name.log")"; return 1; }
	done
	log "cert-manager $(certmanager_version) runs (controller and cainjector; logs in $STATE/log/)"
}

certmanager_down() {
	stop_all 10 cert-manager-controller cert-manager-cainjector
}
