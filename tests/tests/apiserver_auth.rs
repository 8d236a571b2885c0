//! Authentication on the aggregated listener, spoken to directly: forged
//! identity headers, front-proxy certificates, client certificates, tokens,
//! and TLS files rotated on disk.

use std::process::Command;

use kruntimes_tests::env::{ConsoleProcess, Fixtures, env};

fn url(path: &str) -> String {
    format!("{}{path}", env().var("CONSOLE_APISERVER_URL"))
}

fn ca() -> String {
    env().var("CONSOLE_CA").to_owned()
}

fn pki(f: &str) -> String {
    env().pki(f).display().to_string()
}

/// A Run in `ns` with one record "hello".
async fn run_with_log(ns: &str) -> String {
    Fixtures::new(ns).await.logged_run("run", "hello").await.run
}

fn log_url(ns: &str, run: &str) -> String {
    url(&format!(
        "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{run}/log"
    ))
}

#[tokio::test]
async fn forged_identity_headers_without_a_front_proxy_certificate_are_ignored() {
    let run = run_with_log("team-b").await;
    let target = log_url("team-b", &run);
    let forged = [
        "-H",
        "X-Remote-User: admin",
        "-H",
        "X-Remote-Group: system:masters",
    ];

    // No certificate: the headers are not an identity.
    let (code, body) = env().curl(&target, &[&["--cacert", &ca()][..], &forged[..]].concat());
    assert_eq!(code, 401, "{body}");
    assert!(!body.contains("hello"));

    // A viewer token plus forged headers: served as the viewer (403 in team-b), not as admin.
    let bearer = format!("Authorization: Bearer {}", env().token("viewer"));
    let (code, body) = env().curl(
        &target,
        &[&["--cacert", &ca(), "-H", &bearer][..], &forged[..]].concat(),
    );
    assert_eq!(code, 403, "{body}");
    assert!(body.contains(r#"User \"viewer\""#), "{body}");

    // A front-proxy-CA certificate whose CN is not an allowed name.
    let rogue = [
        "--cacert",
        &ca(),
        "--cert",
        &pki("front-proxy-rogue.crt"),
        "--key",
        &pki("front-proxy-rogue.key"),
    ];
    let (code, body) = env().curl(&target, &[&rogue[..], &forged[..]].concat());
    assert_eq!(code, 401, "{body}");
    assert!(!body.contains("hello"));

    // Positive control: the real front proxy's certificate is trusted.
    let proxy = [
        "--cacert",
        &ca(),
        "--cert",
        &pki("front-proxy-client.crt"),
        "--key",
        &pki("front-proxy-client.key"),
    ];
    let (code, body) = env().curl(&target, &[&proxy[..], &forged[..]].concat());
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("hello"));
    let as_viewer = [
        "-H",
        "X-Remote-User: viewer",
        "-H",
        "X-Remote-Group: testenv:users",
    ];
    let (code, _) = env().curl(&target, &[&proxy[..], &as_viewer[..]].concat());
    assert_eq!(code, 403);
}

#[tokio::test]
async fn client_certificates_and_tokens_authenticate() {
    let run_a = run_with_log("team-a").await;
    let run_b = run_with_log("team-b").await;
    let cert = [
        "--cacert",
        &ca(),
        "--cert",
        &pki("user-viewer.crt"),
        "--key",
        &pki("user-viewer.key"),
    ];
    let (code, body) = env().curl(&log_url("team-a", &run_a), &cert);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("hello"));
    let (code, _) = env().curl(&log_url("team-b", &run_b), &cert);
    assert_eq!(code, 403);

    let bearer = format!("Authorization: Bearer {}", env().token("viewer"));
    let (code, body) = env().curl(
        &log_url("team-a", &run_a),
        &["--cacert", &ca(), "-H", &bearer],
    );
    assert_eq!(code, 200, "{body}");

    let bad = "Authorization: Bearer not-a-real-token-1234";
    let (code, body) = env().curl(&log_url("team-a", &run_a), &["--cacert", &ca(), "-H", bad]);
    assert_eq!(code, 401);
    assert!(
        !body.contains("not-a-real-token-1234"),
        "a token is echoed: {body}"
    );
    assert!(body.contains("\"kind\":\"Status\""));

    let huge = format!("Authorization: Bearer {}", "a".repeat(17 << 10));
    let (code, _) = env().curl(
        &log_url("team-a", &run_a),
        &["--cacert", &ca(), "-H", &huge],
    );
    assert!(code == 400 || code == 431, "oversized token gave {code}");
}

