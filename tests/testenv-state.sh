#!/usr/bin/env bash
# `hack/testenv` deletes and reuses only a state directory of its own (one
# that carries the marker file `up` writes), and touches nothing else:
#   1. `down` on a directory without the marker fails, says why, deletes nothing;
#   2. `up` on a non-empty directory without the marker fails the same way
#      (before building or starting anything), and leaves no marker in it;
#   3. `down` on a directory that does not exist succeeds and creates nothing;
#   4. `down` on a marked directory (no process running) removes it.
# Needs no control plane: every case ends before one would start.
set -euo pipefail
KRT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
testenv() { "$KRT_ROOT/hack/testenv" "$@"; }
MARKER=.kruntimes-testenv

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }

mkdir -p "$KRT_ROOT/target"
scratch=$(mktemp -d "$KRT_ROOT/target/testenv-state.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# 1. down refuses an unmarked directory.
mkdir "$scratch/foreign"
echo keep >"$scratch/foreign/data.txt"
if out=$(testenv down --state "$scratch/foreign" 2>&1); then
	fail "down on a directory without $MARKER succeeded: $out"
else
	ok "down on a directory without $MARKER fails"
fi
if grep -qF "$MARKER" <<<"$out"; then ok "down says why: $out"; else fail "down did not name the marker: $out"; fi
if [[ -f "$scratch/foreign/data.txt" ]]; then ok "down deleted nothing"; else fail "down deleted $scratch/foreign"; fi

# 2. up refuses a non-empty unmarked directory. An unknown KRT_PROFILE makes
# an up that does not refuse stop before it starts any process.
mkdir "$scratch/foreign-up"
echo keep >"$scratch/foreign-up/data.txt"
if out=$(KRT_PROFILE=none testenv up --state "$scratch/foreign-up" 2>&1); then
	fail "up on a non-empty directory without $MARKER succeeded"
else
	ok "up on a non-empty directory without $MARKER fails"
fi
if grep -qF "$MARKER" <<<"$out"; then ok "up says why: $out"; else fail "up did not name the marker: $out"; fi
if [[ $(ls -A "$scratch/foreign-up") == data.txt ]]; then ok "up left the directory as it was"; else fail "up changed $scratch/foreign-up: $(ls -A "$scratch/foreign-up")"; fi

# 3. down on nothing.
if testenv down --state "$scratch/absent" 2>/dev/null; then ok "down on a missing directory succeeds"; else fail "down on a missing directory failed"; fi
if [[ ! -e "$scratch/absent" ]]; then ok "down created nothing"; else fail "down created $scratch/absent"; fi

# 4. down removes a marked directory.
mkdir -p "$scratch/own/run"
touch "$scratch/own/$MARKER" "$scratch/own/env.sh"
if testenv down --state "$scratch/own" 2>/dev/null; then ok "down on a marked directory succeeds"; else fail "down on a marked directory failed"; fi
if [[ ! -e "$scratch/own" ]]; then ok "down removed the marked directory"; else fail "down left $scratch/own"; fi

echo "$passed passed, $failed failed: testenv state directory"
[[ $failed == 0 ]]
