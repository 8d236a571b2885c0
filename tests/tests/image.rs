//! The images `hack/image` builds: the Console image agrees with the `Dockerfile` (user,
//! entrypoint, exposed ports, labels, binary path), no image has a shell or a package manager,
//! the base has the nonroot user, `/tmp` and the CA bundle, every binary starts as user 65532
//! inside its image's root filesystem, the same build gives the same digest, and the sizes are
//! reported (the release binary under 25 MB, SPEC §9).
//!
//! The images come from `KRT_IMAGE_STATE` (a `hack/image --state DIR` folder, as hack/test
//! passes) or, without it, from running `hack/image` here. The archives are read with a tar
//! reader of this file, not with the writer's code.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use kruntimes_tests::env::repo_root;
use serde_json::Value;

/// The release binary limit of SPEC §9.
const MAX_BINARY_BYTES: u64 = 25_000_000;

/// One tar entry.
#[derive(Debug, Clone)]
struct Entry {
    path: String,
    mode: u32,
    uid: u64,
    gid: u64,
    mtime: u64,
    kind: u8,
    link: String,
    data: Vec<u8>,
}

impl Entry {
    fn is_file(&self) -> bool {
        self.kind == b'0' || self.kind == 0
    }
    fn is_dir(&self) -> bool {
        self.kind == b'5'
    }
}

fn octal(field: &[u8]) -> u64 {
    let s: String = field
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| b as char)
        .collect();
    u64::from_str_radix(s.trim(), 8).unwrap_or_else(|_| panic!("bad octal field {s:?}"))
}

