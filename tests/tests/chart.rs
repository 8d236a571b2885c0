//! The Helm chart: lint and render in every TLS mode, ambiguous TLS values
//! rejected with a message naming them, every rendered object accepted by a
//! real kube-apiserver (a server-side dry run of its create, or of its
//! replace where the object exists, through the Kubernetes API as the
//! admin), the shipped RBAC equal to the
//! RBAC the test environment runs the Console with, and the generated TLS
//! material and cookie key kept across renders through `lookup`.
//!
//! The alerting rules the chart ships are the ones `hack/rules` checks and
//! tests with promtool, and the dashboard ConfigMap carries
//! chart/dashboards/console.json unchanged.
//!
//! The cert-manager Certificate is rendered and checked as text but left out
//! of the dry run: the local control plane has no cert-manager CRDs. The
//! Prometheus Operator and Gateway API objects are dry-run too: the suite
//! installs their pinned CRDs (`hack/crds`, from the projects' Go modules)
//! into the control plane first.

use std::future::Future;
use std::io::Write;
use std::process::{Command, Output, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruntimes_tests::env::{env, repo_root, unique};
use kruntimes_tests::objects;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
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

/// The rendered manifests (offline) with more `helm template` arguments.
fn render_with(extra: &[&str], sets: &[&str]) -> String {
    let mut a = vec!["template", "kruntimes-console", "chart", "--namespace", NS];
    a.extend_from_slice(extra);
    let out = helm(&a, sets, None);
    assert!(
        out.status.success(),
        "helm template {extra:?} {sets:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
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

/// Runs `f` with the admin's Kubernetes client, to its end.
fn admin<F, Fut>(f: F) -> Fut::Output
where
    F: FnOnce(Client) -> Fut,
    Fut: Future,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async { f(env().admin().await).await })
}

/// Every object of `yaml` through a server-side dry run, as the server
/// returned them. Panics when the server rejects any of them.
fn dry_run(yaml: &str) -> Vec<Value> {
    let docs = yaml_documents(yaml);
    admin(|c| async move { objects::dry_run(&c, docs).await })
        .unwrap_or_else(|e| panic!("the server rejected the chart: {e}\n{yaml}"))
}

/// Server-side applies `yaml` as the admin; panics when refused.
fn apply(yaml: &str) {
    let docs = yaml_documents(yaml);
    admin(|c| async move { objects::apply_objects(&c, docs).await })
        .unwrap_or_else(|e| panic!("applying: {e}\n{yaml}"));
}

/// A ClusterRole's rules as the control plane holds them.
fn live_rules(name: &str) -> Value {
    admin(|c| async move { objects::get_json(&Api::<ClusterRole>::all(c), name).await })["rules"]
        .clone()
}

/// Creates namespace `name`.
fn create_namespace(name: &str) {
    admin(|c| async move {
        objects::create(
            &c,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await
    })
    .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

/// The kinds of the CRDs `hack/crds` pins.
const PINNED_CRD_KINDS: &[&str] = &[
    "ServiceMonitor",
    "PodMonitor",
    "PrometheusRule",
    "HTTPRoute",
    "BackendTLSPolicy",
    "TLSRoute",
];

/// Installs the CRDs `hack/crds` pins into the control plane (once per
/// run of the suite), waiting until they are served.
fn install_pinned_crds() {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let out = Command::new(repo_root().join("hack/crds"))
            .output()
            .expect("running hack/crds");
        assert!(out.status.success(), "hack/crds: {}", text(&out.stderr));
        let mut names = Vec::new();
        for path in text(&out.stdout).lines() {
            let yaml = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let docs: Vec<Value> =
                serde_saphyr::from_multiple(&yaml).unwrap_or_else(|e| panic!("{path}: {e}"));
            names.extend(
                docs.iter()
                    .filter_map(|d| d["metadata"]["name"].as_str().map(str::to_owned)),
            );
            apply(&yaml);
        }
        admin(|c| async move {
            let crds = Api::<CustomResourceDefinition>::all(c);
            for name in &names {
                let established = kube::runtime::wait::await_condition(
                    crds.clone(),
                    name,
                    kube::runtime::wait::conditions::is_crd_established(),
                );
                tokio::time::timeout(std::time::Duration::from_secs(60), established)
                    .await
                    .unwrap_or_else(|_| panic!("CRD {name} not Established within 60 s"))
                    .unwrap_or_else(|e| panic!("CRD {name}: {e}"));
            }
        });
    });
}

/// The rendered objects minus the kinds the local control plane cannot know.
fn dry_run_chart(rendered: &str) -> Vec<Value> {
    let docs: Vec<String> = documents(rendered)
        .into_iter()
        // No cert-manager CRDs here: the Certificate is checked as text only.
        .filter(|d| kind_of(d) != "Certificate")
        .collect();
    if docs.iter().any(|d| PINNED_CRD_KINDS.contains(&kind_of(d))) {
        install_pinned_crds();
    }
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
        "--send-timeout=60s".to_owned(),
        "--http2-keepalive-interval=30s".to_owned(),
        "--http2-keepalive-timeout=10s".to_owned(),
        "--http2-max-concurrent-streams=100".to_owned(),
        "--max-connections=4096".to_owned(),
        "--max-connections-per-peer=256".to_owned(),
        "--apiserver-max-connections-per-peer=4096".to_owned(),
        "--max-open-requests=16384".to_owned(),
        "--max-open-requests-per-peer=2048".to_owned(),
        "--apiserver-max-open-requests-per-peer=16384".to_owned(),
        "--access-body-timeout=30s".to_owned(),
        "--access-max-concurrent-calls=1024".to_owned(),
        "--access-max-concurrent-calls-per-caller=64".to_owned(),
        "--access-max-buffered-bytes=67108864".to_owned(),
        "--access-max-buffered-bytes-per-caller=16777216".to_owned(),
        "--reserve-for-light-callers=25".to_owned(),
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
    assert_eq!(
        cluster_role_rules(&rendered),
        live_rules("kruntimes-console")
    );

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
        let name = self.0.clone();
        // On a thread of its own: a test's panic may be unwinding here.
        let _ = std::thread::spawn(move || {
            admin(|c| async move { objects::delete(&Api::<Namespace>::all(c), &name).await })
        })
        .join();
    }
}

