//! Who is calling.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rustls_pki_types::CertificateDer;
use sha2::{Digest, Sha256};

use super::{AuthError, MAX_TOKEN_BYTES};

/// How a caller proved who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// A front-proxy client certificate (kube-apiserver's aggregator), the user
    /// in its identity headers.
    FrontProxy,
    /// A client certificate signed by the client CA: the user in its CN, the
    /// groups in its O.
    ClientCertificate,
    /// A bearer token that TokenReview authenticated (from the `Authorization`
    /// header or the session cookie).
    BearerToken,
}

/// A bearer token. Its `Debug` never shows it; it is never logged.
#[derive(Clone)]
pub struct BearerToken(Arc<str>);

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl BearerToken {
    /// Validates the token's shape: non-empty, bounded, visible ASCII.
    pub fn new(token: &str) -> Result<Self, AuthError> {
        if token.is_empty() {
            return Err(AuthError::MalformedHeader("the token is empty"));
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::TokenTooLong);
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AuthError::MalformedHeader(
                "the token has characters a token cannot have",
            ));
        }
        Ok(Self(token.into()))
    }

    /// The token itself, for an outgoing `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A digest that identifies the token in caches without holding it.
    pub fn digest(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// The `exp` claim when the token is a JWT (read, not verified: TokenReview verifies).
    pub fn jwt_expiry(&self) -> Option<i64> {
        use base64::Engine;
        let mut parts = self.0.split('.');
        let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload.trim_end_matches('='))
            .ok()?;
        let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        claims.get("exp")?.as_i64()
    }
}

/// An authenticated caller.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The Kubernetes user name.
    pub user: String,
    /// The user's UID, when the credential names one.
    pub uid: Option<String>,
    /// The user's groups.
    pub groups: Vec<String>,
    /// Extra identity attributes (TokenReview's `extra`, the front proxy's
    /// extra headers), key to values.
    pub extra: BTreeMap<String, Vec<String>>,
    /// How the caller authenticated.
    pub method: AuthMethod,
    /// The caller's token when they authenticated with one (for acting as them).
    pub token: Option<BearerToken>,
    /// Unix time after which the credential is known to be invalid.
    pub expires_at: Option<i64>,
}

impl Caller {
    /// Whether `group` is one of the caller's groups.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// What of this identity cannot travel to a Runtime gateway as
    /// `X-Remote-*` fields exactly as it was authorized, if anything: white
    /// space at either end (dropped by every HTTP parser, so `" operator"`
    /// would arrive as `operator`), a control character (no field value can
    /// carry one), or a comma in the user or a group (a gateway that joins
    /// repeated fields would split `"g1, g2"` into two groups).
    pub fn unforwardable(&self) -> Option<String> {
        let bad = |what: &str, v: &str, comma: bool| {
            let why = if v.starts_with([' ', '\t']) || v.ends_with([' ', '\t']) {
                "begins or ends with white space"
            } else if v.chars().any(char::is_control) {
                "holds a control character"
            } else if comma && v.contains(',') {
                "holds a comma"
            } else {
                return None;
            };
            Some(format!("{what} {v:?} {why}"))
        };
        bad("the user", &self.user, true)
            .or_else(|| self.uid.as_deref().and_then(|u| bad("the uid", u, false)))
            .or_else(|| self.groups.iter().find_map(|g| bad("the group", g, true)))
            .or_else(|| {
                self.extra
                    .iter()
                    .flat_map(|(k, vs)| vs.iter().map(move |v| (k, v)))
                    .find_map(|(k, v)| bad(&format!("the extra {k:?} value"), v, false))
            })
    }
}

/// The group kube-apiserver adds to every authenticated user.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// The user a client certificate names: CN the user, O the groups.
pub fn from_client_certificate(cert: &CertificateDer<'_>) -> Option<Caller> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let subject = parsed.subject();
    let user = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
    if user.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    // As kube-apiserver's x509 authenticator does, with every other method.
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_owned());
    }
    let not_after = parsed.validity().not_after.timestamp();
    Some(Caller {
        user,
        uid: None,
        groups,
        extra: BTreeMap::new(),
        method: AuthMethod::ClientCertificate,
        token: None,
        expires_at: Some(not_after),
    })
}

/// The common name of a certificate.
pub fn common_name(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let cn = parsed
        .subject()
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_owned();
    Some(cn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_debug_is_redacted() {
        let t = BearerToken::new("secret-value").unwrap();
        assert!(!format!("{t:?}").contains("secret-value"));
    }

    #[test]
    fn token_shape() {
        assert!(BearerToken::new("").is_err());
        assert!(BearerToken::new("a b").is_err());
        assert!(BearerToken::new(&"a".repeat(MAX_TOKEN_BYTES + 1)).is_err());
        assert!(BearerToken::new("abc.def").is_ok());
    }

    #[test]
    fn jwt_expiry_is_read() {
        use base64::Engine;
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(r#"{"exp":1700000000}"#)
        );
        assert_eq!(
            BearerToken::new(&t).unwrap().jwt_expiry(),
            Some(1_700_000_000)
        );
        assert_eq!(BearerToken::new("opaque").unwrap().jwt_expiry(), None);
    }

    #[test]
    fn client_certificate_names_user_and_groups() {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "alice");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "devs");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let caller = from_client_certificate(cert.der()).unwrap();
        assert_eq!(caller.user, "alice");
        assert_eq!(caller.groups, ["devs", "system:authenticated"]);
        assert_eq!(caller.unforwardable(), None);
    }

    fn caller(user: &str, groups: &[&str]) -> Caller {
        Caller {
            user: user.into(),
            uid: None,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
            method: AuthMethod::ClientCertificate,
            token: None,
            expires_at: None,
        }
    }

    #[test]
    fn identities_that_would_change_on_the_way_to_a_gateway_are_named() {
        for (user, groups, why) in [
            (" operator", vec![], "white space"),
            ("operator\t", vec![], "white space"),
            ("a,b", vec![], "comma"),
            ("ops\u{7}", vec![], "control"),
            ("operator", vec!["system:masters "], "white space"),
            ("operator", vec!["g1, g2"], "comma"),
        ] {
            let c = caller(user, &groups);
            let said = c.unforwardable().unwrap_or_default();
            assert!(said.contains(why), "{user:?} {groups:?}: {said:?}");
        }
        let mut c = caller(
            "system:serviceaccount:a:b",
            &["system:authenticated", "a b"],
        );
        assert_eq!(c.unforwardable(), None, "inner spaces travel as they are");
        c.extra.insert("scopes".into(), vec!["x, y".into()]);
        assert_eq!(c.unforwardable(), None, "extra values are one field each");
        c.extra.insert("scopes".into(), vec![" x".into()]);
        assert!(c.unforwardable().is_some());
    }
}
