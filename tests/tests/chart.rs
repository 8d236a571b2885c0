//! The Helm chart: lint and render in every TLS mode, ambiguous TLS values
//! rejected with a message naming them, every rendered object accepted by a
//! real kube-apiserver (server-side dry run), the shipped RBAC equal to the
//! RBAC the test environment runs the Console with, and the generated TLS
//! material and cookie key kept across renders through `lookup`.
//!
//! The cert-manager Certificate is rendered and checked as text but left out
//! of the dry run: the local control plane has no cert-manager CRDs.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use kruntimes_tests::env::{env, repo_root, unique};
use serde_json::{Value, json};

const NS: &str = "kruntimes-system";
const APISERVICE: &str = "v1alpha1.logs.kruntimes.io";

/// The TLS modes and the values that select them.
const MODES: &[(&str, &[&str])] = &[
    ("selfSigned", &[]),
    (
        "secretName",
        &[
            "console.tls.selfSigned=false",
            "console.tls.secretName=console-tls",
        ],
    ),
    (
        "certManager",
        &[
            "console.tls.selfSigned=false",
            "console.tls.certManager.enabled=true",
            "console.tls.certManager.issuerRef.name=platform-ca",
            "console.tls.certManager.issuerRef.kind=ClusterIssuer",
        ],
    ),
];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `hack/helm ARGS --set SETS...`, offline unless `kubeconfig` is given.
fn helm(args: &[&str], sets: &[&str], kubeconfig: Option<&str>) -> Output {
    let mut cmd = Command::new(repo_root().join("hack/helm"));
    cmd.current_dir(repo_root()).args(args);
    for s in sets {
        cmd.arg("--set").arg(s);
    }
    match kubeconfig {
        Some(k) => cmd.env("KUBECONFIG", k),
        // No cluster: lookups return nothing, as in `helm template`.
        None => cmd.env("KUBECONFIG", "/nonexistent/kubeconfig"),
    };
    cmd.output().expect("running hack/helm")
}