#[test]
fn lookup_keeps_generated_secrets_and_checks_an_existing_secret() {
    let ns = Scratch(unique("chart"));
    create_namespace(&ns.0);
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
    apply(&secrets.join("\n---\n"));
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
    // A Secret of those files, as `kubectl create secret generic --from-file`.
    let mk = |name: &str, with_ca: bool| {
        let mut data = serde_json::Map::new();
        for f in ["tls.crt", "tls.key"]
            .into_iter()
            .chain(with_ca.then_some("bundle.pem"))
        {
            let bytes = std::fs::read(dir.path().join(f)).expect("reading PEM");
            data.insert(f.to_owned(), json!(B64.encode(bytes)));
        }
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": ns.0},
            "data": data,
        });
        admin(|c| async move { objects::create(&c, &secret).await })
            .unwrap_or_else(|e| panic!("creating Secret {name}: {e}"));
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
    // The environment builds the Console in cargo's debug folder.
    let _ = env();
    let help = Command::new(kruntimes_tests::env::bin_dir().join("kruntimes-console"))
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
    create_namespace(&ns.0);
    let kubeconfig = env().var("KUBECONFIG").to_owned();
    let first = render_in(&ns.0, &[]);
    let secret: Vec<String> = documents(&first)
        .into_iter()
        .filter(|d| kind_of(d) == "Secret" && d.contains("kruntimes-console-cookie"))
        .collect();
    apply(&secret.join("\n---\n"));
    // A rotation adds key-1 to the Secret by hand.
    let new_key = B64.encode([7u8; 32]);
    let patch = json!({"data": {"key-1": new_key}});
    let scratch = ns.0.clone();
    admin(|c| async move {
        Api::<Secret>::namespaced(c, &scratch)
            .patch(
                "kruntimes-console-cookie",
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
    })
    .unwrap_or_else(|e| panic!("patching the cookie Secret: {}", objects::describe(&e)));
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
    let (test_viewer, test_operator) = (
        live_rules("kruntimes-viewer"),
        live_rules("kruntimes-operator"),
    );
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

/// `helm template` with `sets` must fail; its message.
fn render_error(extra: &[&str], sets: &[&str]) -> String {
    let mut a = vec!["template", "kruntimes-console", "chart", "--namespace", NS];
    a.extend_from_slice(extra);
    let out = helm(&a, sets, None);
    assert!(!out.status.success(), "helm template {sets:?} succeeded");
    text(&out.stderr)
}

/// The Pod template of the Console's Deployment.
fn pod_template(objs: &[Value]) -> &Value {
    &find(objs, "Deployment", "kruntimes-console")["spec"]["template"]
}

#[test]
fn pod_options_reach_the_pod_template_and_never_replace_the_charts_own() {
    // Defaults: none of them, and the hardened securityContext.
    let objs = dry_run_chart(&render(&[]));
    let t = pod_template(&objs);
    for absent in ["priorityClassName", "topologySpreadConstraints"] {
        assert!(t["spec"].get(absent).is_none(), "{absent}: {}", t["spec"]);
    }
    assert!(t["metadata"].get("annotations").is_none());
    assert!(container(&objs).get("env").is_none());
    // (The dry run adds none.)
    let svc = find(&objs, "Service", "kruntimes-console");
    assert!(
        svc["metadata"].get("annotations").is_none(),
        "{}",
        svc["metadata"]
    );
    assert_eq!(t["spec"]["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        t["spec"]["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );

    let extra_objects = json!([{
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "extra-{{ .Release.Namespace }}",
            "namespace": "{{ .Release.Namespace }}",
        },
        "data": {"replicas": "{{ .Values.console.replicas }}"},
    }]);
    let extra_objects = format!("extraObjects={extra_objects}");
    let rendered = render_with(
        &["--set-json", &extra_objects],
        &[
            "console.topologySpreadConstraints[0].maxSkew=1",
            "console.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
            "console.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway",
            "console.topologySpreadConstraints[1].maxSkew=2",
            "console.topologySpreadConstraints[1].topologyKey=kubernetes.io/hostname",
            "console.topologySpreadConstraints[1].whenUnsatisfiable=DoNotSchedule",
            "console.topologySpreadConstraints[1].labelSelector.matchLabels.tier=console",
            "console.priorityClassName=system-cluster-critical",
            "console.podLabels.team=platform",
            "console.podAnnotations.example\\.com/owner=platform",
            "console.securityContext.runAsUser=1000",
            "console.podSecurityContext.fsGroup=2000",
            "console.extraArgs[0]=--connection-idle-timeout-x=1s",
            "console.extraEnv[0].name=RUST_BACKTRACE",
            "console.extraEnv[0].value=full",
            "console.extraVolumes[0].name=extra-ca",
            "console.extraVolumes[0].configMap.name=extra-ca",
            "console.extraVolumeMounts[0].name=extra-ca",
            "console.extraVolumeMounts[0].mountPath=/etc/extra-ca",
            "console.service.annotations.example\\.com/lb=internal",
            "console.service.labels.exposure=internal",
        ],
    );
    let objs = dry_run_chart(&rendered);
    let t = pod_template(&objs);
    let spec = &t["spec"];
    let tsc = spec["topologySpreadConstraints"]
        .as_array()
        .expect("spread");
    assert_eq!(tsc.len(), 2);
    assert_eq!(tsc[0]["topologyKey"], "topology.kubernetes.io/zone");
    assert_eq!(tsc[0]["whenUnsatisfiable"], "ScheduleAnyway");
    // Without a labelSelector: the Console's own Pods.
    assert_eq!(
        tsc[0]["labelSelector"]["matchLabels"],
        json!({
            "app.kubernetes.io/name": "kruntimes-console",
            "app.kubernetes.io/instance": "kruntimes-console",
            "app.kubernetes.io/component": "console",
        })
    );
    assert_eq!(
        tsc[1]["labelSelector"],
        json!({"matchLabels": {"tier": "console"}})
    );
    assert_eq!(tsc[1]["maxSkew"], 2);
    assert_eq!(spec["priorityClassName"], "system-cluster-critical");
    assert_eq!(t["metadata"]["labels"]["team"], "platform");
    assert_eq!(
        t["metadata"]["labels"]["app.kubernetes.io/component"],
        "console"
    );
    assert_eq!(
        t["metadata"]["annotations"]["example.com/owner"],
        "platform"
    );
    // An override is merged into the hardened defaults.
    let sc = &container(&objs)["securityContext"];
    assert_eq!(sc["runAsUser"], 1000);
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(spec["securityContext"]["fsGroup"], 2000);
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    let a = args(&objs);
    assert_eq!(
        a.last().map(String::as_str),
        Some("--connection-idle-timeout-x=1s")
    );
    assert!(
        a.contains(&"--log-format=json".to_owned()),
        "the chart's flags stay"
    );
    assert_eq!(
        container(&objs)["env"],
        json!([{"name": "RUST_BACKTRACE", "value": "full"}])
    );
    let mounts = container(&objs)["volumeMounts"].as_array().expect("mounts");
    assert!(
        mounts
            .iter()
            .any(|m| m["name"] == "extra-ca" && m["mountPath"] == "/etc/extra-ca")
    );
    assert!(
        mounts.iter().any(|m| m["name"] == "tls"),
        "the chart's mounts stay"
    );
    assert_eq!(volume(&objs, "extra-ca")["configMap"]["name"], "extra-ca");
    let svc = find(&objs, "Service", "kruntimes-console");
    assert_eq!(svc["metadata"]["annotations"]["example.com/lb"], "internal");
    assert_eq!(svc["metadata"]["labels"]["exposure"], "internal");
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    // extraObjects go through tpl.
    let cm = find(&objs, "ConfigMap", &format!("extra-{NS}"));
    assert_eq!(cm["metadata"]["namespace"], NS);
    assert_eq!(cm["data"]["replicas"], "2");
    // A string of YAML works too.
    let as_text = json!([
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: as-text\n  namespace: {{ .Release.Namespace }}\n"
    ]);
    let objs = dry_run_chart(&render_with(
        &["--set-json", &format!("extraObjects={as_text}")],
        &[],
    ));
    assert_eq!(
        find(&objs, "ConfigMap", "as-text")["metadata"]["namespace"],
        NS
    );

    // Refused, with the value named.
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["console.podLabels.app\\.kubernetes\\.io/component=other"],
            &["console.podLabels", "app.kubernetes.io/component"],
        ),
        (
            &["console.extraArgs[0]=--log-format=text"],
            &["console.extraArgs", "--log-format", "set the value instead"],
        ),
        (
            &["console.extraArgs[0]=--max-follows"],
            &["console.extraArgs", "--max-follows"],
        ),
        (&["console.extraArgs[0]=log-format"], &["extraArgs"]),
        (
            &[
                "console.extraVolumes[0].name=tls",
                "console.extraVolumes[0].emptyDir.medium=Memory",
            ],
            &["console.extraVolumes", "\"tls\""],
        ),
        (&["console.extraEnv[0].value=1"], &["extraEnv", "name"]),
        (
            &["console.priorityClassName=Not_A_Name"],
            &["priorityClassName"],
        ),
        (&["console.service.type=LoadBalancer"], &["service", "type"]),
        (
            &[
                "console.topologySpreadConstraints[0].maxSkew=1",
                "console.topologySpreadConstraints[0].topologyKey=zone",
                "console.topologySpreadConstraints[0].whenUnsatisfiable=Sometimes",
            ],
            &["whenUnsatisfiable"],
        ),
        (
            &[
                "console.podAnnotations.a=null",
                "console.podAnnotations.b.c=d",
            ],
            &["podAnnotations"],
        ),
    ];
    for (sets, wanted) in cases {
        let msg = render_error(&[], sets);
        for w in *wanted {
            assert!(
                msg.contains(w),
                "{sets:?}: message does not name {w:?}: {msg}"
            );
        }
    }
}

