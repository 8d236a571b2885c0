#!/usr/bin/env bash
# Writes a single-layer OCI image archive (an OCI image layout in a tar) from a
# root filesystem directory, without a registry or a container engine; the
# result imports with `ctr -n k8s.io images import FILE`.
#
#   oci_archive ROOTFS REF OUT.tar [--entrypoint JSON] [--cmd JSON] [--user U] [--env JSON] [--workdir DIR]
#
# REF is the full reference (e.g. localhost/kruntimes/pause:3.10.1). The layer
# is an uncompressed tar with sorted names, owner 0:0 and mtime 0, so the same
# rootfs gives the same image digest. JSON arguments are JSON arrays, e.g.
# --entrypoint '["/pause"]'.

oci_archive() {
	local rootfs=$1 ref=$2 out=$3
	shift 3
	local entrypoint=null cmd=null user="" env='["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]' workdir=""
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--entrypoint) entrypoint=$2; shift 2 ;;
		--cmd) cmd=$2; shift 2 ;;
		--user) user=$2; shift 2 ;;
		--env) env=$2; shift 2 ;;
		--workdir) workdir=$2; shift 2 ;;
		*) echo "oci_archive: unknown argument $1" >&2; return 2 ;;
		esac
	done
	local work
	work=$(mktemp -d)
	mkdir -p "$work/blobs/sha256"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=posix \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		-C "$rootfs" -cf "$work/layer.tar" .
	local layer_digest layer_size
	layer_digest=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
	layer_size=$(stat -c %s "$work/layer.tar")
	mv "$work/layer.tar" "$work/blobs/sha256/$layer_digest"

	python3 - "$work" "$ref" "$layer_digest" "$layer_size" "$entrypoint" "$cmd" "$user" "$env" "$workdir" <<'PY'
import hashlib, json, os, sys
work, ref, layer_digest, layer_size, entrypoint, cmd, user, env, workdir = sys.argv[1:]
def blob(obj):
    data = json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(work, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}
config = {"Env": json.loads(env)}
if json.loads(entrypoint) is not None:
    config["Entrypoint"] = json.loads(entrypoint)
if json.loads(cmd) is not None:
    config["Cmd"] = json.loads(cmd)
if user:
    config["User"] = user
if workdir:
    config["WorkingDir"] = workdir
cfg = blob({
    "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
    "config": config,
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer_digest]},
    "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "hack/lib/oci.sh"}],
})
manifest = blob({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": dict(cfg, mediaType="application/vnd.oci.image.config.v1+json"),
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": "sha256:" + layer_digest, "size": int(layer_size)}],
})
tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else "latest"
index = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.index.v1+json",
    "manifests": [dict(manifest,
        mediaType="application/vnd.oci.image.manifest.v1+json",
        platform={"architecture": "amd64", "os": "linux"},
        annotations={"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": tag})],
}
with open(os.path.join(work, "index.json"), "w") as f:
    json.dump(index, f, separators=(",", ":"))
with open(os.path.join(work, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
PY
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work" -cf "$out" oci-layout index.json blobs
	rm -rf "$work"
}
