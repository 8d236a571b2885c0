#!/usr/bin/env bash
# Demo data for hack/dev, shaped as the kruntimes engine writes it:
# Runtimes with a Pod template (and no readyReplicas: the Console counts the
# ready Pods), their Pods with capacity annotations only where the Runtime
# declares spec.capacity, Runs in every phase with the engine's conditions
# and retry Events, WorkflowRuns without start or completion times, with
# Action steps, a snapshot and a message, a child WorkflowRun, two Actions
# (one called by a WorkflowRun step), two PersistentWorkspaces (one Bound),
# and a writer that appends interleaved runtimed lines to the Pods' logs.

demo_ts() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; } # now, as the kubelet stamps a line

demo_pod() { # ns name runtime [capacity-annotations]
	K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $2
  namespace: $1
  labels: {runtime: $3, app: kruntimes-$3, app.kubernetes.io/part-of: kruntimes}
  annotations: {${4:-}}
spec:
  nodeName: $TESTENV_NODE
  containers:
  - {name: runtime, image: "ghcr.io/kruntimes/runtime-$3:demo"}
  - {name: runtimed, image: "ghcr.io/kruntimes/runtimed:demo"}
YAML
	K -n "$1" patch pod "$2" --subresource status --type merge -p "{\"status\":{\"phase\":\"Running\",
		\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"kruntimes.io/RuntimedReady\",\"status\":\"True\",\"reason\":\"Heartbeat\",\"message\":\"runtimed heartbeat\"}],
		\"containerStatuses\":[{\"name\":\"runtimed\",\"ready\":true,\"restartCount\":0,\"image\":\"ghcr.io/kruntimes/runtimed:demo\",\"imageID\":\"\",\"started\":true,\"state\":{\"running\":{\"startedAt\":\"$(date -u +%FT%TZ)\"}}}]}}" >/dev/null
}

# demo_runtime ns name replicas [capacity-yaml]: no status, as the engine
# leaves it (the Console counts the ready Pods).
demo_runtime() {
	local capacity=""
	[[ -n ${4:-} ]] && capacity="  capacity: {resources: {$4}}"
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Runtime
metadata: {name: $2, namespace: $1}
spec:
  replicas: $3
  port: 9091
  template:
    spec:
      containers:
      - name: runtime
        image: ghcr.io/kruntimes/runtime-$2:demo
$capacity
YAML
}

# demo_run ns name runtime mode phase pod [extra-status-json] [requests-yaml]
demo_run() {
	demo_run_object "$1" "$2" "$3" "$4" "${8:-}"
	demo_run_status "$1" "$2" "$5" "${6:-}" "${7:-}"
}

# demo_run_object ns name runtime mode [requests-yaml]: the Run without its status.
demo_run_object() {
	local ns=$1 name=$2 rt=$3 mode=$4 requests=${5:-}
	local modespec="{task: {entrypoint: main.sh, args: [--verbose]}}"
	[[ $mode == function ]] && modespec="{function: {handler: main.handle}}"
	[[ $mode == session ]] && modespec="{session: {leaseSeconds: 300}}"
	[[ -n $requests ]] && requests="  resources: {requests: {$requests}}"
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Run
metadata:
  name: $name
  namespace: $ns
  labels: {app: demo, kruntimes.io/runtime: $rt}
spec:
  runtime: $rt
  mode: $modespec
  timeout: 10m
  retryPolicy: {maxAttempts: 3}
$requests
  env:
  - {name: DEMO_SECRET_LITERAL, value: "s3cr3t-literal-value"}
  - name: DEMO_SECRET_REF
    valueFrom: {secretKeyRef: {name: demo-credentials, key: password}}
YAML
}

