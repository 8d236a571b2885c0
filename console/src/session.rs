//! The browser session: the caller's token sealed (ChaCha20-Poly1305) into a
//! host-only `HttpOnly; Secure; SameSite=Strict` cookie. The keys come from a
//! file or a directory shared by replicas, so a cookie is useless anywhere
//! else. Several keys make rotation possible: the first seals, every one
//! opens, and a sealed value names its key by a short ID.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use kruntimes_core::auth::BearerToken;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

/// Cookie name; the `__Host-` prefix makes browsers enforce Secure, Path=/ and no Domain.
pub const COOKIE: &str = "__Host-krt-session";
/// Longest cookie value per chunk (browsers keep ~4 KiB per cookie).
const CHUNK: usize = 3800;
/// Most chunks (a 16 KiB token fits).
const MAX_CHUNKS: usize = 8;
/// Bytes of the key ID at the start of a sealed value.
const KEY_ID: usize = 4;
/// Most keys in a key directory.
pub const MAX_KEYS: usize = 16;
/// How often `--cookie-key-file` is checked for changes.
const RELOAD_EVERY: Duration = Duration::from_secs(5);

/// Why a key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The file or directory could not be read.
    #[error("--cookie-key-file {0}: cannot be read: {1}")]
    Read(String, std::io::Error),
    /// A key file holds fewer than 32 bytes.
    #[error("--cookie-key-file {0}: needs at least 32 bytes of key material")]
    Short(String),
    /// The directory holds no key file.
    #[error("--cookie-key-file {0}: the directory holds no key file")]
    Empty(String),
    /// The directory holds more than [`MAX_KEYS`] key files.
    #[error("--cookie-key-file {0}: more than {MAX_KEYS} key files")]
    TooMany(String),
    /// Two key files hold the same key.
    #[error("--cookie-key-file {0}: two key files hold the same key")]
    Duplicate(String),
    /// The system's random number generator failed to make an ephemeral key.
    #[error("the system random number generator failed; no session key could be made")]
    Rng,
}

/// One key: the AEAD key and its ID (a digest of the key, never the key).
struct SealKey {
    id: [u8; KEY_ID],
    key: LessSafeKey,
}

impl SealKey {
    /// The key is the SHA-256 of the material (at least 32 bytes).
    fn from_material(material: &[u8]) -> Self {
        let digest: [u8; 32] = Sha256::digest(material).into();
        let key =
            LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &digest).expect("32-byte key"));
        let mut h = Sha256::new();
        h.update(b"kruntimes-console cookie key id\0");
        h.update(digest);
        let full: [u8; 32] = h.finalize().into();
        let mut id = [0u8; KEY_ID];
        id.copy_from_slice(&full[..KEY_ID]);
        Self { id, key }
    }
}

/// The key material in `path`: a file is one key (its whole contents); a
/// directory holds one key per regular file, in name order (names starting
/// with `.` are skipped: a mounted Secret's `..data` links).
pub fn read_key_material(path: &Path) -> Result<Vec<Vec<u8>>, KeyError> {
    let shown = || path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| KeyError::Read(shown(), e))?;
    let mut materials = Vec::new();
    if meta.is_dir() {
        let mut names: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| KeyError::Read(shown(), e))?
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        names.sort();
        if names.len() > MAX_KEYS {
            return Err(KeyError::TooMany(shown()));
        }
        for p in names {
            let bytes =
                std::fs::read(&p).map_err(|e| KeyError::Read(p.display().to_string(), e))?;
            if bytes.len() < 32 {
                return Err(KeyError::Short(p.display().to_string()));
            }
            materials.push(bytes);
        }
        if materials.is_empty() {
            return Err(KeyError::Empty(shown()));
        }
    } else {
        let bytes = std::fs::read(path).map_err(|e| KeyError::Read(shown(), e))?;
        if bytes.len() < 32 {
            return Err(KeyError::Short(shown()));
        }
        materials.push(bytes);
    }
    Ok(materials)
}

/// Seals and opens session cookies.
pub struct SessionSealer {
    /// The first key seals; every key opens.
    keys: RwLock<Arc<Vec<SealKey>>>,
    rng: SystemRandom,
    ttl_secs: i64,
}

impl SessionSealer {
    /// The keys in `path` (see [`read_key_material`]).
    pub fn from_file(path: &Path, ttl_secs: i64) -> Result<Self, KeyError> {
        let materials = read_key_material(path)?;
        let refs: Vec<&[u8]> = materials.iter().map(Vec::as_slice).collect();
        Self::from_materials(&refs, ttl_secs)
            .ok_or_else(|| KeyError::Duplicate(path.display().to_string()))
    }

