#!/usr/bin/env bash
# The image base: glibc, libgcc and the CA bundle from Debian packages, like
# distroless cc-debian12:nonroot. No shell, no package manager: the packages'
# files are extracted (no maintainer scripts run), only libraries, the CA
# bundle, copyright files and the package records are kept. Cached outside
# the clone, keyed by the package versions and this file.

KRT_CACHE="${KRT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kruntimes-console}"
IMAGE_BASE_PACKAGES=(libc6 libgcc-s1 ca-certificates)

# Prints "package version sha256" of the candidate version of each package.
image_base_pins() {
	local p
	for p in "${IMAGE_BASE_PACKAGES[@]}"; do
		apt-cache show --no-all-versions "$p" |
			awk -v p="$p" '$1 == "Version:" {v = $2} $1 == "SHA256:" {s = $2} END {
				if (v == "" || s == "") { print "no candidate for " p > "/dev/stderr"; exit 1 }
				print p, v, s }'
	done
}

# Builds the base root filesystem once per package set; prints its folder.
image_base_build() {
	local pins key dir
	pins=$(image_base_pins) || return 1
	key=$( { echo "$pins"; cat "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-16)
	dir="$KRT_CACHE/image-base-$key"
	if [[ -f "$dir/pins" ]]; then
		echo "$dir/rootfs"
		return 0
	fi
	echo "image: building the base from $(echo "$pins" | awk '{printf "%s%s=%s", sep, $1, $2; sep=" "}')" >&2
	local tmp debs
	tmp="$dir.tmp"
	rm -rf "$tmp"
	mkdir -p "$tmp/debs" "$tmp/rootfs"
	debs="$tmp/debs"
	# shellcheck disable=SC2046 # one word per package=version
	(cd "$debs" && apt-get download -q $(echo "$pins" | awk '{printf "%s=%s ", $1, $2}')) >&2 || return 1

	local root="$tmp/rootfs" p s deb
	while read -r p _ s; do
		deb=$(ls "$debs/${p}_"*.deb)
		if [[ $(sha256sum "$deb" | cut -d' ' -f1) != "$s" ]]; then
			echo "image: $deb does not match the archive's SHA256 $s" >&2
			return 1
		fi
		dpkg-deb -x "$deb" "$root"
		# The package record, where scanners look for it in distroless images.
		mkdir -p "$root/var/lib/dpkg/status.d"
		{ dpkg-deb -f "$deb"; echo "Status: install ok installed"; } >"$root/var/lib/dpkg/status.d/$p"
	done <<<"$pins"

	# The CA bundle update-ca-certificates would write (it concatenates
	# the certificates in name order); the individual files go.
	mkdir -p "$root/etc/ssl/certs"
	find "$root/usr/share/ca-certificates" -name '*.crt' -print0 | LC_ALL=C sort -z |
		xargs -0 cat >"$root/etc/ssl/certs/ca-certificates.crt"
	rm -rf "$root/usr/share/ca-certificates" "$root/usr/sbin" "$root/etc/ca-certificates" \
		"$root/usr/share/man" "$root/usr/share/info" "$root/usr/share/lintian" \
		"$root/usr/share/locale" "$root/usr/lib/x86_64-linux-gnu/gconv"
	# Documentation: only the copyright files (the licences) stay.
	rm -rf "$root"/usr/share/doc/*/examples
	find "$root/usr/share/doc" -mindepth 1 -type f ! -name copyright -delete
	find "$root/usr/share/doc" -mindepth 1 \( -type l -o -type d -empty \) -delete
	find "$root" -depth -type d -empty ! -path "$root" -delete

	# Users and groups like distroless: root, nobody and nonroot (65532).
	mkdir -p "$root/etc" "$root/tmp" "$root/home/nonroot" "$root/root"
	cat >"$root/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/sbin/nologin
		nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
		nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
	EOF
	cat >"$root/etc/group" <<-'EOF'
		root:x:0:
		nobody:x:65534:
		nonroot:x:65532:
	EOF
	cat >"$root/etc/nsswitch.conf" <<-'EOF'
		passwd: files
		group: files
		shadow: files
		hosts: files dns
		networks: files
		protocols: files
		services: files
	EOF
	chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf" "$root/etc/ssl/certs/ca-certificates.crt"
	chmod 1777 "$root/tmp"
	chmod 0700 "$root/home/nonroot" "$root/root"
	find "$root" -type d ! -path "$root/tmp" ! -path "$root/home/nonroot" ! -path "$root/root" -exec chmod 0755 {} +

	rm -rf "$tmp/debs" "$dir"
	echo "$pins" >"$tmp/pins"
	mv "$tmp" "$dir"
	echo "$dir/rootfs"
}

# The owners of base paths that are not root's, as oci-image.py takes them.
image_base_owners() {
	echo '{"home/nonroot": "65532:65532"}'
}
