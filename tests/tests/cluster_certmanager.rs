//! The chart's cert-manager mode on the real node of `hack/cluster`, with
//! cert-manager itself (controller and CA injector built from the pinned
//! module of hack/cert-manager, `hack/cluster cert-manager`): a self-signed
//! Issuer signs a CA Certificate, a CA Issuer on top of it signs the
//! Console's Certificate (`console.tls.selfSigned=false`,
//! `console.tls.certManager.enabled=true`).
//!
//! One test, in order: the Certificate is issued into Secret
//! `kruntimes-console-tls` with the Service's DNS names and both
//! serverAuth and clientAuth; the CA injector fills the APIService
//! `caBundle` with the CA; the APIService becomes Available (kube-apiserver
//! verifies the issued certificate); both listeners serve the issued
//! certificate; a renewal (lifetime 1h, renewed 59 min before its end, so a
//! minute after issue) is served on both listeners by the same Pod without a
//! restart, and the APIService stays Available; `kruntimes-console
//! dashboard` verifies the Console with the injected `caBundle`. Skipped
//! without a cluster.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use k8s_openapi::api::core::v1::Secret;
use kruntimes_tests::cluster::{CONSOLE_NS, Cluster, RELEASE, cluster, eventually};
use kruntimes_tests::env::repo_root;
use serde_json::{Value, json};

const APISERVICE: &str = "v1alpha1.logs.kruntimes.io";
const HOST: &str = "kruntimes-console.kruntimes-system.svc";
const CA_ISSUER: &str = "kruntimes-console-ca";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `openssl` reading PEM on stdin.
fn openssl(args: &[&str], pem: &str) -> String {
    let mut child = Command::new("openssl")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(pem.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    text(&out.stdout)
}

/// SHA-256 fingerprint of a PEM certificate.
fn fingerprint(pem: &str) -> String {
    openssl(&["x509", "-noout", "-fingerprint", "-sha256"], pem)
        .trim()
        .to_owned()
}

/// The leaf certificate served at `ip:port` for the Console's name (PEM).
fn served(ip: &str, port: u16) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "timeout 10 openssl s_client -connect {ip}:{port} -servername {HOST} </dev/null 2>/dev/null | openssl x509"
        ))
        .output()
        .expect("openssl s_client");
    text(&out.stdout)
}

/// The TLS Secret's `key`, decoded.
fn secret_key(c: &Cluster, key: &str) -> Option<String> {
    let v = c.get_opt(&c.api::<Secret>(CONSOLE_NS), "kruntimes-console-tls")?;
    let b = v["data"][key].as_str()?;
    String::from_utf8(B64.decode(b).ok()?).ok()
}

/// cert-manager's Issuer `name` in the Console's namespace.
fn issuer(c: &Cluster, name: &str) -> Value {
    c.get_kind("cert-manager.io/v1", "Issuer", CONSOLE_NS, name)
        .unwrap_or_else(|| panic!("no Issuer {name}"))
}

/// cert-manager's Certificate of the Console.
fn certificate(c: &Cluster) -> Value {
    c.get_kind(
        "cert-manager.io/v1",
        "Certificate",
        CONSOLE_NS,
        "kruntimes-console",
    )
    .expect("the Console's Certificate")
}

struct Cleanup<'a> {
    c: &'a Cluster,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.c.helm(&[
            "uninstall",
            RELEASE,
            "-n",
            CONSOLE_NS,
            "--wait",
            "--timeout",
            "2m",
        ]);
        for kind in ["Certificate", "Issuer"] {
            let _ = self
                .c
                .delete_all("cert-manager.io/v1", kind, Some(CONSOLE_NS), "");
        }
        // cert-manager leaves the Secrets it wrote.
        let secrets = self.c.api::<Secret>(CONSOLE_NS);
        for name in ["kruntimes-console-tls", CA_ISSUER] {
            let _ = self.c.block(secrets.delete(name, &Default::default()));
        }
    }
}

