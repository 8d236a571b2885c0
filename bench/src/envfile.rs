//! The bench environment: the `export NAME=VALUE` lines `hack/testenv up`
//! wrote to `$STATE/env.sh`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

/// Variables of one `hack/testenv` environment.
#[derive(Clone, Debug)]
pub struct BenchEnv {
    vars: BTreeMap<String, String>,
}

impl BenchEnv {
    /// Reads `<state>/env.sh`.
    pub fn load(state: &Path) -> Result<Self> {
        let path = state.join("env.sh");
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {}; start the environment with `KRT_PROFILE=release hack/testenv up --with-console --state {}`",
                path.display(),
                state.display()
            )
        })?;
        let vars = text
            .lines()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let env = Self { vars };
        env.var("CONSOLE_APISERVER_URL")
            .context("the environment was started without --with-console")?;
        Ok(env)
    }

    pub fn var(&self, name: &str) -> Result<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .ok_or_else(|| anyhow!("the environment has no {name}"))
    }

    pub fn state(&self) -> Result<PathBuf> {
        Ok(PathBuf::from(self.var("TESTENV_STATE")?))
    }

    /// The PID of a process the environment started (`console`, `kubelet`, `kube-apiserver`).
    pub fn pid(&self, name: &str) -> Result<u32> {
        let path = self.state()?.join("run").join(format!("{name}.pid"));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        text.trim()
            .parse()
            .with_context(|| format!("{}: not a PID", path.display()))
    }

    /// A `kubectl` command against the environment as the holder of `token`.
    pub fn kubectl(&self, token: &str) -> Result<std::process::Command> {
        let empty = self.state()?.join("bench-empty.kubeconfig");
        if !empty.exists() {
            std::fs::write(&empty, "apiVersion: v1\nkind: Config\n")?;
        }
        let mut cmd = std::process::Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&empty)
            .arg("--server")
            .arg(self.var("TESTENV_APISERVER")?)
            .arg("--certificate-authority")
            .arg(self.var("TESTENV_CA")?)
            .arg("--token")
            .arg(token);
        Ok(cmd)
    }
}
