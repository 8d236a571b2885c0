//! Stages the web UI build (`web/dist`) for embedding. Without a build (a
//! plain `cargo build` before `npm run build`) the build fails and says how
//! to make one, unless `KRUNTIMES_CONSOLE_PLACEHOLDER_UI=1` is set: then a
//! page that says how to make one is embedded instead, and `--version` says
//! so (`KRUNTIMES_CONSOLE_VERSION`, read by `args.rs`). Only regular files
//! and folders are staged: a symbolic link is skipped, so nothing outside
//! `web/dist` can end up in the binary. Every build (debug too) embeds the
//! staged files; nothing is read from disk at run time.

use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            println!(
                "cargo:warning=skipping symbolic link {} (not embedded)",
                entry.path().display()
            );
        } else if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Set to 1 to build without the web UI (a placeholder page instead).
const PLACEHOLDER: &str = "KRUNTIMES_CONSOLE_PLACEHOLDER_UI";

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let staged = out.join("web");
    let dist = Path::new("web/dist");
    let version = std::env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
    if dist.exists() {
        println!("cargo:rerun-if-changed=web/dist");
    } else {
        // A path that does not exist reruns this script, and rebuilds the
        // crate, on every build: without a build, the folder it will
        // appear in is watched instead.
        println!("cargo:rerun-if-changed=web");
    }
    println!("cargo:rerun-if-env-changed={PLACEHOLDER}");
    let _ = std::fs::remove_dir_all(&staged);
    if dist.join("index.html").exists() {
        copy_dir(dist, &staged).expect("copying web/dist");
        println!("cargo:rustc-env=KRUNTIMES_CONSOLE_VERSION={version}");
    } else if std::env::var_os(PLACEHOLDER).is_some_and(|v| v == "1") {
        std::fs::create_dir_all(&staged).expect("creating the web staging folder");
        std::fs::write(
            staged.join("index.html"),
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kruntimes console</title></head>\
             <body><p>The web UI was not built into this binary. Run <code>npm ci &amp;&amp; npm run build</code> \
             in console/web, then rebuild.</p></body></html>",
        )
        .expect("writing the placeholder page");
        println!(
            "cargo:warning=no web UI build in console/web/dist: embedding a placeholder page ({PLACEHOLDER}=1)"
        );
        println!(
            "cargo:rustc-env=KRUNTIMES_CONSOLE_VERSION={version} (web UI: a placeholder page, built with {PLACEHOLDER}=1)"
        );
    } else {
        eprintln!(
            "console/web/dist/index.html is missing: build the web UI first \
             (`npm ci && npm run build` in console/web; hack/dev, hack/test and hack/image do it), \
             or set {PLACEHOLDER}=1 to embed a placeholder page instead"
        );
        std::process::exit(1);
    }
}