/// The rendered manifests (offline) in namespace `ns`.
fn render_in(ns: &str, sets: &[&str]) -> String {
    let out = helm(
        &["template", "kruntimes-console", "chart", "--namespace", ns],
        sets,
        None,
    );
    assert!(
        out.status.success(),
        "helm template {sets:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn render(sets: &[&str]) -> String {
    render_in(NS, sets)
}

/// The YAML documents of a rendered stream, and whether each is of `kind`.
fn documents(rendered: &str) -> Vec<String> {
    rendered
        .split("\n---\n")
        .map(|d| d.trim_start_matches("---\n").to_owned())
        .filter(|d| d.lines().any(|l| l.starts_with("kind: ")))
        .collect()
}

fn kind_of(doc: &str) -> &str {
    doc.lines()
        .find_map(|l| l.strip_prefix("kind: "))
        .unwrap_or_default()
        .trim()
}

/// `kubectl ARGS` as admin with `input` on stdin.
fn kubectl_stdin(args: &[&str], input: &str) -> Output {
    let mut child = env()
        .kubectl_command(Some(env().token("admin")), args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running kubectl");
    child
        .stdin
        .take()
        .expect("kubectl stdin")
        .write_all(input.as_bytes())
        .expect("writing to kubectl");
    child.wait_with_output().expect("kubectl output")
}

/// Every object of `yaml` through a server-side dry run, as the server
/// returned them. Panics when the server rejects any of them.
fn dry_run(yaml: &str) -> Vec<Value> {
    let out = kubectl_stdin(
        &["apply", "--dry-run=server", "-o", "json", "-f", "-"],
        yaml,
    );
    assert!(
        out.status.success(),
        "kubectl apply --dry-run=server rejected the chart: {}\n{yaml}",
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("kubectl JSON");
    match v["kind"].as_str() {
        Some("List") => v["items"].as_array().cloned().unwrap_or_default(),
        _ => vec![v],
    }
}

/// The rendered objects minus the kinds the local control plane cannot know.
fn dry_run_chart(rendered: &str) -> Vec<Value> {
    let docs: Vec<String> = documents(rendered)
        .into_iter()
        // No cert-manager CRDs here: the Certificate is checked as text only.
        .filter(|d| kind_of(d) != "Certificate")
        .collect();
    dry_run(&docs.join("\n---\n"))
}

fn find<'a>(objs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objs.iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn kinds(objs: &[Value]) -> Vec<String> {
    let mut k: Vec<String> = objs
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    k.sort();
    k
}

fn container(objs: &[Value]) -> &Value {
    &find(objs, "Deployment", "kruntimes-console")["spec"]["template"]["spec"]["containers"][0]
}

fn args(objs: &[Value]) -> Vec<String> {
    container(objs)["args"]
        .as_array()
        .expect("container args")
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn lint_and_template_succeed_in_every_tls_mode() {
    for (mode, sets) in MODES {
        let out = helm(&["lint", "chart", "--strict"], sets, None);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("0 chart(s) failed"),
            "helm lint in mode {mode}: {stdout}{}",
            text(&out.stderr)
        );
        let rendered = render(sets);
        let docs = documents(&rendered);
        let has = |kind: &str| docs.iter().any(|d| kind_of(d) == kind);
        for kind in [
            "Deployment",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "RoleBinding",
            "Service",
            "APIService",
            "PodDisruptionBudget",
        ] {
            assert!(has(kind), "mode {mode}: no {kind} rendered");
        }
        let tls_secret = docs
            .iter()
            .any(|d| kind_of(d) == "Secret" && d.contains("name: kruntimes-console-tls"));
        assert_eq!(tls_secret, *mode == "selfSigned", "mode {mode}: TLS Secret");
        assert_eq!(
            has("Certificate"),
            *mode == "certManager",
            "mode {mode}: Certificate"
        );
        let apiservice = docs
            .iter()
            .find(|d| kind_of(d) == "APIService")
            .expect("APIService");
        match *mode {
            "selfSigned" => assert!(apiservice.contains("\n  caBundle: ")),
            // Offline render: the existing Secret is read at install time.
            "secretName" => assert!(!apiservice.contains("\n  caBundle: ")),
            _ => {
                assert!(!apiservice.contains("\n  caBundle: "));
                assert!(apiservice.contains(
                    "cert-manager.io/inject-ca-from: kruntimes-system/kruntimes-console"
                ));
            }
        }
    }
}

#[test]
fn ambiguous_tls_combinations_fail_with_a_message_naming_the_values() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["console.tls.secretName=console-tls"],
            &[
                "console.tls.selfSigned",
                "console.tls.secretName",
                "ambiguous",
            ],
        ),
        (
            &[
                "console.tls.certManager.enabled=true",
                "console.tls.certManager.issuerRef.name=platform-ca",
            ],
            &[
                "console.tls.selfSigned",
                "console.tls.certManager.enabled",
                "ambiguous",
            ],
        ),
        (
            &[
                "console.tls.selfSigned=false",
                "console.tls.certManager.enabled=true",
            ],
            &["console.tls.certManager.issuerRef.name"],
        ),
        (
            &[
                "console.tls.selfSigned=false",
                "console.tls.secretName=console-tls",
                "console.tls.certManager.enabled=true",
                "console.tls.certManager.issuerRef.name=platform-ca",
            ],
            &[
                "console.tls.secretName",
                "console.tls.certManager.enabled",
                "ambiguous",
            ],
        ),
        (
            &["console.tls.selfSigned=false"],
            &[
                "no TLS source",
                "console.tls.selfSigned",
                "console.tls.secretName",
                "console.tls.certManager.enabled",
            ],
        ),
        (
            &["console.access.authorizationCacheTTL=45s"],
            &["console.access.authorizationCacheTTL", "30s"],
        ),
        (
            &[
                "console.tls.selfSigned=false",
                "console.tls.certManager.enabled=true",
                "console.tls.certManager.issuerRef.name=platform-ca",
                "console.tls.certManager.duration=30m",
            ],
            &["console.tls.certManager.duration=30m", "1h"],
        ),
        (
            &[
                "console.tls.selfSigned=false",
                "console.tls.certManager.enabled=true",
                "console.tls.certManager.issuerRef.name=platform-ca",
                "console.tls.certManager.duration=1h",
                "console.tls.certManager.renewBefore=2h",
            ],
            &[
                "console.tls.certManager.renewBefore=2h",
                "less than duration=1h",
            ],
        ),
    ];
    for (sets, wanted) in cases {
        let out = helm(
            &["template", "kruntimes-console", "chart", "--namespace", NS],
            sets,
            None,
        );
        let msg = text(&out.stderr);
        assert!(!out.status.success(), "helm template {sets:?} succeeded");
        for w in *wanted {
            assert!(
                msg.contains(w),
                "helm template {sets:?}: message does not name {w:?}: {msg}"
            );
        }
        // helm lint reports a template `fail` without failing itself.
        let out = helm(&["lint", "chart"], sets, None);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            wanted.iter().all(|w| all.contains(w)),
            "helm lint {sets:?} does not report the message: {all}"
        );
    }
}

