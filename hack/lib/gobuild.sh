#!/usr/bin/env bash
# Builds binaries from a pinned wrapper module under hack/ (one go.mod that
# requires the released module and pins its dependencies), caching them
# outside the work tree in $KRT_CACHE/<module>-<digest of go.mod and go.sum>/.
# A new pin rebuilds; nothing else does. Each binary is built once per pin.
# Concurrent callers wait for one build (a lock per module). The binaries
# still missing are built by one `go build`, so packages they share are
# compiled once and one binary links while the next one compiles.

KRT_ROOT="${KRT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
KRT_CACHE="${KRT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes-console}"

gobuild_dir() { # module (a directory under hack/)
	local key
	key=$(cat "$KRT_ROOT/hack/$1/go.mod" "$KRT_ROOT/hack/$1/go.sum" | sha256sum | cut -c1-16)
	echo "$KRT_CACHE/$1-$key"
}

# gobuild_many MODULE LDFLAGS NAME=PACKAGE...: builds the binaries not yet
# cached (LDFLAGS apply to all; -X of a package a binary lacks is ignored);
# prints the cache folder.
gobuild_many() {
	local module=$1 ldflags=$2
	shift 2
	local dir
	dir=$(gobuild_dir "$module")
	mkdir -p "$dir"
	(
		exec 9>"$dir.lock"
		flock 9
		local names=() pkgs=() spec
		for spec in "$@"; do
			if [[ ! -x "$dir/${spec%%=*}" ]]; then
				names+=("${spec%%=*}")
				pkgs+=("${spec#*=}")
			fi
		done
		[[ ${#names[@]} -gt 0 ]] || exit 0
		echo "building ${names[*]} from hack/$module (once per pin; minutes)..." >&2
		local out="$dir/.build.$$"
		rm -rf "$out"
		mkdir -p "$out"
		(
			cd "$KRT_ROOT/hack/$module" || exit 1
			export CGO_ENABLED=0 GOFLAGS=-mod=mod
			if [[ ${#names[@]} -eq 1 ]]; then
				go build -trimpath -ldflags "-s -w $ldflags" -o "$out/${names[0]}" "${pkgs[0]}" >&2
			else
				# With several packages, -o DIR/ names each binary after its
				# package's last path element (less a /vN suffix).
				go build -trimpath -ldflags "-s -w $ldflags" -o "$out/" "${pkgs[@]}" >&2
			fi
		) || { rm -rf "$out"; exit 1; }
		local i base
		for i in "${!names[@]}"; do
			base=${pkgs[$i]}
			[[ ${base##*/} =~ ^v[0-9]+$ ]] && base=${base%/*}
			base=${base##*/}
			[[ ${#names[@]} -eq 1 ]] && base=${names[0]}
			mv "$out/$base" "$dir/${names[$i]}"
		done
		rm -rf "$out"
	) || return 1
	echo "$dir"
}

# gobuild_cached MODULE NAME PACKAGE [LDFLAGS]: prints the binary's path.
gobuild_cached() {
	local dir
	dir=$(gobuild_many "$1" "${4:-}" "$2=$3") || return 1
	echo "$dir/$2"
}