# demo_run_status ns name phase pod [extra-status-json]: its status, as the
# controller would write it (the assigned Pod must exist).
demo_run_status() {
	local ns=$1 name=$2 phase=$3 pod=${4:-} extra=${5:-}
	local now start status podfields=""
	now=$(date -u +%FT%TZ)
	# A second seed keeps the first start time: the seeded log lines (written
	# once) stay after it, so tails still show them.
	start=$(K -n "$ns" get run "$name" -o jsonpath='{.status.startTime}')
	# A Run starts once it exists: at its creation (reads of its log begin there).
	[[ -n $start ]] || start=$(K -n "$ns" get run "$name" -o jsonpath='{.metadata.creationTimestamp}')
	# A finished Run completes after it started (at the first seed; a later
	# seed keeps that time): @done@ in the extra fields.
	local finished
	finished=$(K -n "$ns" get run "$name" -o jsonpath='{.status.completionTime}')
	[[ -n $finished ]] || finished=$now
	extra=${extra//@done@/$finished}
	if [[ -n "$pod" ]]; then
		local puid
		puid=$(K -n "$ns" get pod "$pod" -o jsonpath='{.metadata.uid}')
		podfields="\"assignedPod\":\"$pod\",\"assignedPodUID\":\"$puid\","
	fi
	# The engine's conditions: Scheduled True/Assigned when a Pod is
	# assigned; Running True/Claimed once runtimed claims the Run; at the end
	# Running False and Completed True/RunCompleted, or both False with the
	# failure reason. A waiting Run has none, only its message.
	local conds reason="" msg=""
	cond() { printf '{"type":"%s","status":"%s","reason":"%s","message":"%s","lastTransitionTime":"%s"}' "$@"; }
	conds=$(cond Scheduled True Assigned "assigned to pod $pod" "$start")
	case $phase in
	Running) conds+=,$(cond Running True Claimed "claimed by runtimed" "$start") ;;
	Ready) conds+=,$(cond Running True Claimed "claimed by runtimed" "$start"),$(cond Ready True Serving "serving requests" "$start") ;;
	Succeeded) conds+=,$(cond Running False Completed "run completed" "$finished"),$(cond Completed True RunCompleted "run completed" "$finished") ;;
	Failed) reason=RuntimeExecute msg="exit status 2" ;;
	Timeout) reason=Timeout msg="run exceeded its 10m timeout" ;;
	Cancelled) reason=Cancelled msg="cancelled by user" ;;
	esac
	[[ -n $reason ]] && conds+=,$(cond Running False "$reason" "$msg" "$finished"),$(cond Completed False "$reason" "$msg" "$finished")
	# The engine writes attempt only at the end or on a retry.
	local attempt=""
	[[ (-n $reason || $phase == Succeeded) && $extra != *'"attempt"'* ]] && attempt="\"attempt\":1,"
	status="{\"phase\":\"$phase\",$podfields$attempt\"startTime\":\"$start\",
		${msg:+\"message\":\"$msg\",}\"conditions\":[$conds]${extra:+,$extra}}"
	if [[ $phase == Pending ]]; then
		status="{\"phase\":\"Pending\",\"message\":\"waiting for available runtime pods for runtime $(K -n "$ns" get run "$name" -o jsonpath='{.spec.runtime}')\"}"
	fi
	K -n "$ns" patch run "$name" --subresource status --type merge -p "{\"status\":$status}" >/dev/null
}

