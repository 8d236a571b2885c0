#!/usr/bin/env bash
# `hack/cluster down` leaves nothing behind. Runs last, against the running
# cluster of $CLUSTER_STATE (hack/test starts it for the cluster suites):
#   1. control: while the cluster runs, `hack/cluster leaks` must see it
#      (its processes, mounts, bridge, iptables chains), so a check that
#      sees nothing cannot pass by accident;
#   2. `down`, then nothing of the cluster is left: no process, mount,
#      network namespace, veth (each one the bridge had is gone), bridge,
#      KUBE-/CNI- iptables chain, kubepods cgroup or containerd state, and
#      the kernel settings it changed are back to their values before `up`;
#   3. a second `down` succeeds and still leaves nothing;
#   4. `down` on a never-started state directory succeeds.
set -euo pipefail
KRT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${CLUSTER_STATE:?run hack/cluster up first}"
cluster() { "$KRT_ROOT/hack/cluster" "$@"; }

passed=0 failed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAILED: $*"; failed=$((failed + 1)); }

# 1. The check sees a running cluster.
if out=$(cluster leaks --state "$CLUSTER_STATE"); then
	fail "leak check passed while the cluster runs: $out"
else
	for what in "process " "mount " "interface krtbr0" "interface krtnode0" "iptables -t nat: -N KUBE-SERVICES" "containerd socket"; do
		if grep -qF -- "leak: $what" <<<"$out"; then ok "running cluster seen by the check: $what"; else fail "running cluster not seen by the check: $what"; fi
	done
fi
veths=$(ls /sys/class/net/krtbr0/brif 2>/dev/null || true)
if [[ -n "$veths" ]]; then ok "the bridge has veths to check: ${veths//$'\n'/ }"; else fail "no veth on the bridge krtbr0"; fi

saved=$(cat "$CLUSTER_STATE/sysctl.saved" 2>/dev/null || true)
if [[ -n "$saved" ]]; then ok "kernel settings recorded before up"; else fail "no $CLUSTER_STATE/sysctl.saved"; fi

# 2. down leaves nothing.
t0=$SECONDS
if cluster down --state "$CLUSTER_STATE"; then ok "down ($((SECONDS - t0)) s)"; else fail "down failed"; fi
if out=$(cluster leaks --state "$CLUSTER_STATE"); then ok "nothing left after down"; else fail "left after down:"$'\n'"$out"; fi
for v in $veths; do
	if [[ -e /sys/class/net/$v ]]; then fail "veth $v left"; else ok "veth $v removed"; fi
done

while read -r name value; do
	[[ -n "$name" ]] || continue
	now=$(sysctl -n "$name" 2>/dev/null || echo missing)
	if [[ "$now" == "$value" ]]; then ok "$name restored ($value)"; else fail "$name is $now, was $value before up"; fi
done <<<"$saved"

# 3. A second down.
if cluster down --state "$CLUSTER_STATE"; then ok "second down"; else fail "second down failed"; fi
if out=$(cluster leaks --state "$CLUSTER_STATE"); then ok "nothing left after the second down"; else fail "left after the second down:"$'\n'"$out"; fi

# 4. A never-started state directory.
fresh=$(mktemp -d)
if cluster down --state "$fresh/never-started"; then ok "down on a never-started state directory"; else fail "down on a never-started state directory failed"; fi
if [[ -e "$fresh/never-started" ]]; then fail "down left $fresh/never-started"; fi
rm -rf "$fresh"

echo "$passed passed, $failed failed: cluster lifecycle"
[[ $failed == 0 ]]
