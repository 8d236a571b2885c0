//! The peer of the `/v1` benchmark: nginx (Debian `nginx-light`) as the
//! reverse proxy an operator would otherwise put in front of a Runtime
//! gateway — TLS from clients, mutually authenticated TLS to the gateway over
//! kept-alive upstream connections, a JSON access log, and no
//! authentication at all. It sends the gateway what the Console sends for
//! the benchmark's caller: that caller's identity fields (fixed in the
//! configuration), an invocation ID (the caller's, else one it makes), the
//! caller's `Authorization` dropped; so the gateway does the same work behind
//! both, and both callers get the same answer body. It offers HTTP/2 and
//! HTTP/1.1 (ALPN), as the Console does: `wrk` speaks HTTP/1.1, `h2load`
//! HTTP/2.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// Files the proxy is configured with.
pub struct NginxConfig<'a> {
    /// Where its configuration, logs and PID file go (created).
    pub dir: &'a Path,
    /// Address it listens on (`127.0.0.1:PORT`).
    pub listen: &'a str,
    pub server_cert: &'a Path,
    pub server_key: &'a Path,
    /// The gateway, `127.0.0.1:PORT`.
    pub upstream: &'a str,
    /// The name the gateway's certificate is verified for.
    pub upstream_name: &'a str,
    pub upstream_ca: &'a Path,
    pub client_cert: &'a Path,
    pub client_key: &'a Path,
    /// Worker processes (the Console runs as many tokio workers as CPUs).
    pub workers: usize,
    /// The identity sent to the gateway: the one the Console forwards for
    /// the benchmark's token.
    pub identity: &'a Identity,
}

/// A caller's identity as the API server reports it (`SelfSubjectReview`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user: String,
    pub uid: Option<String>,
    pub groups: Vec<String>,
    /// `extra`, by key.
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl Identity {
    /// The identity in `kubectl auth whoami -o json`'s output.
    pub fn from_whoami(json: &[u8]) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_slice(json).context("whoami: not JSON")?;
        let info = &v["status"]["userInfo"];
        let user = info["username"]
            .as_str()
            .context("whoami: no status.userInfo.username")?
            .to_owned();
        let uid = info["uid"].as_str().map(str::to_owned);
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        let extra = info["extra"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default();
        Ok(Self {
            user,
            uid,
            groups: strings(&info["groups"]),
            extra,
        })
    }

    /// The identity as the Console sends it to the gateway: its own
    /// `identity_fields`, so the two cannot drift apart.
    pub fn fields(&self) -> Vec<(String, String)> {
        let caller = kruntimes_core::auth::Caller {
            user: self.user.clone(),
            uid: self.uid.clone(),
            groups: self.groups.clone(),
            extra: self.extra.clone(),
            method: kruntimes_core::auth::AuthMethod::BearerToken,
            token: None,
            expires_at: None,
        };
        let mut fields = Vec::new();
        kruntimes_console_http::runtime_access::policy::identity_fields(&caller, |n, v| {
            fields.push((n.to_owned(), v.to_owned()));
        });
        fields
    }

    /// `proxy_set_header` lines for [`Identity::fields`]; a value nginx
    /// would read as syntax is refused.
    fn directives(&self) -> Result<String> {
        let mut out = String::new();
        for (name, value) in self.fields() {
            ensure!(
                !value.is_empty()
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && !b"\"';$\\{}".contains(&b)),
                "{name} {value:?}: not a value this configuration can carry"
            );
            out.push_str(&format!(
                "            proxy_set_header {name} \"{value}\";\n"
            ));
        }
        Ok(out)
    }
}

