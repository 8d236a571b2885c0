//! The chart's monitoring objects against a real Prometheus on the real
//! node of `hack/cluster`: the chart installed with the ServiceMonitor, the
//! PrometheusRule and the dashboard ConfigMap (the pinned Prometheus
//! Operator CRDs installed first), then Debian's `prometheus` run on the
//! host (loopback only, a temporary TSDB, killed at the end) with the scrape
//! configuration the Prometheus Operator would derive from the installed
//! ServiceMonitor (the Operator's relabeling over the targets of role
//! `endpoints` discovery) and the rules of the installed PrometheusRule.
//! Debian builds Prometheus without its Kubernetes discovery
//! (`kubernetes_sd_configs` is an unknown field there), so the test plays
//! that part: it reads the Services, EndpointSlices and Pods from
//! kube-apiserver and writes them, with the `__meta_kubernetes_*` labels
//! Kubernetes discovery would give them, to a `file_sd_configs` file;
//! Prometheus then applies the relabeling itself.
//!
//! Checks: both Console Pods are scraped (`up == 1` for 2 targets), every
//! rule is loaded with health ok, and after a short load (log reads through
//! kube-apiserver, `/api` calls) every query of every dashboard panel
//! returns data. The host reaches Pod IPs directly (the node's bridge), as
//! Prometheus in the cluster would. Skipped without a cluster
//! (`CLUSTER_STATE`).

use std::path::Path;
use std::process::{Child, Command, Stdio};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kruntimes_tests::cluster::{CONSOLE_NS, Cluster, RELEASE, cluster, eventually};
use kruntimes_tests::env::repo_root;
use kube::Api;
use serde_json::{Value, json};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Uninstalls the release when the test ends, however it ends.
struct Cleanup<'a>(&'a Cluster);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.0.helm(&[
            "uninstall",
            RELEASE,
            "-n",
            CONSOLE_NS,
            "--wait",
            "--timeout",
            "2m",
        ]);
    }
}

