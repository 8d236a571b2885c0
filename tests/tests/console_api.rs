//! The Console listener against the real control plane: sessions and
//! cookies, credentials, the resource API with paging and filters, logs as
//! the caller, public read, and bad input.

use std::collections::HashSet;
use std::process::Command;

use futures::StreamExt;
use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{
    ConsoleProcess, Fixtures, LoggedRun, env, now_rfc3339, runtimed_line, unique,
};
use serde_json::{Value, json};

/// A generated Run: name, phase, runtime, assigned Pod.
type RunSpec = (String, String, String, String);

fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
    curl::request(method, url, headers, body.map_or(Body::None, Body::Json))
}

fn console(path: &str) -> String {
    format!("{}{path}", env().var("CONSOLE_URL"))
}

fn get_as(user: &str, path: &str) -> Reply {
    http(
        "GET",
        &console(path),
        &[("Authorization", &bearer(user))],
        None,
    )
}

/// The `name=value` of the session cookie(s) set by a reply.
fn cookie_pairs(r: &Reply) -> String {
    r.header_all("set-cookie")
        .iter()
        .filter(|c| !c.contains("Max-Age=0"))
        .filter_map(|c| c.split(';').next())
        .collect::<Vec<_>>()
        .join("; ")
}

fn host() -> String {
    env()
        .var("CONSOLE_URL")
        .trim_start_matches("https://")
        .to_owned()
}

fn origin() -> String {
    env().var("CONSOLE_URL").to_owned()
}

