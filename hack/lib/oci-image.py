#!/usr/bin/env python3
"""Writes an OCI image archive (an OCI layout in a tar) from root filesystem folders.

Reproducible: every tar entry is sorted by path, stamped with the given mtime and owned by
root (or by the uid:gid given for a path), gzip carries no name or time, so the same inputs
give the same digests.

  oci-image.py SPEC.json OUT.tar

SPEC.json: {"ref": "localhost/name:tag", "created": EPOCH, "layers": [{"dir": DIR,
"comment": TEXT, "owners": {"home/nonroot": "65532:65532"}}], "config": {...OCI config...}}
Prints the manifest digest.
"""

import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import time


def layer_tar(root, mtime, owners):
    """The uncompressed tar of a folder, entries sorted, times fixed."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in dirnames + filenames:
                paths.append(os.path.relpath(os.path.join(dirpath, name), root))
        for rel in sorted(paths):
            full = os.path.join(root, rel)
            st = os.lstat(full)
            info = tarfile.TarInfo(rel)
            info.mtime = mtime
            info.mode = stat.S_IMODE(st.st_mode)
            uid, gid = owners.get(rel, "0:0").split(":")
            info.uid, info.gid = int(uid), int(gid)
            info.uname = info.gname = ""
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(full)
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                with open(full, "rb") as f:
                    tar.addfile(info, f)
            else:
                sys.exit(f"oci-image: {full} is neither a file, a folder nor a symlink")
    return buf.getvalue()


def gzipped(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(data)
    return buf.getvalue()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: oci-image.py SPEC.json OUT.tar")
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    mtime = int(spec["created"])
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))
    ref = spec["ref"]
    tag = ref.rsplit(":", 1)[1]

    blobs = {}
    layers, diff_ids, history = [], [], []
    for layer in spec["layers"]:
        raw = layer_tar(layer["dir"], mtime, layer.get("owners", {}))
        packed = gzipped(raw)
        digest = sha256(packed)
        blobs[digest] = packed
        diff_ids.append(sha256(raw))
        layers.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": digest,
                "size": len(packed),
            }
        )
        history.append({"created": created, "created_by": layer["comment"]})

    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": spec["config"],
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": history,
    }
    config_blob = canonical(config)
    config_digest = sha256(config_blob)
    blobs[config_digest] = config_blob

    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": len(config_blob),
        },
        "layers": layers,
        "annotations": {"org.opencontainers.image.created": created},
    }
    manifest_blob = canonical(manifest)
    manifest_digest = sha256(manifest_blob)
    blobs[manifest_digest] = manifest_blob

    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": len(manifest_blob),
                "platform": {"architecture": "amd64", "os": "linux"},
                # containerd's importer names the image after io.containerd.image.name;
                # ref.name is the OCI layout's tag.
                "annotations": {
                    "io.containerd.image.name": ref,
                    "org.opencontainers.image.ref.name": tag,
                },
            }
        ],
    }

    files = {
        "oci-layout": canonical({"imageLayoutVersion": "1.0.0"}),
        "index.json": canonical(index),
    }
    for digest, blob in blobs.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = blob

    out = sys.argv[2]
    tmp = out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, mtime
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, out)
    print(manifest_digest)


if __name__ == "__main__":
    main()