#[tokio::test]
async fn discovery_openapi_and_health_need_authentication_but_no_authorization() {
    let outsider = format!("Authorization: Bearer {}", env().token("outsider"));
    for path in [
        "/apis",
        "/apis/logs.kruntimes.io",
        "/apis/logs.kruntimes.io/v1alpha1",
        "/openapi/v2",
        "/openapi/v3",
        "/healthz",
        "/livez",
        "/readyz",
    ] {
        let (code, body) = env().curl(&url(path), &["--cacert", &ca()]);
        assert_eq!(code, 401, "{path} without credentials: {body}");
        let (code, body) = env().curl(&url(path), &["--cacert", &ca(), "-H", &outsider]);
        assert_eq!(code, 200, "{path} as outsider: {body}");
    }
    let (code, body) = env().curl(
        &url("/apis/other.group/v1"),
        &["--cacert", &ca(), "-H", &outsider],
    );
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("\"reason\":\"NotFound\""));
}

fn served_serial(port: u16) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect 127.0.0.1:{port} -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -serial"
        ))
        .output()
        .expect("openssl");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn rotated_serving_certificate_is_used_without_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (crt, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::copy(env().pki("console.crt"), &crt).unwrap();
    std::fs::copy(env().pki("console.key"), &key).unwrap();
    let console = ConsoleProcess::start(
        dir.path(),
        &[
            "--apiserver-tls-cert".into(),
            crt.display().to_string(),
            "--apiserver-tls-key".into(),
            key.display().to_string(),
        ],
    );
    let before = served_serial(console.api_port);
    assert!(before.starts_with("serial="), "{before}");

    // Issue a new certificate from the same CA and swap both files in.
    let script = format!(
        "set -e; cd {d}; openssl req -newkey rsa:2048 -nodes -keyout new.key -out new.csr -subj /CN=rotated 2>/dev/null; \
         printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' > ext; \
         openssl x509 -req -in new.csr -CA {ca} -CAkey {cakey} -CAcreateserial -days 1 -out new.crt -extfile ext 2>/dev/null; \
         mv new.key tls.key; mv new.crt tls.crt",
        d = dir.path().display(),
        ca = env().pki("console-ca.crt").display(),
        cakey = env().pki("console-ca.key").display(),
    );
    assert!(
        Command::new("bash")
            .arg("-c")
            .arg(&script)
            .status()
            .unwrap()
            .success()
    );
    let after = served_serial(console.api_port);
    assert_ne!(before, after, "the rotated certificate is served");
    let bearer = format!("Authorization: Bearer {}", env().token("viewer"));
    let (code, _) = env().curl(
        &format!(
            "https://127.0.0.1:{}/apis/logs.kruntimes.io/v1alpha1",
            console.api_port
        ),
        &["--cacert", &ca(), "-H", &bearer],
    );
    assert_eq!(code, 200);
}

#[tokio::test]
async fn no_token_appears_in_the_consoles_log() {
    // Exercise every credential path first, including failures.
    let run = run_with_log("team-a").await;
    for user in ["admin", "viewer", "operator", "outsider"] {
        let bearer = format!("Authorization: Bearer {}", env().token(user));
        let _ = env().curl(
            &log_url("team-a", &run),
            &["--cacert", &ca(), "-H", &bearer],
        );
        let _ = env().kubectl(
            Some(env().token(user)),
            &[
                "get",
                "--raw",
                &format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{run}/log"),
            ],
        );
    }
    let log = std::fs::read_to_string(env().state().join("log/console.log")).expect("console log");
    assert!(!log.is_empty());
    for token in env().all_tokens() {
        assert!(
            !log.contains(&token),
            "a token appears in the Console's log"
        );
    }
}

#[tokio::test]
async fn both_listeners_speak_http1_and_http2() {
    let bearer = format!("Authorization: Bearer {}", env().token("viewer"));
    for proto in ["--http1.1", "--http2"] {
        let (code, body) = env().curl(
            &url("/apis/logs.kruntimes.io/v1alpha1"),
            &["--cacert", &ca(), proto, "-H", &bearer],
        );
        assert_eq!(code, 200, "aggregated listener over {proto}: {body}");
        let (code, body) = env().curl(
            &format!(
                "{}/api/namespaces/team-a/runs?limit=1",
                env().var("CONSOLE_URL")
            ),
            &["--cacert", &ca(), proto, "-H", &bearer],
        );
        assert_eq!(code, 200, "Console listener over {proto}: {body}");
    }
}

#[tokio::test]
async fn a_client_certificate_on_the_console_authenticates_v1_but_not_api_reads() {
    let cert = [
        "--cacert",
        &ca(),
        "--cert",
        &pki("user-viewer.crt"),
        "--key",
        &pki("user-viewer.key"),
    ];
    let (code, body) = env().curl(
        &format!("{}/api/namespaces/team-a/runs/x", env().var("CONSOLE_URL")),
        &cert,
    );
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("bearer token"), "{body}");
    let (code, body) = env().curl(&format!("{}/api/session", env().var("CONSOLE_URL")), &cert);
    assert_eq!(code, 200);
    assert!(body.contains("\"username\":\"viewer\""), "{body}");
}
