//! Each rule of the Console's RBAC (as the chart renders it) is needed: with
//! the rule removed, the feature it serves breaks; restored, it works again.
//! This binary changes cluster-wide RBAC, so it holds one test only (test
//! binaries run one after another).

use std::time::Duration;

use kruntimes_tests::env::{ConsoleProcess, Fixtures, env, free_port, unique};
use serde_json::{Value, json};

struct Probe {
    console: ConsoleProcess,
    run: String,
    fn_run: String,
    fn_uid: String,
}

impl Probe {
    fn console(&self, path: &str, auth: Option<&str>, method: &str) -> u16 {
        let mut args = vec!["--cacert", env().var("CONSOLE_CA"), "-X", method];
        let h;
        if let Some(user) = auth {
            h = format!("Authorization: Bearer {}", env().token(user));
            args.extend(["-H", &h]);
        }
        env()
            .curl(
                &format!("https://127.0.0.1:{}{path}", self.console.console_port),
                &args,
            )
            .0
    }

    /// 200 when the viewer's namespace list names team-a; else the status (0 when it answered without it).
    fn viewer_namespaces_name_team_a(&self) -> u16 {
        let h = format!("Authorization: Bearer {}", env().token("viewer"));
        let (code, body) = env().curl(
            &format!(
                "https://127.0.0.1:{}/api/namespaces",
                self.console.console_port
            ),
            &["--cacert", env().var("CONSOLE_CA"), "-H", &h],
        );
        if code != 200 {
            return code;
        }
        if body.contains("\"team-a\"") { 200 } else { 0 }
    }

    fn log_api(&self) -> u16 {
        let h = format!("Authorization: Bearer {}", env().token("viewer"));
        env()
            .curl(
                &format!(
                    "https://127.0.0.1:{}/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{}/log",
                    self.console.api_port, self.run
                ),
                &["--cacert", env().var("CONSOLE_CA"), "-H", &h],
            )
            .0
    }

    fn ready(&self) -> u16 {
        self.ready_answer().0
    }

    fn ready_answer(&self) -> (u16, String) {
        env().curl(
            &format!("http://127.0.0.1:{}/ready", self.console.admin_port),
            &[],
        )
    }

    /// The probe for the feature a rule serves: (description, status when working).
    fn check(&self, feature: &str) -> (u16, u16) {
        let invoke = format!(
            "/v1/namespaces/team-a/runs/{}/{}/invoke",
            self.fn_run, self.fn_uid
        );
        match feature {
            // The viewer may not list namespaces: its list is the
            // Console's, cut down to team-a (none without the rule).
            "namespaces" => (self.viewer_namespaces_name_team_a(), 200),
            "runs" => (
                self.console("/api/namespaces/team-a/runs", None, "GET"),
                200,
            ),
            "runtimes" => (
                self.console("/api/namespaces/team-a/runtimes", None, "GET"),
                200,
            ),
            "workflowruns" => (
                self.console("/api/namespaces/team-a/workflowruns", None, "GET"),
                200,
            ),
            "pods" | "pods/log" | "subjectaccessreviews" => (self.log_api(), 200),
            "services" => (self.console(&invoke, Some("operator"), "POST"), 200),
            "tokenreviews" => (
                self.console("/api/namespaces/team-a/runs", Some("viewer"), "GET"),
                200,
            ),
            "authentication-reader" => (self.ready(), 200),
            other => panic!("no probe for {other}"),
        }
    }
}