#[test]
fn service_and_pod_monitors_render_only_when_asked_and_only_where_the_crd_is() {
    // Neither by default.
    let default = render(&[]);
    for kind in ["ServiceMonitor", "PodMonitor"] {
        assert!(
            !documents(&default).iter().any(|d| kind_of(d) == kind),
            "{kind}"
        );
    }
    assert!(!default.contains("name: kruntimes-console-metrics"));

    // Asked for, with the CRD passed for an offline render.
    let sm = dry_run_chart(&render_with(
        &["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor"],
        &[
            "console.monitoring.serviceMonitor.enabled=true",
            "console.monitoring.serviceMonitor.labels.release=kube-prometheus-stack",
            "console.monitoring.serviceMonitor.annotations.example\\.com/a=b",
            "console.monitoring.serviceMonitor.interval=15s",
            "console.monitoring.serviceMonitor.scrapeTimeout=5s",
            "console.monitoring.serviceMonitor.relabelings[0].targetLabel=cluster",
            "console.monitoring.serviceMonitor.relabelings[0].replacement=prod",
            "console.monitoring.serviceMonitor.metricRelabelings[0].action=drop",
            "console.monitoring.serviceMonitor.metricRelabelings[0].sourceLabels[0]=__name__",
            "console.monitoring.serviceMonitor.metricRelabelings[0].regex=kruntimes_console_http_request_duration_seconds_bucket",
        ],
    ));
    let mon = find(&sm, "ServiceMonitor", "kruntimes-console");
    assert_eq!(
        mon["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    assert_eq!(mon["metadata"]["annotations"]["example.com/a"], "b");
    assert_eq!(mon["spec"]["namespaceSelector"]["matchNames"], json!([NS]));
    let ep = &mon["spec"]["endpoints"];
    assert_eq!(ep.as_array().map(Vec::len), Some(1));
    let ep = &ep[0];
    assert_eq!(ep["port"], "admin");
    assert_eq!(ep["path"], "/metrics");
    assert_eq!(ep["scheme"], "http");
    assert_eq!(ep["interval"], "15s");
    assert_eq!(ep["scrapeTimeout"], "5s");
    assert_eq!(
        ep["relabelings"],
        json!([{"targetLabel": "cluster", "replacement": "prod", "action": "replace"}]),
        "the CRD's schema defaults the action"
    );
    assert_eq!(ep["metricRelabelings"][0]["action"], "drop");
    assert_eq!(
        ep["metricRelabelings"][0]["sourceLabels"],
        json!(["__name__"])
    );
    // It selects the metrics Service and only it; that Service reaches the
    // Console Pods' admin port.
    let metrics = find(&sm, "Service", "kruntimes-console-metrics");
    let selector = mon["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("selector");
    for (k, v) in selector {
        assert_eq!(&metrics["metadata"]["labels"][k], v, "{k}");
    }
    let main = find(&sm, "Service", "kruntimes-console");
    assert!(
        selector
            .iter()
            .any(|(k, v)| &main["metadata"]["labels"][k] != v),
        "the ServiceMonitor also selects Service kruntimes-console: {selector:?}"
    );
    assert_eq!(
        metrics["spec"]["ports"],
        json!([{"name": "admin", "port": 9090, "targetPort": "admin", "protocol": "TCP", "appProtocol": "http"}])
    );
    assert_eq!(metrics["spec"]["selector"], main["spec"]["selector"]);
    let admin_port = container(&sm)["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "admin")
        .cloned()
        .expect("admin port");
    assert_eq!(admin_port["containerPort"], 9090);
    assert!(args(&sm).contains(&"--admin-listen=0.0.0.0:9090".to_owned()));

    let pm = dry_run_chart(&render_with(
        &["--api-versions", "monitoring.coreos.com/v1/PodMonitor"],
        &[
            "console.monitoring.podMonitor.enabled=true",
            "console.monitoring.podMonitor.labels.release=prom",
            "console.monitoring.podMonitor.interval=1m",
            "console.monitoring.podMonitor.scrapeTimeout=1m",
        ],
    ));
    let mon = find(&pm, "PodMonitor", "kruntimes-console");
    assert_eq!(mon["metadata"]["labels"]["release"], "prom");
    let ep = &mon["spec"]["podMetricsEndpoints"][0];
    assert_eq!(ep["port"], "admin");
    assert_eq!(ep["path"], "/metrics");
    assert_eq!(ep["scheme"], "http");
    assert_eq!(ep["interval"], "1m");
    assert!(ep.get("relabelings").is_none());
    assert_eq!(
        mon["spec"]["selector"]["matchLabels"],
        pod_template(&pm)["metadata"]["labels"]
            .as_object()
            .map(|l| {
                l.iter()
                    .filter(|(k, _)| {
                        [
                            "app.kubernetes.io/name",
                            "app.kubernetes.io/instance",
                            "app.kubernetes.io/component",
                        ]
                        .contains(&k.as_str())
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<serde_json::Map<_, _>>()
            })
            .map(Value::Object)
            .expect("pod labels")
    );
    assert!(
        !pm.iter()
            .any(|o| o["metadata"]["name"] == "kruntimes-console-metrics")
    );
    // The override renders without the CRD passed.
    let skipped = render(&[
        "console.monitoring.podMonitor.enabled=true",
        "console.monitoring.skipCRDCheck=true",
    ]);
    assert!(
        documents(&skipped)
            .iter()
            .any(|d| kind_of(d) == "PodMonitor")
    );

    // A cluster that serves the CRD (the suite installed it): no override needed.
    install_pinned_crds();
    let live = helm(
        &[
            "template",
            "kruntimes-console",
            "chart",
            "--namespace",
            NS,
            // As helm install: the cluster's capabilities (and a dry run
            // that adopts nothing).
            "--validate",
            "--take-ownership",
        ],
        &["console.monitoring.serviceMonitor.enabled=true"],
        Some(env().var("KUBECONFIG")),
    );
    assert!(live.status.success(), "{}", text(&live.stderr));
    assert!(
        documents(&text(&live.stdout))
            .iter()
            .any(|d| kind_of(d) == "ServiceMonitor")
    );

    // Refused, with a message naming the values.
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["console.monitoring.serviceMonitor.enabled=true"],
            &[
                "console.monitoring.serviceMonitor.enabled=true",
                "monitoring.coreos.com/v1 ServiceMonitor",
                "--api-versions monitoring.coreos.com/v1/ServiceMonitor",
                "console.monitoring.skipCRDCheck=true",
            ],
        ),
        (
            &["console.monitoring.podMonitor.enabled=true"],
            &[
                "monitoring.coreos.com/v1 PodMonitor",
                "console.monitoring.skipCRDCheck",
            ],
        ),
        (
            &[
                "console.monitoring.skipCRDCheck=true",
                "console.monitoring.podMonitor.enabled=true",
                "console.monitoring.serviceMonitor.enabled=true",
            ],
            &[
                "serviceMonitor.enabled=true and podMonitor.enabled=true",
                "twice",
            ],
        ),
        (
            &[
                "console.monitoring.skipCRDCheck=true",
                "console.monitoring.podMonitor.enabled=true",
                "console.monitoring.podMonitor.scrapeTimeout=31s",
            ],
            &[
                "console.monitoring.podMonitor.scrapeTimeout=31s",
                "interval=30s",
            ],
        ),
        (
            &["console.monitoring.serviceMonitor.interval=30"],
            &["serviceMonitor/interval"],
        ),
        (
            &["console.monitoring.podMonitor.port=metrics"],
            &["podMonitor", "port"],
        ),
    ];
    for (sets, wanted) in cases {
        let msg = render_error(&[], sets);
        for w in *wanted {
            assert!(
                msg.contains(w),
                "{sets:?}: message does not name {w:?}: {msg}"
            );
        }
    }
}

/// The ingress rule of `policy` for TCP `port`.
fn ingress_rule(policy: &Value, port: i64) -> &Value {
    policy["spec"]["ingress"]
        .as_array()
        .expect("ingress rules")
        .iter()
        .find(|r| r["ports"] == json!([{"protocol": "TCP", "port": port}]))
        .unwrap_or_else(|| panic!("no ingress rule for {port}: {policy}"))
}

/// The egress rule of `policy` whose ports include `port`.
fn egress_rule(policy: &Value, port: i64) -> &Value {
    policy["spec"]["egress"]
        .as_array()
        .expect("egress rules")
        .iter()
        .find(|r| {
            r["ports"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["port"] == port))
        })
        .unwrap_or_else(|| panic!("no egress rule for {port}: {policy}"))
}

#[test]
fn console_network_policy_is_opt_in_and_never_closes_the_apiservice_port() {
    // Off by default (the live-output policies are separate and also off).
    assert!(
        !documents(&render(&[]))
            .iter()
            .any(|d| kind_of(d) == "NetworkPolicy")
    );

    // On with no peers: every listener port open to every source, egress
    // only to kube-apiserver, DNS, gateways and runtimed's status port.
    let objs = dry_run_chart(&render(&["console.networkPolicy.enabled=true"]));
    let np = find(&objs, "NetworkPolicy", "kruntimes-console");
    assert_eq!(np["metadata"]["namespace"], NS);
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        np["spec"]["podSelector"]["matchLabels"],
        find(&objs, "Service", "kruntimes-console")["spec"]["selector"]
    );
    assert_eq!(np["spec"]["ingress"].as_array().map(Vec::len), Some(3));
    for port in [8443, 9443, 9090] {
        assert!(
            ingress_rule(np, port).get("from").is_none(),
            "{port} is open to every source: {np}"
        );
    }
    let api = egress_rule(np, 6443);
    assert_eq!(
        api["ports"],
        json!([{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}])
    );
    assert!(api.get("to").is_none());
    let dns = egress_rule(np, 53);
    assert_eq!(
        dns["ports"],
        json!([{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}])
    );
    assert_eq!(
        dns["to"],
        json!([{
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }])
    );
    let status = egress_rule(np, 9093);
    assert_eq!(status["ports"], json!([{"protocol": "TCP", "port": 9093}]));
    assert_eq!(
        status["to"][0]["podSelector"]["matchExpressions"],
        json!([{"key": "runtime", "operator": "Exists"}])
    );
    assert_eq!(np["spec"]["egress"].as_array().map(Vec::len), Some(4));

    // Peers and ports carried; live output follows its own port and switch.
    let objs = dry_run_chart(&render(&[
        "console.networkPolicy.enabled=true",
        "console.networkPolicy.ingress.apiserver.from[0].ipBlock.cidr=172.18.0.0/16",
        "console.networkPolicy.ingress.console.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=ingress-nginx",
        "console.networkPolicy.ingress.admin.from[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name=monitoring",
        "console.networkPolicy.ingress.admin.from[0].podSelector.matchLabels.app\\.kubernetes\\.io/name=prometheus",
        "console.networkPolicy.ingress.extra[0].ports[0].port=9999",
        "console.networkPolicy.egress.apiserver.to[0].ipBlock.cidr=172.18.0.2/32",
        "console.networkPolicy.egress.apiserver.ports[0].port=6443",
        "console.networkPolicy.egress.apiserver.ports[0].protocol=TCP",
        "console.networkPolicy.egress.dns.to[0].ipBlock.cidr=169.254.20.10/32",
        "console.networkPolicy.egress.runtimeGateways.to[0].namespaceSelector.matchLabels.team=a",
        "console.networkPolicy.egress.runtimeGateways.ports[0].port=8443",
        "console.networkPolicy.egress.runtimedStatus.to[0].namespaceSelector.matchLabels.team=a",
        "console.networkPolicy.egress.extra[0].ports[0].port=4317",
        "console.liveOutput.port=9193",
    ]));
    let np = find(&objs, "NetworkPolicy", "kruntimes-console");
    assert_eq!(
        ingress_rule(np, 8443)["from"],
        json!([{"ipBlock": {"cidr": "172.18.0.0/16"}}])
    );
    assert_eq!(
        ingress_rule(np, 9443)["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
        "ingress-nginx"
    );
    let admin = &ingress_rule(np, 9090)["from"][0];
    assert_eq!(
        admin["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "prometheus"
    );
    ingress_rule(np, 9999);
    let api = egress_rule(np, 6443);
    assert_eq!(api["ports"], json!([{"port": 6443, "protocol": "TCP"}]));
    assert_eq!(api["to"], json!([{"ipBlock": {"cidr": "172.18.0.2/32"}}]));
    assert_eq!(
        egress_rule(np, 53)["to"],
        json!([{"ipBlock": {"cidr": "169.254.20.10/32"}}])
    );
    let gw = egress_rule(np, 8443);
    assert_eq!(gw["to"][0]["namespaceSelector"]["matchLabels"]["team"], "a");
    assert_eq!(
        egress_rule(np, 9193)["to"],
        json!([{"namespaceSelector": {"matchLabels": {"team": "a"}}}])
    );
    egress_rule(np, 4317);
    assert!(args(&objs).contains(&"--live-output-port=9193".to_owned()));
    let off = dry_run_chart(&render(&[
        "console.networkPolicy.enabled=true",
        "console.liveOutput.enabled=false",
    ]));
    let np = find(&off, "NetworkPolicy", "kruntimes-console");
    assert!(
        !np["spec"]["egress"]
            .as_array()
            .expect("egress")
            .iter()
            .any(|r| r["ports"][0]["port"] == 9093),
        "live output off, its port still open: {np}"
    );

    // Bad peers and ports are refused by the schema.
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["console.networkPolicy.ingress.apiserver.from[0].ipBlock.cidr=kube-apiserver"],
            &["apiserver/from/0/ipBlock/cidr"],
        ),
        (
            &["console.networkPolicy.ingress.console.from[0].namespace=team-a"],
            &["console/from/0", "namespace"],
        ),
        (
            &["console.networkPolicy.egress.apiserver.ports=null"],
            &["egress/apiserver", "ports"],
        ),
        (
            &["console.networkPolicy.egress.runtimeGateways.ports[0].port=70000"],
            &["runtimeGateways/ports/0/port"],
        ),
        (
            &["console.networkPolicy.egress.dns.to=null"],
            &["egress/dns", "to"],
        ),
        (
            &["console.networkPolicy.enable=true"],
            &["networkPolicy", "enable"],
        ),
    ];
    for (sets, wanted) in cases {
        let msg = render_error(&[], sets);
        for w in *wanted {
            assert!(
                msg.contains(w),
                "{sets:?}: message does not name {w:?}: {msg}"
            );
        }
    }
}

const GATEWAY_KINDS: &[&str] = &[
    "--api-versions",
    "gateway.networking.k8s.io/v1/HTTPRoute",
    "--api-versions",
    "gateway.networking.k8s.io/v1/BackendTLSPolicy",
    "--api-versions",
    "gateway.networking.k8s.io/v1/TLSRoute",
];

#[test]
fn console_exposure_is_opt_in_and_re_encrypts_or_passes_tls_through() {
    // None by default; the Service stays ClusterIP.
    let default = render(&[]);
    for kind in ["Ingress", "HTTPRoute", "BackendTLSPolicy", "TLSRoute"] {
        assert!(
            !documents(&default).iter().any(|d| kind_of(d) == kind),
            "{kind}"
        );
    }
    assert!(!default.contains("kruntimes-console-ca"));

    // An Ingress to the Service's https port, with the controller's annotations.
    let objs = dry_run_chart(&render(&[
        "console.ingress.enabled=true",
        "console.ingress.className=nginx",
        "console.ingress.host=console.example.com",
        "console.ingress.tlsSecretName=console-public-tls",
        "console.ingress.annotations.nginx\\.ingress\\.kubernetes\\.io/backend-protocol=HTTPS",
        "console.ingress.labels.exposure=public",
    ]));
    let ing = find(&objs, "Ingress", "kruntimes-console");
    assert_eq!(
        ing["metadata"]["annotations"]["nginx.ingress.kubernetes.io/backend-protocol"],
        "HTTPS"
    );
    assert_eq!(ing["metadata"]["labels"]["exposure"], "public");
    assert_eq!(ing["spec"]["ingressClassName"], "nginx");
    assert_eq!(
        ing["spec"]["tls"],
        json!([{"hosts": ["console.example.com"], "secretName": "console-public-tls"}])
    );
    let rule = &ing["spec"]["rules"][0];
    assert_eq!(rule["host"], "console.example.com");
    let path = &rule["http"]["paths"][0];
    assert_eq!(path["path"], "/");
    assert_eq!(path["pathType"], "Prefix");
    assert_eq!(
        path["backend"]["service"],
        json!({"name": "kruntimes-console", "port": {"name": "https"}})
    );
    assert_eq!(
        find(&objs, "Service", "kruntimes-console")["spec"]["type"],
        "ClusterIP"
    );

    // An HTTPRoute, re-encrypting to the Pods and verifying them against the
    // chart's CA (self-signed mode: the same CA as the APIService's).
    let objs = dry_run_chart(&render_with(
        GATEWAY_KINDS,
        &[
            "console.gatewayAPI.httpRoute.enabled=true",
            "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
            "console.gatewayAPI.httpRoute.parentRefs[0].namespace=gateways",
            "console.gatewayAPI.httpRoute.parentRefs[0].sectionName=https",
            "console.gatewayAPI.httpRoute.hostnames[0]=console.example.com",
            "console.gatewayAPI.httpRoute.labels.exposure=public",
        ],
    ));
    let route = find(&objs, "HTTPRoute", "kruntimes-console");
    assert_eq!(
        route["spec"]["parentRefs"][0],
        json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "public", "namespace": "gateways", "sectionName": "https"})
    );
    assert_eq!(route["spec"]["hostnames"], json!(["console.example.com"]));
    assert_eq!(route["metadata"]["labels"]["exposure"], "public");
    let backend = &route["spec"]["rules"][0]["backendRefs"][0];
    assert_eq!(backend["name"], "kruntimes-console");
    assert_eq!(backend["port"], 443);
    let policy = find(&objs, "BackendTLSPolicy", "kruntimes-console");
    assert_eq!(
        policy["spec"]["targetRefs"],
        json!([{"group": "", "kind": "Service", "name": "kruntimes-console", "sectionName": "https"}])
    );
    let validation = &policy["spec"]["validation"];
    assert_eq!(
        validation["hostname"],
        format!("kruntimes-console.{NS}.svc")
    );
    assert_eq!(
        validation["caCertificateRefs"],
        json!([{"group": "", "kind": "ConfigMap", "name": "kruntimes-console-ca"}])
    );
    let ca_pem = find(&objs, "ConfigMap", "kruntimes-console-ca")["data"]["ca.crt"]
        .as_str()
        .expect("ca.crt")
        .trim()
        .to_owned();
    let secret_ca = B64
        .decode(secret_data(&objs, "kruntimes-console-tls", "ca.crt"))
        .expect("ca");
    assert_eq!(
        ca_pem,
        text(&secret_ca).trim(),
        "the ConfigMap holds the chart's CA"
    );

    // Another TLS source names its own CA ConfigMap and verified name.
    let objs = dry_run_chart(&render_with(
        GATEWAY_KINDS,
        &[
            "console.tls.selfSigned=false",
            "console.tls.secretName=console-tls",
            "console.gatewayAPI.httpRoute.enabled=true",
            "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
            "console.gatewayAPI.httpRoute.backendTLSPolicy.caCertificateRefs[0].name=platform-ca",
            "console.gatewayAPI.httpRoute.backendTLSPolicy.hostname=console.internal.example.com",
        ],
    ));
    let validation = &find(&objs, "BackendTLSPolicy", "kruntimes-console")["spec"]["validation"];
    assert_eq!(
        validation["caCertificateRefs"],
        json!([{"group": "", "kind": "ConfigMap", "name": "platform-ca"}])
    );
    assert_eq!(validation["hostname"], "console.internal.example.com");
    assert!(
        !objs
            .iter()
            .any(|o| o["metadata"]["name"] == "kruntimes-console-ca")
    );
    // Without the policy (the implementation's own backend TLS).
    let objs = dry_run_chart(&render_with(
        GATEWAY_KINDS,
        &[
            "console.gatewayAPI.httpRoute.enabled=true",
            "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
            "console.gatewayAPI.httpRoute.backendTLSPolicy.enabled=false",
        ],
    ));
    find(&objs, "HTTPRoute", "kruntimes-console");
    assert!(
        !objs
            .iter()
            .any(|o| o["kind"] == "BackendTLSPolicy" || o["kind"] == "ConfigMap")
    );

    // A TLSRoute: passthrough to the same port.
    let objs = dry_run_chart(&render_with(
        GATEWAY_KINDS,
        &[
            "console.gatewayAPI.tlsRoute.enabled=true",
            "console.gatewayAPI.tlsRoute.parentRefs[0].name=passthrough",
            "console.gatewayAPI.tlsRoute.hostnames[0]=console.example.com",
        ],
    ));
    let route = find(&objs, "TLSRoute", "kruntimes-console");
    assert_eq!(route["spec"]["hostnames"], json!(["console.example.com"]));
    assert_eq!(route["spec"]["parentRefs"][0]["name"], "passthrough");
    assert_eq!(
        route["spec"]["rules"][0]["backendRefs"][0],
        json!({"group": "", "kind": "Service", "name": "kruntimes-console", "port": 443, "weight": 1})
    );
    assert!(
        !objs
            .iter()
            .any(|o| o["kind"] == "HTTPRoute" || o["kind"] == "BackendTLSPolicy")
    );

    // A cluster that serves Gateway API (the suite installed it): no flags.
    install_pinned_crds();
    let live = helm(
        &[
            "template",
            "kruntimes-console",
            "chart",
            "--namespace",
            NS,
            // As helm install: the cluster's capabilities (and a dry run
            // that adopts nothing).
            "--validate",
            "--take-ownership",
        ],
        &[
            "console.gatewayAPI.httpRoute.enabled=true",
            "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
        ],
        Some(env().var("KUBECONFIG")),
    );
    assert!(live.status.success(), "{}", text(&live.stderr));
    assert!(
        documents(&text(&live.stdout))
            .iter()
            .any(|d| kind_of(d) == "BackendTLSPolicy")
    );

    let route = [
        "console.gatewayAPI.httpRoute.enabled=true",
        "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
    ];
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (
            &[],
            &route,
            &[
                "console.gatewayAPI.httpRoute.enabled=true",
                "gateway.networking.k8s.io/v1 HTTPRoute",
                "--api-versions gateway.networking.k8s.io/v1/HTTPRoute",
                "console.gatewayAPI.skipCRDCheck=true",
            ],
        ),
        (
            &["--api-versions", "gateway.networking.k8s.io/v1/HTTPRoute"],
            &route,
            &[
                "console.gatewayAPI.httpRoute.backendTLSPolicy.enabled=true",
                "gateway.networking.k8s.io/v1 BackendTLSPolicy",
            ],
        ),
        (
            &[],
            &[
                "console.gatewayAPI.tlsRoute.enabled=true",
                "console.gatewayAPI.tlsRoute.parentRefs[0].name=p",
                "console.gatewayAPI.tlsRoute.hostnames[0]=c.example.com",
            ],
            &["gateway.networking.k8s.io/v1 TLSRoute"],
        ),
        (
            GATEWAY_KINDS,
            &["console.gatewayAPI.httpRoute.enabled=true"],
            &["console.gatewayAPI.httpRoute.parentRefs"],
        ),
        (
            GATEWAY_KINDS,
            &[
                "console.gatewayAPI.tlsRoute.enabled=true",
                "console.gatewayAPI.tlsRoute.parentRefs[0].name=p",
            ],
            &["console.gatewayAPI.tlsRoute.hostnames"],
        ),
        (
            GATEWAY_KINDS,
            &[
                "console.gatewayAPI.tlsRoute.enabled=true",
                "console.gatewayAPI.tlsRoute.hostnames[0]=c.example.com",
            ],
            &["console.gatewayAPI.tlsRoute.parentRefs"],
        ),
        (
            GATEWAY_KINDS,
            &[
                "console.tls.selfSigned=false",
                "console.tls.secretName=console-tls",
                route[0],
                route[1],
            ],
            &[
                "console.gatewayAPI.httpRoute.backendTLSPolicy",
                "caCertificateRefs",
                "console.tls.selfSigned=true",
            ],
        ),
        (
            &[],
            &["console.ingress.enabled=true"],
            &["console.ingress.host"],
        ),
        (
            &[],
            &[
                "console.ingress.enabled=true",
                "console.ingress.host=Not A Host",
            ],
            &["ingress/host"],
        ),
        (
            &[],
            &["console.ingress.pathType=Regex"],
            &["ingress/pathType"],
        ),
        (
            &[],
            &["console.ingress.tls[0].secretName=x"],
            &["ingress", "tls"],
        ),
        (
            GATEWAY_KINDS,
            &["console.gatewayAPI.httpRoute.parentRefs[0].namespace=gateways"],
            &["parentRefs/0", "name"],
        ),
    ];
    for (extra, sets, wanted) in cases {
        let msg = render_error(extra, sets);
        for w in *wanted {
            assert!(
                msg.contains(w),
                "{extra:?} {sets:?}: message does not name {w:?}: {msg}"
            );
        }
    }
}