demo_seed() {
	local ns=team-a bashcap='"kruntimes.io/capacity.runs": "8", "kruntimes.io/capacity.cpu": "2"'
	# bash declares its capacity (its Pods carry it); python takes the
	# engine's default of 2 Runs per Pod.
	demo_runtime $ns bash 2 "runs: 8, cpu: 2"
	demo_runtime $ns python 1
	demo_pod $ns bash-pool-0 bash "$bashcap"
	demo_pod $ns bash-pool-1 bash "$bashcap"
	demo_pod $ns python-pool-0 python
	demo_run $ns build-pending bash task Pending
	demo_run $ns build-scheduled bash task Scheduled bash-pool-1
	demo_run $ns build-running bash task Running bash-pool-0 "" "cpu: 1"
	demo_run $ns etl-running python task Running python-pool-0
	demo_run $ns resize-function python function Ready python-pool-0
	demo_run $ns shell-session bash session Ready bash-pool-1 "" "cpu: 1"
	demo_run $ns test-succeeded bash task Succeeded bash-pool-0 \
		"\"completionTime\":\"@done@\",\"outputs\":{\"result\":\"42 tests passed\",\"coverage\":\"87%\"},\"artifactRefs\":[{\"name\":\"junit\",\"driver\":\"s3\",\"type\":\"file\",\"location\":{\"s3\":{\"bucket\":\"demo-artifacts\",\"key\":\"team-a/test-succeeded/junit.xml\"}},\"sizeBytes\":18231,\"digest\":\"sha256:3f1d0c9a5b7e2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f1a2c4e6b8d0f\",\"contentType\":\"application/xml\",\"createdAt\":\"@done@\"}]"
	demo_run $ns lint-failed bash task Failed bash-pool-1 \
		"\"completionTime\":\"@done@\",\"attempt\":3,\"outputs\":{\"result\":\"3 lint errors\"}"
	# A failed build whose log has ANSI colours, ::group:: folds and errors on stderr.
	demo_run $ns compile-failed bash task Failed bash-pool-1 "\"completionTime\":\"@done@\""
	demo_run $ns slow-timeout python task Timeout python-pool-0 "\"completionTime\":\"@done@\""
	demo_run $ns deploy-cancelled bash task Cancelled bash-pool-0 "\"completionTime\":\"@done@\""
	# The two steps of the Action release-1-4's unit job calls.
	demo_run $ns setup-fetch bash task Succeeded bash-pool-0 "\"completionTime\":\"@done@\""
	demo_run $ns setup-install bash task Succeeded bash-pool-0 "\"completionTime\":\"@done@\""
	demo_workflows $ns
	demo_definitions $ns bash bash-pool-0
	demo_events $ns
	demo_seed_logs $ns
}