#[tokio::test]
async fn login_sets_a_sealed_strict_cookie_and_logout_clears_it() {
    let viewer = env().token("viewer");
    let r = http(
        "POST",
        &console("/api/session"),
        &[("Origin", &origin())],
        Some(&json!({"token": viewer}).to_string()),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        json!({"authenticated": true, "username": "viewer", "publicRead": true})
    );
    assert!(!r.body.contains(viewer));
    let set = r.header_all("set-cookie");
    assert!(!set.is_empty());
    for c in &set {
        for flag in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
            assert!(c.contains(flag), "{flag} missing in {c}");
        }
        assert!(
            !c.to_ascii_lowercase().contains("domain="),
            "cookie must be host-only: {c}"
        );
        assert!(c.starts_with("__Host-"), "{c}");
        assert!(!c.contains(viewer), "the cookie holds the raw token");
    }
    // Issue 28, item 11: logout cannot revoke a copied cookie, so its life
    // is short: one hour by default.
    assert!(set[0].contains("Max-Age=3600"), "1 hour: {}", set[0]);
    let cookie = cookie_pairs(&r);

    let me = http(
        "GET",
        &console("/api/session"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.json()["username"], "viewer");
    // The cookie reads as the viewer.
    let runs = http(
        "GET",
        &console("/api/namespaces/team-a/runs?limit=1"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(runs.code, 200, "{}", runs.body);
    assert!(runs.json().get("summary").is_none());

    // A state change with the cookie from another origin is refused.
    let evil = http(
        "DELETE",
        &console("/api/session"),
        &[("Cookie", &cookie), ("Origin", "https://evil.example")],
        None,
    );
    assert_eq!(evil.code, 403);
    let no_origin = http(
        "DELETE",
        &console("/api/session"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(no_origin.code, 403);

    let out = http(
        "DELETE",
        &console("/api/session"),
        &[
            ("Cookie", &cookie),
            ("Origin", &origin()),
            ("Host", &host()),
        ],
        None,
    );
    assert_eq!(out.code, 200);
    assert_eq!(out.json()["authenticated"], false);
    let cleared = out.header_all("set-cookie");
    assert!(
        cleared
            .iter()
            .any(|c| c.starts_with("__Host-krt-session=;") && c.contains("Max-Age=0"))
    );
    // Logout is the browser's: a copy of the cookie taken before it still
    // reads as the viewer until it expires (docs/security.md says so; the
    // token's own revocation ends it at once).
    let copy = http(
        "GET",
        &console("/api/session"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(copy.json()["username"], "viewer", "{}", copy.body);
}

/// Issue 28, item 11: without a credential no namespace is named: the list
/// and the existence check answer 401, while a signed-in viewer still gets
/// the namespaces it may read.
#[tokio::test]
async fn without_a_credential_no_namespace_is_named() {
    let anonymous = http("GET", &console("/api/namespaces"), &[], None);
    assert_eq!(anonymous.code, 401, "{}", anonymous.body);
    assert!(!anonymous.body.contains("team-b"), "{}", anonymous.body);
    assert!(anonymous.body.contains("log in"), "{}", anonymous.body);
    let check = http("GET", &console("/api/namespaces/team-b"), &[], None);
    assert_eq!(check.code, 401, "{}", check.body);
    let viewer = get_as("viewer", "/api/namespaces");
    assert_eq!(viewer.code, 200, "{}", viewer.body);
    assert!(viewer.body.contains("team-a"), "{}", viewer.body);
    // Public read of Run summaries is unchanged.
    let runs = http(
        "GET",
        &console("/api/namespaces/team-a/runs?limit=1"),
        &[],
        None,
    );
    assert_eq!(runs.code, 200, "{}", runs.body);
}

#[tokio::test]
async fn bad_logins_set_no_cookie() {
    let r = http(
        "POST",
        &console("/api/session"),
        &[],
        Some(r#"{"token":"not-a-valid-token"}"#),
    );
    assert_eq!(r.code, 401);
    assert!(r.header_all("set-cookie").is_empty());
    assert!(!r.body.contains("not-a-valid-token"));

    let r = http("POST", &console("/api/session"), &[], Some("{not json"));
    assert_eq!(r.code, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("JSON")
    );

    let big = "a".repeat(17 << 10);
    let r = http(
        "POST",
        &console("/api/session"),
        &[],
        Some(&json!({"token": big}).to_string()),
    );
    assert_eq!(r.code, 400, "{}", r.body);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("16 KiB")
    );

    let r = http(
        "POST",
        &console("/api/session"),
        &[("Origin", "https://evil.example")],
        Some(&json!({"token": env().token("viewer")}).to_string()),
    );
    assert_eq!(r.code, 403);
    assert!(r.header_all("set-cookie").is_empty());
}

#[tokio::test]
async fn a_cookie_sealed_with_another_key_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("other.key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    let other = ConsoleProcess::start(
        dir.path(),
        &[
            "--cookie-key-file".into(),
            key.display().to_string(),
            format!(
                "--console-listen=127.0.0.1:{}",
                kruntimes_tests::env::free_port()
            ),
        ],
    );
    let _ = &other;
    // Seal a cookie on the other Console (same CA, its own key)...
    let port = std::fs::read_to_string(&other.log)
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|x| x.contains("\"console\""))
                .and_then(|x| serde_json::from_str::<Value>(x).ok())
                .and_then(|v| v["console"].as_str().map(str::to_owned))
        })
        .expect("the other Console's address");
    let r = http(
        "POST",
        &format!("https://{port}/api/session"),
        &[],
        Some(&json!({"token": env().token("viewer")}).to_string()),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let cookie = cookie_pairs(&r);
    // ...and present it here.
    let me = http(
        "GET",
        &console("/api/session"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.json()["authenticated"], false);
    let detail = http(
        "GET",
        &console("/api/namespaces/team-a/runtimes/bash"),
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(detail.code, 401);
    let forged = http(
        "GET",
        &console("/api/session"),
        &[(
            "Cookie",
            "__Host-krt-session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        )],
        None,
    );
    assert_eq!(forged.json()["authenticated"], false);
}

#[tokio::test]
async fn security_headers_and_spa_fallback() {
    let r = http(
        "GET",
        &console("/namespaces/team-a/runs/some-run"),
        &[],
        None,
    );
    assert_eq!(r.code, 200);
    assert!(r.body.contains("<div id=\"root\"") || r.body.contains("<!doctype html>"));
    let h = |n: &str| {
        r.header_all(n)
            .first()
            .map(|s| s.to_string())
            .unwrap_or_default()
    };
    assert!(h("content-security-policy").contains("script-src 'self'"));
    assert!(h("content-security-policy").contains("frame-ancestors 'none'"));
    assert!(!h("content-security-policy").contains("script-src 'self' 'unsafe-inline'"));
    assert_eq!(h("x-content-type-options"), "nosniff");
    assert_eq!(h("referrer-policy"), "no-referrer");
    assert!(h("strict-transport-security").contains("max-age="));
    let api404 = http("GET", &console("/api/nope"), &[], None);
    assert_eq!(api404.code, 404);
    assert_eq!(api404.json()["error"]["reason"], "NotFound");
    // Hashed assets are immutable.
    if let Some(asset) = r
        .body
        .split("/assets/")
        .nth(1)
        .and_then(|s| s.split('"').next())
    {
        let a = http("GET", &console(&format!("/assets/{asset}")), &[], None);
        assert_eq!(a.code, 200);
        assert!(a.header_all("cache-control")[0].contains("immutable"));
    }
}

#[tokio::test]
async fn viewer_reads_team_a_only_and_outsider_is_refused() {
    for path in [
        "/api/namespaces/team-a/runs",
        "/api/namespaces/team-a/runtimes",
        "/api/namespaces/team-a/workflowruns",
    ] {
        let r = get_as("viewer", path);
        assert_eq!(r.code, 200, "{path}: {}", r.body);
        assert!(r.json()["items"].is_array());
        let b = get_as("viewer", &path.replace("team-a", "team-b"));
        assert_eq!(b.code, 403, "{path} in team-b: {}", b.body);
        assert_eq!(b.json()["error"]["reason"], "Forbidden");
        assert_eq!(b.json()["error"]["access"]["verb"], "list");
    }
    let fx = Fixtures::new("team-a").await;
    let run = unique("detail");
    fx.create_run(&run, "bash", "task", json!({})).await;
    let r = get_as("viewer", &format!("/api/namespaces/team-a/runs/{run}"));
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.json()["pod"]["state"], "absent");
    let o = get_as("outsider", &format!("/api/namespaces/team-a/runs/{run}"));
    assert_eq!(o.code, 403);
    let missing = get_as("viewer", "/api/namespaces/team-a/runs/does-not-exist");
    assert_eq!(missing.code, 404);
    // Namespaces: the viewer may not list them, so it gets only those it may
    // read Runs in (never team-b's name), and lands in team-a.
    let ns = get_as("viewer", "/api/namespaces");
    assert_eq!(ns.code, 200, "{}", ns.body);
    let body = ns.json();
    let names: Vec<&str> = body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["name"].as_str().unwrap_or_default())
        .collect();
    assert!(names.contains(&"team-a"), "{names:?}");
    assert!(!names.contains(&"team-b"), "{names:?}");
    assert_eq!(body["home"], "team-a", "{body}");
    assert_eq!(get_as("admin", "/api/namespaces").code, 200);
}

/// `GET /api/namespaces/{ns}` tells whether a namespace exists only from
/// the caller's own read (admin: 200 or 404). A viewer, whose `get` is
/// forbidden, is told nothing (`exists` absent) for a namespace that exists
/// and one that does not alike; without a credential the answer is 401.
#[tokio::test]
async fn whether_a_namespace_exists_follows_what_the_caller_may_learn() {
    let missing = unique("no-such-ns");
    let r = get_as("admin", "/api/namespaces/team-b");
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"name": "team-b", "exists": true}));
    let r = get_as("admin", &format!("/api/namespaces/{missing}"));
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.json()["exists"], false, "{}", r.body);
    for ns in ["team-b", missing.as_str()] {
        let r = get_as("viewer", &format!("/api/namespaces/{ns}"));
        assert_eq!(r.code, 200, "{}", r.body);
        assert_eq!(r.json(), json!({"name": ns}), "viewer, {ns}");
    }
    let anonymous = http(
        "GET",
        &console(&format!("/api/namespaces/{missing}")),
        &[],
        None,
    );
    assert_eq!(anonymous.code, 401, "{}", anonymous.body);
    let bad = get_as("viewer", "/api/namespaces/Not_A_Namespace");
    assert_eq!(bad.code, 400, "{}", bad.body);
}

#[tokio::test]
async fn run_detail_never_contains_env_values() {
    let fx = Fixtures::new("team-a").await;
    let run = unique("secretive");
    fx.create_run(
        &run,
        "bash",
        "task",
        json!({"env": [
            {"name": "LITERAL", "value": "literal-value-4711"},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "db-secret-4711", "key": "password-key-4711"}}}
        ]}),
    )
    .await;
    fx.set_run_status(
        &run,
        json!({"phase": "Succeeded", "outputs": {"result": "ok"}}),
    )
    .await;
    for user in ["viewer", "admin"] {
        let r = get_as(user, &format!("/api/namespaces/team-a/runs/{run}"));
        assert_eq!(r.code, 200);
        for secret in [
            "literal-value-4711",
            "db-secret-4711",
            "password-key-4711",
            "LITERAL",
            "FROM_SECRET",
            "\"env\"",
        ] {
            assert!(!r.body.contains(secret), "{secret} leaked: {}", r.body);
        }
        assert_eq!(r.json()["status"]["outputs"]["result"], "ok");
    }
}

