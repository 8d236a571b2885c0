#!/usr/bin/env bash
# Builds a binary from a pinned wrapper module under hack/ (one go.mod that
# requires the released module and pins its dependencies), caching it outside
# the work tree in $KRT_CACHE/<module>-<digest of go.mod and go.sum>/. A new
# pin rebuilds; nothing else does. Each binary is built once per pin.

KRT_ROOT="${KRT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KRT_CACHE="${KRT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes-console}"

gobuild_dir() { # module (a directory under hack/)
	local key
	key=$(cat "$KRT_ROOT/hack/$1/go.mod" "$KRT_ROOT/hack/$1/go.sum" | sha256sum | cut -c1-16)
	echo "$KRT_CACHE/$1-$key"
}

# gobuild_cached MODULE NAME PACKAGE [LDFLAGS]: prints the binary's path.
gobuild_cached() {
	local module=$1 name=$2 pkg=$3 ldflags=${4:-}
	local dir
	dir=$(gobuild_dir "$module")
	if [[ ! -x "$dir/$name" ]]; then
		mkdir -p "$dir"
		echo "building $name from hack/$module (once per pin; minutes)..." >&2
		(
			cd "$KRT_ROOT/hack/$module" || exit 1
			export CGO_ENABLED=0 GOFLAGS=-mod=mod
			go build -trimpath -ldflags "-s -w $ldflags" -o "$dir/$name.tmp.$$" "$pkg" >&2
		)
		mv "$dir/$name.tmp.$$" "$dir/$name"
	fi
	echo "$dir/$name"
}
