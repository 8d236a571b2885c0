//! What the local dashboard proxy lets through from a browser, decided from
//! the request alone, before anything is forwarded.
//!
//! Any web page can make a browser send requests to 127.0.0.1, so being on
//! loopback proves nothing about who asks. The proxy therefore listens only
//! on a loopback address, accepts only requests whose `Host` is its own
//! address and port (a page whose name was rebound to 127.0.0.1 sends its
//! own name), and on state-changing requests and WebSocket upgrades only its
//! own `Origin`. A request a browser marks as cross-site that is not a
//! top-level navigation is refused too (`Sec-Fetch-Site`). Whatever the
//! browser sent as a credential or an identity is dropped; the proxy adds
//! the kubeconfig's.

use std::net::{IpAddr, SocketAddr};

use http::{HeaderMap, HeaderName, Method, header};

/// The loopback address to listen on, or why not. Only an IP literal is
/// taken (a name could resolve anywhere); an IPv4-mapped IPv6 address is
/// taken as its IPv4 address.
pub fn loopback(address: &str, port: u16) -> Result<SocketAddr, String> {
    let trimmed = address.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = trimmed.parse().map_err(|_| {
        format!(
            "--address {address:?} is not an IP address: give a loopback address such as 127.0.0.1 or ::1"
        )
    })?;
    let ip = ip.to_canonical();
    if ip.is_unspecified() {
        return Err(format!(
            "--address {address} would listen on every interface: the dashboard proxy listens only on a loopback address (127.0.0.0/8 or ::1), because it serves the Console with your kubeconfig credential to whoever connects"
        ));
    }
    if !ip.is_loopback() {
        return Err(format!(
            "--address {address} is not a loopback address: the dashboard proxy listens only on 127.0.0.0/8 or ::1, because it serves the Console with your kubeconfig credential to whoever connects"
        ));
    }
    Ok(SocketAddr::new(ip, port))
}

/// The proxy's own `Host` (`127.0.0.1:9080`, `[::1]:9080`) and `Origin`
/// (`http://` and the same).
#[derive(Clone, Debug)]
pub struct Own {
    /// The listener's `host:port`, the only `Host` taken.
    pub authority: String,
    /// The listener's own origin, `http://host:port`.
    pub origin: String,
}

impl Own {
    /// The authority and origin of a listener bound to `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        let authority = addr.to_string();
        Self {
            origin: format!("http://{authority}"),
            authority,
        }
    }

    /// The URL to open in the browser.
    pub fn url(&self) -> String {
        format!("{}/", self.origin)
    }
}

/// Why a request is not forwarded (answered 403).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Whether the request is a WebSocket upgrade.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// The Host and Origin rule. `host` is the request's `Host` header or, for
/// an absolute-form target, its authority.
pub fn admit(
    own: &Own,
    method: &Method,
    host: Option<&str>,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    match host {
        Some(h) if h.eq_ignore_ascii_case(&own.authority) => {}
        Some(h) => {
            return Err(Refusal(format!(
                "Host {h:?} is not this proxy ({}): requests for other names are refused, so a page whose name resolves to this address cannot use it",
                own.authority
            )));
        }
        None => return Err(Refusal("a request without Host is refused".into())),
    }
    let origin = match headers.get_all(header::ORIGIN).iter().collect::<Vec<_>>()[..] {
        [] => None,
        [one] => Some(
            one.to_str()
                .map_err(|_| Refusal("the Origin header is not text".into()))?,
        ),
        _ => return Err(Refusal("more than one Origin header".into())),
    };
    if let Some(o) = origin
        && !o.eq_ignore_ascii_case(&own.origin)
    {
        return Err(Refusal(format!(
            "Origin {o:?} is not this proxy's ({}): requests from other pages are refused",
            own.origin
        )));
    }
    let changes_state = !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if (changes_state || is_upgrade(headers)) && origin.is_none() {
        let what = if changes_state {
            format!("a {method} request")
        } else {
            "a WebSocket upgrade".to_owned()
        };
        return Err(Refusal(format!(
            "{what} must carry this proxy's Origin ({})",
            own.origin
        )));
    }
    // A browser says where a request comes from; only a top-level
    // navigation (a link the user followed) may come from another site.
    let site = headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or("?"));
    let navigate = headers
        .get("sec-fetch-mode")
        .is_some_and(|v| v.as_bytes() == b"navigate");
    if let Some(site) = site
        && !matches!(site, "same-origin" | "none")
        && !(navigate && *method == Method::GET)
    {
        return Err(Refusal(format!(
            "a {site} request from another page is refused (Sec-Fetch-Site)"
        )));
    }
    Ok(())
}