#[tokio::test]
async fn run_detail_sections_fail_alone() {
    // A user who may read Runs but not Pods or Events sees those sections as forbidden.
    let admin = env().admin().await;
    let ns = "team-a";
    let user = "runs-only";
    let rbac = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": user, "namespace": ns},
        "rules": [{"apiGroups": ["kruntimes.io"], "resources": ["runs"], "verbs": ["get", "list"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": user, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"kind": "ServiceAccount", "name": user, "namespace": ns}]
    });
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": user, "namespace": ns}});
    kruntimes_tests::objects::apply_objects(&admin, [sa, rbac, binding])
        .await
        .expect("rbac fixture");
    let token = kruntimes_tests::objects::service_account_token(&admin, ns, user, 3600).await;

    let fx = Fixtures::new(ns).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run = unique("sections");
    fx.create_run(&run, "bash", "task", json!({})).await;
    fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
    let r = http(
        "GET",
        &console(&format!("/api/namespaces/{ns}/runs/{run}")),
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["pod"]["state"], "forbidden");
    assert_eq!(v["pod"]["access"]["resource"], "pods");
    assert_eq!(v["events"]["state"], "forbidden");
    assert_eq!(v["status"]["assignedPod"], pod.as_str());
    // The viewer may read both.
    let r = get_as("viewer", &format!("/api/namespaces/{ns}/runs/{run}"));
    assert_eq!(r.json()["pod"]["state"], "ok");
    assert_eq!(r.json()["pod"]["pod"]["uid"], pod_uid.as_str());
    assert_eq!(r.json()["events"]["state"], "ok");
}

#[tokio::test]
async fn public_read_serves_summaries_and_off_means_401() {
    let r = http("GET", &console("/api/namespaces/team-a/runs"), &[], None);
    assert_eq!(r.code, 200);
    let v = r.json();
    assert_eq!(v["summary"], true);
    for item in v["items"].as_array().unwrap() {
        assert!(
            item.get("assignedPod").is_none()
                && item.get("message").is_none()
                && item["metadata"].get("uid").is_none(),
            "{item}"
        );
    }
    assert_eq!(
        http(
            "GET",
            &console("/api/namespaces/team-a/runtimes"),
            &[],
            None
        )
        .json()["summary"],
        true
    );
    assert_eq!(
        http(
            "GET",
            &console("/api/namespaces/team-a/workflowruns"),
            &[],
            None
        )
        .json()["summary"],
        true
    );
    // Details and logs always need a credential.
    assert_eq!(
        http(
            "GET",
            &console("/api/namespaces/team-a/runtimes/bash"),
            &[],
            None
        )
        .code,
        401
    );
    assert_eq!(
        http(
            "GET",
            &console("/api/namespaces/team-a/runs/x/logs"),
            &[],
            None
        )
        .code,
        401
    );

    let dir = tempfile::tempdir().unwrap();
    let port = kruntimes_tests::env::free_port();
    let _off = ConsoleProcess::start(
        dir.path(),
        &[
            "--public-read=false".into(),
            format!("--console-listen=127.0.0.1:{port}"),
        ],
    );
    let r = http(
        "GET",
        &format!("https://127.0.0.1:{port}/api/namespaces/team-a/runs"),
        &[],
        None,
    );
    assert_eq!(r.code, 401, "{}", r.body);
    let r = http(
        "GET",
        &format!("https://127.0.0.1:{port}/api/namespaces/team-a/runs"),
        &[("Authorization", &bearer("viewer"))],
        None,
    );
    assert_eq!(r.code, 200);
}

#[tokio::test]
async fn bad_input_is_400_with_a_clear_message() {
    let cases = [
        ("/api/namespaces/Team_A/runs", "namespace"),
        ("/api/namespaces/team-a/runs/Bad_Name", "not a valid name"),
        ("/api/namespaces/team-a/runs?limit=0", "limit"),
        ("/api/namespaces/team-a/runs?limit=501", "limit"),
        ("/api/namespaces/team-a/runs?limit=abc", "limit"),
        (
            "/api/namespaces/team-a/runs?createdAfter=yesterday",
            "createdAfter",
        ),
        ("/api/namespaces/team-a/runs?phase=Exploded", "phase"),
        (
            "/api/namespaces/team-a/runs?labelSelector=a%20in%20(",
            "selector",
        ),
        ("/api/namespaces/team-a/runs/x/logs?tail=501", "tail"),
    ];
    for (path, word) in cases {
        let r = get_as("viewer", path);
        assert_eq!(r.code, 400, "{path}: {}", r.body);
        let msg = r.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            msg.to_lowercase().contains(&word.to_lowercase()),
            "{path}: {msg}"
        );
    }
    let huge = format!("Bearer {}", "a".repeat(17 << 10));
    let r = http(
        "GET",
        &console("/api/namespaces/team-a/runs"),
        &[("Authorization", &huge)],
        None,
    );
    assert!(r.code == 400 || r.code == 431, "{}", r.code);
}