    /// A single key from raw material.
    pub fn from_material(material: &[u8], ttl_secs: i64) -> Self {
        Self::from_materials(&[material], ttl_secs).expect("one key")
    }

    /// Keys from raw materials, the first sealing; `None` when empty or two are equal.
    pub fn from_materials(materials: &[&[u8]], ttl_secs: i64) -> Option<Self> {
        let keys = build_keys(materials)?;
        Some(Self {
            keys: RwLock::new(Arc::new(keys)),
            rng: SystemRandom::new(),
            ttl_secs,
        })
    }

    /// Replaces the key set (the first seals); refused when empty or two are equal.
    pub fn set_keys(&self, materials: &[&[u8]]) -> bool {
        let Some(keys) = build_keys(materials) else {
            return false;
        };
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
        true
    }

    /// The key IDs, the sealing one first (hex; for logs and tests).
    pub fn key_ids(&self) -> Vec<String> {
        self.current().iter().map(|k| hex::encode(k.id)).collect()
    }

    fn current(&self) -> Arc<Vec<SealKey>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A random key that lives as long as the process; fails when the
    /// system's random number generator does.
    pub fn ephemeral(ttl_secs: i64) -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        Self::ephemeral_with(|buf| rng.fill(buf).map_err(|_| KeyError::Rng), ttl_secs)
    }

    /// [`Self::ephemeral`] with the random source given.
    pub fn ephemeral_with(
        fill: impl FnOnce(&mut [u8]) -> Result<(), KeyError>,
        ttl_secs: i64,
    ) -> Result<Self, KeyError> {
        let mut material = [0u8; 32];
        fill(&mut material)?;
        Ok(Self::from_material(&material, ttl_secs))
    }

    /// Re-reads `path` every few seconds and swaps the key set when it
    /// changed (a rotated Secret applies without a restart). A set that
    /// cannot be loaded keeps the previous one.
    pub fn watch(self: &Arc<Self>, path: PathBuf) {
        let sealer = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut last = sealer.upgrade().map(|s| s.key_ids()).unwrap_or_default();
            loop {
                tokio::time::sleep(RELOAD_EVERY).await;
                let Some(s) = sealer.upgrade() else { return };
                let loaded = read_key_material(&path).and_then(|m| {
                    let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
                    build_keys(&refs)
                        .map(|k| k.iter().map(|k| hex::encode(k.id)).collect::<Vec<_>>())
                        .map(|ids| (ids, m))
                        .ok_or_else(|| KeyError::Duplicate(path.display().to_string()))
                });
                match loaded {
                    Ok((ids, _)) if ids == last => {}
                    Ok((ids, m)) => {
                        let refs: Vec<&[u8]> = m.iter().map(Vec::as_slice).collect();
                        if s.set_keys(&refs) {
                            tracing::info!(file = %path.display(), keys = ?ids, "cookie keys reloaded; the first seals");
                            last = ids;
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%error, "cookie keys changed but could not be loaded; keeping the previous ones")
                    }
                }
            }
        });
    }

    /// How long a sealed session lasts, in seconds.
    pub fn ttl_secs(&self) -> i64 {
        self.ttl_secs
    }

    /// The sealed cookie value for `token`, valid for the session lifetime:
    /// key ID, nonce, then the sealed expiry and token.
    pub fn seal(&self, token: &BearerToken) -> Option<String> {
        let keys = self.current();
        let key = keys.first()?;
        let exp = jiff::Timestamp::now().as_second() + self.ttl_secs;
        let mut plain = exp.to_be_bytes().to_vec();
        plain.extend_from_slice(token.expose().as_bytes());
        let mut nonce = [0u8; 12];
        self.rng.fill(&mut nonce).ok()?;
        key.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(&key.id)),
                &mut plain,
            )
            .ok()?;
        let mut out = key.id.to_vec();
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&plain);
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    /// The token in a sealed value, if it was sealed with one of the keys
    /// (the one its ID names) and has not expired.
    pub fn open(&self, value: &str) -> Option<BearerToken> {
        let mut raw = URL_SAFE_NO_PAD.decode(value).ok()?;
        if raw.len() < KEY_ID + 12 + 8 + 16 {
            return None;
        }
        let keys = self.current();
        let (id, rest) = raw.split_at_mut(KEY_ID);
        let key = keys.iter().find(|k| k.id[..] == id[..])?;
        let (nonce, sealed) = rest.split_at_mut(12);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = key
            .key
            .open_in_place(nonce, Aad::from(aad(&key.id)), sealed)
            .ok()?;
        let exp = i64::from_be_bytes(plain[..8].try_into().ok()?);
        if exp <= jiff::Timestamp::now().as_second() {
            return None;
        }
        let token = std::str::from_utf8(&plain[8..]).ok()?;
        BearerToken::new(token).ok()
    }

    /// `Set-Cookie` values that store `sealed` (split in chunks), clearing stale chunks.
    pub fn set_cookies(&self, sealed: &str) -> Vec<String> {
        let chunks: Vec<&str> = sealed
            .as_bytes()
            .chunks(CHUNK)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        let mut out = Vec::new();
        for i in 0..MAX_CHUNKS {
            let name = chunk_name(i);
            match chunks.get(i) {
                Some(c) => out.push(format!(
                    "{name}={c}; Path=/; Max-Age={}; HttpOnly; Secure; SameSite=Strict",
                    self.ttl_secs
                )),
                None if i > 0 => out.push(clear_cookie(&name)),
                None => {}
            }
        }
        out
    }

    /// `Set-Cookie` values that remove the session.
    pub fn clear_cookies() -> Vec<String> {
        (0..MAX_CHUNKS)
            .map(|i| clear_cookie(&chunk_name(i)))
            .collect()
    }

    /// The sealed value carried by a request's cookies (chunks joined in order).
    pub fn from_headers(headers: &HeaderMap) -> Option<String> {
        let mut parts: Vec<Option<String>> = vec![None; MAX_CHUNKS];
        for value in headers.get_all(http::header::COOKIE) {
            let Ok(value) = value.to_str() else { continue };
            for pair in value.split(';') {
                let Some((name, v)) = pair.trim().split_once('=') else {
                    continue;
                };
                if let Some(i) = (0..MAX_CHUNKS).find(|i| chunk_name(*i) == name) {
                    parts[i] = Some(v.to_owned());
                }
            }
        }
        let mut joined = String::new();
        for part in parts {
            match part {
                Some(p) => joined.push_str(&p),
                None => break,
            }
        }
        (!joined.is_empty()).then_some(joined)
    }
}

