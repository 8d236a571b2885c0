#!/usr/bin/env bash
# Process helpers of hack/testenv and hack/cluster. Each process runs in its
# own session with output to $STATE/log/NAME.log and its pid in
# $STATE/run/NAME.pid; the caller defines STATE and log().

# start NAME CMD...: starts a process in its own session.
start() {
	local name=$1
	shift
	mkdir -p "$STATE/run" "$STATE/log"
	setsid "$@" >"$STATE/log/$name.log" 2>&1 </dev/null &
	echo $! >"$STATE/run/$name.pid"
}

alive() { [[ -f "$STATE/run/$1.pid" ]] && kill -0 "$(cat "$STATE/run/$1.pid")" 2>/dev/null; }

# stop NAME [SECONDS]: SIGTERM to the process group, SIGKILL after SECONDS (default 5).
stop() {
	local name=$1 secs=${2:-5} pid
	[[ -f "$STATE/run/$name.pid" ]] || return 0
	pid=$(cat "$STATE/run/$name.pid")
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 $((secs * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$STATE/run/$name.pid"
}

wait_for() { # description seconds command...
	local what=$1 secs=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	log "timed out waiting for $what"
	return 1
}

# stop_all SECONDS NAME...: like stop, for several processes at once (SIGTERM
# to all, then SIGKILL to those still running after SECONDS).
stop_all() {
	local secs=$1 name pid pids=()
	shift
	for name in "$@"; do
		[[ -f "$STATE/run/$name.pid" ]] || continue
		pid=$(cat "$STATE/run/$name.pid")
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	local left
	for _ in $(seq 1 $((secs * 10))); do
		left=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left=1 && break; done
		[[ $left == 0 ]] && break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	done
	for name in "$@"; do rm -f "$STATE/run/$name.pid"; done
}
