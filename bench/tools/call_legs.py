#!/usr/bin/env python3
"""The legs of proxied calls at concurrency 1, from the scheduler's events.

Reads `perf script -F comm,tid,cpu,time,event,trace` of a recording of
`sched:sched_switch` and `sched:sched_wakeup` on every CPU (`perf record -a`)
made while one client (`h2load`, `wrk`) sends one call at a time through a
proxy to the gateway, and prints, per call:

- the proxy thread's time on a CPU and its wake-up latency;
- the four legs of a call, from the proxy's bursts (switch-in to sleep):
  "in" (the proxy's burst start until it wakes the gateway), "gateway"
  (until the proxy runs again with the answer), "out" (until it wakes the
  client), "client" (until the next request wakes the proxy).

Only calls whose every leg was seen are counted in the legs. A wake-up done
by an idle CPU for another (the event's command is then `swapper`) carries
the time the woken CPU handled it, not the time it was asked for.

    perf record -e sched:sched_switch,sched:sched_wakeup -a -o sched.data -- sleep 3
    perf script -i sched.data -F comm,tid,cpu,time,event,trace \\
        | bench/tools/call_legs.py --proxy console-conn --calls 9816
"""

import argparse
import bisect
import re
import statistics
import sys

LINE = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")
SWITCH = re.compile(
    r"prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)"
)
WAKEUP = re.compile(r"comm=(.*?) pid=(\d+)")