#[test]
fn rendered_manifests_pass_a_server_side_dry_run() {
    let variants: Vec<(&str, Vec<&str>)> = MODES
        .iter()
        .map(|(m, s)| (*m, s.to_vec()))
        .chain([(
            "every optional value",
            vec![
                "console.replicas=1",
                "console.publicRead.enabled=false",
                "console.tls.clientCASecretName=client-ca",
                "console.access.gatewayCASecretName=gateway-ca",
                "console.access.gatewayCAKey=bundle.pem",
                "console.logFormat=text",
                "console.imagePullSecrets[0].name=registry",
                "console.nodeSelector.kubernetes\\.io/os=linux",
                "examples.viewerRole.enabled=true",
                "examples.viewerRole.namespace=team-a",
            ],
        )])
        .collect();
    for (name, sets) in variants {
        let rendered = render(&sets);
        let objs = dry_run_chart(&rendered);
        let k = kinds(&objs);
        assert!(
            k.contains(&format!("APIService/{APISERVICE}")),
            "{name}: {k:?}"
        );
        if name == "certManager" {
            assert!(
                documents(&rendered)
                    .iter()
                    .any(|d| kind_of(d) == "Certificate"),
                "{name}: the Certificate is rendered (skipped in the dry run)"
            );
        }
        if name == "every optional value" {
            assert!(
                !k.iter().any(|k| k.starts_with("PodDisruptionBudget/")),
                "{k:?}"
            );
            for want in [
                "Role/kruntimes-viewer",
                "RoleBinding/kruntimes-viewer",
                "ServiceAccount/kruntimes-viewer",
            ] {
                assert!(k.contains(&want.to_owned()), "{name}: no {want} in {k:?}");
            }
        }
    }
}

