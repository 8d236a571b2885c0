#!/usr/bin/env bash
# Installs what the dev and test commands need on a fresh machine: Debian
# packages (only when missing) and the web UI's npm packages.

deps_apt() { # packages...
	local missing=() p
	for p in "$@"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	[[ ${#missing[@]} -eq 0 ]] && return 0
	local sudo=""
	[[ $(id -u) -ne 0 ]] && sudo="sudo"
	# One install at a time (hack/test's lanes may ask at once; apt and dpkg
	# refuse a second one): the later caller waits, then installs what is
	# still missing.
	(
		exec 9>"${TMPDIR:-/tmp}/kruntimes-console-apt.lock"
		flock 9
		missing=()
		for p in "$@"; do
			dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
		done
		[[ ${#missing[@]} -eq 0 ]] && exit 0
		echo "installing Debian packages: ${missing[*]}" >&2
		$sudo apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
	)
}

deps_base() {
	deps_apt curl openssl ca-certificates python3
	command -v kubectl >/dev/null || deps_apt kubernetes-client
	command -v go >/dev/null || { echo "Go is required to build the test control plane" >&2; return 1; }
	command -v cargo >/dev/null || { echo "Rust (cargo) is required" >&2; return 1; }
	command -v npm >/dev/null || { echo "Node.js with npm is required for the web UI" >&2; return 1; }
}

# Builds the web UI into console/web/dist (embedded by the binary). npm ci
# runs only when the lock file changed since the last install.
deps_web() {
	local web="$KRT_ROOT/console/web"
	local stamp="$web/node_modules/.install-stamp"
	local want
	want=$(sha256sum "$web/package-lock.json" | cut -c1-16)
	if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
		(cd "$web" && npm ci --no-audit --no-fund --loglevel=error) >&2
		echo "$want" >"$stamp"
	fi
}

web_build() {
	deps_web
	(cd "$KRT_ROOT/console/web" && npm run --silent build) >&2
}