fn cstr(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The entries of an uncompressed tar (ustar and GNU long names).
fn read_tar(bytes: &[u8]) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut at = 0;
    let mut long_name: Option<String> = None;
    while at + 512 <= bytes.len() {
        let h = &bytes[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let size = octal(&h[124..136]) as usize;
        let kind = h[156];
        let data = bytes[at + 512..at + 512 + size].to_vec();
        at += 512 + size.div_ceil(512) * 512;
        if kind == b'L' {
            long_name = Some(cstr(&data));
            continue;
        }
        let mut path = cstr(&h[0..100]);
        if &h[257..263] == b"ustar\0" {
            let prefix = cstr(&h[345..500]);
            if !prefix.is_empty() {
                path = format!("{prefix}/{path}");
            }
        }
        if let Some(long) = long_name.take() {
            path = long;
        }
        entries.push(Entry {
            path: path
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_owned(),
            mode: octal(&h[100..108]) as u32,
            uid: octal(&h[108..116]),
            gid: octal(&h[116..124]),
            mtime: octal(&h[136..148]),
            kind,
            link: cstr(&h[157..257]),
            data,
        });
    }
    entries
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running gzip -dc");
    let mut stdin = child.stdin.take().expect("gzip stdin");
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("gzip output");
    writer
        .join()
        .expect("gzip writer")
        .expect("writing to gzip");
    assert!(out.status.success(), "gzip -dc failed");
    out.stdout
}

/// An image read back from its OCI archive.
#[derive(Debug)]
struct Image {
    reference: String,
    archive: PathBuf,
    archive_bytes: u64,
    manifest_digest: String,
    config: Value,
    /// Compressed size of each layer.
    layer_bytes: Vec<u64>,
    /// The layers applied in order: path → entry (no whiteouts in these images).
    files: BTreeMap<String, Entry>,
}

impl Image {
    fn read(reference: &str, archive: &Path) -> Image {
        let bytes =
            std::fs::read(archive).unwrap_or_else(|e| panic!("reading {}: {e}", archive.display()));
        let outer: BTreeMap<String, Entry> = read_tar(&bytes)
            .into_iter()
            .map(|e| (e.path.clone(), e))
            .collect();
        let blob = |digest: &str| -> &[u8] {
            let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
            &outer
                .get(&format!("blobs/sha256/{hex}"))
                .unwrap_or_else(|| panic!("{} has no blob {digest}", archive.display()))
                .data
        };
        let layout: Value = serde_json::from_slice(&outer["oci-layout"].data).expect("oci-layout");
        assert_eq!(layout["imageLayoutVersion"], "1.0.0");
        let index: Value = serde_json::from_slice(&outer["index.json"].data).expect("index.json");
        let manifests = index["manifests"].as_array().expect("index manifests");
        assert_eq!(manifests.len(), 1, "one image per archive");
        let desc = &manifests[0];
        assert_eq!(
            desc["annotations"]["io.containerd.image.name"], reference,
            "the name containerd's importer gives the image"
        );
        let tag = reference.rsplit_once(':').expect("a tag").1;
        assert_eq!(
            desc["annotations"]["org.opencontainers.image.ref.name"],
            tag
        );
        let manifest_digest = desc["digest"].as_str().expect("digest").to_owned();
        let manifest_blob = blob(&manifest_digest);
        assert_eq!(sha256(manifest_blob), manifest_digest, "manifest digest");
        let manifest: Value = serde_json::from_slice(manifest_blob).expect("manifest");
        let config_digest = manifest["config"]["digest"]
            .as_str()
            .expect("config digest");
        let config_blob = blob(config_digest);
        assert_eq!(sha256(config_blob), config_digest, "config digest");
        let config: Value = serde_json::from_slice(config_blob).expect("config");

        let diff_ids = config["rootfs"]["diff_ids"].as_array().expect("diff_ids");
        let layers = manifest["layers"].as_array().expect("layers");
        assert_eq!(layers.len(), diff_ids.len(), "a diff_id per layer");
        let mut files = BTreeMap::new();
        let mut layer_bytes = Vec::new();
        for (layer, diff_id) in layers.iter().zip(diff_ids) {
            let digest = layer["digest"].as_str().expect("layer digest");
            let packed = blob(digest);
            assert_eq!(sha256(packed), digest, "layer digest");
            assert_eq!(layer["size"].as_u64(), Some(packed.len() as u64));
            let raw = gunzip(packed);
            assert_eq!(Some(sha256(&raw).as_str()), diff_id.as_str(), "diff_id");
            layer_bytes.push(packed.len() as u64);
            for e in read_tar(&raw) {
                assert!(
                    !e.path.rsplit('/').next().unwrap_or("").starts_with(".wh."),
                    "unexpected whiteout {}",
                    e.path
                );
                files.insert(e.path.clone(), e);
            }
        }
        Image {
            reference: reference.to_owned(),
            archive: archive.to_owned(),
            archive_bytes: bytes.len() as u64,
            manifest_digest,
            config,
            layer_bytes,
            files,
        }
    }

    fn cfg(&self) -> &Value {
        &self.config["config"]
    }

    fn file(&self, path: &str) -> &Entry {
        self.files
            .get(path)
            .unwrap_or_else(|| panic!("{} has no {path}", self.reference))
    }

    /// Unpacked size: the bytes of every regular file.
    fn unpacked_bytes(&self) -> u64 {
        self.files
            .values()
            .filter(|e| e.is_file())
            .map(|e| e.data.len() as u64)
            .sum()
    }

    /// Writes the root filesystem to `dir` (modes and owners as in the layers).
    fn unpack(&self, dir: &Path) {
        use std::os::unix::fs::{PermissionsExt, symlink};
        for e in self.files.values() {
            let to = dir.join(&e.path);
            if e.is_dir() {
                std::fs::create_dir_all(&to).expect("creating a folder");
            } else if e.kind == b'2' {
                symlink(&e.link, &to).expect("creating a symlink");
                continue;
            } else if e.is_file() {
                std::fs::write(&to, &e.data).expect("writing a file");
            } else {
                panic!("unexpected entry type {} for {}", e.kind as char, e.path);
            }
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(e.mode))
                .expect("setting a mode");
            std::os::unix::fs::chown(&to, Some(e.uid as u32), Some(e.gid as u32))
                .expect("setting an owner");
        }
    }
}

fn sha256(data: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running sha256sum");
    let mut stdin = child.stdin.take().expect("sha256sum stdin");
    let input = data.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("sha256sum output");
    writer.join().expect("sha256sum writer").expect("writing");
    let text = String::from_utf8_lossy(&out.stdout);
    format!(
        "sha256:{}",
        text.split_whitespace().next().expect("a digest")
    )
}