/// Headers a browser may send that carry credentials or claim an identity,
/// or that only the proxy may set; all are dropped before forwarding.
const DROPPED: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "origin",
    "referer",
    "forwarded",
    "x-real-ip",
    "x-client-cert",
    "ssl-client-cert",
];

/// Prefixes of dropped header names (impersonation, front-proxy identity,
/// forwarding claims).
const DROPPED_PREFIXES: &[&str] = &["impersonate-", "x-remote-", "x-forwarded-"];

/// Hop-by-hop headers (RFC 9110 §7.6.1), not forwarded; an upgrade keeps
/// `Connection: upgrade` and `Upgrade`.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn dropped(name: &HeaderName) -> bool {
    let n = name.as_str();
    DROPPED.contains(&n) || DROPPED_PREFIXES.iter().any(|p| n.starts_with(p))
}

/// The request headers as forwarded: credentials, identity claims,
/// hop-by-hop headers and anything `Connection` names are removed; `Host`
/// becomes the Console's name. The caller adds the credential.
pub fn forward_request_headers(headers: &HeaderMap, upstream_host: &str) -> HeaderMap {
    let upgrade = is_upgrade(headers);
    let named: Vec<String> = connection_names(headers);
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if dropped(name)
            || HOP_BY_HOP.contains(&n)
            || named.iter().any(|c| c == n)
            || name == header::HOST
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if upgrade {
        out.insert(
            header::CONNECTION,
            http::HeaderValue::from_static("upgrade"),
        );
        out.insert(header::UPGRADE, http::HeaderValue::from_static("websocket"));
    }
    if let Ok(v) = http::HeaderValue::from_str(upstream_host) {
        out.insert(header::HOST, v);
    }
    out
}

/// The response headers as returned to the browser: hop-by-hop headers
/// (but an upgrade's), cookies (no Console session is kept in the browser:
/// the proxy's credential is on every request) and HSTS (the proxy speaks
/// plain HTTP on loopback) are removed.
pub fn forward_response_headers(headers: &mut HeaderMap, upgraded: bool) {
    let named = connection_names(headers);
    for n in named {
        if let Ok(name) = HeaderName::from_bytes(n.as_bytes())
            && !(upgraded && name == header::UPGRADE)
        {
            headers.remove(name);
        }
    }
    for n in HOP_BY_HOP {
        if upgraded && (*n == "connection" || *n == "upgrade") {
            continue;
        }
        headers.remove(*n);
    }
    headers.remove(header::SET_COOKIE);
    headers.remove(header::STRICT_TRANSPORT_SECURITY);
}

