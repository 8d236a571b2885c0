//! Strict query strings, one parser for every endpoint: each component is
//! percent-decoded, a name given twice is refused, and a malformed escape
//! is an error that says where. Each endpoint maps the names it knows to
//! its own fields and refuses the others.

/// A query string that cannot be accepted whatever the endpoint.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A parameter name appears twice.
    #[error("parameter {0:?} is given more than once")]
    Repeated(String),
    /// A bad percent escape, or a component that is not UTF-8; the words name
    /// it.
    #[error("the query string is not valid: {0}")]
    Malformed(String),
}

/// Hands each decoded `(name, value)` pair of a raw query string
/// (`a=1&b=2`) to `each`, in order, and stops at the first error; a name
/// without `=` has an empty value. `each` refuses the names its endpoint
/// does not know, so a long query of unknown names costs one pair, and the
/// repeat check only ever compares against names that were accepted.
pub fn parse<E: From<QueryError>>(
    raw: Option<&str>,
    mut each: impl FnMut(String, String) -> Result<(), E>,
) -> Result<(), E> {
    let mut seen: Vec<String> = Vec::new();
    for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (decode(k)?, decode(v)?);
        if seen.contains(&k) {
            return Err(QueryError::Repeated(k).into());
        }
        seen.push(k.clone());
        each(k, v)?;
    }
    Ok(())
}

/// Decodes one percent-encoded query component (`+` is a space).
pub fn decode(s: &str) -> Result<String, QueryError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| QueryError::Malformed(format!("bad percent-escape in {s:?}")))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| QueryError::Malformed(format!("{s:?} is not UTF-8")))
}

/// An integer from 1 to `max` written in plain decimal digits (no sign,
/// exponent or spaces), or None.
pub fn bounded(v: &str, max: usize) -> Option<usize> {
    if v.is_empty() || v.len() > 12 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: usize = v.parse().ok()?;
    (1..=max).contains(&n).then_some(n)
}

/// `true`/`1` or `false`/`0`, or None.
pub fn boolean(v: &str) -> Option<bool> {
    match v {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(raw: Option<&str>) -> Result<Vec<(String, String)>, QueryError> {
        let mut out = Vec::new();
        parse(raw, |k, v| {
            out.push((k, v));
            Ok::<_, QueryError>(())
        })?;
        Ok(out)
    }

    #[test]
    fn decodes_every_component_in_order() {
        assert_eq!(
            pairs(Some("a=1&b%20c=d+e&flag&&x=%2F")).unwrap(),
            [("a", "1"), ("b c", "d e"), ("flag", ""), ("x", "/")]
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert_eq!(pairs(None).unwrap(), []);
        assert_eq!(pairs(Some("")).unwrap(), []);
    }

    #[test]
    fn a_name_given_twice_is_refused_also_when_encoded_differently() {
        assert_eq!(
            pairs(Some("tail=1&tail=2")),
            Err(QueryError::Repeated("tail".into()))
        );
        assert_eq!(
            pairs(Some("tail=1&t%61il=2")),
            Err(QueryError::Repeated("tail".into()))
        );
    }

    #[test]
    fn malformed_escapes_are_refused() {
        for bad in ["a=%zz", "a=%4", "%=1", "a=%ff"] {
            assert!(
                matches!(pairs(Some(bad)), Err(QueryError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn parsing_stops_at_the_first_pair_the_endpoint_refuses() {
        // The rest is never decoded: the bad escape at the end is not reached.
        let long: String = (0..5000).map(|i| format!("p{i}=x&")).collect::<String>() + "z=%zz";
        let mut handed = 0;
        let r = parse(Some(&long), |k, _| {
            handed += 1;
            Err(QueryError::Repeated(k))
        });
        assert_eq!(r, Err(QueryError::Repeated("p0".into())));
        assert_eq!(handed, 1, "only the first pair is looked at");
    }

    #[test]
    fn bounded_integers_are_plain_decimals() {
        assert_eq!(bounded("1", 500), Some(1));
        assert_eq!(bounded("500", 500), Some(500));
        for bad in ["0", "501", "-1", "+1", "1e3", " 1", "", "9999999999999"] {
            assert_eq!(bounded(bad, 500), None, "{bad:?}");
        }
    }

    #[test]
    fn booleans() {
        assert_eq!(boolean("true"), Some(true));
        assert_eq!(boolean("0"), Some(false));
        assert_eq!(boolean("yes"), None);
        assert_eq!(boolean(""), None);
    }
}