#[tokio::test]
async fn logs_through_the_console_act_as_the_caller() {
    let fx = Fixtures::new("team-a").await;
    let LoggedRun { run, uid, pod } = fx.logged_run("logged", "one").await;
    let line = |m: &str| runtimed_line(&uid, &run, "team-a", &pod, "stdout", m);
    fx.append_log(&pod, &[line("two"), line("three")]);
    let r = get_as(
        "viewer",
        &format!("/api/namespaces/team-a/runs/{run}/logs?tail=2"),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let msgs: Vec<_> = r.json()["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["message"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(msgs, ["two", "three"]);
    let o = get_as(
        "outsider",
        &format!("/api/namespaces/team-a/runs/{run}/logs"),
    );
    assert_eq!(o.code, 403);
    assert!(!o.body.contains("three"));

    // Follow: NDJSON that carries a line appended while it is open.
    let mut child = Command::new("curl")
        .args([
            "-sN",
            "--max-time",
            "30",
            "--cacert",
            env().var("CONSOLE_CA"),
            "-H",
        ])
        .arg(format!("Authorization: {}", bearer("viewer")))
        .arg(console(&format!(
            "/api/namespaces/team-a/runs/{run}/logs?tail=1&follow=true"
        )))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(l);
        }
    });
    let first: Value =
        serde_json::from_str(&rx.recv_timeout(std::time::Duration::from_secs(15)).unwrap())
            .unwrap();
    assert_eq!(first["message"], "three");
    fx.append_log(&pod, &[line("four")]);
    let next: Value =
        serde_json::from_str(&rx.recv_timeout(std::time::Duration::from_secs(15)).unwrap())
            .unwrap();
    assert_eq!(next["message"], "four");
    // The browser leaving closes the stream upstream too (the gauge returns).
    let _ = child.kill();
    let _ = child.wait();
}