/// Keys from materials; `None` when there is none or two are equal.
fn build_keys(materials: &[&[u8]]) -> Option<Vec<SealKey>> {
    let keys: Vec<SealKey> = materials
        .iter()
        .map(|m| SealKey::from_material(m))
        .collect();
    let mut ids: Vec<_> = keys.iter().map(|k| k.id).collect();
    ids.sort();
    ids.dedup();
    (!keys.is_empty() && ids.len() == keys.len()).then_some(keys)
}

/// The additional data a sealed value is bound to: the cookie name and key ID.
fn aad(id: &[u8; KEY_ID]) -> [u8; COOKIE.len() + KEY_ID] {
    let mut out = [0u8; COOKIE.len() + KEY_ID];
    out[..COOKIE.len()].copy_from_slice(COOKIE.as_bytes());
    out[COOKIE.len()..].copy_from_slice(id);
    out
}

fn chunk_name(i: usize) -> String {
    if i == 0 {
        COOKIE.to_owned()
    } else {
        format!("{COOKIE}-{i}")
    }
}

fn clear_cookie(name: &str) -> String {
    format!("{name}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_and_open() {
        let s = SessionSealer::from_material(b"0123456789abcdef0123456789abcdef", 3600);
        let t = BearerToken::new("my-token").unwrap();
        let sealed = s.seal(&t).unwrap();
        assert!(!sealed.contains("my-token"));
        assert_eq!(s.open(&sealed).unwrap().expose(), "my-token");
    }

    #[test]
    fn another_key_cannot_open() {
        let a = SessionSealer::from_material(b"0123456789abcdef0123456789abcdef", 3600);
        let b = SessionSealer::from_material(b"fedcba9876543210fedcba9876543210", 3600);
        let sealed = a.seal(&BearerToken::new("t").unwrap()).unwrap();
        assert!(b.open(&sealed).is_none());
        assert!(a.open("garbage").is_none());
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert!(a.open(std::str::from_utf8(&tampered).unwrap()).is_none());
    }

    const A: &[u8] = b"0123456789abcdef0123456789abcdef";
    const B: &[u8] = b"fedcba9876543210fedcba9876543210";

    #[test]
    fn the_first_key_seals_and_every_key_opens() {
        let old = SessionSealer::from_material(A, 3600);
        let t = BearerToken::new("t").unwrap();
        let by_a = old.seal(&t).unwrap();
        let both = SessionSealer::from_materials(&[B, A], 3600).unwrap();
        assert_eq!(
            both.open(&by_a).unwrap().expose(),
            "t",
            "a second key opens"
        );
        let by_b = both.seal(&t).unwrap();
        assert!(old.open(&by_b).is_none(), "the first key (B) sealed");
        assert_eq!(both.open(&by_b).unwrap().expose(), "t");
        // B alone: A's cookie no longer opens.
        assert!(both.set_keys(&[B]));
        assert!(both.open(&by_a).is_none(), "a removed key still opens");
        assert_eq!(both.open(&by_b).unwrap().expose(), "t");
        assert_eq!(both.key_ids().len(), 1);
        // Empty or repeated sets are refused and change nothing.
        assert!(!both.set_keys(&[]));
        assert!(!both.set_keys(&[B, B]));
        assert_eq!(both.open(&by_b).unwrap().expose(), "t");
    }

    #[test]
    fn the_key_id_picks_the_key() {
        let s = SessionSealer::from_materials(&[A, B], 3600).unwrap();
        let sealed = s.seal(&BearerToken::new("t").unwrap()).unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        let ids = s.key_ids();
        assert_eq!(hex::encode(&raw[..KEY_ID]), ids[0]);
        // Another known key's ID: that key cannot open it (the ID is bound too).
        raw[..KEY_ID].copy_from_slice(&hex::decode(&ids[1]).unwrap());
        assert!(s.open(&URL_SAFE_NO_PAD.encode(&raw)).is_none());
        // An unknown ID: refused.
        raw[..KEY_ID].copy_from_slice(&[0, 0, 0, 0]);
        assert!(s.open(&URL_SAFE_NO_PAD.encode(&raw)).is_none());
        // The key itself is not its ID.
        let digest: [u8; 32] = Sha256::digest(A).into();
        assert_ne!(hex::encode(&digest[..KEY_ID]), ids[0]);
    }

    #[test]
    fn a_failing_random_source_fails_the_start() {
        let r = SessionSealer::ephemeral_with(|_| Err(KeyError::Rng), 3600);
        assert!(matches!(r, Err(KeyError::Rng)));
        assert!(SessionSealer::ephemeral(3600).is_ok());
    }

    #[test]
    fn key_directories_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key-1"), A).unwrap();
        std::fs::write(dir.path().join("key-0"), B).unwrap();
        std::fs::write(dir.path().join("..data"), b"short").unwrap();
        let m = read_key_material(dir.path()).unwrap();
        assert_eq!(m, vec![B.to_vec(), A.to_vec()]);
        let s = SessionSealer::from_file(dir.path(), 60).unwrap();
        let b_only = SessionSealer::from_material(B, 60);
        let sealed = s.seal(&BearerToken::new("t").unwrap()).unwrap();
        assert!(b_only.open(&sealed).is_some(), "key-0 seals");
        std::fs::write(dir.path().join("key-2"), b"short").unwrap();
        assert!(matches!(
            read_key_material(dir.path()),
            Err(KeyError::Short(_))
        ));
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_key_material(empty.path()),
            Err(KeyError::Empty(_))
        ));
        // A single file is one key, its whole contents.
        let f = dir.path().join("key-0");
        assert_eq!(read_key_material(&f).unwrap(), vec![B.to_vec()]);
    }

    #[test]
    fn expired_cookie_is_refused() {
        let s = SessionSealer::from_material(b"0123456789abcdef0123456789abcdef", -1);
        let sealed = s.seal(&BearerToken::new("t").unwrap()).unwrap();
        assert!(s.open(&sealed).is_none());
    }

    #[test]
    fn large_tokens_are_chunked_and_joined() {
        let s = SessionSealer::from_material(b"0123456789abcdef0123456789abcdef", 3600);
        let token = "x".repeat(10_000);
        let sealed = s.seal(&BearerToken::new(&token).unwrap()).unwrap();
        let cookies = s.set_cookies(&sealed);
        let mut headers = HeaderMap::new();
        let pairs: Vec<String> = cookies
            .iter()
            .filter(|c| !c.contains("Max-Age=0"))
            .map(|c| c.split(';').next().unwrap().to_owned())
            .collect();
        assert!(pairs.len() > 1);
        headers.insert(http::header::COOKIE, pairs.join("; ").parse().unwrap());
        let joined = SessionSealer::from_headers(&headers).unwrap();
        assert_eq!(s.open(&joined).unwrap().expose(), token);
        for c in &cookies {
            assert!(
                c.contains("HttpOnly")
                    && c.contains("Secure")
                    && c.contains("SameSite=Strict")
                    && c.contains("Path=/")
            );
            assert!(!c.to_ascii_lowercase().contains("domain="));
        }
    }
}
