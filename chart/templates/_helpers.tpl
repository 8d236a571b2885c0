{{/*
Fixed names: the APIService names Service kruntimes-console in the release
namespace, and kube-apiserver dials it as kruntimes-console.<namespace>.svc.
The APIService and the ClusterRole are cluster-wide, so one release per
cluster.
*/}}
{{- define "kruntimes-console.name" -}}kruntimes-console{{- end }}
{{- define "kruntimes-console.tlsSecretName" -}}
{{- if .Values.console.tls.secretName -}}{{ .Values.console.tls.secretName }}{{- else -}}kruntimes-console-tls{{- end -}}
{{- end }}
{{- define "kruntimes-console.cookieSecretName" -}}{{ .Values.console.cookieKey.existingSecret | default "kruntimes-console-cookie" }}{{- end }}

{{- define "kruntimes-console.selectorLabels" -}}
app.kubernetes.io/name: kruntimes-console
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: console
{{- end }}

{{- define "kruntimes-console.labels" -}}
{{ include "kruntimes-console.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kruntimes
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- define "kruntimes-console.image" -}}
{{ .Values.console.image.repository }}:{{ .Values.console.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The DNS names of the serving certificate.
*/}}
{{- define "kruntimes-console.dnsNames" -}}
{{- $ns := .Release.Namespace -}}
{{- list "kruntimes-console" (printf "kruntimes-console.%s" $ns) (printf "kruntimes-console.%s.svc" $ns) (printf "kruntimes-console.%s.svc.cluster.local" $ns) | toJson -}}
{{- end }}

{{/*
A duration value (ms, s, m, h) in milliseconds.
*/}}
{{- define "kruntimes-console.durationMillis" -}}
{{- $d := toString . -}}
{{- if not (regexMatch "^[0-9]+(ms|s|m|h)$" $d) -}}
{{- fail (printf "%q is not a duration: use a whole number with ms, s, m or h (10s, 500ms, 2m)" $d) -}}
{{- end -}}
{{- $n := regexFind "^[0-9]+" $d | atoi -}}
{{- if hasSuffix "ms" $d -}}{{ $n }}
{{- else if hasSuffix "s" $d -}}{{ mul $n 1000 }}
{{- else if hasSuffix "m" $d -}}{{ mul $n 60000 }}
{{- else -}}{{ mul $n 3600000 }}
{{- end -}}
{{- end }}

