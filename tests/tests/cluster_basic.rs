//! The node of `hack/cluster` works for the suites that install the chart on
//! it: a Pod from a locally built image runs and its output comes back
//! through the Pod log API (kube-apiserver → kubelet → the container log that
//! containerd writes); a ClusterIP Service answers the host (kube-proxy's
//! OUTPUT rules, the path kube-apiserver takes to an APIService) and, by its
//! DNS name through CoreDNS, another Pod. Skipped without a cluster
//! (`CLUSTER_STATE`).

use k8s_openapi::api::core::v1::{Pod, Service};
use kruntimes_tests::cluster::{Cluster, cluster, eventually};
use kruntimes_tests::env::unique;
use serde_json::Value;

fn pod_json(c: &Cluster, ns: &str, pod: &str) -> Value {
    c.get(&c.api::<Pod>(ns), pod)
}

fn in_range(ip: &str, prefix: &str) -> bool {
    ip.starts_with(prefix) && ip.split('.').count() == 4
}

#[test]
fn pod_output_comes_back_through_the_pod_log() {
    let Some(c) = cluster("pod_output_comes_back_through_the_pod_log") else {
        return;
    };
    let ns = c.namespace("logs");
    let token = unique("t");
    c.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: printer, namespace: {ns}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: ["sh", "-c", "for i in 1 2 3 4 5; do echo \"line $i {token}\"; done; exec sleep 3600"]
"#,
        ns = ns.name,
        image = c.var("CLUSTER_TEST_IMAGE"),
    ));
    let want: Vec<String> = (1..=5).map(|i| format!("line {i} {token}")).collect();
    let logs = eventually("the Pod's five lines in its log", 120, || {
        let text = c
            .logs(&ns.name, "printer", Some("main"), None, false)
            .ok()?;
        (text.lines().count() >= 5).then_some(text)
    });
    assert_eq!(logs.lines().collect::<Vec<_>>(), want);

    // kubelet applies tailLines to the CRI log file.
    let tail = c.logs_ok(&ns.name, "printer", None, Some(2), false);
    assert_eq!(tail.lines().collect::<Vec<_>>(), want[3..]);

    // It ran on the cluster's node, with an address of the Pod range, and
    // containerd wrote the log under the cluster's state directory.
    let pod = pod_json(c, &ns.name, "printer");
    assert_eq!(pod["spec"]["nodeName"], c.var("CLUSTER_NODE"));
    let ip = pod["status"]["podIP"].as_str().expect("podIP");
    assert!(
        in_range(ip, "198.18.0."),
        "Pod IP {ip} outside 198.18.0.0/24"
    );
    let uid = pod["metadata"]["uid"].as_str().expect("uid");
    let log = c
        .state()
        .join("pod-logs")
        .join(format!("{}_printer_{uid}", ns.name))
        .join("main/0.log");
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(text.contains(&format!("stdout F line 5 {token}")), "{text}");
}

#[test]
fn a_cluster_ip_service_answers_the_host_and_pods_by_dns_name() {
    let Some(c) = cluster("a_cluster_ip_service_answers_the_host_and_pods_by_dns_name") else {
        return;
    };
    let ns = c.namespace("svc");
    let token = unique("body");
    c.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: web, namespace: {ns}, labels: {{app: web}}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: {image}
    imagePullPolicy: Never
    command: ["sh", "-c", "mkdir -p /tmp/www && echo {token} > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
    ports: [{{containerPort: 8080}}]
    readinessProbe:
      tcpSocket: {{port: 8080}}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: {ns}}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80, targetPort: 8080}}]
"#,
        ns = ns.name,
        image = c.var("CLUSTER_TEST_IMAGE"),
    ));
    let service = c.get(&c.api::<Service>(&ns.name), "web");
    let ip = service["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        in_range(&ip, "198.19.0."),
        "ClusterIP {ip} outside 198.19.0.0/24"
    );

    // From the host: the connection leaves no interface but the node's own.
    let body = eventually(
        "the Service answering the host on its ClusterIP",
        120,
        || {
            let out = std::process::Command::new("curl")
                .args(["-sf", "--max-time", "3", &format!("http://{ip}/")])
                .output()
                .expect("running curl");
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        },
    );
    assert_eq!(body, token);

    // From a Pod, by the Service's DNS name (CoreDNS on the cluster DNS IP).
    let host = format!("web.{}.svc.cluster.local", ns.name);
    c.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: client, namespace: {ns}}}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: {image}
    imagePullPolicy: Never
    command: ["sh", "-c", "cat /etc/resolv.conf; echo \"got $(wget -qO- http://{host}/)\""]
"#,
        ns = ns.name,
        image = c.var("CLUSTER_TEST_IMAGE"),
    ));
    let phase = eventually("the client Pod to finish", 120, || {
        let p = pod_json(c, &ns.name, "client");
        match p["status"]["phase"].as_str() {
            Some(ph @ ("Succeeded" | "Failed")) => Some(ph.to_owned()),
            _ => None,
        }
    });
    let logs = c.logs_ok(&ns.name, "client", None, None, false);
    assert_eq!(phase, "Succeeded", "{logs}");
    assert!(
        logs.contains(&format!("nameserver {}", c.var("CLUSTER_DNS"))),
        "{logs}"
    );
    assert!(logs.contains(&format!("got {token}")), "{logs}");
}