/// Creates `n` Runs in a fresh namespace with phases, runtimes and pods in rotation.
async fn many_runs(n: usize) -> (String, Vec<RunSpec>) {
    let admin = env().admin().await;
    let ns = unique("paging");
    let nsapi: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(admin.clone());
    let obj: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    nsapi.create(&Default::default(), &obj).await.unwrap();
    let fx = std::sync::Arc::new(Fixtures::new(&ns).await);
    let phases = ["Pending", "Running", "Succeeded", "Failed"];
    let runtimes = ["bash", "python", "node"];
    let specs: Vec<_> = (0..n)
        .map(|i| {
            (
                format!("r-{i:05}"),
                phases[i % 4].to_owned(),
                runtimes[i % 3].to_owned(),
                format!("pod-{}", i % 5),
            )
        })
        .collect();
    futures::stream::iter(specs.clone())
        .for_each_concurrent(24, |(name, phase, rt, pod)| {
            let fx = fx.clone();
            async move {
                fx.create_run(&name, &rt, "task", json!({})).await;
                fx.set_run_status(&name, json!({"phase": phase, "assignedPod": pod}))
                    .await;
            }
        })
        .await;
    (ns, specs)
}

fn page_all(ns: &str, query: &str, limit: u32) -> Vec<String> {
    let mut names = Vec::new();
    let mut cont: Option<String> = None;
    for _ in 0..10_000 {
        let mut path = format!("/api/namespaces/{ns}/runs?limit={limit}{query}");
        if let Some(c) = &cont {
            path.push_str(&format!("&continue={}", urlencode(c)));
        }
        let r = get_as("admin", &path);
        assert_eq!(r.code, 200, "{path}: {}", r.body);
        let v = r.json();
        let items = v["items"].as_array().unwrap();
        assert!(items.len() <= limit as usize);
        names.extend(
            items
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()),
        );
        match v["continue"].as_str() {
            Some(c) => cont = Some(c.to_owned()),
            None => return names,
        }
    }
    panic!("paging did not end");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn check_filters(ns: &str, specs: &[RunSpec]) {
    let all = page_all(ns, "", 173);
    assert_eq!(all.len(), specs.len());
    assert_eq!(
        all.iter().collect::<HashSet<_>>().len(),
        specs.len(),
        "each Run exactly once"
    );
    let want = |f: &dyn Fn(&RunSpec) -> bool| {
        let mut v: Vec<String> = specs.iter().filter(|s| f(s)).map(|s| s.0.clone()).collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<String>| {
        let n = v.len();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), n, "duplicates across pages");
        v
    };
    assert_eq!(
        sorted(page_all(ns, "&phase=Failed", 50)),
        want(&|s| s.1 == "Failed")
    );
    assert_eq!(
        sorted(page_all(ns, "&runtime=python", 50)),
        want(&|s| s.2 == "python")
    );
    assert_eq!(
        sorted(page_all(ns, "&assignedPod=pod-3", 50)),
        want(&|s| s.3 == "pod-3")
    );
    assert_eq!(
        sorted(page_all(ns, "&phase=Running&runtime=node", 37)),
        want(&|s| s.1 == "Running" && s.2 == "node")
    );
    assert_eq!(
        sorted(page_all(ns, "&phase=Pending,Succeeded", 200)),
        want(&|s| s.1 == "Pending" || s.1 == "Succeeded")
    );
}