fn connection_names(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty() && t != "upgrade" && t != "close" && t != "keep-alive")
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn own() -> Own {
        Own::new(loopback("127.0.0.1", 9080).unwrap())
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn only_loopback_addresses_are_taken() {
        assert_eq!(
            loopback("127.0.0.1", 9080).unwrap(),
            "127.0.0.1:9080".parse().unwrap()
        );
        assert_eq!(
            loopback("127.3.2.1", 1).unwrap(),
            "127.3.2.1:1".parse().unwrap()
        );
        assert_eq!(loopback("::1", 80).unwrap(), "[::1]:80".parse().unwrap());
        assert_eq!(loopback("[::1]", 80).unwrap(), "[::1]:80".parse().unwrap());
        // An IPv4-mapped loopback address listens as plain IPv4.
        assert_eq!(
            loopback("::ffff:127.0.0.1", 80).unwrap(),
            "127.0.0.1:80".parse().unwrap()
        );
        for (addr, why) in [
            ("0.0.0.0", "every interface"),
            ("::", "every interface"),
            ("::ffff:0.0.0.0", "every interface"),
            ("192.168.1.10", "not a loopback"),
            ("198.18.1.1", "not a loopback"),
            ("10.0.0.1", "not a loopback"),
            ("::ffff:10.0.0.1", "not a loopback"),
            ("fe80::1", "not a loopback"),
            ("localhost", "not an IP address"),
            ("127.0.0.1:80", "not an IP address"),
            ("", "not an IP address"),
        ] {
            let e = loopback(addr, 9080).unwrap_err();
            assert!(e.contains(why), "{addr}: {e}");
        }
    }

    #[test]
    fn own_host_and_origin_are_the_address_and_port() {
        let o = own();
        assert_eq!(o.authority, "127.0.0.1:9080");
        assert_eq!(o.origin, "http://127.0.0.1:9080");
        let v6 = Own::new(loopback("::1", 9080).unwrap());
        assert_eq!(v6.authority, "[::1]:9080");
        assert_eq!(v6.url(), "http://[::1]:9080/");
    }

    #[test]
    fn a_foreign_or_missing_host_is_refused() {
        let o = own();
        let h = HeaderMap::new();
        assert!(admit(&o, &Method::GET, Some("127.0.0.1:9080"), &h).is_ok());
        assert!(
            admit(
                &o,
                &Method::GET,
                Some("127.0.0.1:9080".to_uppercase().as_str()),
                &h
            )
            .is_ok()
        );
        for host in [
            "evil.example:9080",
            "localhost:9080",
            "127.0.0.1",
            "127.0.0.1:9081",
            "127.0.0.2:9080",
            "[::1]:9080",
            "127.0.0.1:9080.evil.example",
            "",
        ] {
            let e = admit(&o, &Method::GET, Some(host), &h).unwrap_err();
            assert!(e.0.contains("Host"), "{host}: {e:?}");
        }
        assert!(admit(&o, &Method::GET, None, &h).is_err());
    }

    #[test]
    fn state_changes_and_upgrades_need_the_own_origin() {
        let o = own();
        let host = Some("127.0.0.1:9080");
        let mine = headers(&[("origin", "http://127.0.0.1:9080")]);
        for m in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            assert!(admit(&o, &m, host, &mine).is_ok(), "{m}");
            let e = admit(&o, &m, host, &HeaderMap::new()).unwrap_err();
            assert!(e.0.contains("must carry"), "{m}: {e:?}");
            for foreign in [
                "http://evil.example",
                "https://127.0.0.1:9080",
                "http://127.0.0.1:9081",
                "http://localhost:9080",
                "null",
            ] {
                let h = headers(&[("origin", foreign)]);
                let e = admit(&o, &m, host, &h).unwrap_err();
                assert!(e.0.contains("Origin"), "{m} {foreign}: {e:?}");
            }
        }
        let ws = headers(&[("upgrade", "websocket"), ("connection", "Upgrade")]);
        let e = admit(&o, &Method::GET, host, &ws).unwrap_err();
        assert!(e.0.contains("WebSocket"), "{e:?}");
        let mut ws_mine = ws.clone();
        ws_mine.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:9080"),
        );
        assert!(admit(&o, &Method::GET, host, &ws_mine).is_ok());
        let mut ws_foreign = ws;
        ws_foreign.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(admit(&o, &Method::GET, host, &ws_foreign).is_err());
        // Two Origin headers are never taken.
        let two = headers(&[
            ("origin", "http://127.0.0.1:9080"),
            ("origin", "http://evil.example"),
        ]);
        assert!(admit(&o, &Method::POST, host, &two).is_err());
    }

    #[test]
    fn reads_need_no_origin_but_refuse_a_foreign_one() {
        let o = own();
        let host = Some("127.0.0.1:9080");
        assert!(admit(&o, &Method::GET, host, &HeaderMap::new()).is_ok());
        assert!(admit(&o, &Method::HEAD, host, &HeaderMap::new()).is_ok());
        let foreign = headers(&[("origin", "http://evil.example")]);
        assert!(admit(&o, &Method::GET, host, &foreign).is_err());
    }

    #[test]
    fn cross_site_requests_other_than_navigations_are_refused() {
        let o = own();
        let host = Some("127.0.0.1:9080");
        for site in ["same-origin", "none"] {
            let h = headers(&[("sec-fetch-site", site), ("sec-fetch-mode", "cors")]);
            assert!(admit(&o, &Method::GET, host, &h).is_ok(), "{site}");
        }
        for site in ["cross-site", "same-site"] {
            let sub = headers(&[("sec-fetch-site", site), ("sec-fetch-mode", "no-cors")]);
            assert!(admit(&o, &Method::GET, host, &sub).is_err(), "{site}");
            let nav = headers(&[("sec-fetch-site", site), ("sec-fetch-mode", "navigate")]);
            assert!(admit(&o, &Method::GET, host, &nav).is_ok(), "{site}");
        }
    }

    #[test]
    fn credentials_identity_claims_and_hop_by_hop_headers_are_not_forwarded() {
        let h = headers(&[
            ("host", "127.0.0.1:9080"),
            ("authorization", "Bearer from-the-page"),
            ("Proxy-Authorization", "Basic x"),
            ("cookie", "kruntimes-session=sealed"),
            ("origin", "http://127.0.0.1:9080"),
            ("referer", "http://127.0.0.1:9080/runs"),
            ("impersonate-user", "admin"),
            ("impersonate-group", "system:masters"),
            ("x-remote-user", "admin"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("x-forwarded-for", "10.0.0.1"),
            ("forwarded", "for=10.0.0.1"),
            ("connection", "keep-alive, x-secret"),
            ("x-secret", "hop"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers"),
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ]);
        let out = forward_request_headers(&h, "kruntimes-console.kruntimes-system.svc");
        let mut names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        names.sort();
        assert_eq!(names, ["accept", "content-type", "host"], "{out:?}");
        assert_eq!(out[header::HOST], "kruntimes-console.kruntimes-system.svc");
    }

    #[test]
    fn an_upgrade_keeps_its_upgrade_headers() {
        let h = headers(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-version", "13"),
            ("origin", "http://127.0.0.1:9080"),
        ]);
        let out = forward_request_headers(&h, "console.svc");
        assert_eq!(out[header::CONNECTION], "upgrade");
        assert_eq!(out[header::UPGRADE], "websocket");
        assert!(out.contains_key("sec-websocket-key"));
        assert!(!out.contains_key(header::ORIGIN));
    }

    #[test]
    fn cookies_and_hsts_do_not_reach_the_browser() {
        let mut h = headers(&[
            ("set-cookie", "kruntimes-session=sealed; HttpOnly; Secure"),
            ("strict-transport-security", "max-age=31536000"),
            ("content-type", "text/html"),
            ("connection", "close"),
            ("content-security-policy", "default-src 'self'"),
        ]);
        forward_response_headers(&mut h, false);
        let mut names: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        names.sort();
        assert_eq!(names, ["content-security-policy", "content-type"]);
        let mut up = headers(&[
            ("connection", "upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-accept", "x"),
        ]);
        forward_response_headers(&mut up, true);
        assert_eq!(up.len(), 3);
    }
}
