//! The dashboard's command-line flags.

use std::path::PathBuf;

use kruntimes_core::flags::DurationArg;

/// The Console on your own machine, with your kubeconfig identity: a proxy
/// on a loopback address port-forwards (through kube-apiserver) to a ready
/// Console Pod, verifies the Console's certificate against its CA, and adds
/// your kubeconfig credential (token, exec plugin, or client certificate
/// when the Console verifies client certificates) to the requests it
/// forwards. The browser never receives the credential; it is not written
/// to disk or logged.
///
/// It serves only requests whose Host is its own address and port, and
/// state-changing requests and WebSocket upgrades only from its own Origin;
/// anything else is answered 403 and not forwarded.
///
/// LOCAL DEVELOPMENT ONLY: this is not a production authentication mode.
/// Anyone who can connect to the loopback port (any process of any user of
/// this machine) acts with your credential.
#[derive(Clone, Debug, clap::Args)]
pub struct DashboardArgs {
    /// Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context (default: its current context).
    #[arg(long)]
    pub context: Option<String>,

    /// Namespace of the Console Service.
    #[arg(long, short = 'n', default_value = "kruntimes-system")]
    pub namespace: String,

    /// Name of the Console Service.
    #[arg(long, default_value = "kruntimes-console")]
    pub service: String,

    /// Port of the Console Service to reach (its name or number).
    #[arg(long, default_value = "https")]
    pub service_port: String,

    /// Loopback address to listen on: an IP address in 127.0.0.0/8 or ::1.
    /// Any other address is refused before anything listens.
    #[arg(long, default_value = "127.0.0.1")]
    pub address: String,

    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 9080)]
    pub port: u16,

    /// Open the URL in the default browser (xdg-open, or open on macOS).
    #[arg(long)]
    pub open: bool,

    /// PEM CA bundle that verifies the Console. Without it, the caBundle of
    /// --apiservice, else key --ca-key of Secret --tls-secret, whichever the
    /// kubeconfig user may read.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,

    /// APIService whose caBundle verifies the Console.
    #[arg(long, default_value = "v1alpha1.logs.kruntimes.io")]
    pub apiservice: String,

    /// TLS Secret of the Console (in --namespace) holding its CA.
    #[arg(long, default_value = "kruntimes-console-tls")]
    pub tls_secret: String,

    /// Key of the CA bundle in --tls-secret.
    #[arg(long, default_value = "ca.crt")]
    pub ca_key: String,

    /// Name the Console's certificate must carry (default: SERVICE.NAMESPACE.svc).
    #[arg(long)]
    pub tls_server_name: Option<String>,

    /// Browser connections open at once; more are closed right after accept.
    /// Each open connection holds one port-forward stream.
    #[arg(long, default_value_t = 32)]
    pub max_connections: usize,

    /// Largest request body forwarded; a larger one gets 413 (or, without
    /// Content-Length, is cut off) and is not completed upstream.
    #[arg(long, default_value_t = 8 << 20)]
    pub max_request_bytes: usize,

    /// Largest request header block read from the browser, in bytes (at least 8192).
    #[arg(long, default_value_t = 32 << 10)]
    pub max_header_bytes: usize,

    /// A browser connection must send a complete request head within this,
    /// from its accept or from its previous response; an idle keep-alive
    /// connection is closed after it too.
    #[arg(long, default_value = "30s")]
    pub header_timeout: DurationArg,

    /// Longest wait for the Console's response head (a /v1 invoke may take
    /// up to the Console's own --access-total-timeout). Follows and
    /// WebSockets then stream without a limit.
    #[arg(long, default_value = "300s")]
    pub response_timeout: DurationArg,

    /// Longest wait to open a port-forward to a Console Pod and finish the
    /// TLS handshake with it.
    #[arg(long, default_value = "20s")]
    pub connect_timeout: DurationArg,

    /// On exit, how long to wait for the port-forwards to close.
    #[arg(long, default_value = "5s")]
    pub shutdown_timeout: DurationArg,
}

impl DashboardArgs {
    /// Checks what clap cannot.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.max_connections == 0 {
            anyhow::bail!("--max-connections must be at least 1");
        }
        if self.max_header_bytes < 8192 {
            anyhow::bail!("--max-header-bytes must be at least 8192");
        }
        for (flag, value) in [
            ("--header-timeout", self.header_timeout),
            ("--response-timeout", self.response_timeout),
            ("--connect-timeout", self.connect_timeout),
        ] {
            if value.0.is_zero() {
                anyhow::bail!("{flag} must be longer than 0s");
            }
        }
        Ok(())
    }

    /// The name the Console's certificate must carry.
    pub fn server_name(&self) -> String {
        self.tls_server_name
            .clone()
            .unwrap_or_else(|| format!("{}.{}.svc", self.service, self.namespace))
    }
}
