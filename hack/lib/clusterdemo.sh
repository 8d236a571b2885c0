#!/usr/bin/env bash
# The demo of `hack/dev --cluster` on the real node of hack/cluster, set up
# the way tests/tests/cluster_helm.rs sets up its Console: the chart
# installed by Helm from the images hack/image built (the Console in-cluster,
# two Pods), the gateway's CA given to the Console before it starts, and the
# Runtime side as Pods that run: the runtimed stand-in in engine mode (a Run's
# records on stdout, which containerd writes and the kubelet serves, only when
# the Run ends; its output so far on runtimed's gRPC status port 9093), and the
# fake gateway behind `bash-gateway`. The Runs, Runtime and WorkflowRuns come
# from hack/lib/demo.sh.
#
# The caller defines K (kubectl against the cluster), STATE (the cluster's
# state directory), KRT_ROOT and log(), and sources demo.sh, pki.sh and proc.sh.

CDEMO_NS=kruntimes-system
CDEMO_RELEASE=kruntimes-console
CDEMO_TEAM=team-a
CDEMO_RUNTIME=bash
CDEMO_HOST=kruntimes-console.kruntimes-system.svc
# The Runtime Pods' `runtime` container only has to run: hack/cluster's pause
# image, on the node already.
CDEMO_RUNTIME_IMAGE=localhost/kruntimes/pause:3.10.1

# cdemo_install IMAGES_ENV: the chart, upgraded in place on a second run.
cdemo_install() {
	local images=$1 D="$STATE/demo"
	# shellcheck disable=SC1090
	source "$images"
	mkdir -p "$D"
	if [[ ! -f "$D/gw.crt" ]]; then
		pki_ca "$D" gw-ca kruntimes-demo-gateway-ca
		pki_cert "$D" gw-ca gw "/CN=$CDEMO_RUNTIME-gateway" serverAuth "DNS:$CDEMO_RUNTIME-gateway.$CDEMO_TEAM.svc"
	fi
	# A namespace still being deleted (an uninstalled release, a test's cleanup) takes nothing new.
	if [[ $(K get namespace "$CDEMO_NS" -o jsonpath='{.status.phase}' 2>/dev/null) == Terminating ]]; then
		log "waiting for namespace $CDEMO_NS to finish terminating"
		K wait --for=delete "namespace/$CDEMO_NS" --timeout 180s >&2
	fi
	K create namespace "$CDEMO_NS" --dry-run=client -o yaml | K apply -f - >/dev/null
	K -n "$CDEMO_NS" create secret generic gateway-ca --from-file=ca.crt="$D/gw-ca.crt" \
		--dry-run=client -o yaml | K apply -f - >/dev/null
	log "installing the chart (helm upgrade --install $CDEMO_RELEASE, image $IMAGE_CONSOLE)"
	KUBECONFIG="$STATE/kubeconfig" "$KRT_ROOT/hack/helm" upgrade --install "$CDEMO_RELEASE" "$KRT_ROOT/chart" \
		-n "$CDEMO_NS" \
		--set "console.image.repository=${IMAGE_CONSOLE%:*}" \
		--set "console.image.tag=${IMAGE_CONSOLE##*:}" \
		--set console.image.pullPolicy=Never \
		--set console.access.gatewayCASecretName=gateway-ca \
		--wait --timeout 5m >&2
	K -n "$CDEMO_NS" rollout status deployment/kruntimes-console --timeout 180s >&2
	K -n "$CDEMO_NS" get secret kruntimes-console-tls -o jsonpath='{.data.ca\.crt}' | base64 -d >"$D/console-ca.crt"
	[[ -s "$D/console-ca.crt" ]] || { log "no ca.crt in Secret $CDEMO_NS/kruntimes-console-tls"; return 1; }
}