{{/*
Checks the combinations the schema cannot express. Every message names the
values to change.
*/}}
{{- define "kruntimes-console.validate" -}}
{{- $tls := .Values.console.tls -}}
{{- $self := $tls.selfSigned -}}
{{- $secret := $tls.secretName -}}
{{- $cm := $tls.certManager.enabled -}}
{{- if and $self $secret -}}
{{- fail (printf "console.tls: selfSigned=true and secretName=%q are ambiguous. To use the existing Secret set console.tls.selfSigned=false; to let the chart generate the certificate unset console.tls.secretName." $secret) -}}
{{- end -}}
{{- if and $self $cm -}}
{{- fail "console.tls: selfSigned=true and certManager.enabled=true are ambiguous. To use cert-manager set console.tls.selfSigned=false; to let the chart generate the certificate set console.tls.certManager.enabled=false." -}}
{{- end -}}
{{- if and $secret $cm -}}
{{- fail (printf "console.tls: secretName=%q and certManager.enabled=true are ambiguous. To use the existing Secret set console.tls.certManager.enabled=false; to use cert-manager (it writes Secret kruntimes-console-tls) unset console.tls.secretName." $secret) -}}
{{- end -}}
{{- if $cm -}}
{{- $life := include "kruntimes-console.durationMillis" $tls.certManager.duration | atoi -}}
{{- $before := include "kruntimes-console.durationMillis" $tls.certManager.renewBefore | atoi -}}
{{- if lt $life 3600000 -}}
{{- fail (printf "console.tls.certManager.duration=%s is under cert-manager's minimum of 1h." $tls.certManager.duration) -}}
{{- end -}}
{{- if or (lt $before 300000) (ge $before $life) -}}
{{- fail (printf "console.tls.certManager.renewBefore=%s must be at least 5m and less than duration=%s." $tls.certManager.renewBefore $tls.certManager.duration) -}}
{{- end -}}
{{- end -}}
{{- if and $cm (not $tls.certManager.issuerRef.name) -}}
{{- fail "console.tls: certManager.enabled=true needs an issuer: set console.tls.certManager.issuerRef.name (and issuerRef.kind, Issuer or ClusterIssuer)." -}}
{{- end -}}
{{- if not (or $self $secret $cm) -}}
{{- fail "console.tls: no TLS source. Set exactly one of console.tls.selfSigned=true, console.tls.secretName=<existing Secret> or console.tls.certManager.enabled=true." -}}
{{- end -}}
{{- if and $cm (ne $tls.caBundleKey "ca.crt") -}}
{{- fail (printf "console.tls: cert-manager writes the CA under ca.crt, not %q: set console.tls.caBundleKey=ca.crt with console.tls.certManager.enabled=true." $tls.caBundleKey) -}}
{{- end -}}
{{- $ttl := include "kruntimes-console.durationMillis" .Values.console.access.authorizationCacheTTL | atoi -}}
{{- if gt $ttl 30000 -}}
{{- fail (printf "console.access.authorizationCacheTTL=%s: decisions may be cached for at most 30s; set a smaller value." .Values.console.access.authorizationCacheTTL) -}}
{{- end -}}
{{- range $k := list "idleTimeout" "totalTimeout" -}}
{{- $_ := include "kruntimes-console.durationMillis" (get $.Values.console.access $k) -}}
{{- end -}}
{{- include "kruntimes-console.validatePod" . -}}
{{- end }}