fn kubectl_json(args: &[&str]) -> Value {
    let out = env().kubectl(Some(env().token("admin")), args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn apply(obj: &Value) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("o.json");
    std::fs::write(&f, obj.to_string()).unwrap();
    let out = env().kubectl(
        Some(env().token("admin")),
        &["replace", "-f", f.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn clean(mut obj: Value) -> Value {
    if let Some(m) = obj["metadata"].as_object_mut() {
        for k in [
            "resourceVersion",
            "uid",
            "creationTimestamp",
            "managedFields",
            "annotations",
        ] {
            m.remove(k);
        }
    }
    obj
}

/// Puts the Console's ClusterRole and reader RoleBinding back when dropped
/// (also when a step panics), so later test binaries see the full RBAC.
struct Restore {
    role: Value,
    binding: Value,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let dir = tempfile::tempdir().unwrap();
        for (name, obj, verb) in [
            ("r.json", &self.role, "replace"),
            ("b.json", &self.binding, "create"),
        ] {
            let f = dir.path().join(name);
            if std::fs::write(&f, obj.to_string()).is_ok() {
                // Already in place is fine: `create` of an existing binding fails harmlessly.
                let _ = env().kubectl(
                    Some(env().token("admin")),
                    &[verb, "-f", f.to_str().unwrap()],
                );
            }
        }
    }
}

/// Polls until the probe gives `want` (RBAC changes reach the authorizer within moments).
async fn until(p: &Probe, feature: &str, pred: impl Fn(u16) -> bool) -> u16 {
    let mut last = 0;
    for _ in 0..60 {
        last = p.check(feature).0;
        if pred(last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    last
}

fn fresh_console(dir: &std::path::Path, wait: bool) -> ConsoleProcess {
    let e = env();
    let mut args = vec![
        format!("--console-listen=127.0.0.1:{}", free_port()),
        format!("--gateway-ca-file={}", e.pki("gateway-ca.crt").display()),
        format!("--gateway-client-cert={}", e.pki("console.crt").display()),
        format!("--gateway-client-key={}", e.pki("console.key").display()),
        // No cached decisions or reviews carry over between probes.
        "--authentication-cache-ttl=0s".into(),
        "--authorization-cache-ttl=0s".into(),
    ];
    if !wait {
        args.push("--no-wait".into());
    }
    ConsoleProcess::start(dir, &args)
}

#[tokio::test]
async fn every_rule_serves_a_feature_that_breaks_without_it() {
    let fx = Fixtures::new("team-a").await;
    let run = fx.logged_run("rbac-run", "hello").await.run;
    let fn_run = unique("rbac-fn");
    let fn_uid = fx.create_run(&fn_run, "bash", "function", json!({})).await;
    fx.set_run_status(&fn_run, json!({"phase": "Ready"})).await;

    let role = clean(kubectl_json(&[
        "get",
        "clusterrole",
        "kruntimes-console",
        "-o",
        "json",
    ]));
    let binding = clean(kubectl_json(&[
        "-n",
        "kube-system",
        "get",
        "rolebinding",
        "kruntimes-console-authentication-reader",
        "-o",
        "json",
    ]));
    let rules = role["rules"].as_array().unwrap().clone();
    assert!(!rules.is_empty());
    // Whatever happens below, the shared control plane gets the full RBAC back.
    let _restore = Restore {
        role: role.clone(),
        binding: binding.clone(),
    };

    let dir = tempfile::tempdir().unwrap();
    let mut p = Probe {
        console: fresh_console(dir.path(), true),
        run,
        fn_run,
        fn_uid,
    };
    // Every feature works with the full rules.
    let features = [
        "namespaces",
        "runs",
        "runtimes",
        "workflowruns",
        "pods",
        "pods/log",
        "services",
        "tokenreviews",
        "subjectaccessreviews",
        "authentication-reader",
    ];
    for f in features {
        let got = until(&p, f, |c| c == 200).await;
        assert_eq!(got, 200, "{f} does not work with the full RBAC");
    }

    let mut failures = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let resources: Vec<String> = rule["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect();
        let mut reduced = role.clone();
        reduced["rules"] = Value::Array(
            rules
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, r)| r.clone())
                .collect(),
        );
        apply(&reduced);
        // A Console started now holds no state from before the change. It
        // may never become ready (the /v1 Run cache needs runs list/watch).
        p.console = fresh_console(dir.path(), false);
        p.console.wait_live();
        if resources.iter().any(|r| r == "runs") {
            // A time on purpose: that /ready stays 503 is seen only by
            // waiting past the moment a Console with the rule is ready.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let (code, body) = p.ready_answer();
            if code != 503 || !body.contains("the /v1 Run cache") {
                failures.push(format!(
                    "without the rule for {resources:?}, /ready answered {code} {body:?}, not 503 waiting for the /v1 Run cache"
                ));
            }
        }
        for res in &resources {
            let broken = until(&p, res, |c| c != 200).await;
            if broken == 200 {
                failures.push(format!(
                    "without the rule for {resources:?}, {res} still works"
                ));
            }
        }
        apply(&role);
        p.console = fresh_console(dir.path(), true);
        for res in &resources {
            assert_eq!(
                until(&p, res, |c| c == 200).await,
                200,
                "{res} does not recover"
            );
        }
    }

    // The ConfigMap reader binding: without it the Console never becomes ready.
    let out = env().kubectl(
        Some(env().token("admin")),
        &[
            "-n",
            "kube-system",
            "delete",
            "rolebinding",
            "kruntimes-console-authentication-reader",
        ],
    );
    assert!(out.status.success());
    // The removal has reached the authorizer when the Console's
    // ServiceAccount may no longer read the ConfigMap.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = env().kubectl(
            Some(env().token("admin")),
            &[
                "auth",
                "can-i",
                "get",
                "configmaps/extension-apiserver-authentication",
                "-n",
                "kube-system",
                "--as",
                "system:serviceaccount:kruntimes-system:kruntimes-console",
            ],
        );
        if String::from_utf8_lossy(&out.stdout).trim() == "no" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Console may still read extension-apiserver-authentication: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.console = fresh_console(dir.path(), false);
    p.console.wait_live();
    // A time on purpose: that the Console never becomes ready is seen only
    // by waiting, as above for the Run cache: 3 s after it is live.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ready = p.ready();
    let dir2 = tempfile::tempdir().unwrap();
    let f = dir2.path().join("b.json");
    std::fs::write(&f, binding.to_string()).unwrap();
    let out = env().kubectl(
        Some(env().token("admin")),
        &["create", "-f", f.to_str().unwrap()],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ready, 503,
        "the Console became ready without reading extension-apiserver-authentication"
    );
    p.console = fresh_console(dir.path(), true);
    assert_eq!(p.ready(), 200);

    assert!(
        failures.is_empty(),
        "rules that nothing needs: {failures:#?}"
    );
}