#[test]
fn lint_passes_with_the_operating_options_on() {
    let sets = [
        "console.monitoring.skipCRDCheck=true",
        "console.monitoring.serviceMonitor.enabled=true",
        "console.monitoring.prometheusRule.enabled=true",
        "console.monitoring.dashboard.enabled=true",
        "console.networkPolicy.enabled=true",
        "console.ingress.enabled=true",
        "console.ingress.host=console.example.com",
        "console.gatewayAPI.skipCRDCheck=true",
        "console.gatewayAPI.httpRoute.enabled=true",
        "console.gatewayAPI.httpRoute.parentRefs[0].name=public",
        "console.gatewayAPI.tlsRoute.enabled=true",
        "console.gatewayAPI.tlsRoute.parentRefs[0].name=passthrough",
        "console.gatewayAPI.tlsRoute.hostnames[0]=console.example.com",
        "console.priorityClassName=system-cluster-critical",
        "console.extraArgs[0]=--max-follows-x=1",
    ];
    let out = helm(&["lint", "chart", "--strict"], &sets, None);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("0 chart(s) failed"),
        "{stdout}{}",
        text(&out.stderr)
    );
}

/// YAML text as JSON (the tests have no YAML parser; python3 with PyYAML is
/// one of the test dependencies, see hack/rules).
fn yaml_to_json(yaml: &str) -> Value {
    let mut docs = yaml_documents(yaml);
    assert_eq!(docs.len(), 1, "one YAML document: {yaml}");
    docs.remove(0)
}

