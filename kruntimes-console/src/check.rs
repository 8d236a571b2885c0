//! `kruntimes-console check`: an installation's health from inside the
//! cluster, as the chart's `helm test` hook runs it. The APIService must be
//! Available, the Run-log API must answer discovery through kube-apiserver,
//! and every ready endpoint of the Console Service must answer `/ready` on
//! its admin port.

use std::time::Duration;

use anyhow::{Context, bail};
use http_body_util::{BodyExt, Empty};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::Api;
use kube::api::ListParams;

use crate::args::CheckArgs;

/// Runs the checks, retrying each until it passes or the timeout ends.
pub async fn run(args: CheckArgs) -> anyhow::Result<()> {
    let config = crate::root::service_account_config(args.kubeconfig.as_deref()).await?;
    let client = kube::Client::try_from(config)?;
    let deadline = tokio::time::Instant::now() + args.timeout.0;
    let mut last = String::new();
    loop {
        match once(&client, &args).await {
            Ok(report) => {
                for line in report {
                    println!("ok: {line}");
                }
                return Ok(());
            }
            Err(e) => {
                let now = format!("{e:#}");
                if now != last {
                    eprintln!("waiting: {now}");
                    last = now;
                }
            }
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("not healthy after {:?}: {last}", args.timeout.0);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

async fn once(client: &kube::Client, args: &CheckArgs) -> anyhow::Result<Vec<String>> {
    let mut report = Vec::new();
    let services: Api<APIService> = Api::all(client.clone());
    let svc = services
        .get(&args.apiservice)
        .await
        .with_context(|| format!("reading APIService {}", args.apiservice))?;
    let available = svc
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Available"));
    match available {
        Some(c) if c.status == "True" => {
            report.push(format!("APIService {} is Available", args.apiservice))
        }
        Some(c) => bail!(
            "APIService {} is not Available: {} {}",
            args.apiservice,
            c.reason.as_deref().unwrap_or(""),
            c.message.as_deref().unwrap_or("")
        ),
        None => bail!(
            "APIService {} has no Available condition yet",
            args.apiservice
        ),
    }

    let group_version = group_version(&args.apiservice)?;
    let req = http::Request::get(format!("/apis/{group_version}"))
        .body(Vec::new())
        .context("building the discovery request")?;
    let list: serde_json::Value = client
        .request(req)
        .await
        .with_context(|| format!("discovery of {group_version} through kube-apiserver"))?;
    let resources: Vec<&str> = list["resources"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    if !resources.contains(&"runs/log") {
        bail!("discovery of {group_version} does not list runs/log (got {resources:?})");
    }
    report.push(format!("discovery of {group_version} lists runs/log"));

    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), &args.namespace);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={}", args.service));
    let ready: Vec<String> = slices
        .list(&lp)
        .await
        .with_context(|| format!("listing the endpoints of Service {}", args.service))?
        .items
        .iter()
        .flat_map(|s| s.endpoints.iter())
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false))
        .flat_map(|e| e.addresses.iter().cloned())
        .collect();
    if ready.is_empty() {
        bail!("Service {} has no ready endpoint", args.service);
    }
    for addr in &ready {
        ready_probe(addr, args.admin_port).await?;
    }
    report.push(format!(
        "{} ready endpoint(s) of Service {} answer /ready",
        ready.len(),
        args.service
    ));
    Ok(report)
}

/// `v1alpha1.logs.kruntimes.io` → `logs.kruntimes.io/v1alpha1`.
fn group_version(apiservice: &str) -> anyhow::Result<String> {
    match apiservice.split_once('.') {
        Some((version, group)) if !version.is_empty() && !group.is_empty() => {
            Ok(format!("{group}/{version}"))
        }
        _ => bail!("--apiservice {apiservice:?} is not VERSION.GROUP"),
    }
}

async fn ready_probe(addr: &str, port: u16) -> anyhow::Result<()> {
    let host = if addr.contains(':') {
        format!("[{addr}]")
    } else {
        addr.to_owned()
    };
    let url = format!("http://{host}:{port}/ready");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let uri: http::Uri = url.parse().with_context(|| format!("{url}: not a URL"))?;
    let resp = tokio::time::timeout(Duration::from_secs(5), client.get(uri))
        .await
        .with_context(|| format!("{url}: no answer within 5s"))?
        .with_context(|| format!("{url}: unreachable"))?;
    let status = resp.status();
    let body = resp.into_body().collect().await.map(|b| b.to_bytes());
    if !status.is_success() {
        let text = body.map(|b| String::from_utf8_lossy(&b).trim().to_owned());
        bail!("{url} answered {status}: {}", text.unwrap_or_default());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_version_of_an_apiservice_name() {
        assert_eq!(
            group_version("v1alpha1.logs.kruntimes.io").unwrap(),
            "logs.kruntimes.io/v1alpha1"
        );
        assert!(group_version("nodots").is_err());
        assert!(group_version(".x").is_err());
    }
}
