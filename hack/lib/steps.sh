#!/usr/bin/env bash
# Timed steps for hack/dev, hack/testenv build and hack/test: a progress line
# on stderr as each step ends (its own wall seconds, the CPU seconds of the
# processes it ran, and the time since the command started) and a summary
# table at the end. On a machine shared with other builds the wall times
# grow with the load; the CPU seconds much less so.
#
#   STEPS_PREFIX=dev              # the word that starts each line
#   steps_run NAME CMD...         # runs CMD as step NAME and waits for it, in a
#                                 # subshell with errexit on, so a function's
#                                 # failing command fails the step (it sets no
#                                 # variable of the caller's). Not in an if, ||
#                                 # or &&: bash then ignores errexit in all it runs.
#   steps_begin NAME; ...; steps_end NAME   # around commands run in this shell
#   steps_open                    # the step begun and not ended ("" if none)
#   steps_bg NAME CMD...          # runs CMD in the background (output in a log file)
#   steps_wait [NAME...]          # waits for background steps (all by default); fails if one did
#                                 # (and prints the last STEPS_TAIL lines, 30 by default, of its log)
#   steps_failed NAME             # true when background step NAME has ended and failed
#   steps_stop                    # ends the background steps still running (an exit trap's)
#   steps_summary                 # the table: step, seconds, total
#   STEPS_RECORD=FILE             # each ended step also appended to FILE (a
#                                 # background step's own steps, for...)
#   steps_import FILE [PREFIX]    # ...its caller's table, names prefixed
#
# Background steps write their output to $STEPS_LOGDIR/NAME.log (a temporary
# folder by default); a failed one's last lines are printed.

STEPS_PREFIX=${STEPS_PREFIX:-steps}
STEPS_T0=${STEPS_T0:-$(date +%s.%N)}
STEPS_NAMES=()
STEPS_SECS=()
STEPS_CPUS=()
declare -A STEPS_STARTED=() STEPS_PIDS=() STEPS_CPU0=()

steps_now() { date +%s.%N; }

# steps_elapsed FROM: seconds since FROM, one decimal.
steps_elapsed() { awk -v a="$1" -v b="$(steps_now)" 'BEGIN { printf "%.1f", b - a }'; }

# steps_cpu: sets STEPS_CPU_NOW to the user + system seconds of this shell's
# waited-for children. Not in $(...) or a pipe: `times` there is a new
# process's, with no children yet.
steps_cpu() {
	local f
	steps_logdir
	f=$STEPS_LOGDIR/times.$BASHPID
	times >"$f"
	STEPS_CPU_NOW=$(awk 'NR == 2 {
		t = 0
		for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] }
		printf "%.1f", t }' "$f")
	rm -f "$f"
}

steps_begin() { # NAME [NOTE]
	STEPS_STARTED[$1]=$(steps_now)
	steps_cpu
	STEPS_CPU0[$1]=$STEPS_CPU_NOW
	STEPS_OPEN=$1
	echo "$STEPS_PREFIX: [$(steps_elapsed "$STEPS_T0") s] $1 ...${2:+ ($2)}" >&2
}