# cdemo_standin NAME EXECUTIONS LINES RATE: a Runtime Pod laid out as the
# engine's controller makes it (labels runtime= and app=kruntimes-<runtime>,
# containers runtime and runtimed; runtimed's status port 9093 served but not
# declared, its health port 9094 declared), running the runtimed stand-in in
# engine mode with EXECUTIONS (name=uid[:phase],...): each prints LINES lines
# at RATE lines/s in all, then ends in its phase if it has one. Kept when it
# already runs the same executions; replaced when they changed (a Pod's env is
# immutable).
cdemo_standin() {
	local pod=$1 execs=$2 lines=$3 rate=$4 have
	have=$(K -n "$CDEMO_TEAM" get pod "$pod" -o jsonpath='{.spec.containers[?(@.name=="runtimed")].env[?(@.name=="RUNTIMED_EXECUTIONS")].value}' 2>/dev/null || true)
	[[ -n $have && $have == "$execs" ]] && return 0
	K -n "$CDEMO_TEAM" delete pod "$pod" --ignore-not-found --wait=true >/dev/null
	K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $pod
  namespace: $CDEMO_TEAM
  labels: {runtime: $CDEMO_RUNTIME, app: kruntimes-$CDEMO_RUNTIME, app.kubernetes.io/part-of: kruntimes}
  annotations: {kruntimes.io/capacity.runs: "8", kruntimes.io/capacity.cpu: "2"}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: runtime
    image: $CDEMO_RUNTIME_IMAGE
    imagePullPolicy: Never
    ports: [{name: grpc, containerPort: 9091, protocol: TCP}]
  - name: runtimed
    image: $IMAGE_RUNTIMED
    imagePullPolicy: Never
    env:
    - {name: RUNTIMED_MODE, value: engine}
    - {name: RUNTIMED_EXECUTIONS, value: "$execs"}
    - {name: RUNTIMED_EXECUTION_LINES, value: "$lines"}
    - {name: RUNTIMED_RATE, value: "$rate"}
    - {name: RUNTIMED_COUNT, value: "0"}
    - {name: RUNTIMED_STATUS_LISTEN, value: "0.0.0.0:9093"}
    - {name: RUNTIMED_CONTROL_LISTEN, value: "0.0.0.0:9094"}
    - {name: RUNTIME_NAME, value: $CDEMO_RUNTIME}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    ports: [{name: health, containerPort: 9094, protocol: TCP}]
    readinessProbe: {httpGet: {path: /healthz, port: 9094}, periodSeconds: 1}
YAML
}

# cdemo_gateway: the fake gateway Pod and its Service bash-gateway; it
# accepts the Console's client certificate (signed by the Console's CA).
cdemo_gateway() {
	local D="$STATE/demo" gw=$CDEMO_RUNTIME-gateway
	K -n "$CDEMO_TEAM" create secret generic "$gw-tls" --from-file=tls.crt="$D/gw.crt" \
		--from-file=tls.key="$D/gw.key" --from-file=client-ca.crt="$D/console-ca.crt" \
		--dry-run=client -o yaml | K apply -f - >/dev/null
	if ! K -n "$CDEMO_TEAM" get pod "$gw" >/dev/null 2>&1; then
		K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $gw
  namespace: $CDEMO_TEAM
  labels: {app: $gw}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: gateway
    image: $IMAGE_GATEWAY
    imagePullPolicy: Never
    args: ["--listen=0.0.0.0:8443", "--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key",
           "--client-ca=/tls/client-ca.crt", "--control-listen=0.0.0.0:8081"]
    ports: [{containerPort: 8443, name: https}]
    readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 1}
    volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
  volumes: [{name: tls, secret: {secretName: $gw-tls}}]
YAML
	fi
	K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: $gw, namespace: $CDEMO_TEAM}
spec:
  selector: {app: $gw}
  ports: [{name: https, port: 443, targetPort: https}]
YAML
}

uid_of() { K -n "$CDEMO_TEAM" get run "$1" -o jsonpath='{.metadata.uid}'; }