struct Images {
    state: PathBuf,
    console: Image,
    runtimed: Image,
    gateway: Image,
}

/// `hack/image --state DIR ARGS`; returns its stdout's last line (the Console reference).
fn hack_image(state: &Path, args: &[&str]) -> String {
    let out = Command::new(repo_root().join("hack/image"))
        .current_dir(repo_root())
        .arg("--state")
        .arg(state)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("running hack/image");
    assert!(out.status.success(), "hack/image failed");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout
        .lines()
        .last()
        .expect("hack/image prints the Console reference last")
        .to_owned()
}

fn images() -> &'static Images {
    static IMAGES: OnceLock<Images> = OnceLock::new();
    IMAGES.get_or_init(|| {
        let state = match std::env::var_os("KRT_IMAGE_STATE") {
            Some(dir) => PathBuf::from(dir),
            None => {
                let state = repo_root().join("target/image");
                let printed = hack_image(&state, &[]);
                assert!(
                    printed.starts_with("localhost/kruntimes-console:"),
                    "last stdout line {printed:?}"
                );
                state
            }
        };
        let env = std::fs::read_to_string(state.join("images.env"))
            .unwrap_or_else(|e| panic!("reading {}/images.env: {e}", state.display()));
        let vars: BTreeMap<&str, &str> = env
            .lines()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .collect();
        let image = |var: &str| {
            let reference = vars
                .get(var)
                .unwrap_or_else(|| panic!("images.env has no {var}"));
            let name = reference
                .strip_prefix("localhost/")
                .and_then(|r| r.split_once(':'))
                .unwrap_or_else(|| panic!("{var}={reference} is not localhost/NAME:TAG"))
                .0;
            Image::read(reference, &state.join(format!("images/{name}.oci.tar")))
        };
        Images {
            console: image("IMAGE_CONSOLE"),
            runtimed: image("IMAGE_RUNTIMED"),
            gateway: image("IMAGE_GATEWAY"),
            state,
        }
    })
}

/// The final stage of the Dockerfile: its instructions with continuation lines joined.
fn dockerfile_final_stage() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo_root().join("Dockerfile")).expect("reading Dockerfile");
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if current.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        if let Some(part) = line.strip_suffix('\\') {
            current.push_str(part);
            current.push(' ');
        } else {
            current.push_str(line);
            joined.push(std::mem::take(&mut current));
        }
    }
    let last_from = joined
        .iter()
        .rposition(|l| l.starts_with("FROM "))
        .expect("a FROM line");
    joined[last_from..]
        .iter()
        .map(|l| {
            let (op, rest) = l.split_once(' ').unwrap_or((l, ""));
            (op.to_uppercase(), rest.trim().to_owned())
        })
        .collect()
}

/// `key="value" key2="value 2"` pairs of a LABEL instruction.
fn label_pairs(s: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=').expect("LABEL key=value");
        let after = after.strip_prefix('"').expect("quoted LABEL value");
        let end = after.find('"').expect("closing quote");
        pairs.push((key.trim().to_owned(), after[..end].to_owned()));
        rest = after[end + 1..].trim();
    }
    pairs
}

