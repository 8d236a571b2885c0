//! What one connection last learned of its caller: the credentials its
//! header token resolved to, and its last access decision. An HTTP/2
//! connection carries many calls of one caller, each of which would digest
//! the token and the question again to look them up in the shared caches.
//! Each answer is kept only until the shared cache's own deadline for it, so
//! nothing is reused longer than the caches would reuse it (a revoked token
//! or a removed permission is refused as soon as there).

use std::sync::Arc;
use std::time::Instant;

use http::HeaderMap;
use kruntimes_core::auth::access::Decision;
use kruntimes_core::auth::bearer_text;

use crate::credentials::{Credentials, Source};

/// A connection's memo (kept in its [`kruntimes_transport::serve::ConnectionLocal`]).
#[derive(Default)]
pub struct CallerMemo {
    credentials: Option<(Arc<Credentials>, Instant)>,
    decision: Option<Remembered>,
}

/// The last access decision, for one question of one caller.
struct Remembered {
    creds: Arc<Credentials>,
    ns: String,
    name: String,
    sub: &'static str,
    decision: Decision,
    until: Instant,
}

impl CallerMemo {
    /// The credentials kept for the request's header token, when it is the
    /// same token and their time has not passed. Any other request (no
    /// token, another one, a malformed header) is resolved as usual.
    pub fn credentials(&mut self, headers: &HeaderMap, now: Instant) -> Option<Arc<Credentials>> {
        let (creds, until) = self.credentials.as_ref()?;
        if now >= *until {
            self.credentials = None;
            return None;
        }
        let kept = creds.caller.token.as_ref()?;
        // Equal to a token already checked, the text is a valid token too.
        let token = bearer_text(headers).ok()??;
        same(token.as_bytes(), kept.expose().as_bytes()).then(|| creds.clone())
    }

    /// Keeps credentials that a header token resolved to, until `until`.
    pub fn keep_credentials(&mut self, creds: &Arc<Credentials>, until: Instant) {
        if creds.source == Source::Header && creds.caller.token.is_some() {
            self.credentials = Some((creds.clone(), until));
        }
    }

    /// The decision kept for this caller (the very credentials) and
    /// question, when its time has not passed.
    pub fn decision(
        &mut self,
        creds: &Arc<Credentials>,
        ns: &str,
        name: &str,
        sub: &str,
        now: Instant,
    ) -> Option<Decision> {
        let r = self.decision.as_ref()?;
        if now >= r.until {
            self.decision = None;
            return None;
        }
        (Arc::ptr_eq(&r.creds, creds) && r.ns == ns && r.name == name && r.sub == sub)
            .then(|| r.decision.clone())
    }

    /// Keeps a decision until `until`.
    pub fn keep_decision(
        &mut self,
        creds: &Arc<Credentials>,
        ns: &str,
        name: &str,
        sub: &'static str,
        decision: Decision,
        until: Instant,
    ) {
        self.decision = Some(Remembered {
            creds: creds.clone(),
            ns: ns.to_owned(),
            name: name.to_owned(),
            sub,
            decision,
            until,
        });
    }
}

/// Equal bytes, compared in a time that does not depend on where they
/// differ: a connection may carry several callers' calls (a proxy's pool),
/// and one must not learn another's token from how long a refusal took.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruntimes_core::auth::{AuthMethod, BearerToken, Caller};
    use std::time::Duration;

    fn creds(user: &str, token: &str, source: Source) -> Arc<Credentials> {
        Arc::new(Credentials {
            caller: Caller {
                user: user.into(),
                uid: None,
                groups: vec!["system:authenticated".into()],
                extra: Default::default(),
                method: AuthMethod::BearerToken,
                token: Some(BearerToken::new(token).unwrap()),
                expires_at: None,
            },
            source,
        })
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        h
    }

    #[test]
    fn credentials_are_reused_for_the_same_token_only_and_not_past_their_time() {
        let now = Instant::now();
        let mut m = CallerMemo::default();
        let alice = creds("alice", "tok-alice", Source::Header);
        m.keep_credentials(&alice, now + Duration::from_secs(5));
        let got = m
            .credentials(&bearer("tok-alice"), now)
            .expect("the same token");
        assert!(Arc::ptr_eq(&got, &alice));
        // Another token, one that differs in its last byte or its length, none,
        // a malformed header or two of them: resolved as usual.
        for h in [
            bearer("tok-bob"),
            bearer("tok-alicf"),
            bearer("tok-alice2"),
            HeaderMap::new(),
        ] {
            assert!(m.credentials(&h, now).is_none(), "{h:?}");
        }
        // As the credentials layer reads it: the first Authorization field.
        let mut two = bearer("tok-bob");
        two.append(
            http::header::AUTHORIZATION,
            "Bearer tok-alice".parse().unwrap(),
        );
        assert!(m.credentials(&two, now).is_none());
        let mut empty = HeaderMap::new();
        empty.insert(http::header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert!(m.credentials(&empty, now).is_none());
        let mut basic = HeaderMap::new();
        basic.insert(
            http::header::AUTHORIZATION,
            "Basic dG9rLWFsaWNl".parse().unwrap(),
        );
        assert!(m.credentials(&basic, now).is_none());
        // At the cache's deadline they are gone.
        assert!(
            m.credentials(&bearer("tok-alice"), now + Duration::from_secs(5))
                .is_none()
        );
        assert!(
            m.credentials(&bearer("tok-alice"), now).is_none(),
            "forgotten"
        );
        // Only header-token credentials are kept.
        let cookie = creds("carol", "tok-carol", Source::Cookie);
        m.keep_credentials(&cookie, now + Duration::from_secs(5));
        assert!(m.credentials(&bearer("tok-carol"), now).is_none());
    }

    #[test]
    fn a_decision_is_reused_for_the_same_caller_and_question_only_and_not_past_its_time() {
        let now = Instant::now();
        let mut m = CallerMemo::default();
        let alice = creds("alice", "t", Source::Header);
        let until = now + Duration::from_secs(5);
        m.keep_decision(&alice, "team-a", "fn", "invoke", Decision::Allowed, until);
        assert!(matches!(
            m.decision(&alice, "team-a", "fn", "invoke", now),
            Some(Decision::Allowed)
        ));
        // Equal credentials that are not the very ones kept, another
        // namespace, Run or subresource: asked again.
        let again = creds("alice", "t", Source::Header);
        assert!(m.decision(&again, "team-a", "fn", "invoke", now).is_none());
        assert!(m.decision(&alice, "team-b", "fn", "invoke", now).is_none());
        assert!(m.decision(&alice, "team-a", "fn2", "invoke", now).is_none());
        assert!(
            m.decision(&alice, "team-a", "fn", "operations", now)
                .is_none()
        );
        assert!(
            m.decision(&alice, "team-a", "fn", "invoke", until)
                .is_none()
        );
        assert!(
            m.decision(&alice, "team-a", "fn", "invoke", now).is_none(),
            "forgotten"
        );
    }
}