#[test]
fn deployment_runs_the_binary_with_its_flags_restricted_and_probed() {
    let objs = dry_run_chart(&render(&[]));
    let tls = "/etc/kruntimes-console/tls";
    let expected: Vec<String> = [
        "--apiserver-listen=0.0.0.0:8443".to_owned(),
        format!("--apiserver-tls-cert={tls}/tls.crt"),
        format!("--apiserver-tls-key={tls}/tls.key"),
        "--console-listen=0.0.0.0:9443".to_owned(),
        format!("--console-tls-cert={tls}/tls.crt"),
        format!("--console-tls-key={tls}/tls.key"),
        "--admin-listen=0.0.0.0:9090".to_owned(),
        "--cookie-key-file=/etc/kruntimes-console/cookie".to_owned(),
        "--public-read=true".to_owned(),
        "--authorization-cache-ttl=10s".to_owned(),
        "--max-header-bytes=16384".to_owned(),
        "--access-max-request-bytes=1048576".to_owned(),
        "--access-max-response-bytes=16777216".to_owned(),
        "--access-max-ws-message-bytes=1048576".to_owned(),
        "--access-idle-timeout=60s".to_owned(),
        "--access-total-timeout=300s".to_owned(),
        "--access-fast-path=true".to_owned(),
        "--tls-handshake-timeout=10s".to_owned(),
        "--first-request-timeout=10s".to_owned(),
        "--connection-idle-timeout=90s".to_owned(),
        "--http2-keepalive-interval=30s".to_owned(),
        "--http2-keepalive-timeout=10s".to_owned(),
        "--http2-max-concurrent-streams=100".to_owned(),
        "--max-connections=4096".to_owned(),
        "--max-connections-per-peer=256".to_owned(),
        "--apiserver-max-connections-per-peer=4096".to_owned(),
        "--access-body-timeout=30s".to_owned(),
        "--access-max-concurrent-calls=1024".to_owned(),
        "--access-max-concurrent-calls-per-caller=64".to_owned(),
        "--max-follows=1024".to_owned(),
        "--max-follows-per-caller=32".to_owned(),
        "--max-watches=512".to_owned(),
        "--max-watches-per-caller=8".to_owned(),
        "--live-output=true".to_owned(),
        "--live-output-port=9093".to_owned(),
        "--live-output-poll-interval=500ms".to_owned(),
        "--live-output-timeout=3s".to_owned(),
        "--live-output-max-bytes=4194304".to_owned(),
        format!("--gateway-client-cert={tls}/tls.crt"),
        format!("--gateway-client-key={tls}/tls.key"),
        "--shutdown-delay=5s".to_owned(),
        "--shutdown-timeout=25s".to_owned(),
        "--log-format=json".to_owned(),
    ]
    .into();
    assert_eq!(args(&objs), expected);
    // The kubelet's SIGKILL never comes before the graceful shutdown ends.
    let pod = &find(&objs, "Deployment", "kruntimes-console")["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 40);
    let custom = dry_run_chart(&render(&[
        "console.shutdown.delay=10s",
        "console.shutdown.timeout=1m",
    ]));
    let pod = &find(&custom, "Deployment", "kruntimes-console")["spec"]["template"]["spec"];
    assert_eq!(pod["terminationGracePeriodSeconds"], 80);

    let c = container(&objs);
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["runAsUser"], 65532);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/live");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], "admin");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/ready");
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], "admin");
    let ports: Vec<(String, i64)> = c["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["containerPort"].as_i64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        ports,
        [
            ("apiserver".to_owned(), 8443),
            ("https".to_owned(), 9443),
            ("admin".to_owned(), 9090)
        ]
    );

    let deploy = find(&objs, "Deployment", "kruntimes-console");
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(
        deploy["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        0
    );
    assert_eq!(deploy["spec"]["strategy"]["rollingUpdate"]["maxSurge"], 1);
    let pod = &deploy["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "kruntimes-console");
    assert_eq!(pod["automountServiceAccountToken"], true);
    assert!(
        pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
            .is_array()
    );
    // No --kubeconfig: the in-cluster configuration.
    assert!(!args(&objs).iter().any(|a| a.starts_with("--kubeconfig")));

    // The Service the APIService names, with both listeners.
    let svc = find(&objs, "Service", "kruntimes-console");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    let sp: Vec<(String, i64, String)> = svc["spec"]["ports"]
        .as_array()
        .expect("service ports")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_owned(),
                p["port"].as_i64().unwrap_or_default(),
                p["targetPort"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        sp,
        [
            ("apiserver".to_owned(), 8443, "apiserver".to_owned()),
            ("https".to_owned(), 443, "https".to_owned())
        ]
    );
    let api = find(&objs, "APIService", APISERVICE);
    assert_eq!(api["spec"]["group"], "logs.kruntimes.io");
    assert_eq!(api["spec"]["version"], "v1alpha1");
    assert_eq!(api["spec"]["groupPriorityMinimum"], 1000);
    assert_eq!(api["spec"]["versionPriority"], 15);
    assert_eq!(api["spec"]["service"]["name"], "kruntimes-console");
    assert_eq!(api["spec"]["service"]["namespace"], NS);
    assert_eq!(api["spec"]["service"]["port"], 8443);

    // Optional values reach their flags and mounts.
    let objs = dry_run_chart(&render(&[
        "console.publicRead.enabled=false",
        "console.tls.clientCASecretName=client-ca",
        "console.access.gatewayCASecretName=gateway-ca",
        "console.access.authorizationCacheTTL=30s",
        "console.access.maxRequestBytes=2048",
        "console.access.idleTimeout=5m",
        "console.logFormat=text",
    ]));
    let a = args(&objs);
    for want in [
        "--public-read=false",
        "--client-ca-file=/etc/kruntimes-console/client-ca/ca.crt",
        "--gateway-ca-file=/etc/kruntimes-console/gateway-ca/ca.crt",
        "--authorization-cache-ttl=30s",
        "--access-max-request-bytes=2048",
        "--access-idle-timeout=5m",
        "--log-format=text",
    ] {
        assert!(a.iter().any(|x| x == want), "{want} not in {a:?}");
    }
    let mounts: Vec<&str> = container(&objs)["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .filter_map(|m| m["mountPath"].as_str())
        .collect();
    for want in [
        "/etc/kruntimes-console/tls",
        "/etc/kruntimes-console/cookie",
        "/etc/kruntimes-console/client-ca",
        "/etc/kruntimes-console/gateway-ca",
    ] {
        assert!(mounts.contains(&want), "{want} not mounted: {mounts:?}");
    }
}

/// The ClusterRole rules of a server-normalised object list.
fn cluster_role_rules(objs: &[Value]) -> Value {
    find(objs, "ClusterRole", "kruntimes-console")["rules"].clone()
}

#[test]
fn rendered_rbac_is_the_rbac_of_the_test_environment() {
    let rendered = dry_run_chart(&render(&[]));
    // What the test environment's Console actually holds (hack/testenv
    // applies the rendered chart's RBAC).
    let live = env().kubectl(
        Some(env().token("admin")),
        &["get", "clusterrole", "kruntimes-console", "-o", "json"],
    );
    assert!(live.status.success(), "{}", text(&live.stderr));
    let live: Value = serde_json::from_slice(&live.stdout).expect("clusterrole JSON");
    assert_eq!(cluster_role_rules(&rendered), live["rules"]);

    // Nothing on secrets, no impersonation, no writes besides the reviews.
    for rule in cluster_role_rules(&rendered).as_array().expect("rules") {
        let res: Vec<&str> = rule["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .expect("verbs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(!res.contains(&"secrets") && !res.contains(&"*"), "{rule}");
        assert!(
            !verbs.contains(&"impersonate") && !verbs.contains(&"*"),
            "{rule}"
        );
        if verbs.contains(&"create") {
            assert!(
                res == ["tokenreviews"] || res == ["subjectaccessreviews"],
                "{rule}"
            );
        }
    }
    let crb = find(&rendered, "ClusterRoleBinding", "kruntimes-console");
    assert_eq!(crb["roleRef"]["name"], "kruntimes-console");
    assert_eq!(crb["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(crb["subjects"][0]["name"], "kruntimes-console");
    assert_eq!(crb["subjects"][0]["namespace"], NS);
    let rb = find(
        &rendered,
        "RoleBinding",
        "kruntimes-console-authentication-reader",
    );
    assert_eq!(rb["metadata"]["namespace"], "kube-system");
    assert_eq!(rb["roleRef"]["kind"], "Role");
    assert_eq!(
        rb["roleRef"]["name"],
        "extension-apiserver-authentication-reader"
    );
    assert_eq!(rb["subjects"], crb["subjects"]);
}

fn secret_data(objs: &[Value], name: &str, key: &str) -> String {
    find(objs, "Secret", name)["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("Secret {name} has no {key}"))
        .to_owned()
}

fn ca_bundle(objs: &[Value]) -> Option<String> {
    find(objs, "APIService", APISERVICE)["spec"]["caBundle"]
        .as_str()
        .map(str::to_owned)
}

fn pem_der(b64: &str) -> Vec<u8> {
    let pem = B64.decode(b64).expect("base64 PEM");
    let (_, p) = x509_parser::pem::parse_x509_pem(&pem).expect("PEM");
    p.contents
}

#[test]
fn self_signed_certificate_serves_both_listeners_and_authenticates_to_gateways() {
    use x509_parser::prelude::*;
    let objs = dry_run_chart(&render(&[]));
    let crt = pem_der(&secret_data(&objs, "kruntimes-console-tls", "tls.crt"));
    let ca = pem_der(&secret_data(&objs, "kruntimes-console-tls", "ca.crt"));
    assert!(!secret_data(&objs, "kruntimes-console-tls", "tls.key").is_empty());
    assert_eq!(
        ca_bundle(&objs).as_deref(),
        Some(secret_data(&objs, "kruntimes-console-tls", "ca.crt").as_str()),
        "the APIService trusts the generated CA"
    );
    let (_, crt) = X509Certificate::from_der(&crt).expect("tls.crt");
    let (_, ca) = X509Certificate::from_der(&ca).expect("ca.crt");
    assert_eq!(crt.issuer().to_string(), ca.subject().to_string());
    let is_ca = ca
        .basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|b| b.value.ca);
    assert!(is_ca, "ca.crt is a CA");
    let eku = crt
        .extended_key_usage()
        .expect("EKU")
        .expect("EKU present")
        .value;
    assert!(eku.server_auth && eku.client_auth, "{eku:?}");
    let sans: Vec<String> = crt
        .subject_alternative_name()
        .expect("SAN")
        .expect("SAN present")
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            GeneralName::DNSName(d) => Some((*d).to_owned()),
            _ => None,
        })
        .collect();
    for want in [
        "kruntimes-console".to_owned(),
        format!("kruntimes-console.{NS}"),
        format!("kruntimes-console.{NS}.svc"),
        format!("kruntimes-console.{NS}.svc.cluster.local"),
    ] {
        assert!(sans.contains(&want), "{want} not in {sans:?}");
    }
    let key = B64
        .decode(secret_data(&objs, "kruntimes-console-cookie", "key"))
        .expect("cookie key");
    assert_eq!(key.len(), 32);
}

/// A scratch namespace, deleted on drop.
struct Scratch(String);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = env().kubectl(
            Some(env().token("admin")),
            &["delete", "namespace", &self.0, "--wait=false"],
        );
    }
}

#[test]
fn lookup_keeps_generated_secrets_and_checks_an_existing_secret() {
    let ns = Scratch(unique("chart"));
    let admin = Some(env().token("admin"));
    let created = env().kubectl(admin, &["create", "namespace", &ns.0]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let kubeconfig = env().var("KUBECONFIG").to_owned();
    let render_live = |sets: &[&str]| {
        helm(
            &[
                "template",
                "kruntimes-console",
                "chart",
                "--namespace",
                &ns.0,
                "--dry-run=server",
            ],
            sets,
            Some(&kubeconfig),
        )
    };

    // A first install generates the TLS material and the cookie key...
    let first = render_in(&ns.0, &[]);
    let secrets: Vec<String> = documents(&first)
        .into_iter()
        .filter(|d| kind_of(d) == "Secret")
        .collect();
    let applied = kubectl_stdin(&["apply", "-f", "-"], &secrets.join("\n---\n"));
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    let first = dry_run_chart(&first);

    // ...and every later render keeps them (so pods do not roll and the
    // APIService keeps trusting the same CA).
    let again = render_live(&[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let again = dry_run_chart(&text(&again.stdout));
    for (name, key) in [
        ("kruntimes-console-tls", "tls.crt"),
        ("kruntimes-console-tls", "tls.key"),
        ("kruntimes-console-tls", "ca.crt"),
        ("kruntimes-console-cookie", "key"),
    ] {
        assert_eq!(
            secret_data(&first, name, key),
            secret_data(&again, name, key),
            "{name}/{key} changed"
        );
    }
    assert_eq!(ca_bundle(&first), ca_bundle(&again));
    let annotations = |objs: &[Value]| {
        find(objs, "Deployment", "kruntimes-console")["spec"]["template"]["metadata"]["annotations"]
            .clone()
    };
    assert_eq!(annotations(&first), annotations(&again));

    // An existing Secret: missing, without the CA key, then complete.
    let secret_mode = |name: &str, key: &str| {
        let sets = [
            "console.tls.selfSigned=false".to_owned(),
            format!("console.tls.secretName={name}"),
            format!("console.tls.caBundleKey={key}"),
        ];
        render_live(&sets.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let missing = secret_mode("absent-tls", "ca.crt");
    assert!(!missing.status.success());
    let msg = text(&missing.stderr);
    assert!(
        msg.contains("console.tls.secretName") && msg.contains("does not exist"),
        "{msg}"
    );

    let crt = B64
        .decode(secret_data(&first, "kruntimes-console-tls", "tls.crt"))
        .expect("crt");
    let key = B64
        .decode(secret_data(&first, "kruntimes-console-tls", "tls.key"))
        .expect("key");
    let ca = B64
        .decode(secret_data(&first, "kruntimes-console-tls", "ca.crt"))
        .expect("ca");
    let dir = tempfile::tempdir().expect("tempdir");
    for (f, b) in [("tls.crt", &crt), ("tls.key", &key), ("bundle.pem", &ca)] {
        std::fs::write(dir.path().join(f), b).expect("writing PEM");
    }
    let file = |f: &str| dir.path().join(f).display().to_string();
    let mk = |name: &str, with_ca: bool| {
        let mut a = vec![
            "-n".to_owned(),
            ns.0.clone(),
            "create".to_owned(),
            "secret".to_owned(),
            "generic".to_owned(),
            name.to_owned(),
            format!("--from-file=tls.crt={}", file("tls.crt")),
            format!("--from-file=tls.key={}", file("tls.key")),
        ];
        if with_ca {
            a.push(format!("--from-file=bundle.pem={}", file("bundle.pem")));
        }
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = env().kubectl(admin, &a);
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    mk("partial-tls", false);
    let partial = secret_mode("partial-tls", "bundle.pem");
    assert!(!partial.status.success());
    let msg = text(&partial.stderr);
    assert!(
        msg.contains("has no key \"bundle.pem\"") && msg.contains("console.tls.caBundleKey"),
        "{msg}"
    );
    mk("full-tls", true);
    let full = secret_mode("full-tls", "bundle.pem");
    assert!(full.status.success(), "{}", text(&full.stderr));
    let full = dry_run_chart(&text(&full.stdout));
    assert_eq!(ca_bundle(&full).as_deref(), Some(B64.encode(&ca).as_str()));
    assert!(
        !full
            .iter()
            .any(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "kruntimes-console-tls"),
        "no generated TLS Secret with an existing one"
    );
}

#[test]
fn live_output_network_policies_admit_only_the_console_to_the_status_port() {
    // None by default.
    let default = render(&[]);
    assert!(
        !documents(&default)
            .iter()
            .any(|d| kind_of(d) == "NetworkPolicy"),
        "a NetworkPolicy rendered without being asked for"
    );
    let objs = dry_run_chart(&render(&[
        "console.liveOutput.networkPolicy.namespaces={team-a,team-b}",
        "console.liveOutput.port=9193",
    ]));
    for ns in ["team-a", "team-b"] {
        let np = objs
            .iter()
            .find(|o| o["kind"] == "NetworkPolicy" && o["metadata"]["namespace"] == ns)
            .unwrap_or_else(|| panic!("no NetworkPolicy in {ns}"));
        assert_eq!(np["metadata"]["name"], "kruntimes-console-live-output");
        let spec = &np["spec"];
        assert_eq!(spec["policyTypes"], serde_json::json!(["Ingress"]));
        assert_eq!(
            spec["podSelector"]["matchExpressions"],
            serde_json::json!([{"key": "runtime", "operator": "Exists"}])
        );
        let rule = &spec["ingress"][0];
        assert_eq!(spec["ingress"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            rule["ports"],
            serde_json::json!([{"protocol": "TCP", "port": 9193}])
        );
        let from = &rule["from"][0];
        assert_eq!(rule["from"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            from["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            NS
        );
        assert_eq!(
            from["podSelector"]["matchLabels"]["app.kubernetes.io/component"],
            "console"
        );
    }
    assert!(args(&objs).contains(&"--live-output-port=9193".to_owned()));
    // A narrower selector for namespaces where other Pods carry `runtime`.
    let narrow = dry_run_chart(&render(&[
        "console.liveOutput.networkPolicy.namespaces={team-a}",
        "console.liveOutput.networkPolicy.podSelector.matchLabels.runtime=bash",
    ]));
    let np = narrow
        .iter()
        .find(|o| o["kind"] == "NetworkPolicy")
        .expect("a NetworkPolicy");
    assert_eq!(np["spec"]["podSelector"]["matchLabels"]["runtime"], "bash");
    // Off: no flag reads it and no policy opens a port for it.
    let off = dry_run_chart(&render(&[
        "console.liveOutput.enabled=false",
        "console.liveOutput.networkPolicy.namespaces={team-a}",
    ]));
    assert!(args(&off).contains(&"--live-output=false".to_owned()));
    assert!(!off.iter().any(|o| o["kind"] == "NetworkPolicy"));
    // A namespace that is not a name is refused by the schema.
    let bad = helm(
        &["template", "kruntimes-console", "chart", "--namespace", NS],
        &["console.liveOutput.networkPolicy.namespaces={Team_A}"],
        None,
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("namespaces"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn rendered_flags_are_flags_of_the_binary() {
    // The environment builds target/debug/kruntimes-console.
    let _ = env();
    let help = Command::new(repo_root().join("target/debug/kruntimes-console"))
        .arg("--help")
        .output()
        .expect("running kruntimes-console --help");
    assert!(help.status.success(), "{}", text(&help.stderr));
    let known: Vec<String> = text(&help.stdout)
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("--"))
        .map(|l| format!("--{}", l.split([' ', '=', '\t']).next().unwrap_or_default()))
        .collect();
    let objs = dry_run_chart(&render(&[
        "console.tls.clientCASecretName=client-ca",
        "console.access.gatewayCASecretName=gateway-ca",
    ]));
    for arg in args(&objs) {
        let flag = arg.split('=').next().unwrap_or_default().to_owned();
        assert!(
            known.contains(&flag),
            "the chart renders {flag}, which kruntimes-console does not know: {known:?}"
        );
    }
}

/// `helm test`: a Pod from the Console image runs `kruntimes-console check`
/// as an identity that can read only the APIService and the Service's
/// endpoints; everything is a test hook, deleted once it passed.
#[test]
fn helm_test_hook_checks_the_installation_with_a_narrow_identity() {
    let rendered = render(&[]);
    let objs = dry_run_chart(&rendered);
    let pod = find(&objs, "Pod", "kruntimes-console-test");
    let hook_objs: Vec<&Value> = objs
        .iter()
        .filter(|o| o["metadata"]["annotations"]["helm.sh/hook"] == "test")
        .collect();
    let mut hook_kinds: Vec<String> = hook_objs
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or("").to_owned())
        .collect();
    hook_kinds.sort();
    assert_eq!(
        hook_kinds,
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "Pod",
            "Role",
            "RoleBinding",
            "ServiceAccount"
        ]
    );
    for o in &hook_objs {
        assert_eq!(
            o["metadata"]["annotations"]["helm.sh/hook-delete-policy"],
            "before-hook-creation,hook-succeeded",
            "{}",
            o["kind"]
        );
    }
    let spec = &pod["spec"];
    assert_eq!(spec["serviceAccountName"], "kruntimes-console-test");
    assert_eq!(spec["restartPolicy"], "Never");
    let c = &spec["containers"][0];
    assert_eq!(c["image"], container(&objs)["image"], "the Console image");
    assert_eq!(c["args"][0], "check");
    assert!(
        c["args"]
            .as_array()
            .unwrap()
            .contains(&Value::from(format!("--namespace={NS}")))
    );
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);

    let cluster_role = find(
        &objs,
        "ClusterRole",
        &format!("kruntimes-console-test-{NS}"),
    );
    assert_eq!(
        cluster_role["rules"],
        serde_json::json!([{
            "apiGroups": ["apiregistration.k8s.io"],
            "resources": ["apiservices"],
            "resourceNames": [APISERVICE],
            "verbs": ["get"],
        }])
    );
    let role = find(&objs, "Role", "kruntimes-console-test");
    assert_eq!(
        role["rules"],
        serde_json::json!([{
            "apiGroups": ["discovery.k8s.io"],
            "resources": ["endpointslices"],
            "verbs": ["list"],
        }])
    );
}

/// The volume of `name` in the Console Pod template.
fn volume<'a>(objs: &'a [Value], name: &str) -> &'a Value {
    find(objs, "Deployment", "kruntimes-console")["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"))
}

#[test]
fn cookie_keys_come_from_a_whole_secret_generated_or_your_own() {
    // Generated: the whole Secret is mounted and the flag names the folder.
    let objs = dry_run_chart(&render(&[]));
    assert!(args(&objs).contains(&"--cookie-key-file=/etc/kruntimes-console/cookie".to_owned()));
    let v = volume(&objs, "cookie");
    assert_eq!(v["secret"]["secretName"], "kruntimes-console-cookie");
    assert!(v["secret"].get("items").is_none(), "every key is mounted");

    // Your own Secret (key-0, key-1): the chart creates none and mounts it.
    let objs = dry_run_chart(&render(&[
        "console.cookieKey.existingSecret=my-cookie-keys",
    ]));
    assert_eq!(
        volume(&objs, "cookie")["secret"]["secretName"],
        "my-cookie-keys"
    );
    assert!(
        !objs
            .iter()
            .any(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "kruntimes-console-cookie"),
        "a generated cookie Secret next to an existing one"
    );
    let bad = helm(
        &["template", "kruntimes-console", "chart", "--namespace", NS],
        &["console.cookieKey.existingSecret=Not_A_Name"],
        None,
    );
    assert!(!bad.status.success(), "an invalid Secret name rendered");
    assert!(
        text(&bad.stderr).contains("existingSecret"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn upgrades_keep_every_cookie_key_added_for_a_rotation() {
    let ns = Scratch(unique("chart-keys"));
    let admin = Some(env().token("admin"));
    let created = env().kubectl(admin, &["create", "namespace", &ns.0]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let kubeconfig = env().var("KUBECONFIG").to_owned();
    let first = render_in(&ns.0, &[]);
    let secret: Vec<String> = documents(&first)
        .into_iter()
        .filter(|d| kind_of(d) == "Secret" && d.contains("kruntimes-console-cookie"))
        .collect();
    let applied = kubectl_stdin(&["apply", "-f", "-"], &secret.join("\n---\n"));
    assert!(applied.status.success(), "{}", text(&applied.stderr));
    // A rotation adds key-1 to the Secret by hand.
    let new_key = B64.encode([7u8; 32]);
    let patch = format!("{{\"data\":{{\"key-1\":\"{new_key}\"}}}}");
    let patched = env().kubectl(
        admin,
        &[
            "-n",
            &ns.0,
            "patch",
            "secret",
            "kruntimes-console-cookie",
            "-p",
            &patch,
        ],
    );
    assert!(patched.status.success(), "{}", text(&patched.stderr));
    let again = helm(
        &[
            "template",
            "kruntimes-console",
            "chart",
            "--namespace",
            &ns.0,
            "--dry-run=server",
        ],
        &[],
        Some(&kubeconfig),
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    let again = dry_run_chart(&text(&again.stdout));
    let first = dry_run_chart(&first);
    assert_eq!(
        secret_data(&first, "kruntimes-console-cookie", "key"),
        secret_data(&again, "kruntimes-console-cookie", "key")
    );
    assert_eq!(
        secret_data(&again, "kruntimes-console-cookie", "key-1"),
        new_key
    );
}

/// The verbs a list of RBAC rules grants on `resource` in `kruntimes.io`.
fn kruntimes_verbs(rules: &Value, resource: &str) -> Vec<String> {
    let mut verbs: Vec<String> = rules
        .as_array()
        .expect("rules")
        .iter()
        .filter(|r| {
            r["apiGroups"]
                .as_array()
                .is_some_and(|g| g.contains(&json!("kruntimes.io")))
        })
        .filter(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|rs| rs.contains(&json!(resource)))
        })
        .flat_map(|r| r["verbs"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    verbs.sort();
    verbs
}

#[test]
fn actions_and_workspaces_are_read_by_viewers_never_by_the_console_itself() {
    let rendered = dry_run_chart(&render(&[
        "examples.viewerRole.enabled=true",
        "examples.viewerRole.namespace=team-a",
    ]));
    let console = cluster_role_rules(&rendered);
    let viewer = find(&rendered, "Role", "kruntimes-viewer")["rules"].clone();
    // The test environment's viewer and operator hold what the chart's example does.
    let live = |role: &str| {
        let out = env().kubectl(
            Some(env().token("admin")),
            &["get", "clusterrole", role, "-o", "json"],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).expect("clusterrole JSON")["rules"].clone()
    };
    let (test_viewer, test_operator) = (live("kruntimes-viewer"), live("kruntimes-operator"));
    for resource in ["actions", "persistentworkspaces"] {
        // No public read of these kinds: the Console's identity cannot read them.
        assert!(
            kruntimes_verbs(&console, resource).is_empty(),
            "the Console's ClusterRole grants {resource}: {console}"
        );
        for (who, rules) in [
            ("the chart's viewer example", &viewer),
            ("the test viewer", &test_viewer),
            ("the test operator", &test_operator),
        ] {
            assert_eq!(
                kruntimes_verbs(rules, resource),
                ["get", "list", "watch"],
                "{who} on {resource}: {rules}"
            );
        }
    }
}