#[test]
fn the_console_image_config_agrees_with_the_dockerfile() {
    let image = &images().console;
    let cfg = image.cfg();
    let stage = dockerfile_final_stage();
    let mut users = Vec::new();
    let mut ports = BTreeSet::new();
    let mut entrypoint = None;
    let mut labels = BTreeMap::new();
    let mut copied_to = Vec::new();
    for (op, rest) in &stage {
        match op.as_str() {
            "USER" => users.push(rest.clone()),
            "EXPOSE" => ports.extend(rest.split_whitespace().map(|p| {
                if p.contains('/') {
                    p.to_owned()
                } else {
                    format!("{p}/tcp")
                }
            })),
            "ENTRYPOINT" => {
                entrypoint = Some(serde_json::from_str::<Value>(rest).expect("ENTRYPOINT JSON"))
            }
            "LABEL" => labels.extend(label_pairs(rest)),
            "COPY" => copied_to.push(rest.rsplit(' ').next().unwrap_or("").to_owned()),
            _ => {}
        }
    }
    assert!(!ports.is_empty() && !labels.is_empty(), "parsed {stage:?}");

    assert_eq!(
        users.last().map(String::as_str),
        cfg["User"].as_str(),
        "USER"
    );
    let image_ports: BTreeSet<String> = cfg["ExposedPorts"]
        .as_object()
        .expect("ExposedPorts")
        .keys()
        .cloned()
        .collect();
    assert_eq!(image_ports, ports, "EXPOSE");
    assert_eq!(Some(&cfg["Entrypoint"]), entrypoint.as_ref(), "ENTRYPOINT");
    let image_labels: BTreeMap<String, String> = cfg["Labels"]
        .as_object()
        .expect("Labels")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("a label string").to_owned()))
        .collect();
    assert_eq!(image_labels, labels, "LABEL");
    assert!(cfg.get("Cmd").is_none(), "the Dockerfile sets no CMD");

    // The binary the Dockerfile copies is where the entrypoint looks for it.
    let bin = entrypoint
        .as_ref()
        .and_then(|e| e[0].as_str())
        .expect("entrypoint[0]");
    assert_eq!(copied_to, vec![bin.to_owned()], "COPY destination");
    let entry = image.file(bin.trim_start_matches('/'));
    assert!(entry.is_file() && entry.mode & 0o111 == 0o111 && !entry.data.is_empty());
}

#[test]
fn no_image_has_a_shell_or_a_package_manager() {
    let all = images();
    for image in [&all.console, &all.runtimed, &all.gateway] {
        let bin = image.cfg()["Entrypoint"][0]
            .as_str()
            .expect("entrypoint")
            .trim_start_matches('/');
        let mut executables = Vec::new();
        for e in image.files.values() {
            let name = e.path.rsplit('/').next().unwrap_or("");
            // Programs by name; folders such as var/lib/dpkg (the package records) may stay.
            if !e.is_dir() {
                for tool in [
                    "sh", "bash", "dash", "busybox", "dpkg", "apt", "apt-get", "perl",
                ] {
                    assert_ne!(name, tool, "{} has {}", image.reference, e.path);
                }
            }
            for dir in [
                "etc/apt",
                "var/lib/apt",
                "usr/lib/apt",
                "var/cache/apt",
                "usr/lib/dpkg",
            ] {
                assert!(
                    e.path != dir && !e.path.starts_with(&format!("{dir}/")),
                    "{} has {}",
                    image.reference,
                    e.path
                );
            }
            if e.is_file() && e.mode & 0o111 != 0 {
                executables.push(e.path.clone());
            }
        }
        // The only executables: the entrypoint and shared libraries (the loader among them).
        let others: Vec<&String> = executables
            .iter()
            .filter(|p| p.as_str() != bin && !p.contains(".so"))
            .collect();
        assert!(
            others.is_empty(),
            "{}: executables besides {bin}: {others:?}",
            image.reference
        );
        assert!(
            executables.iter().any(|p| p == bin),
            "{}: the check sees the entrypoint {bin} as executable",
            image.reference
        );
        assert!(
            !image.files.contains_key("bin/sh") && !image.files.contains_key("usr/bin/sh"),
            "{}",
            image.reference
        );
    }
}

