//! Runtime Pods laid out as the engine's controller makes them (labels `runtime=<name>` and
//! `app=kruntimes-<name>`, containers `runtime` and then `runtimed`), bound to the fake Node of
//! `hack/testenv`, each with a loopback Pod IP of its own (`127.0.0.N`: all of 127/8 is
//! loopback on Linux), so the simulated runtimed of a Pod can serve its status endpoint on
//! `<Pod IP>:9093` as the real one does on the Pod network.
//!
//! The Pod's status (phase, IPs, container statuses) is written through kube-apiserver's
//! `pods/status`, as a kubelet writes it; so is a `runtimed` container restart.

use std::net::{Ipv4Addr, SocketAddr};

use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::runtimed::DEFAULT_STATUS_PORT;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::env::{Fixtures, env, unique};
use crate::sim::runtimed::{Mode, PodIdentity, Runtimed, RuntimedConfig, Sink};

/// The image names written into the Pod spec (nothing pulls them on the fake Node).
pub const RUNTIME_IMAGE: &str = "kruntimes/runtime-bash:test";
pub const RUNTIMED_IMAGE: &str = "kruntimes/runtimed:test";

/// A container ID as containerd reports it, new at each call.
fn container_id() -> String {
    use rand::Rng;
    let n: u128 = rand::rng().random();
    format!("containerd://{n:032x}{n:032x}")
}

/// Now with nanoseconds dropped, as the API server stores times.
fn now() -> String {
    crate::env::now_rfc3339()
}

/// A loopback address `127.0.0.N` (N from 2 to 254) where `port` is free right now, so each
/// Pod of a test gets its own and tests running side by side rarely meet.
pub fn free_loopback_ip(port: u16) -> Ipv4Addr {
    use rand::Rng;
    let start: u8 = rand::rng().random_range(2..=254);
    for i in 0..253u16 {
        let n = 2 + (u16::from(start) - 2 + i) % 253;
        let ip = Ipv4Addr::new(127, 0, 0, u8::try_from(n).unwrap_or(2));
        if std::net::TcpListener::bind((ip, port)).is_ok() {
            return ip;
        }
    }
    panic!("no loopback address 127.0.0.2-254 has port {port} free")
}

fn running_status(name: &str, started_at: &str) -> Value {
    json!({
        "name": name,
        "image": if name == "runtimed" { RUNTIMED_IMAGE } else { RUNTIME_IMAGE },
        "imageID": "",
        "containerID": container_id(),
        "ready": true,
        "started": true,
        "restartCount": 0,
        "state": {"running": {"startedAt": started_at}},
    })
}

/// A Runtime Pod and, when made by [`Fixtures::simulated_runtime_pod`], its runtimed.
pub struct RuntimePod {
    pub name: String,
    pub uid: String,
    pub ip: Ipv4Addr,
}

/// A Runtime Pod whose runtimed is simulated in this process: records go to the Pod's
/// `runtimed` log that the fake kubelet serves, the status endpoint listens on
/// `<Pod IP>:9093`.
pub struct SimulatedRuntimePod {
    pub pod: RuntimePod,
    pub runtimed: Runtimed,
    pub status_addr: SocketAddr,
}