# demo_definitions ns runtime pod: two Actions, a WorkflowRun whose step
# calls one of them, and two PersistentWorkspaces on the Runtime (one Bound
# to the Pod, one Pending), with the status the engine's controllers write.
demo_definitions() {
	local ns=$1 rt=$2 pod=$3 now used
	now=$(date -u +%FT%TZ)
	used=$(date -u -d '-25 minutes' +%FT%TZ)
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: Action
metadata: {name: setup-go, namespace: $ns}
spec:
  inputs:
    go-version: {type: string, required: true}
    cache: {type: string, default: "true"}
  outputs:
    goroot: {value: "\${{ steps.install.outputs.goroot }}"}
  steps:
  - name: install
    run: |
      curl -fsSL "https://go.dev/dl/go\${GO_VERSION}.linux-amd64.tar.gz" | tar -C "\$HOME" -xz
      echo "goroot=\$HOME/go" >> "\$KRT_OUTPUTS"
    env: {GO_VERSION: "\${{ inputs.go-version }}", GOPROXY_TOKEN: demo-proxy-token-value}
  - name: verify
    run: go version
---
apiVersion: kruntimes.io/v1alpha1
kind: Action
metadata: {name: publish-report, namespace: $ns}
spec:
  inputs:
    path: {required: true}
    bucket: {default: demo-artifacts}
  steps:
  - name: upload
    run: krt artifacts put "\$REPORT" "s3://\$BUCKET/"
    args: [--content-type, text/html]
YAML
	local ready="{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Accepted\",\"message\":\"definition accepted; WorkflowRuns run its steps\",\"lastTransitionTime\":\"$now\",\"observedGeneration\":1}"
	K -n "$ns" patch action setup-go --subresource status --type merge -p "{\"status\":{\"conditions\":[$ready]}}" >/dev/null
	K -n "$ns" patch action publish-report --subresource status --type merge -p "{\"status\":{\"conditions\":[$ready]}}" >/dev/null
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: WorkflowRun
metadata: {name: nightly-go, namespace: $ns}
spec:
  jobs:
    test:
      runs-on: $rt
      steps:
      - {name: setup, uses: setup-go, with: {go-version: "1.26.4"}}
      - {name: test, run: go test ./...}
YAML
	K -n "$ns" patch workflowrun nightly-go --subresource status --type merge -p "{\"status\":{\"phase\":\"Succeeded\",\"jobs\":{
		\"test\":{\"phase\":\"Succeeded\",\"steps\":[
			{\"name\":\"setup\",\"phase\":\"Succeeded\"},
			{\"name\":\"test\",\"phase\":\"Succeeded\",\"runName\":\"test-succeeded\"}]}}}}" >/dev/null
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: PersistentWorkspace
metadata: {name: go-build-cache, namespace: $ns}
spec: {runtime: $rt, mode: RuntimePodLocal, ttlSecondsAfterUnused: 86400, cleanupPolicy: DeleteAfterTTL}
---
apiVersion: kruntimes.io/v1alpha1
kind: PersistentWorkspace
metadata: {name: notebook-scratch, namespace: $ns}
spec: {runtime: $rt, cleanupPolicy: Retain}
YAML
	local accepted="{\"type\":\"Accepted\",\"status\":\"True\",\"reason\":\"Accepted\",\"message\":\"spec accepted\",\"lastTransitionTime\":\"$now\"}"
	local rtready="{\"type\":\"RuntimeReady\",\"status\":\"True\",\"reason\":\"RuntimeFound\",\"message\":\"Runtime $rt exists\",\"lastTransitionTime\":\"$now\"}"
	K -n "$ns" patch persistentworkspace go-build-cache --subresource status --type merge -p "{\"status\":{\"phase\":\"Bound\",
		\"runtime\":\"$rt\",\"boundPod\":\"$pod\",\"path\":\"/workspace/persistent/go-build-cache\",\"lastUsedTime\":\"$used\",
		\"conditions\":[$accepted,$rtready]}}" >/dev/null
	K -n "$ns" patch persistentworkspace notebook-scratch --subresource status --type merge -p "{\"status\":{\"phase\":\"Pending\",
		\"runtime\":\"$rt\",\"conditions\":[$accepted,$rtready]}}" >/dev/null
}

# demo_owned ns run workflowrun job step [action-step]: the owner reference
# and labels the engine puts on a Run it creates for a WorkflowRun step.
demo_owned() {
	local ns=$1 run=$2 wr=$3 job=$4 step=$5 action=${6:-} uid labels
	uid=$(K -n "$ns" get workflowrun "$wr" -o jsonpath='{.metadata.uid}')
	labels="\"kruntimes.io/workflowrun-uid\":\"$uid\",\"kruntimes.io/workflow-job\":\"$job\",\"kruntimes.io/workflow-step\":\"$step\""
	[[ -n $action ]] && labels+=",\"kruntimes.io/workflow-action-step\":\"$action\""
	K -n "$ns" patch run "$run" --type merge -p "{\"metadata\":{\"labels\":{$labels},
		\"ownerReferences\":[{\"apiVersion\":\"kruntimes.io/v1alpha1\",\"kind\":\"WorkflowRun\",\"name\":\"$wr\",\"uid\":\"$uid\",\"controller\":true,\"blockOwnerDeletion\":true}]}}" >/dev/null
}

# demo_event ns name apiVersion/kind object uid type reason message time: an
# Event as the engine's recorder writes it.
demo_event() {
	K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Event
metadata: {name: $2, namespace: $1}
involvedObject: {apiVersion: ${3%/*}, kind: ${3##*/}, name: $4, uid: "$5", namespace: $1}
type: $6
reason: $7
message: "$8"
firstTimestamp: "$9"
lastTimestamp: "$9"
count: 1
source: {component: kruntimes}
YAML
}

# The retry history of lint-failed (the engine keeps it only as Events), and
# events of its Pod before, during and after it.
demo_events() {
	local ns=$1 uid puid start ended before after
	uid=$(K -n "$ns" get run lint-failed -o jsonpath='{.metadata.uid}')
	puid=$(K -n "$ns" get pod bash-pool-1 -o jsonpath='{.metadata.uid}')
	start=$(K -n "$ns" get run lint-failed -o jsonpath='{.status.startTime}')
	ended=$(K -n "$ns" get run lint-failed -o jsonpath='{.status.completionTime}')
	before=$(date -u -d "$start - 1 hour" +%FT%TZ)
	after=$(date -u -d "$ended + 1 hour" +%FT%TZ)
	demo_event "$ns" lint-failed.failed-1 kruntimes.io/v1alpha1/Run lint-failed "$uid" Warning RunFailedRetrying \
		"Run failed (attempt 1/3), retrying in 10s. Reason: RuntimeExecute: exit status 1" "$start"
	demo_event "$ns" lint-failed.retry-2 kruntimes.io/v1alpha1/Run lint-failed "$uid" Normal RunRetrying \
		"Retry attempt 2/3 starting" "$start"
	demo_event "$ns" lint-failed.failed-2 kruntimes.io/v1alpha1/Run lint-failed "$uid" Warning RunFailedRetrying \
		"Run failed (attempt 2/3), retrying in 20s. Reason: RuntimeExecute: exit status 1" "$start"
	demo_event "$ns" lint-failed.retry-3 kruntimes.io/v1alpha1/Run lint-failed "$uid" Normal RunRetrying \
		"Retry attempt 3/3 starting" "$start"
	demo_event "$ns" lint-failed.exhausted kruntimes.io/v1alpha1/Run lint-failed "$uid" Warning RunRetriesExhausted \
		"Run failed after 3 attempts: RuntimeExecute: exit status 2" "$ended"
	demo_event "$ns" bash-pool-1.pulled v1/Pod bash-pool-1 "$puid" Normal Pulled \
		"Container image ghcr.io/kruntimes/runtime-bash:demo already present on machine" "$before"
	demo_event "$ns" bash-pool-1.unhealthy v1/Pod bash-pool-1 "$puid" Warning Unhealthy \
		"Readiness probe failed: runtimed heartbeat late" "$start"
	demo_event "$ns" bash-pool-1.scaled v1/Pod bash-pool-1 "$puid" Normal Killing \
		"Stopping container runtime" "$after"
}

demo_workflows() {
	local ns=$1
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: WorkflowRun
metadata: {name: release-1-4, namespace: $ns}
spec:
  jobs:
    checkout: {runs-on: bash, steps: [{name: clone, run: git clone repo}]}
    lint: {runs-on: bash, needs: [checkout], steps: [{name: lint, run: make lint}]}
    unit: {runs-on: bash, needs: [checkout], steps: [{name: setup, uses: setup-toolchain, with: {version: "1.22"}}, {name: unit, run: make test}]}
    typecheck: {runs-on: python, needs: [checkout], steps: [{name: mypy, run: mypy .}]}
    build: {runs-on: bash, needs: [lint, unit, typecheck], steps: [{name: compile, run: make build}, {name: package, run: make dist}]}
    security: {uses: security-scan, needs: [checkout]}
    publish: {runs-on: bash, needs: [build, security], steps: [{name: push, run: make publish}]}
YAML
	K -n "$ns" patch workflowrun release-1-4 --subresource status --type merge -p "{\"status\":{\"phase\":\"Running\",\"snapshotName\":\"release-1-4-snapshot\",\"jobs\":{
		\"checkout\":{\"phase\":\"Succeeded\",\"steps\":[{\"name\":\"clone\",\"phase\":\"Succeeded\",\"runName\":\"test-succeeded\"}],\"outputs\":{\"result\":\"a1b2c3d\"}},
		\"lint\":{\"phase\":\"Failed\",\"pre\":[\"checkout\"],\"steps\":[{\"name\":\"lint\",\"phase\":\"Failed\",\"runName\":\"lint-failed\"}],\"outputs\":{\"result\":\"3 lint errors\"}},
		\"unit\":{\"phase\":\"Running\",\"pre\":[\"checkout\"],\"steps\":[{\"name\":\"setup\",\"phase\":\"Succeeded\",\"actionSteps\":[
			{\"name\":\"fetch\",\"phase\":\"Succeeded\",\"runName\":\"setup-fetch\"},{\"name\":\"install\",\"phase\":\"Succeeded\",\"runName\":\"setup-install\",\"outputs\":{\"go\":\"1.22.5\"}}]},
			{\"name\":\"unit\",\"phase\":\"Running\",\"runName\":\"build-running\"}]},
		\"typecheck\":{\"phase\":\"Succeeded\",\"pre\":[\"checkout\"],\"steps\":[{\"name\":\"mypy\",\"phase\":\"Succeeded\",\"runName\":\"etl-running\"}],\"outputs\":{\"result\":\"no issues found in 214 source files\"}},
		\"security\":{\"phase\":\"Running\",\"pre\":[\"checkout\"],\"workflowRunName\":\"release-1-4-security\"},
		\"build\":{\"phase\":\"Waiting\"},\"publish\":{\"phase\":\"Waiting\"}}}}" >/dev/null
	demo_owned "$ns" test-succeeded release-1-4 checkout clone
	demo_owned "$ns" lint-failed release-1-4 lint lint
	demo_owned "$ns" setup-fetch release-1-4 unit setup fetch
	demo_owned "$ns" setup-install release-1-4 unit setup install
	demo_owned "$ns" build-running release-1-4 unit unit
	local puid
	puid=$(K -n "$ns" get workflowrun release-1-4 -o jsonpath='{.metadata.uid}')
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: WorkflowRun
metadata:
  name: release-1-4-security
  namespace: $ns
  labels: {kruntimes.io/workflowrun-uid: "$puid"}
  ownerReferences:
  - {apiVersion: kruntimes.io/v1alpha1, kind: WorkflowRun, name: release-1-4, uid: "$puid", controller: true, blockOwnerDeletion: true}
spec:
  jobs:
    sast: {runs-on: python, steps: [{name: scan, run: semgrep .}]}
    deps: {runs-on: python, steps: [{name: audit, run: pip-audit}]}
    report: {runs-on: bash, needs: [sast, deps], steps: [{name: merge, run: ./merge-reports}]}
YAML
	K -n "$ns" patch workflowrun release-1-4-security --subresource status --type merge -p "{\"status\":{\"phase\":\"Running\",\"jobs\":{
		\"sast\":{\"phase\":\"Succeeded\",\"steps\":[{\"name\":\"scan\",\"phase\":\"Succeeded\",\"runName\":\"etl-running\"}],\"outputs\":{\"result\":\"0 findings\"}},
		\"deps\":{\"phase\":\"Running\",\"steps\":[{\"name\":\"audit\",\"phase\":\"Running\",\"runName\":\"build-running\"}]},
		\"report\":{\"phase\":\"Waiting\"}}}}" >/dev/null
	# A run triggered from a Workflow whose Action call failed before any Run.
	K apply -f - >/dev/null <<YAML
apiVersion: kruntimes.io/v1alpha1
kind: WorkflowRun
metadata: {name: nightly-docs-x7k2p, namespace: $ns}
spec:
  jobs:
    docs: {runs-on: bash, steps: [{name: publish, uses: publish-docs}]}
YAML
	K -n "$ns" patch workflowrun nightly-docs-x7k2p --subresource status --type merge -p "{\"status\":{\"phase\":\"Failed\",
		\"message\":\"resolve Action \\\"publish-docs\\\" for step \\\"publish\\\" in job \\\"docs\\\": Action not found in namespace $ns\",
		\"jobs\":{\"docs\":{\"phase\":\"Failed\",\"steps\":[{\"name\":\"publish\",\"phase\":\"Failed\"}]}}}}" >/dev/null
}

# Writes a few historic lines for each assigned Run. A Pod's log is in time
# order, as the kubelet writes it (the Run-log API reads it by time): Runs
# are taken oldest first, and no line is stamped before the last one of its
# file (a Run seeded later, e.g. by a second seed, gets lines stamped then).
demo_seed_logs() {
	local ns=$1 name uid created pod rt file base ts i step stream msg
	local -A last=()
	while read -r name uid created pod rt; do
		[[ -z "$pod" ]] && continue
		file="$TESTENV_LOGS/${ns}_$pod/runtimed.log"
		mkdir -p "${file%/*}"
		[[ -v "last[$pod]" ]] || last[$pod]=$(demo_last_stamp "$file")
		# Seeded once: a second seed leaves the Runs it already wrote.
		grep -qs "\"run_uid\":\"$uid\"" "$file" && continue
		# Written while the Run ran: a tenth of a second apart (a twentieth for
		# the longer build log) from its creation on (no line of a Run is older than the Run).
		base=$(date -u -d "$created" +%Y-%m-%dT%H:%M:%S)
		i=0 step=100000000
		[[ $name == compile-failed ]] && step=50000000
		while IFS='|' read -r stream msg; do
			i=$((i + 1))
			ts=$(printf '%s.%09dZ' "$base" $((i * step)))
			[[ $ts < ${last[$pod]} ]] && ts=${last[$pod]}
			last[$pod]=$ts
			printf '%s %s F {"run_uid":"%s","run_name":"%s","namespace":"%s","runtime":"%s","pod":"%s","stream":"%s","message":"%s"}\n' \
				"$ts" "$stream" "$uid" "$name" "$ns" "$rt" "$pod" "$stream" "$msg" >>"$file"
		done < <(demo_log_lines "$name")
	done < <(K -n "$ns" get runs --sort-by=.metadata.creationTimestamp \
		-o jsonpath='{range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.creationTimestamp} {.status.assignedPod} {.spec.runtime}{"\n"}{end}')
	for pod in "${!last[@]}"; do
		printf '%s stdout F runtimed: health probe ok\n' "$(demo_ts)" >>"$TESTENV_LOGS/${ns}_$pod/runtimed.log"
	done
}

# demo_log_lines name: the seeded records of a Run, `stream|message` (the
# message JSON-escaped): five steps, or for compile-failed a build log with
# ANSI colours (16, 256, truecolour, bold, italic, underline, a cursor
# movement to strip), ::group:: folds and errors on stderr. In the engine's
# order: runtimed writes a Run's stdout lines, then its stderr lines, when
# the Run ends (the exit status is the Run's status.message, not a line).
demo_log_lines() {
	if [[ $1 != compile-failed ]]; then
		for i in 1 2 3 4 5; do echo "stdout|step $i of $1: ok"; done
		return
	fi
	local e='\u001b'
	cat <<LINES
stdout|::group::Set up job
stdout|Runner: bash-pool-1
stdout|Image: kruntimes/bash:5.2
stdout|::endgroup::
stdout|::group::Install dependencies
stdout|${e}[36mfetching${e}[0m 12 packages
stdout|${e}[32m✓${e}[0m installed 12 packages in 3.2s
stdout|::endgroup::
stdout|${e}[1mCompiling${e}[0m demo-service v0.4.1
stdout|${e}[38;5;208mwarning${e}[0m: unused variable \`retries\`
stdout|${e}[38;2;30;30;160mnote${e}[0m: truecolour, drawn readable on every theme
stdout|${e}[2K${e}[1G${e}[4mlinking${e}[24m and ${e}[3mchecking${e}[23m
stdout|${e}[90mbuild step exited${e}[0m
stderr|${e}[1;31merror[E0308]${e}[0m: mismatched types: expected \`u32\`, found \`String\`
stderr|${e}[1;31mERROR${e}[0m build failed with 1 error
LINES
}

# The timestamp of the last line of a CRI log file (empty when none).
demo_last_stamp() {
	[[ -s $1 ]] || return 0
	tail -n 1 "$1" | cut -d' ' -f1
}

# Appends interleaved lines for the Running Runs forever (hack/testenv down stops it).
demo_writer() {
	local ns=team-a n=0
	mapfile -t live < <(K -n "$ns" get runs -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name} {.metadata.uid} {.status.assignedPod} {.spec.runtime}{"\n"}{end}')
	while true; do
		n=$((n + 1))
		for entry in "${live[@]}"; do
			read -r name uid pod rt <<<"$entry"
			local stream=stdout
			((n % 7 == 0)) && stream=stderr
			printf '%s %s F {"run_uid":"%s","run_name":"%s","namespace":"%s","runtime":"%s","pod":"%s","stream":"%s","message":"[%s] tick %d: processed %d items"}\n' \
				"$(demo_ts)" "$stream" "$uid" "$name" "$ns" "$rt" "$pod" "$stream" "$name" "$n" $((n * 17 % 1000)) >>"$TESTENV_LOGS/${ns}_$pod/runtimed.log"
		done
		sleep 1
	done
}
