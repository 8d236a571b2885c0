#!/usr/bin/env python3
"""Fails when a workspace crate depends on a crate at its own layer or above.

Usage: cratelayers.py (from the repository root)

The layers, bottom up (README, "Architecture"):
  0 kruntimes-core        what both listeners share
  1 kruntimes-transport   the Console's connection layer
  1 kruntimes-apiserver   the aggregated Run-log API
  1 kruntimes-dashboard   the local dashboard proxy (a client-side program)
  2 kruntimes-console-http  the Console's HTTP surface
  3 kruntimes-console     the binary: composition root, flags, logging
  4 kruntimes-tests, kruntimes-bench
A crate may depend only on crates of lower layers ([dependencies] and
[dev-dependencies] alike).
"""

import sys
import tomllib

LAYERS = {
    "kruntimes-core": 0,
    "kruntimes-transport": 1,
    "kruntimes-apiserver": 1,
    "kruntimes-dashboard": 1,
    "kruntimes-console-http": 2,
    "kruntimes-console": 3,
    "kruntimes-tests": 4,
    "kruntimes-bench": 4,
}


def main():
    with open("Cargo.toml", "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    bad = []
    seen = set()
    for m in members:
        with open(f"{m}/Cargo.toml", "rb") as f:
            manifest = tomllib.load(f)
        name = manifest["package"]["name"]
        seen.add(name)
        if name not in LAYERS:
            bad.append(f"{m}: crate {name} has no layer in hack/lib/cratelayers.py")
            continue
        for table in ("dependencies", "dev-dependencies", "build-dependencies"):
            for dep in manifest.get(table, {}):
                if dep in LAYERS and LAYERS[dep] >= LAYERS[name]:
                    bad.append(
                        f"{m}/Cargo.toml [{table}]: {name} (layer {LAYERS[name]}) depends on {dep} (layer {LAYERS[dep]})"
                    )
    for line in bad:
        print("cratelayers: " + line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