def us(values):
    values = sorted(values)
    if not values:
        return "n=0"
    return "n=%d p50=%.1f mean=%.1f us" % (
        len(values),
        1e6 * values[len(values) // 2],
        1e6 * statistics.mean(values),
    )


def legs_of(lines, proxy, client, gateway):
    """The proxy's time on a CPU per burst, its wake-up latencies and the
    legs of every call whose legs were all seen (seconds)."""

    def is_proxy(comm):
        return comm.startswith(proxy)

    switches, wakeups = [], []
    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        comm, _tid, _cpu, t, event, rest = m.groups()
        t = float(t)
        if event == "sched:sched_switch":
            s = SWITCH.search(rest)
            if s:
                switches.append((t, s.group(1), s.group(2), s.group(3), s.group(4), s.group(5)))
        elif event == "sched:sched_wakeup":
            w = WAKEUP.search(rest)
            # The gateway waking its own threads is not a step of the call.
            if w and not (comm.startswith(gateway) and w.group(1).startswith(gateway)):
                wakeups.append((t, w.group(1), w.group(2)))

    # The proxy's bursts (from running after a sleep to the next sleep, a
    # preemption in between included), its time on a CPU and its wake-up
    # latency.
    woken, on, awake, bursts, oncpu, latency = {}, {}, {}, [], [], []
    wake_index = 0
    for t, prev, prev_pid, state, nxt, next_pid in switches:
        while wake_index < len(wakeups) and wakeups[wake_index][0] <= t:
            woken[wakeups[wake_index][2]] = wakeups[wake_index][0]
            wake_index += 1
        if is_proxy(prev) and prev_pid in on:
            oncpu.append(t - on.pop(prev_pid))
            if state.startswith("S") and prev_pid in awake:
                bursts.append((awake.pop(prev_pid), t))
        if is_proxy(nxt):
            on[next_pid] = t
            awake.setdefault(next_pid, t)
            if next_pid in woken:
                latency.append(t - woken.pop(next_pid))

    to_gateway = [t for t, comm, _ in wakeups if comm == gateway]
    to_client = [t for t, comm, _ in wakeups if comm == client]

    def first(times, start, end):
        i = bisect.bisect_left(times, start)
        return times[i] if i < len(times) and times[i] <= end else None

    # A burst that wakes the gateway serves a request ("in"); one that
    # wakes only the client relays an answer ("out").
    seq = []
    for start, end in bursts:
        g = first(to_gateway, start, end + 1e-5)
        c = first(to_client, start, end + 1e-5)
        if g is not None:
            seq.append(("in", start, g))
        elif c is not None:
            seq.append(("out", start, c))
    legs = {k: [] for k in ("in", "gateway", "out", "client", "call")}
    for x, y, z in zip(seq, seq[1:], seq[2:]):
        if (x[0], y[0], z[0]) == ("in", "out", "in"):
            legs["in"].append(x[2] - x[1])
            legs["gateway"].append(y[1] - x[2])
            legs["out"].append(y[2] - y[1])
            legs["client"].append(z[1] - y[2])
            legs["call"].append(z[1] - x[1])
    return oncpu, latency, legs


def self_test():
    """Three calls of a made-up trace, every time known: in 20 us, gateway
    50 us, out 15 us, client 100 us, the proxy woken 5 us after its wake-up."""
    lines = []

    def ev(t_us, comm, event, rest):
        lines.append("%16s %6d [%03d] %.6f: %s: %s" % (comm, 1, 0, t_us / 1e6, event, rest))

    def switch(t, prev, prev_pid, state, nxt, next_pid):
        ev(t, prev, "sched:sched_switch",
           "prev_comm=%s prev_pid=%d prev_prio=120 prev_state=%s ==> next_comm=%s next_pid=%d next_prio=120"
           % (prev, prev_pid, state, nxt, next_pid))

    def wakeup(t, by, comm, pid):
        ev(t, by, "sched:sched_wakeup", "comm=%s pid=%d prio=120 target_cpu=000" % (comm, pid))

    t = 1000.0
    for _ in range(3):
        wakeup(t - 5, "h2load", "proxy-conn-0", 7)       # the request
        switch(t, "swapper/0", 0, "R", "proxy-conn-0", 7)
        wakeup(t + 20, "proxy-conn-0", "tokio-rt-worker", 9)
        wakeup(t + 21, "tokio-rt-worker", "tokio-rt-worker", 10)  # the gateway's own: ignored
        switch(t + 25, "proxy-conn-0", 7, "S", "swapper/0", 0)
        wakeup(t + 65, "tokio-rt-worker", "proxy-conn-0", 7)      # the answer
        switch(t + 70, "swapper/0", 0, "R", "proxy-conn-0", 7)
        wakeup(t + 85, "proxy-conn-0", "h2load", 11)
        switch(t + 90, "proxy-conn-0", 7, "S", "swapper/0", 0)
        t += 20 + 50 + 15 + 100
    oncpu, latency, legs = legs_of(lines, "proxy-conn", "h2load", "tokio-rt-worker")
    us_of = lambda xs: [round(x * 1e6, 3) for x in xs]
    assert us_of(oncpu) == [25.0, 20.0] * 3, oncpu
    assert us_of(latency) == [5.0] * 6, latency
    want = {"in": 20.0, "gateway": 50.0, "out": 15.0, "client": 100.0, "call": 185.0}
    for name, value in want.items():
        assert us_of(legs[name]) == [value] * 2, (name, legs[name])
    print("call_legs.py: self-test passed")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--proxy", help="the proxy thread's command, or its start")
    p.add_argument("--client", default="h2load", help="the client's command")
    p.add_argument("--gateway", default="tokio-rt-worker", help="the gateway's threads' command")
    p.add_argument("--calls", type=float, help="calls made while recording (for per-call figures)")
    p.add_argument("--self-test", action="store_true", help="check the cutting on a made-up trace")
    a = p.parse_args()
    if a.self_test:
        self_test()
        return
    if not a.proxy:
        p.error("--proxy is required")
    oncpu, latency, legs = legs_of(sys.stdin, a.proxy, a.client, a.gateway)
    if a.calls:
        print(
            "%s: %.2f bursts and %.1f us on a CPU per call; wake-up to running %s"
            % (a.proxy, len(oncpu) / a.calls, 1e6 * sum(oncpu) / a.calls, us(latency))
        )
    for name, values in legs.items():
        print("%-8s %s" % (name, us(values)))


if __name__ == "__main__":
    main()