/// Applies a CRD manifest of the repository (server-side, as the admin).
async fn apply_crd(admin: &kube::Client, file: &str) {
    let path = kruntimes_tests::env::repo_root().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    kruntimes_tests::objects::apply(admin, &text)
        .await
        .unwrap_or_else(|e| panic!("{file}: {e}"));
}

/// Whether kube-apiserver takes a field selector on `runs` (one namespace's Runs):
/// only when the Run CRD declares `status.phase` selectable.
async fn field_selectors_work(runs: &kube::Api<kube::api::DynamicObject>) -> bool {
    match runs
        .list_metadata(&kube::api::ListParams::default().fields("status.phase=Failed"))
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.code == 400 => false,
        Err(e) => panic!(
            "listing Runs by field: {}",
            kruntimes_tests::objects::describe(&e)
        ),
    }
}

#[tokio::test]
async fn paging_and_filters_with_and_without_selectable_fields() {
    let (ns, specs) = many_runs(2000).await;
    let admin = env().admin().await;
    let runs: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(admin.clone(), &ns, &kruntimes_tests::env::run_resource());
    // The engine's CRD declares no selectableFields: the Console filters itself.
    assert!(
        !field_selectors_work(&runs).await,
        "manifests/crds/runs.yaml selects fields, the engine's CRD does not"
    );
    check_filters(&ns, &specs);

    // A platform that adds selectableFields: the API server filters.
    apply_crd(
        &admin,
        "manifests/crds-variants/run-with-selectable-fields.yaml",
    )
    .await;
    for _ in 0..100 {
        if field_selectors_work(&runs).await {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let selects = field_selectors_work(&runs).await;
    let result = std::panic::catch_unwind(|| check_filters(&ns, &specs));
    apply_crd(&admin, "manifests/crds/runs.yaml").await;
    for _ in 0..100 {
        if !field_selectors_work(&runs).await {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(selects, "the variant CRD does not select fields");
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
    kruntimes_tests::objects::delete(
        &kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(admin),
        &ns,
    )
    .await;
}

#[tokio::test]
async fn a_browser_leaving_a_follow_releases_the_upstream_stream() {
    let fx = Fixtures::new("team-a").await;
    let LoggedRun {
        run,
        uid: _,
        pod: _,
    } = fx.logged_run("followed", "first").await;
    let dir = tempfile::tempdir().unwrap();
    let port = kruntimes_tests::env::free_port();
    let own = ConsoleProcess::start(dir.path(), &[format!("--console-listen=127.0.0.1:{port}")]);
    let gauge = || own.metric("kruntimes_console_log_follow_streams");
    assert_eq!(gauge(), Some(0.0));
    let mut child = Command::new("curl")
        .args([
            "-sN",
            "--max-time",
            "60",
            "--cacert",
            env().var("CONSOLE_CA"),
            "-H",
        ])
        .arg(format!("Authorization: {}", bearer("viewer")))
        .arg(format!(
            "https://127.0.0.1:{port}/api/namespaces/team-a/runs/{run}/logs?follow=true"
        ))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    use std::io::BufRead;
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("first"));
    assert_eq!(gauge(), Some(1.0));
    let _ = child.kill();
    let _ = child.wait();
    let mut released = false;
    for _ in 0..100 {
        if gauge() == Some(0.0) {
            released = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(released, "the follow stayed open after the browser left");
}