impl Fixtures {
    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// Creates a Runtime Pod of `runtime` on the fake Node with Pod IP `ip`, Running, both
    /// containers running since now (`runtimed` with `restartCount` 0). Returns its UID.
    pub async fn create_runtime_pod(&self, name: &str, runtime: &str, ip: Ipv4Addr) -> String {
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"runtime": runtime, "app": format!("kruntimes-{runtime}")}},
            "spec": {
                "nodeName": env().var("TESTENV_NODE"),
                "containers": [
                    {"name": "runtime", "image": RUNTIME_IMAGE,
                     "ports": [{"name": "grpc", "containerPort": 9091, "protocol": "TCP"}]},
                    // As the engine's: the status port 9093 is served, not declared.
                    {"name": "runtimed", "image": RUNTIMED_IMAGE,
                     "args": ["--runtime-endpoint=127.0.0.1:9091", "--status-addr=:9093", format!("--runtime-name={runtime}")],
                     "ports": [{"name": "health", "containerPort": 9094, "protocol": "TCP"}]},
                ],
            },
        }))
        .expect("pod json");
        let created = self
            .pods()
            .create(&PostParams::default(), &pod)
            .await
            .expect("creating a Runtime Pod");
        let at = now();
        let ip = ip.to_string();
        let status = json!({"status": {
            "phase": "Running",
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": at,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": at},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": at},
                {"type": "Ready", "status": "True", "lastTransitionTime": at},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at},
                {"type": "kruntimes.io/RuntimedReady", "status": "True", "reason": "Heartbeat", "lastTransitionTime": at},
            ],
            "containerStatuses": [running_status("runtime", &at), running_status("runtimed", &at)],
        }});
        self.pods()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .expect("writing the Runtime Pod's status (a loopback podIP)");
        created.metadata.uid.expect("pod uid")
    }

    /// Records a restart of the Pod's `runtimed` container as the kubelet does:
    /// `restartCount` + 1, `lastState.terminated` with the ended container's ID and times,
    /// and a new container running since now.
    pub async fn restart_runtimed_container(&self, pod: &str) {
        let current = self.pods().get(pod).await.expect("reading the Runtime Pod");
        let value = serde_json::to_value(&current).expect("pod json");
        let mut statuses = value["status"]["containerStatuses"]
            .as_array()
            .cloned()
            .expect("the Pod has container statuses");
        let at = now();
        let runtimed = statuses
            .iter_mut()
            .find(|s| s["name"] == "runtimed")
            .expect("a runtimed container status");
        let restarts = runtimed["restartCount"].as_i64().unwrap_or(0);
        let started = runtimed["state"]["running"]["startedAt"]
            .as_str()
            .unwrap_or(&at)
            .to_owned();
        let ended_id = runtimed["containerID"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        runtimed["restartCount"] = json!(restarts + 1);
        runtimed["lastState"] = json!({"terminated": {
            "exitCode": 137, "reason": "OOMKilled",
            "startedAt": started, "finishedAt": at, "containerID": ended_id,
        }});
        runtimed["state"] = json!({"running": {"startedAt": at}});
        runtimed["containerID"] = json!(container_id());
        runtimed["ready"] = json!(true);
        // A merge patch replaces the whole list, which is what a kubelet's update amounts to.
        self.pods()
            .patch_status(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"containerStatuses": statuses}})),
            )
            .await
            .expect("recording a runtimed container restart");
    }

    /// A Runtime Pod of `runtime` (named from it) with a runtimed simulated here in `mode`:
    /// its log is the file the fake kubelet serves for the Pod's `runtimed` container, its
    /// status endpoint listens on `<Pod IP>:9093`.
    pub async fn simulated_runtime_pod(&self, runtime: &str, mode: Mode) -> SimulatedRuntimePod {
        let name = unique(runtime);
        let identity = PodIdentity {
            namespace: self.ns.clone(),
            runtime: runtime.to_owned(),
            pod: name.clone(),
        };
        let runtimed = Runtimed::new(
            RuntimedConfig::new(identity, Sink::CriFile(self.log_path(&name))).mode(mode),
        );
        // Another process may take the address between the check and the bind: try again.
        let mut bound = None;
        for _ in 0..5 {
            let ip = free_loopback_ip(DEFAULT_STATUS_PORT);
            if let Ok(addr) = runtimed
                .serve_status(SocketAddr::from((ip, DEFAULT_STATUS_PORT)))
                .await
            {
                bound = Some((ip, addr));
                break;
            }
        }
        let (ip, status_addr) = bound.expect("a loopback address for the status endpoint");
        let uid = self.create_runtime_pod(&name, runtime, ip).await;
        SimulatedRuntimePod {
            pod: RuntimePod { name, uid, ip },
            runtimed,
            status_addr,
        }
    }

    /// A simulated runtimed container restart: the Pod's log becomes the previous
    /// container's log and the Pod's status records the restart.
    pub async fn restart_simulated_runtimed(&self, sim: &SimulatedRuntimePod) {
        sim.runtimed
            .restart_container()
            .expect("moving the runtimed log to the previous container's");
        self.restart_runtimed_container(&sim.pod.name).await;
    }
}