/// A running nginx; stopped (and waited for) on drop.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Nginx {
    /// `nginx` must be installed, and `wrk` or `h2load` to drive it:
    /// `apt-get install nginx-light wrk nghttp2-client`.
    pub fn start(c: &NginxConfig<'_>) -> Result<Self> {
        which("nginx")?;
        std::fs::create_dir_all(c.dir).with_context(|| format!("creating {}", c.dir.display()))?;
        let d = c.dir.display();
        let conf = format!(
            r#"worker_processes {workers};
daemon off;
master_process on;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    log_format json escape=json '{{"time":"$time_iso8601","request_id":"$request_id","method":"$request_method","path":"$uri","code":$status,"ms":$request_time}}';
    access_log {d}/access.log json;
    map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}
    map $http_x_kruntime_invocation_id $invocation_id {{
        default $http_x_kruntime_invocation_id;
        '' inv-$request_id;
    }}
    upstream gateway {{
        server {upstream};
        keepalive 128;
    }}
    server {{
        listen {listen} ssl http2;
        # nginx 1.22 (Debian 12) leaves TLS 1.3 out by default, on both
        # sides; the Console and its gateway client negotiate TLS 1.3.
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        keepalive_requests 1000000;
        location / {{
            proxy_pass https://gateway;
            proxy_http_version 1.1;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Host {name}:{upstream_port};
            proxy_set_header Authorization "";
{identity}            proxy_set_header X-Kruntime-Invocation-ID $invocation_id;
            proxy_ssl_protocols TLSv1.2 TLSv1.3;
            proxy_ssl_certificate {ccert};
            proxy_ssl_certificate_key {ckey};
            proxy_ssl_trusted_certificate {ca};
            proxy_ssl_verify on;
            proxy_ssl_name {name};
            proxy_ssl_server_name on;
            proxy_ssl_session_reuse on;
            proxy_read_timeout 120s;
        }}
    }}
}}
"#,
            workers = c.workers,
            upstream = c.upstream,
            listen = c.listen,
            cert = c.server_cert.display(),
            key = c.server_key.display(),
            ccert = c.client_cert.display(),
            ckey = c.client_key.display(),
            ca = c.upstream_ca.display(),
            name = c.upstream_name,
            upstream_port = c.upstream.rsplit_once(':').map_or("443", |(_, p)| p),
            identity = c.identity.directives()?,
        );
        let path = c.dir.join("nginx.conf");
        std::fs::write(&path, conf)?;
        let child = Command::new("nginx")
            .arg("-c")
            .arg(&path)
            .arg("-p")
            .arg(c.dir)
            .arg("-e")
            .arg(c.dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting nginx")?;
        let mut n = Self {
            child,
            dir: c.dir.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while n.pids().map(|p| p.len()).unwrap_or(0) < c.workers + 1 {
            if let Some(status) = n.child.try_wait()? {
                bail!(
                    "nginx exited with {status}; see {}/error.log",
                    n.dir.display()
                );
            }
            ensure!(Instant::now() < deadline, "nginx did not start in 10 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(n)
    }

    /// The master and its workers.
    pub fn pids(&self) -> Result<Vec<u32>> {
        let master = self.child.id();
        let mut pids = vec![master];
        let children = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
            .unwrap_or_default();
        pids.extend(
            children
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
        Ok(pids)
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGQUIT: graceful stop of the master and its workers.
        let _ = Command::new("kill")
            .args(["-QUIT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails with the package to install when `cmd` is not on `PATH`.
pub fn which(cmd: &str) -> Result<()> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
        .unwrap_or(false);
    ensure!(
        found,
        "{cmd} is not installed: apt-get install -y nginx-light wrk nghttp2-client"
    );
    Ok(())
}

/// One `wrk` pass's result.
#[derive(Debug, Clone)]
pub struct WrkPass {
    pub requests: u64,
    pub seconds: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Connect, read, write, timeout errors and non-2xx answers.
    pub errors: u64,
    /// The TLS version and cipher the client negotiated, when it says
    /// (`h2load` does, `wrk` does not).
    pub tls: Option<String>,
}

/// Runs `wrk` for `seconds` with `conns` keep-alive connections POSTing
/// `body` to `url` with `headers`; every connection goes to 127.0.0.1.
pub fn wrk(
    dir: &Path,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
    conns: usize,
    seconds: u64,
) -> Result<WrkPass> {
    which("wrk")?;
    ensure!(
        url.starts_with("https://127.0.0.1:"),
        "wrk only talks to 127.0.0.1, not {url}"
    );
    let lua = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut script = format!("wrk.method = \"POST\"\nwrk.body = \"{}\"\n", lua(body));
    for (k, v) in headers {
        script.push_str(&format!("wrk.headers[\"{}\"] = \"{}\"\n", lua(k), lua(v)));
    }
    script.push_str(
        r#"done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout + e.status))
end
"#,
    );
    let path = dir.join("wrk.lua");
    std::fs::write(&path, script)?;
    let threads = conns.clamp(1, 2);
    let out = Command::new("wrk")
        .args([
            "-t",
            &threads.to_string(),
            "-c",
            &conns.to_string(),
            "-d",
            &format!("{seconds}s"),
            "--timeout",
            "10s",
            "-s",
        ])
        .arg(&path)
        .arg(url)
        .output()
        .context("running wrk")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "wrk failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("WRK "))
        .with_context(|| format!("no result line from wrk: {stdout}"))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("wrk result {line:?}"))?;
    ensure!(f.len() == 5, "wrk result {line:?}");
    Ok(WrkPass {
        requests: f[0],
        seconds: f[1] as f64 / 1e6,
        p50_ms: f[2] as f64 / 1e3,
        p99_ms: f[3] as f64 / 1e3,
        errors: f[4],
        tls: None,
    })
}

/// Runs `h2load` (HTTP/2, ALPN `h2`) for `seconds` with `clients`
/// connections of `streams` concurrent streams each, POSTing `body` to `url`
/// with `headers`; every connection goes to 127.0.0.1. Latencies are
/// h2load's mean and maximum (it reports no percentiles), in the
/// `p50_ms` and `p99_ms` fields.
pub fn h2load(
    dir: &Path,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
    clients: usize,
    streams: usize,
    seconds: u64,
) -> Result<WrkPass> {
    which("h2load")?;
    ensure!(
        url.starts_with("https://127.0.0.1:"),
        "h2load only talks to 127.0.0.1, not {url}"
    );
    let data = dir.join("h2load-body");
    std::fs::write(&data, body)?;
    let mut cmd = Command::new("h2load");
    cmd.args(["-t", &clients.clamp(1, 2).to_string()])
        .args(["-c", &clients.to_string()])
        .args(["-m", &streams.to_string()])
        .args(["-D", &seconds.to_string()])
        .arg("-d")
        .arg(&data);
    for (k, v) in headers {
        cmd.arg("-H")
            .arg(format!("{}: {v}", k.to_ascii_lowercase()));
    }
    let out = cmd.arg(url).output().context("running h2load")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "h2load failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        stdout.contains("Application protocol: h2"),
        "h2load did not negotiate h2: {stdout}"
    );
    parse_h2load(&stdout).with_context(|| format!("h2load output: {stdout}"))
}

/// The figures of h2load's report.
fn parse_h2load(out: &str) -> Result<WrkPass> {
    let line = |prefix: &str| {
        out.lines()
            .map(str::trim_start)
            .find_map(|l| l.strip_prefix(prefix))
            .with_context(|| format!("no {prefix:?} line"))
    };
    // "finished in 8.00s, 1234.50 req/s, 1.2MB/s"
    let seconds = line("finished in ")?
        .split_once('s')
        .and_then(|(s, _)| s.parse::<f64>().ok())
        .context("finished in")?;
    // "requests: 100 total, 100 started, 100 done, 99 succeeded, 1 failed, 0 errored, 0 timeout"
    let requests = line("requests: ")?;
    let field = |name: &str| -> Result<u64> {
        requests
            .split(", ")
            .find_map(|f| f.strip_suffix(name).map(str::trim))
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("requests: {name}"))
    };
    let done = field(" done")?;
    let succeeded = field(" succeeded")?;
    // "status codes: 100 2xx, 0 3xx, 0 4xx, 0 5xx"
    let ok = line("status codes: ")?
        .split(", ")
        .find_map(|f| f.strip_suffix(" 2xx"))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .context("status codes")?;
    // "time for request:   1.00ms   2.00ms   1.50ms   0.10ms    90.00%"
    let times: Vec<f64> = line("time for request:")?
        .split_whitespace()
        .take(3)
        .map(millis)
        .collect::<Option<_>>()
        .context("time for request")?;
    ensure!(times.len() == 3, "time for request");
    Ok(WrkPass {
        requests: done,
        seconds,
        p50_ms: times[2],
        p99_ms: times[1],
        errors: (done - succeeded) + (succeeded - ok.min(succeeded)),
        // "TLS Protocol: TLSv1.3" and "Cipher: TLS_AES_128_GCM_SHA256"
        tls: line("TLS Protocol: ")
            .and_then(|v| Ok(format!("{} {}", v.trim(), line("Cipher: ")?.trim())))
            .ok(),
    })
}

/// The TLS version and cipher an OpenSSL client with its defaults (as
/// `wrk`'s) negotiates with `addr` (`127.0.0.1:PORT`): `TLSv1.3
/// TLS_AES_256_GCM_SHA384`.
pub fn tls_probe(addr: &str) -> Result<String> {
    which("openssl")?;
    ensure!(
        addr.starts_with("127.0.0.1:"),
        "the probe only talks to 127.0.0.1, not {addr}"
    );
    let out = Command::new("timeout")
        .args(["10", "openssl", "s_client", "-connect", addr])
        .args(["-alpn", "http/1.1"])
        .stdin(Stdio::null())
        .output()
        .context("running openssl s_client")?;
    parse_s_client(&String::from_utf8_lossy(&out.stdout))
        .with_context(|| format!("openssl s_client -connect {addr}"))
}

/// `New, TLSv1.3, Cipher is TLS_AES_256_GCM_SHA384` → `TLSv1.3 TLS_AES_256_GCM_SHA384`.
fn parse_s_client(out: &str) -> Result<String> {
    out.lines()
        .find_map(|l| {
            let (version, cipher) = l.strip_prefix("New, ")?.split_once(", Cipher is ")?;
            Some(format!("{version} {}", cipher.trim()))
        })
        .context("no \"New, ..., Cipher is ...\" line: no TLS session")
}

/// h2load's durations: `12us`, `1.50ms`, `2.00s`.
fn millis(s: &str) -> Option<f64> {
    if let Some(v) = s.strip_suffix("us") {
        v.parse::<f64>().ok().map(|v| v / 1e3)
    } else if let Some(v) = s.strip_suffix("ms") {
        v.parse().ok()
    } else {
        s.strip_suffix('s')?.parse::<f64>().ok().map(|v| v * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2load_report_is_read() {
        let out = "finished in 8.00s, 1234.50 req/s, 1.20MB/s
requests: 9876 total, 9880 started, 9876 done, 9870 succeeded, 6 failed, 0 errored, 0 timeout
status codes: 9869 2xx, 0 3xx, 1 4xx, 0 5xx
traffic: 1.2MB
                     min         max         mean         sd        +/- sd
time for request:      120us     12.50ms       1.50ms       0.10ms    90.00%
";
        let p = parse_h2load(out).unwrap();
        assert_eq!(p.tls, None);
        let with_tls = format!(
            "TLS Protocol: TLSv1.3\nCipher: TLS_AES_128_GCM_SHA256\nServer Temp Key: X25519 253 bits\n{out}"
        );
        let q = parse_h2load(&with_tls).unwrap();
        assert_eq!(q.tls.as_deref(), Some("TLSv1.3 TLS_AES_128_GCM_SHA256"));
        assert_eq!(
            parse_s_client("---\nNew, TLSv1.2, Cipher is ECDHE-RSA-AES128-GCM-SHA256\n").unwrap(),
            "TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256"
        );
        assert!(parse_s_client("no peer certificate available\n").is_err());
        assert_eq!(p.requests, 9876);
        assert_eq!(p.seconds, 8.0);
        assert_eq!(p.p50_ms, 1.5);
        assert_eq!(p.p99_ms, 12.5);
        assert_eq!(p.errors, 7);
        assert_eq!(millis("120us"), Some(0.12));
        assert_eq!(millis("2.00s"), Some(2000.0));
    }

    #[test]
    fn the_identity_is_read_from_whoami_and_written_as_fields() {
        let json = br#"{"kind":"SelfSubjectReview","status":{"userInfo":{
            "username":"operator","uid":"uid-operator",
            "groups":["testenv:users","system:authenticated"],
            "extra":{"example.org/Team":["a"]}}}}"#;
        let id = Identity::from_whoami(json).unwrap();
        let lines = |fields: &[&str]| -> String {
            fields
                .iter()
                .map(|f| format!("            proxy_set_header {f};\n"))
                .collect()
        };
        assert_eq!(
            id.directives().unwrap(),
            lines(&[
                r#"x-remote-user "operator""#,
                r#"x-remote-uid "uid-operator""#,
                r#"x-remote-group "testenv:users""#,
                r#"x-remote-group "system:authenticated""#,
                r#"x-remote-extra-example.org%2f%54eam "a""#,
            ])
        );
        let no_uid = Identity {
            uid: None,
            groups: vec![],
            extra: Default::default(),
            ..id.clone()
        };
        assert_eq!(
            no_uid.directives().unwrap(),
            lines(&[r#"x-remote-user "operator""#])
        );
        assert!(Identity::from_whoami(br#"{"status":{}}"#).is_err());
        // A value nginx would read as syntax is refused, not written.
        for bad in ["a\"b", "a;b", "$x", "a b", "a\\b", "{x}", ""] {
            let id = Identity {
                user: bad.into(),
                ..id.clone()
            };
            assert!(id.directives().is_err(), "{bad:?}");
        }
    }
}
