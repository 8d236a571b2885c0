//! Realistic runtimed lines: one JSON object per line with the fields runtimed
//! writes (`run_uid` first), messages of 50–300 bytes that look like program
//! output (levels, paths, numbers, quoted values, now and then a tab), and
//! random Run UIDs.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One Run as it appears in runtimed lines.
#[derive(Clone, Debug)]
pub struct RunIdentity {
    pub uid: String,
    pub name: String,
    /// Set for function Runs: every line carries an invocation ID.
    pub invocation: Option<String>,
}

/// Shortest generated message.
pub const MIN_MESSAGE: usize = 50;
/// Longest generated message.
pub const MAX_MESSAGE: usize = 300;

const LEVELS: &[&str] = &["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];
const COMPONENTS: &[&str] = &[
    "worker", "fetch", "build", "pip", "pytest", "main", "loader", "http", "db", "cache",
];
const WORDS: &[&str] = &[
    "processed",
    "batch",
    "rows",
    "in",
    "ms",
    "request",
    "completed",
    "status=200",
    "GET",
    "POST",
    "/api/v1/items",
    "retrying",
    "after",
    "timeout",
    "connection",
    "reset",
    "by",
    "peer",
    "Collecting",
    "requests==2.32.3",
    "Downloading",
    "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl",
    "(18.3",
    "MB)",
    "test_parse_config",
    "PASSED",
    "FAILED",
    "assert",
    "expected",
    "got",
    "user=\"svc-build\"",
    "path=\"/workspace/src/main.py\"",
    "line",
    "Traceback",
    "(most",
    "recent",
    "call",
    "last):",
    "File",
    "KeyError:",
    "'region'",
    "bytes=65536",
    "checksum=sha256:9f2c",
    "elapsed=1.284s",
    "ok",
    "done",
    "warming",
    "model",
    "shard",
    "3/8",
    "tokens/s=412.7",
    "\tat",
    "compile",
    "src/lib.rs:42:17",
    "cache",
    "hit",
    "miss",
    "writing",
    "artifact",
    "s3://builds/out.tar.gz",
];

/// A deterministic source of runtimed lines for one Pod.
pub struct LineGen {
    rng: StdRng,
    namespace: String,
    runtime: String,
    pod: String,
}

impl LineGen {
    pub fn new(seed: u64, namespace: &str, runtime: &str, pod: &str) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            namespace: namespace.to_owned(),
            runtime: runtime.to_owned(),
            pod: pod.to_owned(),
        }
    }

    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// A random Run UID in the API server's format (a version 4 UUID).
    pub fn uid(&mut self) -> String {
        let a: u32 = self.rng.random();
        let b: u16 = self.rng.random();
        let c: u16 = self.rng.random::<u16>() & 0x0fff;
        let d: u16 = (self.rng.random::<u16>() & 0x3fff) | 0x8000;
        let e: u64 = self.rng.random::<u64>() & 0xffff_ffff_ffff;
        format!("{a:08x}-{b:04x}-4{c:03x}-{d:04x}-{e:012x}")
    }

    /// Another Run on the same Pod: a task, or (one in five) a function with invocations.
    pub fn other_run(&mut self) -> RunIdentity {
        let uid = self.uid();
        let kind = ["build", "etl", "test", "train", "fn"][self.rng.random_range(0..5)];
        let name = format!("{kind}-{:08x}", self.rng.random::<u32>());
        let invocation = (kind == "fn").then(|| format!("inv-{:012x}", self.rng.random::<u64>()));
        RunIdentity {
            uid,
            name,
            invocation,
        }
    }

    /// A message of 50–300 bytes.
    pub fn message(&mut self) -> String {
        let target = self.rng.random_range(MIN_MESSAGE..=MAX_MESSAGE);
        let mut m = String::with_capacity(target + 64);
        let level = LEVELS[self.rng.random_range(0..LEVELS.len())];
        let comp = COMPONENTS[self.rng.random_range(0..COMPONENTS.len())];
        m.push_str(level);
        m.push_str(" [");
        m.push_str(comp);
        m.push_str(&format!("-{}] ", self.rng.random_range(0..16)));
        while m.len() < target {
            if self.rng.random_range(0..4) == 0 {
                m.push_str(&self.rng.random_range(0..1_000_000u32).to_string());
            } else {
                m.push_str(WORDS[self.rng.random_range(0..WORDS.len())]);
            }
            m.push(' ');
        }
        // ASCII only, so any cut is on a character boundary.
        m.truncate(target);
        m
    }

    /// Appends one runtimed JSON line for `run` (without a newline).
    pub fn write_line(&mut self, run: &RunIdentity, message: &str, out: &mut Vec<u8>) {
        let stream = if self.rng.random_range(0..10) == 0 {
            "stderr"
        } else {
            "stdout"
        };
        self.write_line_on(run, stream, message, out);
    }

    /// Appends one runtimed JSON line on `stream` (without a newline).
    pub fn write_line_on(
        &mut self,
        run: &RunIdentity,
        stream: &str,
        message: &str,
        out: &mut Vec<u8>,
    ) {
        let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
        out.extend_from_slice(b"{\"run_uid\":\"");
        out.extend_from_slice(run.uid.as_bytes());
        out.extend_from_slice(b"\",\"run_name\":\"");
        out.extend_from_slice(run.name.as_bytes());
        out.extend_from_slice(b"\",\"namespace\":\"");
        out.extend_from_slice(self.namespace.as_bytes());
        out.extend_from_slice(b"\",\"runtime\":\"");
        out.extend_from_slice(self.runtime.as_bytes());
        out.extend_from_slice(b"\",\"pod\":\"");
        out.extend_from_slice(self.pod.as_bytes());
        out.extend_from_slice(b"\",\"stream\":\"");
        out.extend_from_slice(stream.as_bytes());
        out.extend_from_slice(b"\"");
        if let Some(inv) = &run.invocation {
            out.extend_from_slice(b",\"invocation_id\":\"");
            out.extend_from_slice(inv.as_bytes());
            out.extend_from_slice(b"\"");
        }
        out.extend_from_slice(b",\"message\":");
        out.extend_from_slice(q(message).as_bytes());
        out.push(b'}');
    }
}

/// A kubelet `timestamps=true` / CRI timestamp with nanoseconds.
pub fn rfc3339_nano(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruntimes_apiserver::logs::RunFilter;
    use kruntimes_apiserver::logs::filter::StreamFilter;

    #[test]
    fn lines_are_runtimed_records_with_bounded_messages() {
        let mut g = LineGen::new(7, "team-a", "python", "python-pool-0");
        for _ in 0..200 {
            let run = g.other_run();
            let msg = g.message();
            assert!((MIN_MESSAGE..=MAX_MESSAGE).contains(&msg.len()));
            let mut line = Vec::new();
            g.write_line(&run, &msg, &mut line);
            let v: serde_json::Value = serde_json::from_slice(&line).expect("JSON");
            assert_eq!(v["run_uid"], run.uid.as_str());
            assert_eq!(v["message"], msg.as_str());
            let f = RunFilter::new(&run.uid, StreamFilter::Both, "p");
            assert_eq!(f.record(&line, None).map(|r| r.message), Some(msg));
        }
    }
}