steps_end() { # NAME [STATUS [END [CPU]]]
	local secs end=${3:-$(steps_now)} cpu=${4:-}
	secs=$(awk -v a="${STEPS_STARTED[$1]}" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
	if [[ -z $cpu ]]; then
		steps_cpu
		cpu=$(awk -v a="${STEPS_CPU0[$1]}" -v b="$STEPS_CPU_NOW" 'BEGIN { printf "%.1f", b - a }')
	fi
	[[ ${STEPS_OPEN:-} != "$1" ]] || STEPS_OPEN=""
	STEPS_NAMES+=("$1")
	STEPS_SECS+=("$secs")
	STEPS_CPUS+=("$cpu")
	[[ -z ${STEPS_RECORD:-} ]] || printf '%s\t%s\t%s\n' "$1" "$secs" "$cpu" >>"$STEPS_RECORD"
	echo "$STEPS_PREFIX: [$(steps_elapsed "$STEPS_T0") s] $1: ${2:-done} in $secs s (CPU $cpu s)" >&2
}

steps_import() { # FILE [PREFIX]
	local name secs cpu
	[[ -f $1 ]] || return 0
	while IFS=$'\t' read -r name secs cpu; do
		STEPS_NAMES+=("${2:-}$name")
		STEPS_SECS+=("$secs")
		STEPS_CPUS+=("$cpu")
	done <"$1"
}

steps_run() { # NAME CMD...
	local name=$1 rc=0
	shift
	steps_begin "$name"
	# Run asynchronously and waited for: a command in `||` would run with
	# errexit ignored, so a function's failing command would not fail it.
	local cpu_file
	steps_logdir
	cpu_file=$STEPS_LOGDIR/cpu.$BASHPID.$RANDOM
	(
		set +e
		(set -e; "$@")
		rc=$?
		steps_cpu
		echo "$STEPS_CPU_NOW" >"$cpu_file"
		exit "$rc"
	) <&0 &
	wait $! || rc=$?
	local cpu
	cpu=$(cat "$cpu_file" 2>/dev/null || true)
	rm -f "$cpu_file"
	if ((rc != 0)); then
		steps_end "$name" "FAILED (exit $rc)" "" "$cpu"
		return "$rc"
	fi
	steps_end "$name" "done" "" "$cpu"
}

steps_open() { echo "${STEPS_OPEN:-}"; }

# steps_logdir: makes STEPS_LOGDIR when unset.
steps_logdir() {
	if [[ -z ${STEPS_LOGDIR:-} ]]; then
		STEPS_LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/krt-steps.XXXXXX")
	fi
	mkdir -p "$STEPS_LOGDIR"
}

steps_bg() { # NAME CMD...
	local name=$1
	shift
	steps_logdir
	local log="$STEPS_LOGDIR/${name//[^A-Za-z0-9._-]/_}.log" open=${STEPS_OPEN:-}
	steps_begin "$name" "in the background, output in $log"
	STEPS_OPEN=$open
	# The step notes when it ends, so its time is its own, not when it is waited for.
	(
		set +e
		(set -e; "$@")
		rc=$?
		steps_now >"$log.end"
		steps_cpu
		echo "$STEPS_CPU_NOW" >"$log.cpu"
		echo "$rc" >"$log.rc"
		exit "$rc"
	) >"$log" 2>&1 </dev/null &
	STEPS_PIDS[$name]=$!
}

steps_wait() { # [NAME...]
	local names=("$@") name rc failed=0 log end cpu
	[[ ${#names[@]} -gt 0 ]] || names=("${!STEPS_PIDS[@]}")
	for name in "${names[@]}"; do
		[[ -n ${STEPS_PIDS[$name]:-} ]] || continue
		rc=0
		wait "${STEPS_PIDS[$name]}" || rc=$?
		unset "STEPS_PIDS[$name]"
		log="$STEPS_LOGDIR/${name//[^A-Za-z0-9._-]/_}.log"
		end=$(cat "$log.end" 2>/dev/null || steps_now)
		cpu=$(cat "$log.cpu" 2>/dev/null || true)
		if ((rc != 0)); then
			steps_end "$name" "FAILED (exit $rc)" "$end" "$cpu"
			echo "--- the last lines of $log:" >&2
			tail -n "${STEPS_TAIL:-30}" "$log" >&2
			failed=1
		else
			steps_end "$name" "done" "$end" "$cpu"
		fi
	done
	return "$failed"
}

steps_failed() { # NAME
	local rc
	[[ -n ${STEPS_PIDS[$1]:-} ]] || return 1
	rc=$(cat "$STEPS_LOGDIR/${1//[^A-Za-z0-9._-]/_}.log.rc" 2>/dev/null) || return 1
	[[ $rc != 0 ]]
}

# steps_tree PID: PID and all its descendants, parents first.
steps_tree() {
	local child
	echo "$1"
	for child in $(pgrep -P "$1" 2>/dev/null); do steps_tree "$child"; done
}

steps_stop() {
	local name pids
	for name in "${!STEPS_PIDS[@]}"; do
		# Ended already: its own time and status.
		if [[ -f $STEPS_LOGDIR/${name//[^A-Za-z0-9._-]/_}.log.rc ]]; then
			steps_wait "$name" || true
			continue
		fi
		pids=$(steps_tree "${STEPS_PIDS[$name]}")
		# shellcheck disable=SC2086 # a list of PIDs
		kill -TERM $pids 2>/dev/null || true
		wait "${STEPS_PIDS[$name]}" 2>/dev/null || true
		steps_end "$name" "stopped (the run ended first)" "" "0"
		unset "STEPS_PIDS[$name]"
	done
}

steps_summary() {
	local i total
	total=$(steps_elapsed "$STEPS_T0")
	steps_cpu
	{
		echo
		printf '%-64s %9s %9s\n' "step" "seconds" "CPU s"
		for i in "${!STEPS_NAMES[@]}"; do
			printf '%-64s %9s %9s\n' "${STEPS_NAMES[$i]:0:64}" "${STEPS_SECS[$i]}" "${STEPS_CPUS[$i]}"
		done
		printf '%-64s %9s %9s\n' "total (wall; background steps overlap)" "$total" "$STEPS_CPU_NOW"
	} >&2
}