#[test]
fn cert_manager_issues_injects_and_renews_the_consoles_certificate() {
    let Some(c) = cluster("cert_manager_issues_injects_and_renews_the_consoles_certificate") else {
        return;
    };
    let _cleanup = Cleanup { c };

    // ---- cert-manager on the cluster (built once per pin; cached)
    let out = Command::new(repo_root().join("hack/cluster"))
        .args(["cert-manager", "--state"])
        .arg(c.state())
        .output()
        .expect("hack/cluster cert-manager");
    assert!(
        out.status.success(),
        "hack/cluster cert-manager: {}",
        text(&out.stderr)
    );

    // ---- a self-signed Issuer, a CA from it, and a CA Issuer on top
    c.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {CONSOLE_NS}}}\n"
    ));
    for doc in [
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
            "metadata": {"name": "selfsigned", "namespace": CONSOLE_NS},
            "spec": {"selfSigned": {}}}),
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
            "metadata": {"name": CA_ISSUER, "namespace": CONSOLE_NS},
            "spec": {"isCA": true, "commonName": "kruntimes-console-test-ca", "secretName": CA_ISSUER,
                     "duration": "2160h",
                     "privateKey": {"algorithm": "ECDSA", "size": 256},
                     "issuerRef": {"name": "selfsigned", "kind": "Issuer"}}}),
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
            "metadata": {"name": CA_ISSUER, "namespace": CONSOLE_NS},
            "spec": {"ca": {"secretName": CA_ISSUER}}}),
    ] {
        c.apply(&doc.to_string());
    }
    eventually("the CA Issuer Ready", 120, || {
        let v = issuer(c, CA_ISSUER);
        ready(&v).then_some(())
    });

    // ---- the chart in cert-manager mode
    let (repo, tag) = c.console_image();
    c.helm_ok(&[
        "install",
        RELEASE,
        "chart",
        "-n",
        CONSOLE_NS,
        "--set",
        "console.replicas=1",
        "--set",
        &format!("console.image.repository={repo}"),
        "--set",
        &format!("console.image.tag={tag}"),
        "--set",
        "console.image.pullPolicy=Never",
        "--set",
        "console.tls.selfSigned=false",
        "--set",
        "console.tls.certManager.enabled=true",
        "--set",
        &format!("console.tls.certManager.issuerRef.name={CA_ISSUER}"),
        "--set",
        "console.tls.certManager.duration=1h",
        "--set",
        "console.tls.certManager.renewBefore=3540s",
        "--wait",
        "--timeout",
        "5m",
    ]);
    let cert = certificate(c);
    assert!(ready(&cert), "the Certificate is Ready: {cert}");
    assert_eq!(cert["spec"]["issuerRef"]["name"], CA_ISSUER);

    // The Secret: tls.crt, tls.key and ca.crt; the certificate's names and usages.
    let ca = secret_key(c, "ca.crt").expect("ca.crt in kruntimes-console-tls");
    assert!(secret_key(c, "tls.key").is_some(), "tls.key");
    let first = secret_key(c, "tls.crt").expect("tls.crt");
    let info = openssl(&["x509", "-noout", "-text"], &first);
    for name in [
        "DNS:kruntimes-console,",
        "DNS:kruntimes-console.kruntimes-system,",
        "DNS:kruntimes-console.kruntimes-system.svc,",
        "DNS:kruntimes-console.kruntimes-system.svc.cluster.local",
    ] {
        assert!(info.contains(name), "{name} in the certificate: {info}");
    }
    assert!(
        info.contains("TLS Web Server Authentication")
            && info.contains("TLS Web Client Authentication"),
        "serverAuth and clientAuth: {info}"
    );
    assert!(
        info.contains("Issuer: CN = kruntimes-console-test-ca")
            || info.contains("Issuer: CN=kruntimes-console-test-ca"),
        "issued by the CA Issuer: {info}"
    );
    // The CA Secret's CA, the one the TLS Secret names.
    let ca_secret = c.get(&c.api::<Secret>(CONSOLE_NS), CA_ISSUER);
    let ca_cert = text(
        &B64.decode(ca_secret["data"]["tls.crt"].as_str().unwrap())
            .unwrap(),
    );
    assert_eq!(
        fingerprint(&ca),
        fingerprint(&ca_cert),
        "ca.crt is the CA's"
    );

    // ---- the CA injector fills the APIService caBundle; it becomes Available
    let apiservice = c.get(&c.apiservices(), APISERVICE);
    assert_eq!(
        apiservice["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        format!("{CONSOLE_NS}/kruntimes-console")
    );
    eventually("the CA injector's caBundle", 120, || {
        let v = c.get(&c.apiservices(), APISERVICE);
        let bundle = v["spec"]["caBundle"].as_str()?;
        let pem = text(&B64.decode(bundle).ok()?);
        (fingerprint(&pem) == fingerprint(&ca)).then_some(())
    });
    eventually("APIService Available", 180, || {
        c.apiservice_available(APISERVICE).then_some(())
    });
    let discovery = c
        .get_raw("/apis/logs.kruntimes.io/v1alpha1")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(discovery.contains("runs/log"), "{discovery}");

    // ---- both listeners serve the issued certificate
    let pods = c.wait_console_pods(1);
    let pod_uid = pods[0]["metadata"]["uid"].as_str().unwrap().to_owned();
    let ip = pods[0]["status"]["podIP"].as_str().unwrap().to_owned();
    // Every certificate the Secret held, in order, from here on.
    let mut issued: Vec<String> = vec![fingerprint(&first)];
    let track = |c: &Cluster, issued: &mut Vec<String>| {
        if let Some(pem) = secret_key(c, "tls.crt") {
            let f = fingerprint(&pem);
            if issued.last() != Some(&f) {
                issued.push(f);
            }
        }
    };
    let mut initial = BTreeSet::new();
    for port in [9443, 8443] {
        let f = eventually(
            &format!("{ip}:{port} serves an issued certificate"),
            180,
            || {
                track(c, &mut issued);
                let f = fingerprint(&served(&ip, port));
                issued.contains(&f).then_some(f)
            },
        );
        initial.insert((port, f));
    }
    eprintln!("served at first: {initial:?}");

    // ---- a renewal, picked up by both listeners without a restart
    let renewed = eventually("cert-manager renews the certificate", 240, || {
        track(c, &mut issued);
        let v = certificate(c);
        (v["status"]["revision"].as_i64().unwrap_or(0) >= 2 && issued.len() >= 2).then_some(v)
    });
    eprintln!(
        "renewed: revision {}, {} certificate(s) seen in the Secret",
        renewed["status"]["revision"],
        issued.len()
    );
    for port in [9443, 8443] {
        let was = initial
            .iter()
            .find(|(p, _)| *p == port)
            .map(|(_, f)| f.clone())
            .unwrap();
        eventually(
            &format!("{ip}:{port} serves a renewed certificate"),
            300,
            || {
                track(c, &mut issued);
                let f = fingerprint(&served(&ip, port));
                let position = issued.iter().position(|i| *i == f)?;
                let before = issued.iter().position(|i| *i == was)?;
                (position > before).then_some(())
            },
        );
    }
    let pods = c.console_pods();
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["metadata"]["uid"], pod_uid.as_str(), "the same Pod");
    assert_eq!(
        pods[0]["status"]["containerStatuses"][0]["restartCount"], 0,
        "no restart"
    );
    eventually("APIService Available after the renewal", 120, || {
        c.apiservice_available(APISERVICE).then_some(())
    });
    let discovery = c
        .get_raw("/apis/logs.kruntimes.io/v1alpha1")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(discovery.contains("runs/log"), "{discovery}");

    // ---- the dashboard proxy verifies the Console with the injected caBundle
    let bin = kruntimes_tests::env::bin_dir().join("kruntimes-console");
    let mut proxy = Command::new(&bin)
        .args([
            "dashboard",
            "--kubeconfig",
            c.var("KUBECONFIG"),
            "--port",
            "0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kruntimes-console dashboard");
    let mut err = BufReader::new(proxy.stderr.take().unwrap());
    let mut line = String::new();
    let mut said = String::new();
    while err.read_line(&mut line).unwrap_or(0) > 0 {
        said.push_str(&line);
        if line.contains("takes your kubeconfig credential") || said.len() > 64 << 10 {
            break;
        }
        line.clear();
    }
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(
        said.contains(&format!("against the caBundle of APIService {APISERVICE}"))
            && said.contains("as user \"admin\""),
        "{said}"
    );
}

fn ready(v: &Value) -> bool {
    v["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}