/// Prometheus on the host; killed (by its own PID) when dropped.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Starts `prometheus` with `config` in `dir` (its TSDB under it),
    /// listening on a free loopback port, and waits until it is ready.
    fn start(dir: &Path, config: &str) -> Self {
        let bin = std::env::var("PROMETHEUS").unwrap_or_else(|_| "/usr/bin/prometheus".into());
        assert!(
            Path::new(&bin).exists(),
            "{bin} is missing: install Debian's prometheus (hack/lib/deps.sh) or set PROMETHEUS"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(bin)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--storage.tsdb.retention.time=1h")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting prometheus");
        let mut p = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        // Ready, or the reason it is not (it exited, or its log) in the failure.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if get(&format!("{}/-/ready", p.url)).0 == 200 {
                return p;
            }
            let exited = p.child.try_wait().ok().flatten();
            if exited.is_some() || std::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
                panic!("prometheus not ready (exit: {exited:?}); its log:\n{log}");
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }

    /// `GET /api/v1/<path>`'s `data`; panics unless the status is success.
    fn api(&self, path: &str, params: &[(&str, &str)]) -> Value {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "--max-time", "10", "-G"]);
        for (k, v) in params {
            cmd.arg("--data-urlencode").arg(format!("{k}={v}"));
        }
        let out = cmd
            .arg(format!("{}/api/v1/{path}", self.url))
            .output()
            .expect("curl");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "prometheus /api/v1/{path}: {e}: {}{}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
        assert_eq!(v["status"], "success", "/api/v1/{path} {params:?}: {v}");
        v["data"].clone()
    }

    /// The result vector of an instant query.
    fn query(&self, q: &str) -> Vec<Value> {
        self.api("query", &[("query", q)])["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// `curl URL` (status, body).
fn get(url: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "5", "-o", "-", "-w", "\n%{http_code}"])
        .arg(url)
        .output()
        .expect("curl");
    let body = text(&out.stdout);
    let (body, code) = body.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// A label name as Prometheus' Kubernetes discovery writes it.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The targets Prometheus' Kubernetes discovery (role `endpoints`) finds in
/// the namespaces of ServiceMonitor `sm`, as a `file_sd_configs` file's
/// target groups: one per Service port and ready endpoint address, with the
/// `__meta_kubernetes_*` labels that discovery writes.
fn discovered_targets(c: &Cluster, sm: &Value) -> Value {
    let mut groups = vec![];
    let namespaces = sm["spec"]["namespaceSelector"]["matchNames"]
        .as_array()
        .expect("the ServiceMonitor names its namespaces");
    for ns in namespaces {
        let ns = ns.as_str().unwrap();
        let services = json!({"items": c.list(&c.api::<Service>(ns), "")});
        let slices = json!({"items": c.list(&c.api::<EndpointSlice>(ns), "")});
        let pods = json!({"items": c.list(&c.api::<Pod>(ns), "")});
        for svc in services["items"].as_array().unwrap() {
            let svc_name = svc["metadata"]["name"].as_str().unwrap();
            let mut svc_labels = serde_json::Map::new();
            svc_labels.insert("__meta_kubernetes_namespace".into(), json!(ns));
            svc_labels.insert("__meta_kubernetes_service_name".into(), json!(svc_name));
            if let Some(ls) = svc["metadata"]["labels"].as_object() {
                for (k, v) in ls {
                    let k = sanitize(k);
                    svc_labels.insert(format!("__meta_kubernetes_service_label_{k}"), v.clone());
                    svc_labels.insert(
                        format!("__meta_kubernetes_service_labelpresent_{k}"),
                        json!("true"),
                    );
                }
            }
            let owned = slices["items"].as_array().unwrap().iter().filter(|sl| {
                sl["metadata"]["labels"]["kubernetes.io/service-name"].as_str() == Some(svc_name)
            });
            for slice in owned {
                for port in slice["ports"].as_array().into_iter().flatten() {
                    for ep in slice["endpoints"].as_array().into_iter().flatten() {
                        let ready = ep["conditions"]["ready"].as_bool().unwrap_or(true);
                        for addr in ep["addresses"].as_array().into_iter().flatten() {
                            let mut labels = svc_labels.clone();
                            labels.insert(
                                "__meta_kubernetes_endpoint_port_name".into(),
                                port["name"].clone(),
                            );
                            labels.insert(
                                "__meta_kubernetes_endpoint_ready".into(),
                                json!(ready.to_string()),
                            );
                            let target = &ep["targetRef"];
                            if target["kind"] == "Pod" {
                                let pod_name = target["name"].as_str().unwrap();
                                labels.insert(
                                    "__meta_kubernetes_endpoint_address_target_kind".into(),
                                    json!("Pod"),
                                );
                                labels.insert(
                                    "__meta_kubernetes_endpoint_address_target_name".into(),
                                    json!(pod_name),
                                );
                                let pod = pods["items"]
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .find(|p| p["metadata"]["name"] == pod_name);
                                if let Some(pod) = pod {
                                    labels.insert(
                                        "__meta_kubernetes_pod_name".into(),
                                        json!(pod_name),
                                    );
                                    labels.insert(
                                        "__meta_kubernetes_pod_phase".into(),
                                        pod["status"]["phase"].clone(),
                                    );
                                    // The container that declares the port.
                                    let container =
                                        pod["spec"]["containers"].as_array().unwrap().iter().find(
                                            |ct| {
                                                ct["ports"]
                                                    .as_array()
                                                    .into_iter()
                                                    .flatten()
                                                    .any(|cp| cp["containerPort"] == port["port"])
                                            },
                                        );
                                    if let Some(ct) = container {
                                        labels.insert(
                                            "__meta_kubernetes_pod_container_name".into(),
                                            ct["name"].clone(),
                                        );
                                    }
                                }
                            }
                            let address = format!(
                                "{}:{}",
                                addr.as_str().unwrap(),
                                port["port"].as_u64().unwrap()
                            );
                            groups.push(json!({"targets": [address], "labels": labels}));
                        }
                    }
                }
            }
        }
    }
    Value::Array(groups)
}

/// The scrape job the Prometheus Operator generates for endpoint `i` of
/// ServiceMonitor `sm` (role endpoints, as its default service discovery
/// role), over the targets in `targets` (written by [`discovered_targets`]):
/// keep the selected Services' endpoints on the named port, label the
/// target as the Operator does, then the endpoint's own relabelings.
fn scrape_job(sm: &Value, i: usize, targets: &Path) -> Value {
    let ns = sm["metadata"]["namespace"].as_str().unwrap();
    let name = sm["metadata"]["name"].as_str().unwrap();
    let ep = &sm["spec"]["endpoints"][i];
    let port = ep["port"].as_str().expect("the endpoint names its port");
    let mut relabel = vec![];
    for (k, v) in sm["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels")
    {
        let k = sanitize(k);
        relabel.push(json!({
            "action": "keep",
            "source_labels": [format!("__meta_kubernetes_service_label_{k}"), format!("__meta_kubernetes_service_labelpresent_{k}")],
            "regex": format!("({});true", v.as_str().unwrap()),
        }));
    }
    assert!(
        sm["spec"]["selector"]["matchExpressions"].is_null(),
        "matchExpressions are not translated here"
    );
    relabel.extend([
        json!({"action": "keep", "source_labels": ["__meta_kubernetes_endpoint_port_name"], "regex": port}),
        json!({"source_labels": ["__meta_kubernetes_endpoint_address_target_kind", "__meta_kubernetes_endpoint_address_target_name"],
               "separator": ";", "regex": "Pod;(.*)", "replacement": "${1}", "target_label": "pod"}),
        json!({"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"}),
        json!({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"}),
        json!({"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"}),
        json!({"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"}),
        json!({"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"], "regex": "(Failed|Succeeded)"}),
        json!({"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job", "replacement": "${1}"}),
        json!({"target_label": "endpoint", "replacement": port}),
    ]);
    let snake = |r: &Value| {
        let mut out = serde_json::Map::new();
        for (k, v) in r.as_object().unwrap() {
            let k = match k.as_str() {
                "sourceLabels" => "source_labels",
                "targetLabel" => "target_label",
                other => other,
            };
            let v = if k == "action" {
                json!(v.as_str().unwrap().to_lowercase())
            } else {
                v.clone()
            };
            out.insert(k.to_owned(), v);
        }
        Value::Object(out)
    };
    relabel.extend(
        ep["relabelings"]
            .as_array()
            .map(|rs| rs.iter().map(snake).collect::<Vec<_>>())
            .unwrap_or_default(),
    );
    let mut job = json!({
        "job_name": format!("serviceMonitor/{ns}/{name}/{i}"),
        "honor_labels": false,
        "scrape_interval": ep["interval"],
        "scrape_timeout": ep["scrapeTimeout"],
        "metrics_path": ep["path"],
        "scheme": ep["scheme"],
        "file_sd_configs": [{"files": [targets], "refresh_interval": "5s"}],
        "relabel_configs": relabel,
    });
    if let Some(m) = ep["metricRelabelings"].as_array() {
        job["metric_relabel_configs"] = json!(m.iter().map(snake).collect::<Vec<_>>());
    }
    job
}

/// A dashboard query as Prometheus answers it: Grafana's variables
/// replaced by what Grafana would send (every namespace, a 1m rate window).
fn grafana_to_promql(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$namespace", ".*")
}

#[test]
fn prometheus_scrapes_both_pods_loads_the_rules_and_every_dashboard_panel_has_data() {
    let Some(c) =
        cluster("prometheus_scrapes_both_pods_loads_the_rules_and_every_dashboard_panel_has_data")
    else {
        return;
    };
    let _cleanup = Cleanup(c);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // ---- the pinned Prometheus Operator CRDs, then the chart with its
    // monitoring objects (a short interval, so the test is short too).
    let crds = Command::new(repo_root().join("hack/crds"))
        .output()
        .expect("hack/crds");
    assert!(crds.status.success(), "hack/crds: {}", text(&crds.stderr));
    for path in text(&crds.stdout)
        .lines()
        .filter(|p| p.contains("monitoring.coreos.com_"))
    {
        c.apply(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}")));
    }
    let crds = Api::<CustomResourceDefinition>::all(c.client());
    for name in [
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
    ] {
        eventually(&format!("CRD {name} Established"), 60, || {
            let crd = c.get(&crds, name);
            crd["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|k| k["type"] == "Established" && k["status"] == "True")
                .then_some(())
        });
    }
    let (repo, tag) = c.console_image();
    c.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {CONSOLE_NS}}}\n"
    ));
    c.helm_ok(&[
        "install",
        RELEASE,
        "chart",
        "-n",
        CONSOLE_NS,
        "--set",
        &format!("console.image.repository={repo}"),
        "--set",
        &format!("console.image.tag={tag}"),
        "--set",
        "console.image.pullPolicy=Never",
        "--set",
        "console.monitoring.serviceMonitor.enabled=true",
        "--set",
        "console.monitoring.serviceMonitor.interval=5s",
        "--set",
        "console.monitoring.serviceMonitor.scrapeTimeout=4s",
        "--set",
        "console.monitoring.prometheusRule.enabled=true",
        "--set",
        "console.monitoring.dashboard.enabled=true",
        "--wait",
        "--timeout",
        "5m",
    ]);
    let pods = c.wait_console_pods(2);
    let pod_names: Vec<&str> = pods
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap())
        .collect();

    // ---- Prometheus configured from the installed objects.
    let monitoring = "monitoring.coreos.com/v1";
    let sm = c
        .get_kind(monitoring, "ServiceMonitor", CONSOLE_NS, RELEASE)
        .expect("the release's ServiceMonitor");
    let rule = c
        .get_kind(monitoring, "PrometheusRule", CONSOLE_NS, RELEASE)
        .expect("the release's PrometheusRule");
    let cm = c.get(
        &c.api::<ConfigMap>(CONSOLE_NS),
        "kruntimes-console-dashboard",
    );
    // JSON is YAML: the rule file is the PrometheusRule's spec as it is.
    std::fs::write(d.join("rules.yml"), rule["spec"].to_string()).unwrap();
    let targets = d.join("targets.json");
    std::fs::write(&targets, discovered_targets(c, &sm).to_string()).unwrap();
    let jobs: Vec<Value> = (0..sm["spec"]["endpoints"].as_array().unwrap().len())
        .map(|i| scrape_job(&sm, i, &targets))
        .collect();
    let config = json!({
        "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
        "rule_files": [d.join("rules.yml")],
        "scrape_configs": jobs,
    });
    let prom = Prometheus::start(d, &config.to_string());

    // ---- both Console Pods scraped.
    let up = eventually("2 Console targets up", 120, || {
        let r =
            prom.query(r#"up{job="kruntimes-console-metrics", namespace="kruntimes-system"} == 1"#);
        (r.len() == 2).then_some(r)
    });
    let mut scraped: Vec<&str> = up
        .iter()
        .map(|s| s["metric"]["pod"].as_str().unwrap_or_default())
        .collect();
    scraped.sort();
    let mut want = pod_names.clone();
    want.sort();
    assert_eq!(scraped, want, "the targets are the Console Pods: {up:?}");
    for s in &up {
        assert_eq!(s["metric"]["endpoint"], "admin");
        assert_eq!(s["metric"]["service"], "kruntimes-console-metrics");
    }

    // ---- every rule loaded, health ok once evaluated.
    let names: Vec<String> = rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .map(|r| r["alert"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 7, "{names:?}");
    eventually("every rule evaluated with health ok", 60, || {
        let groups = prom.api("rules", &[])["groups"].clone();
        let rules: Vec<Value> = groups
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        let ok = rules.len() == names.len()
            && rules
                .iter()
                .all(|r| r["health"] == "ok" && names.iter().any(|n| r["name"] == n.as_str()));
        if !ok {
            let bad: Vec<_> = rules
                .iter()
                .filter(|r| r["health"] != "ok")
                .map(|r| {
                    (
                        r["name"].clone(),
                        r["health"].clone(),
                        r["lastError"].clone(),
                    )
                })
                .collect();
            eprintln!("rules not ok yet: {bad:?}");
        }
        ok.then_some(())
    });

    // ---- a short load: log reads through kube-apiserver (a Run that does
    // not exist: 404 from the aggregated listener), discovery, and /api
    // calls on each Pod's Console listener.
    let admin = c.var("CLUSTER_TOKEN_ADMIN").to_owned();
    for i in 0..5 {
        // Each read reaches a Console (its NotFound), not only kube-apiserver
        // (a 503 while it still finds the APIService unavailable).
        let path =
            format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/absent-{i}/log");
        let mut last = String::new();
        let reached = (0..60).any(|_| {
            last = match c.get_raw(&path) {
                Ok(body) => body,
                Err(e) => e,
            };
            let found = last.contains("NotFound") || last.contains("not found");
            if !found {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            found
        });
        assert!(reached, "{path} never reached a Console: {last}");
        c.get_raw("/apis/logs.kruntimes.io/v1alpha1")
            .unwrap_or_else(|e| panic!("{e}"));
        for p in &pods {
            let ip = p["status"]["podIP"].as_str().unwrap();
            for path in ["/api/session", "/api/namespaces"] {
                let out = Command::new("curl")
                    .args([
                        "-sk",
                        "--max-time",
                        "5",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_code}",
                    ])
                    .arg("-H")
                    .arg(format!("Authorization: Bearer {admin}"))
                    .arg(format!("https://{ip}:9443{path}"))
                    .output()
                    .expect("curl");
                assert_eq!(text(&out.stdout), "200", "{path} on {ip}");
            }
        }
    }

    // ---- every panel's every query returns data.
    let dashboard: Value = serde_json::from_str(
        cm["data"]["kruntimes-console.json"]
            .as_str()
            .expect("the dashboard in the ConfigMap"),
    )
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 9, "{}", panels.len());
    for panel in panels {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().expect("targets") {
            let expr = grafana_to_promql(target["expr"].as_str().expect("expr"));
            let result = eventually(&format!("data for {title:?}: {expr}"), 90, || {
                let r = prom.query(&expr);
                (!r.is_empty()).then_some(r)
            });
            eprintln!("{title}: {} series", result.len());
        }
    }
    // The load shows: requests on both listeners, by route template (once
    // the Pods that served them have been scraped since).
    let wanted = [
        "apiserver/runs/log",
        "apiserver/discovery",
        "console/session",
        "console/namespaces",
    ];
    let mut routes: Vec<String> = Vec::new();
    let all = (0..60).any(|_| {
        routes = prom
            .query("sum by (listener, route) (kruntimes_console_http_requests_total)")
            .iter()
            .map(|s| {
                format!(
                    "{}/{}",
                    s["metric"]["listener"].as_str().unwrap_or(""),
                    s["metric"]["route"].as_str().unwrap_or("")
                )
            })
            .collect();
        let all = wanted.iter().all(|w| routes.contains(&(*w).to_owned()));
        if !all {
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        all
    });
    for want in wanted {
        assert!(
            all && routes.contains(&want.to_owned()),
            "{want} not in {routes:?}"
        );
    }
    // Certificates far from expiry, no alert firing from the load.
    let firing = prom.query(r#"ALERTS{alertstate="firing"}"#);
    assert!(firing.is_empty(), "alerts firing: {firing:?}");
}
