//! Each rule of the Console's RBAC (as the chart renders it) is needed: with
//! the rule removed, the feature it serves breaks; restored, it works again.
//! This binary changes cluster-wide RBAC, so it holds one test only (test
//! binaries run one after another).

use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kruntimes_tests::env::{ConsoleProcess, Fixtures, env, free_port, unique};
use kruntimes_tests::objects;
use kube::Api;
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

/// Replaces a ClusterRole whole, as the admin.
async fn replace(admin: &kube::Client, obj: &Value) {
    objects::replace(admin, obj)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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
        let (role, binding) = (self.role.clone(), self.binding.clone());
        // Drop may run on the test's runtime, which cannot block: a thread
        // with a runtime of its own puts the RBAC back.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async {
                let client = env().admin().await;
                // Already in place is fine: creating an existing binding is refused harmlessly.
                let _ = objects::replace(&client, &role).await;
                let _ = objects::create(&client, &binding).await;
            });
        })
        .join();
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

    let admin = env().admin().await;
    let role = clean(
        objects::get_json(&Api::<ClusterRole>::all(admin.clone()), "kruntimes-console").await,
    );
    let binding = clean(
        objects::get_json(
            &Api::<RoleBinding>::namespaced(admin.clone(), "kube-system"),
            "kruntimes-console-authentication-reader",
        )
        .await,
    );
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
        replace(&admin, &reduced).await;
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
        replace(&admin, &role).await;
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
    Api::<RoleBinding>::namespaced(admin.clone(), "kube-system")
        .delete(
            "kruntimes-console-authentication-reader",
            &kube::api::DeleteParams::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("deleting the reader binding: {}", objects::describe(&e)));
    // The removal has reached the authorizer when the Console's
    // ServiceAccount may no longer read the ConfigMap.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let reviews: Api<SubjectAccessReview> = Api::all(admin.clone());
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("system:serviceaccount:kruntimes-system:kruntimes-console".to_owned()),
            groups: Some(vec![
                "system:serviceaccounts".to_owned(),
                "system:serviceaccounts:kruntimes-system".to_owned(),
                "system:authenticated".to_owned(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("kube-system".to_owned()),
                verb: Some("get".to_owned()),
                resource: Some("configmaps".to_owned()),
                name: Some("extension-apiserver-authentication".to_owned()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    loop {
        let answer = reviews
            .create(&kube::api::PostParams::default(), &review)
            .await
            .unwrap_or_else(|e| panic!("a SubjectAccessReview: {}", objects::describe(&e)));
        let status = answer.status.unwrap_or_default();
        if !status.allowed {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Console may still read extension-apiserver-authentication: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    p.console = fresh_console(dir.path(), false);
    p.console.wait_live();
    // A time on purpose: that the Console never becomes ready is seen only
    // by waiting, as above for the Run cache: 3 s after it is live.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let ready = p.ready();
    objects::create(&admin, &binding)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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