# cdemo_seed: the Runtime, its two stand-in Pods, Runs in several phases,
# a Ready function and a Ready session Run behind the gateway, WorkflowRuns,
# Actions and PersistentWorkspaces.
cdemo_seed() {
	local ns=$CDEMO_TEAM rt=$CDEMO_RUNTIME
	demo_runtime "$ns" "$rt" 2
	# The Runs first: the stand-ins are told their UIDs.
	local live=(build-running etl-running) history=(build-scheduled test-succeeded lint-failed slow-timeout deploy-cancelled)
	local r
	for r in build-pending "${live[@]}" "${history[@]}"; do demo_run_object "$ns" "$r" "$rt" task; done
	demo_run_object "$ns" resize-function "$rt" function
	demo_run_object "$ns" shell-session "$rt" session
	# bash-0 runs the Running Runs: they print for hours (2 lines a second in
	# all), kept by runtimed and served on its status port, written to its log
	# only at their end. bash-1 ran the finished Runs: the Succeeded and Failed
	# ones wrote their output when they ended; a Timeout or Cancelled Run
	# writes none, as the engine's runtimed. A Scheduled Run has not started.
	local live_env="" history_env="" lines=15
	for r in "${live[@]}"; do live_env+="$r=$(uid_of "$r"),"; done
	history_env="test-succeeded=$(uid_of test-succeeded):Succeeded,lint-failed=$(uid_of lint-failed):Failed,"
	history_env+="slow-timeout=$(uid_of slow-timeout):Timeout,deploy-cancelled=$(uid_of deploy-cancelled):Cancelled"
	cdemo_standin "$rt-0" "${live_env%,}" 20000 2
	cdemo_standin "$rt-1" "$history_env" "$lines" 30
	cdemo_gateway
	log "waiting for the Runtime Pods and the gateway"
	K -n "$ns" wait --for=condition=Ready "pod/$rt-0" "pod/$rt-1" "pod/$rt-gateway" --timeout 180s >&2
	# A finished Run's records are written when it ends: they come before its
	# completion time.
	wait_for "bash-1's records of the finished Runs" 60 bash -c "[[ \$(kubectl --kubeconfig '$STATE/kubeconfig' -n $ns logs $rt-1 -c runtimed | grep -c '\"run_uid\"') -ge $((2 * lines)) ]]"

	local done_at
	done_at=$(date -u +%FT%TZ)
	demo_run_status "$ns" build-pending Pending
	demo_run_status "$ns" build-scheduled Scheduled "$rt-1"
	demo_run_status "$ns" build-running Running "$rt-0"
	demo_run_status "$ns" etl-running Running "$rt-0"
	demo_run_status "$ns" resize-function Ready "$rt-1"
	demo_run_status "$ns" shell-session Ready "$rt-1"
	demo_run_status "$ns" test-succeeded Succeeded "$rt-1" \
		"\"completionTime\":\"$done_at\",\"outputs\":{\"result\":\"42 tests passed\",\"coverage\":\"87%\"}"
	demo_run_status "$ns" lint-failed Failed "$rt-1" \
		"\"completionTime\":\"$done_at\",\"message\":\"exit code 2\",\"outputs\":{\"result\":\"3 lint errors\"}"
	demo_run_status "$ns" slow-timeout Timeout "$rt-1" "\"completionTime\":\"$done_at\",\"message\":\"exceeded the 10m timeout\""
	demo_run_status "$ns" deploy-cancelled Cancelled "$rt-1" "\"completionTime\":\"$done_at\",\"message\":\"cancelled by operator\""
	demo_workflows "$ns"
	demo_definitions "$ns" "$rt" "$rt-0"
}

# cdemo_forward PORT: kubectl port-forward to the Console Service in the
# background (its pid in $STATE/run/demo-port-forward.pid; hack/cluster down
# stops it); kept when it already runs.
cdemo_forward() {
	local port=$1
	if alive demo-port-forward; then return 0; fi
	start demo-port-forward kubectl --kubeconfig "$STATE/kubeconfig" -n "$CDEMO_NS" \
		port-forward --address 127.0.0.1 svc/kruntimes-console "$port:443"
	wait_for "kubectl port-forward on 127.0.0.1:$port" 30 \
		curl -sf --max-time 5 --cacert "$STATE/demo/console-ca.crt" --resolve "$CDEMO_HOST:$port:127.0.0.1" \
		"https://$CDEMO_HOST:$port/api/session" || {
		log "port-forward failed: $(tail -n 5 "$STATE/log/demo-port-forward.log")"
		return 1
	}
}
