//! The browser session: the caller's token sealed (ChaCha20-Poly1305) into a
//! host-only `HttpOnly; Secure; SameSite=Strict` cookie. The key comes from a
//! file shared by replicas, so a cookie is useless anywhere else.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use kruntimes_apiserver::auth::BearerToken;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use sha2::{Digest, Sha256};

/// Cookie name; the `__Host-` prefix makes browsers enforce Secure, Path=/ and no Domain.
pub const COOKIE: &str = "__Host-krt-session";
/// Longest cookie value per chunk (browsers keep ~4 KiB per cookie).
const CHUNK: usize = 3800;
/// Most chunks (a 16 KiB token fits).
const MAX_CHUNKS: usize = 8;

/// Why a key could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("--cookie-key-file {0}: cannot be read: {1}")]
    Read(String, std::io::Error),
    #[error("--cookie-key-file {0}: needs at least 32 bytes of key material")]
    Short(String),
    #[error("the system random number generator failed; no session key could be made")]
    Rng,
}

/// Seals and opens session cookies.
pub struct SessionSealer {
    key: LessSafeKey,
    rng: SystemRandom,
    ttl_secs: i64,
}

impl SessionSealer {
    /// The key is the SHA-256 of the file's contents (at least 32 bytes).
    pub fn from_file(path: &Path, ttl_secs: i64) -> Result<Self, KeyError> {
        let bytes =
            std::fs::read(path).map_err(|e| KeyError::Read(path.display().to_string(), e))?;
        if bytes.len() < 32 {
            return Err(KeyError::Short(path.display().to_string()));
        }
        Ok(Self::from_material(&bytes, ttl_secs))
    }

    /// A key from raw material (also used for a random per-process key).
    pub fn from_material(material: &[u8], ttl_secs: i64) -> Self {
        let digest: [u8; 32] = Sha256::digest(material).into();
        let key =
            LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &digest).expect("32-byte key"));
        Self {
            key,
            rng: SystemRandom::new(),
            ttl_secs,
        }
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

    pub fn ttl_secs(&self) -> i64 {
        self.ttl_secs
    }

    /// The sealed cookie value for `token`, valid for the session lifetime.
    pub fn seal(&self, token: &BearerToken) -> Option<String> {
        let exp = jiff::Timestamp::now().as_second() + self.ttl_secs;
        let mut plain = exp.to_be_bytes().to_vec();
        plain.extend_from_slice(token.expose().as_bytes());
        let mut nonce = [0u8; 12];
        self.rng.fill(&mut nonce).ok()?;
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(COOKIE),
                &mut plain,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&plain);
        Some(URL_SAFE_NO_PAD.encode(out))
    }

    /// The token in a sealed value, if it was sealed with this key and has not expired.
    pub fn open(&self, value: &str) -> Option<BearerToken> {
        let mut raw = URL_SAFE_NO_PAD.decode(value).ok()?;
        if raw.len() < 12 + 8 + 16 {
            return None;
        }
        let (nonce, sealed) = raw.split_at_mut(12);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(COOKIE), sealed)
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

    #[test]
    fn a_failing_random_source_fails_the_start() {
        let r = SessionSealer::ephemeral_with(|_| Err(KeyError::Rng), 3600);
        assert!(matches!(r, Err(KeyError::Rng)));
        assert!(SessionSealer::ephemeral(3600).is_ok());
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