{{/*
The Pod options: extra labels, flags and volumes may add to the chart's,
never replace them.
*/}}
{{- define "kruntimes-console.validatePod" -}}
{{- $c := .Values.console -}}
{{- $own := include "kruntimes-console.labels" . | fromYaml -}}
{{- range $k, $_ := $c.podLabels -}}
{{- if hasKey $own $k -}}
{{- fail (printf "console.podLabels: %q is a label the chart sets itself (the Service and the PodDisruptionBudget select on it); use another key." $k) -}}
{{- end -}}
{{- end -}}
{{- $flags := list -}}
{{- range include "kruntimes-console.args" . | fromYamlArray -}}
{{- $flags = append $flags (regexReplaceAll "=.*$" . "") -}}
{{- end -}}
{{- range $c.extraArgs -}}
{{- $f := regexReplaceAll "=.*$" . "" -}}
{{- if has $f $flags -}}
{{- fail (printf "console.extraArgs: %s is set by the chart from its values; set the value instead (docs/operations.md, \"Values and the flags they become\")." $f) -}}
{{- end -}}
{{- end -}}
{{- $vols := list "tls" "cookie" "client-ca" "gateway-ca" "tmp" -}}
{{- range $c.extraVolumes -}}
{{- if has .name $vols -}}
{{- fail (printf "console.extraVolumes: the volume name %q is the chart's own (%s); choose another name." .name (join ", " $vols)) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
The self-signed TLS material as JSON {"crt", "key", "ca"} (base64): the
Secret already in the cluster when it is complete, otherwise a new CA and
serving certificate. Computed once per render so the Secret and the
APIService caBundle agree.
*/}}
{{- define "kruntimes-console.selfSignedTLS" -}}
{{- if not (hasKey .Values "kruntimesConsoleGeneratedTLS") -}}
{{- $key := .Values.console.tls.caBundleKey -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace "kruntimes-console-tls" -}}
{{- $data := dict -}}
{{- if $existing -}}{{- $data = $existing.data | default dict -}}{{- end -}}
{{- $material := dict -}}
{{- if and (hasKey $data "tls.crt") (hasKey $data "tls.key") (hasKey $data $key) -}}
{{- $material = dict "crt" (get $data "tls.crt") "key" (get $data "tls.key") "ca" (get $data $key) -}}
{{- else -}}
{{- $ca := genCA "kruntimes-console-ca" 3650 -}}
{{- $cert := genSignedCert "kruntimes-console" nil (include "kruntimes-console.dnsNames" . | fromJsonArray) 3650 $ca -}}
{{- $material = dict "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc) "ca" ($ca.Cert | b64enc) -}}
{{- end -}}
{{- $_ := set .Values "kruntimesConsoleGeneratedTLS" $material -}}
{{- end -}}
{{- get .Values "kruntimesConsoleGeneratedTLS" | toJson -}}
{{- end }}

{{/*
The cookie key (base64 of 32 random bytes): the Secret already in the
cluster, otherwise a new key. Computed once per render.
*/}}
{{- define "kruntimes-console.cookieKey" -}}
{{- if not (hasKey .Values "kruntimesConsoleGeneratedCookieKey") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "kruntimes-console.cookieSecretName" .) -}}
{{- $value := "" -}}
{{- if and $existing $existing.data (hasKey $existing.data "key") -}}
{{- $value = get $existing.data "key" -}}
{{- else -}}
{{- $value = randBytes 32 -}}
{{- end -}}
{{- $_ := set .Values "kruntimesConsoleGeneratedCookieKey" $value -}}
{{- end -}}
{{- get .Values "kruntimesConsoleGeneratedCookieKey" -}}
{{- end }}

{{/*
The APIService caBundle (base64), or nothing when cert-manager injects it
or when rendering offline without the existing Secret.
*/}}
{{- define "kruntimes-console.caBundle" -}}
{{- $tls := .Values.console.tls -}}
{{- if $tls.selfSigned -}}
{{- (include "kruntimes-console.selfSignedTLS" . | fromJson).ca -}}
{{- else if $tls.secretName -}}
{{- $ns := .Release.Namespace -}}
{{- $secret := lookup "v1" "Secret" $ns $tls.secretName -}}
{{- if $secret -}}
{{- $data := $secret.data | default dict -}}
{{- range $k := list "tls.crt" "tls.key" $tls.caBundleKey -}}
{{- if not (hasKey $data $k) -}}
{{- fail (printf "console.tls.secretName: Secret %s/%s has no key %q. It needs tls.crt, tls.key and the CA bundle under console.tls.caBundleKey (%q): add the key or set console.tls.caBundleKey." $ns $tls.secretName $k $tls.caBundleKey) -}}
{{- end -}}
{{- end -}}
{{- get $data $tls.caBundleKey -}}
{{- else if lookup "v1" "Namespace" "" "kube-system" -}}
{{- fail (printf "console.tls.secretName: Secret %s/%s does not exist. Create it (tls.crt, tls.key and the CA bundle under %q) before installing, or use console.tls.selfSigned=true." $ns $tls.secretName $tls.caBundleKey) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
The flags the chart sets from its values, one YAML list item a line.
console.extraArgs may add flags but never repeat one of these.
*/}}
{{- define "kruntimes-console.args" -}}
{{- $c := .Values.console -}}
{{- $a := $c.access -}}
{{- $l := $c.limits -}}
{{- $dir := "/etc/kruntimes-console" -}}
- --apiserver-listen=0.0.0.0:8443
- --apiserver-tls-cert={{ $dir }}/tls/tls.crt
- --apiserver-tls-key={{ $dir }}/tls/tls.key
- --console-listen=0.0.0.0:9443
- --console-tls-cert={{ $dir }}/tls/tls.crt
- --console-tls-key={{ $dir }}/tls/tls.key
- --admin-listen=0.0.0.0:9090
- --cookie-key-file={{ $dir }}/cookie
- --public-read={{ $c.publicRead.enabled }}
{{- if $c.tls.clientCASecretName }}
- --client-ca-file={{ $dir }}/client-ca/ca.crt
{{- end }}
- --authorization-cache-ttl={{ $a.authorizationCacheTTL }}
- --max-header-bytes={{ int64 $a.maxHeaderBytes }}
- --access-max-request-bytes={{ int64 $a.maxRequestBytes }}
- --access-max-response-bytes={{ int64 $a.maxResponseBytes }}
- --access-max-ws-message-bytes={{ int64 $a.maxWebSocketMessageBytes }}
- --access-idle-timeout={{ $a.idleTimeout }}
- --access-total-timeout={{ $a.totalTimeout }}
- --access-fast-path={{ $a.fastPath }}
- --tls-handshake-timeout={{ $l.tlsHandshakeTimeout }}
- --first-request-timeout={{ $l.firstRequestTimeout }}
- --connection-idle-timeout={{ $l.connectionIdleTimeout }}
- --send-timeout={{ $l.sendTimeout }}
- --http2-keepalive-interval={{ $l.http2KeepaliveInterval }}
- --http2-keepalive-timeout={{ $l.http2KeepaliveTimeout }}
- --http2-max-concurrent-streams={{ int64 $l.http2MaxConcurrentStreams }}
- --max-connections={{ int64 $l.maxConnections }}
- --max-connections-per-peer={{ int64 $l.maxConnectionsPerPeer }}
- --apiserver-max-connections-per-peer={{ int64 $l.apiserverMaxConnectionsPerPeer }}
- --max-open-requests={{ int64 $l.maxOpenRequests }}
- --max-open-requests-per-peer={{ int64 $l.maxOpenRequestsPerPeer }}
- --apiserver-max-open-requests-per-peer={{ int64 $l.apiserverMaxOpenRequestsPerPeer }}
- --access-body-timeout={{ $l.accessBodyTimeout }}
- --access-max-concurrent-calls={{ int64 $l.accessMaxConcurrentCalls }}
- --access-max-concurrent-calls-per-caller={{ int64 $l.accessMaxConcurrentCallsPerCaller }}
- --access-max-buffered-bytes={{ int64 $l.accessMaxBufferedBytes }}
- --access-max-buffered-bytes-per-caller={{ int64 $l.accessMaxBufferedBytesPerCaller }}
- --reserve-for-light-callers={{ int64 $l.reserveForLightCallers }}
- --max-follows={{ int64 $l.maxFollows }}
- --max-follows-per-caller={{ int64 $l.maxFollowsPerCaller }}
- --max-watches={{ int64 $l.maxWatches }}
- --max-watches-per-caller={{ int64 $l.maxWatchesPerCaller }}
- --live-output={{ $c.liveOutput.enabled }}
- --live-output-port={{ int64 $c.liveOutput.port }}
- --live-output-poll-interval={{ $c.liveOutput.pollInterval }}
- --live-output-timeout={{ $c.liveOutput.timeout }}
- --live-output-max-bytes={{ int64 $c.liveOutput.maxBytes }}
{{- if $a.gatewayCASecretName }}
- --gateway-ca-file={{ $dir }}/gateway-ca/ca.crt
{{- end }}
- --gateway-client-cert={{ $dir }}/tls/tls.crt
- --gateway-client-key={{ $dir }}/tls/tls.key
- --shutdown-delay={{ $c.shutdown.delay }}
- --shutdown-timeout={{ $c.shutdown.timeout }}
- --log-format={{ $c.logFormat }}
{{- end }}

{{/*
Service kruntimes-console-metrics: the chart's labels with component
metrics, so the ServiceMonitor selects it and never Service kruntimes-console.
*/}}
{{- define "kruntimes-console.metricsSelectorLabels" -}}
app.kubernetes.io/name: kruntimes-console
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: metrics
{{- end }}

{{- define "kruntimes-console.metricsLabels" -}}
{{ include "kruntimes-console.metricsSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: kruntimes
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}