#[test]
fn the_base_has_the_nonroot_user_tmp_and_the_ca_bundle() {
    let all = images();
    for image in [&all.console, &all.runtimed, &all.gateway] {
        let cfg = image.cfg();
        assert_eq!(cfg["User"], "65532:65532", "{}", image.reference);
        let passwd = String::from_utf8_lossy(&image.file("etc/passwd").data).into_owned();
        assert!(
            passwd
                .lines()
                .any(|l| l.starts_with("nonroot:x:65532:65532:")),
            "{passwd}"
        );
        assert!(passwd.lines().any(|l| l.starts_with("root:x:0:0:")));
        let group = String::from_utf8_lossy(&image.file("etc/group").data).into_owned();
        assert!(group.lines().any(|l| l == "nonroot:x:65532:"), "{group}");
        let tmp = image.file("tmp");
        assert!(
            tmp.is_dir() && tmp.mode == 0o1777,
            "/tmp mode {:o}",
            tmp.mode
        );
        let home = image.file("home/nonroot");
        assert!(home.is_dir() && (home.uid, home.gid) == (65532, 65532));
        assert_eq!(cfg["WorkingDir"], "/home/nonroot");
        let bundle = String::from_utf8_lossy(&image.file("etc/ssl/certs/ca-certificates.crt").data)
            .into_owned();
        let certs = bundle.matches("-----BEGIN CERTIFICATE-----").count();
        assert!(certs > 100, "{certs} certificates in the CA bundle");
        for lib in [
            "lib/x86_64-linux-gnu/libc.so.6",
            "lib/x86_64-linux-gnu/libgcc_s.so.1",
            "lib64/ld-linux-x86-64.so.2",
        ] {
            assert!(
                image.files.contains_key(lib),
                "{} has no {lib}",
                image.reference
            );
        }
        // Every entry carries the commit's time, so a rebuild of the commit is byte-equal.
        let created = &image.config["created"];
        let mtimes: BTreeSet<u64> = image.files.values().map(|e| e.mtime).collect();
        assert_eq!(mtimes.len(), 1, "{}: mtimes {mtimes:?}", image.reference);
        assert!(created.is_string(), "created {created}");
    }
}

#[test]
fn every_binary_starts_as_user_65532_in_its_image_root() {
    let all = images();
    for image in [&all.console, &all.runtimed, &all.gateway] {
        let root = tempfile::Builder::new()
            .prefix("image-root-")
            .tempdir_in(repo_root().join("target"))
            .expect("a temporary folder");
        image.unpack(root.path());
        let bin = image.cfg()["Entrypoint"][0].as_str().expect("entrypoint");
        let user = image.cfg()["User"].as_str().expect("user");
        // chroot resolves the binary, its loader and its libraries inside the image only.
        let out = Command::new("chroot")
            .arg(format!("--userspec={user}"))
            .arg(root.path())
            .arg(bin)
            .arg("--version")
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .output()
            .expect("running chroot");
        assert!(
            out.status.success(),
            "{} {bin} --version in the image root: {}{}",
            image.reference,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let name = bin.rsplit('/').next().expect("a name");
        let version = String::from_utf8_lossy(&out.stdout);
        assert!(
            version.starts_with(name),
            "{bin} --version printed {version:?}"
        );
    }
}

#[test]
fn the_same_build_gives_the_same_digest() {
    let all = images();
    let again = tempfile::Builder::new()
        .prefix("image-again-")
        .tempdir_in(repo_root().join("target"))
        .expect("a temporary folder");
    let printed = hack_image(again.path(), &["--console-only"]);
    assert_eq!(printed, all.console.reference);
    let rebuilt = Image::read(
        &printed,
        &again.path().join("images/kruntimes-console.oci.tar"),
    );
    assert_eq!(
        rebuilt.manifest_digest,
        all.console.manifest_digest,
        "{} and {} differ",
        rebuilt.archive.display(),
        all.console.archive.display()
    );
}

#[test]
fn sizes_are_reported_and_the_binary_is_under_25_mb() {
    let all = images();
    let mut report = String::new();
    for image in [&all.console, &all.runtimed, &all.gateway] {
        let layers: Vec<String> = image.layer_bytes.iter().map(|b| mib(*b)).collect();
        report.push_str(&format!(
            "{}: archive {}, layers (gzip) {}, unpacked {}\n",
            image.reference,
            mib(image.archive_bytes),
            layers.join(" + "),
            mib(image.unpacked_bytes())
        ));
    }
    let bin = all.console.file("usr/local/bin/kruntimes-console");
    report.push_str(&format!(
        "kruntimes-console binary: {} bytes ({})\n",
        bin.data.len(),
        mib(bin.data.len() as u64)
    ));
    println!("{report}");
    std::fs::write(all.state.join("sizes.txt"), &report).expect("writing sizes.txt");
    assert!(
        (bin.data.len() as u64) < MAX_BINARY_BYTES,
        "the release binary is {} bytes, SPEC §9 allows under {MAX_BINARY_BYTES}",
        bin.data.len()
    );
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1024.0 / 1024.0)
}