/// The documents of a YAML stream as JSON, as PyYAML reads them: YAML 1.1,
/// as Kubernetes' own YAML reader (a `0440` file mode is octal there),
/// empty documents left out.
fn yaml_documents(yaml: &str) -> Vec<Value> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d is not None]))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running python3");
    child
        .stdin
        .take()
        .expect("python3 stdin")
        .write_all(yaml.as_bytes())
        .expect("writing to python3");
    let out = child.wait_with_output().expect("python3 output");
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON from python3")
}

/// The rules of `rule` (a PrometheusRule) by alert name.
fn alerts(rule: &Value) -> std::collections::BTreeMap<String, Value> {
    rule["spec"]["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .map(|r| (r["alert"].as_str().unwrap_or_default().to_owned(), r))
        .collect()
}

#[test]
fn prometheus_rule_ships_the_tested_rules_with_its_thresholds() {
    assert!(
        !documents(&render(&[]))
            .iter()
            .any(|d| kind_of(d) == "PrometheusRule"),
        "not by default"
    );
    let on = [
        "console.monitoring.serviceMonitor.enabled=true",
        "console.monitoring.prometheusRule.enabled=true",
        "console.monitoring.prometheusRule.labels.release=kube-prometheus-stack",
        "console.monitoring.prometheusRule.alertLabels.team=platform",
    ];
    let api = [
        "--api-versions",
        "monitoring.coreos.com/v1/PrometheusRule",
        "--api-versions",
        "monitoring.coreos.com/v1/ServiceMonitor",
    ];
    // Accepted by the real kube-apiserver against the pinned CRD, unchanged.
    let objs = dry_run_chart(&render_with(&api, &on[..2]));
    let rule = find(&objs, "PrometheusRule", "kruntimes-console");

    // The same rules hack/rules checks and tests with promtool.
    let printed = Command::new(repo_root().join("hack/rules"))
        .arg("--print")
        .output()
        .expect("running hack/rules --print");
    assert!(printed.status.success(), "{}", text(&printed.stderr));
    assert_eq!(rule["spec"], yaml_to_json(&text(&printed.stdout)));
    let names: Vec<String> = alerts(rule).into_keys().collect();
    assert_eq!(
        names,
        [
            "KruntimesConsoleAPIServiceUnavailable",
            "KruntimesConsoleCapReached",
            "KruntimesConsoleCertificateExpiresSoon",
            "KruntimesConsoleHighErrorRatio",
            "KruntimesConsoleHighLatency",
            "KruntimesConsoleTargetDown",
            "KruntimesConsoleUpstreamLogStreamsFailing",
        ]
    );

    // Labels, and every threshold from its value.
    let mut sets = on.to_vec();
    sets.extend([
        "console.monitoring.prometheusRule.thresholds.apiServiceUnavailableFor=7m",
        "console.monitoring.prometheusRule.thresholds.targetDownFor=3m",
        "console.monitoring.prometheusRule.thresholds.errorRatio=0.25",
        "console.monitoring.prometheusRule.thresholds.minRequestRate=2",
        "console.monitoring.prometheusRule.thresholds.errorRatioFor=15m",
        "console.monitoring.prometheusRule.thresholds.p99LatencySeconds=4.5",
        "console.monitoring.prometheusRule.thresholds.p99LatencyFor=20m",
        "console.monitoring.prometheusRule.thresholds.capRefusals=9",
        "console.monitoring.prometheusRule.thresholds.certificateExpiryDays=21",
        "console.monitoring.prometheusRule.thresholds.upstreamFailures=11",
    ]);
    let objs = dry_run_chart(&render_with(&api, &sets));
    let rule = find(&objs, "PrometheusRule", "kruntimes-console");
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let a = alerts(rule);
    for (name, r) in &a {
        assert_eq!(r["labels"]["team"], "platform", "{name}");
        assert!(r["labels"]["severity"].is_string(), "{name}");
    }
    let expr = |name: &str| a[name]["expr"].as_str().unwrap_or_default().to_owned();
    let f = |name: &str| a[name]["for"].clone();
    assert_eq!(f("KruntimesConsoleAPIServiceUnavailable"), "7m");
    assert!(
        expr("KruntimesConsoleAPIServiceUnavailable").contains(&format!("name=\"{APISERVICE}\""))
    );
    assert_eq!(f("KruntimesConsoleTargetDown"), "3m");
    assert!(
        expr("KruntimesConsoleTargetDown").contains(&format!(
            "up{{job=\"kruntimes-console-metrics\", namespace=\"{NS}\"}} == 0"
        )),
        "the ServiceMonitor's job: {}",
        expr("KruntimesConsoleTargetDown")
    );
    assert!(expr("KruntimesConsoleHighErrorRatio").contains(") > 0.25"));
    assert!(expr("KruntimesConsoleHighErrorRatio").contains("[5m])) > 2"));
    assert_eq!(f("KruntimesConsoleHighErrorRatio"), "15m");
    assert!(
        expr("KruntimesConsoleHighLatency")
            .trim_end()
            .ends_with(") > 4.5")
    );
    assert_eq!(f("KruntimesConsoleHighLatency"), "20m");
    assert!(
        expr("KruntimesConsoleCapReached")
            .trim_end()
            .ends_with(" > 9")
    );
    assert!(expr("KruntimesConsoleCertificateExpiresSoon").contains("< 21 * 86400"));
    assert!(
        expr("KruntimesConsoleUpstreamLogStreamsFailing")
            .trim_end()
            .ends_with(" > 11")
    );

    // Scraped through the PodMonitor: its job.
    let objs = dry_run_chart(&render_with(
        &api,
        &[
            "console.monitoring.skipCRDCheck=true",
            "console.monitoring.podMonitor.enabled=true",
            "console.monitoring.prometheusRule.enabled=true",
        ],
    ));
    let a = alerts(find(&objs, "PrometheusRule", "kruntimes-console"));
    assert!(
        a["KruntimesConsoleTargetDown"]["expr"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(
                "up{{job=\"{NS}/kruntimes-console\", namespace=\"{NS}\"}} == 0"
            ))
    );

    // Refused where the CRD is not served, naming the way out; bad thresholds too.
    let msg = render_error(&[], &["console.monitoring.prometheusRule.enabled=true"]);
    for w in [
        "console.monitoring.prometheusRule.enabled=true",
        "monitoring.coreos.com/v1 PrometheusRule",
        "--api-versions monitoring.coreos.com/v1/PrometheusRule",
        "console.monitoring.skipCRDCheck=true",
    ] {
        assert!(msg.contains(w), "message does not name {w:?}: {msg}");
    }
    for (set, wanted) in [
        (
            "console.monitoring.prometheusRule.thresholds.errorRatio=2",
            "errorRatio",
        ),
        (
            "console.monitoring.prometheusRule.thresholds.p99LatencyFor=10",
            "p99LatencyFor",
        ),
        (
            "console.monitoring.prometheusRule.thresholds.capRefusal=1",
            "capRefusal",
        ),
    ] {
        let msg = render_error(&[], &[set]);
        assert!(msg.contains(wanted), "{set}: {msg}");
    }
}

#[test]
fn dashboard_config_map_carries_the_dashboard_for_the_grafana_sidecar() {
    assert!(
        !render(&[]).contains("kruntimes-console-dashboard"),
        "not by default"
    );
    let file = std::fs::read_to_string(repo_root().join("chart/dashboards/console.json"))
        .expect("reading chart/dashboards/console.json");
    let dashboard: Value = serde_json::from_str(&file).expect("the dashboard is JSON");
    assert_eq!(dashboard["uid"], "kruntimes-console");

    let objs = dry_run_chart(&render(&["console.monitoring.dashboard.enabled=true"]));
    let cm = find(&objs, "ConfigMap", "kruntimes-console-dashboard");
    assert_eq!(cm["metadata"]["namespace"], NS);
    assert_eq!(cm["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        cm["data"]["kruntimes-console.json"].as_str(),
        Some(file.trim_end()),
        "the file's text, unchanged"
    );

    let objs = dry_run_chart(&render(&[
        "console.monitoring.dashboard.enabled=true",
        "console.monitoring.dashboard.sidecarLabel=example.com/dashboard",
        "console.monitoring.dashboard.sidecarLabelValue=console",
        "console.monitoring.dashboard.annotations.grafana_folder=kruntimes",
    ]));
    let cm = find(&objs, "ConfigMap", "kruntimes-console-dashboard");
    assert_eq!(cm["metadata"]["labels"]["example.com/dashboard"], "console");
    assert!(cm["metadata"]["labels"].get("grafana_dashboard").is_none());
    assert_eq!(cm["metadata"]["annotations"]["grafana_folder"], "kruntimes");
    let other = render(&[
        "console.monitoring.dashboard.enabled=true",
        "console.monitoring.dashboard.namespace=monitoring",
    ]);
    let doc = documents(&other)
        .into_iter()
        .find(|d| d.contains("name: kruntimes-console-dashboard"))
        .expect("the ConfigMap");
    assert!(doc.contains("namespace: monitoring"), "{doc}");

    let msg = render_error(&[], &["console.monitoring.dashboard.sidecarLabel=bad key!"]);
    assert!(msg.contains("sidecarLabel"), "{msg}");
}
