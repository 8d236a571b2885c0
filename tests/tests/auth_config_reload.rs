//! The front-proxy configuration is read from ConfigMap
//! kube-system/extension-apiserver-authentication and follows its changes
//! without a restart. This binary edits that cluster-wide ConfigMap, so it
//! holds one test (test binaries run one after another) and restores it.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kruntimes_tests::env::{ConsoleProcess, env};
use kruntimes_tests::objects;
use kube::Api;
use kube::api::{Patch, PatchParams};

/// kube-system's extension-apiserver-authentication, as the admin.
async fn auth_configmap() -> Api<ConfigMap> {
    Api::namespaced(env().admin().await, "kube-system")
}

async fn set_allowed_names(value: &str) {
    let patch = serde_json::json!({"data": {"requestheader-allowed-names": value}});
    auth_configmap()
        .await
        .patch(
            "extension-apiserver-authentication",
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap_or_else(|e| panic!("patching the ConfigMap: {}", objects::describe(&e)));
}

async fn allowed_names() -> String {
    let cm = auth_configmap()
        .await
        .get("extension-apiserver-authentication")
        .await
        .unwrap_or_else(|e| panic!("reading the ConfigMap: {}", objects::describe(&e)));
    cm.data
        .and_then(|d| d.get("requestheader-allowed-names").cloned())
        .unwrap_or_default()
}

#[tokio::test]
async fn front_proxy_settings_follow_the_configmap() {
    let dir = tempfile::tempdir().unwrap();
    let console = ConsoleProcess::start(dir.path(), &[]);
    let e = env();
    let as_front_proxy = || {
        e.curl(
            &format!(
                "https://127.0.0.1:{}/apis/logs.kruntimes.io/v1alpha1",
                console.api_port
            ),
            &[
                "--cacert",
                e.var("CONSOLE_CA"),
                "--cert",
                e.pki("front-proxy-client.crt").to_str().unwrap(),
                "--key",
                e.pki("front-proxy-client.key").to_str().unwrap(),
                "-H",
                "X-Remote-User: viewer",
            ],
        )
        .0
    };
    assert_eq!(as_front_proxy(), 200);
    let original = allowed_names().await;
    assert!(original.contains("front-proxy-client"), "{original}");

    set_allowed_names(r#"["someone-else"]"#).await;
    let mut refused = false;
    for _ in 0..100 {
        if as_front_proxy() == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    set_allowed_names(&original).await;
    assert!(refused, "the new allowed names were not applied");
    let mut back = false;
    for _ in 0..100 {
        if as_front_proxy() == 200 {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "the restored allowed names were not applied");
    // The shared Console follows too: wait until kube-apiserver sees the APIService Available again.
    for _ in 0..150 {
        let out = e.kubectl(
            Some(e.token("admin")),
            &["get", "--raw", "/apis/logs.kruntimes.io/v1alpha1"],
        );
        if out.status.success() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the aggregated API did not come back");
}
