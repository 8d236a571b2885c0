//! A streaming reader of the top-level string members of one JSON object,
//! for runtimed lines too long to parse whole.
//!
//! It sees every byte of the line in pieces and keeps only the few members
//! a record needs, so an oversized line follows the same rule as a whole one
//! parsed by serde: only top-level keys count, and a repeated known key or a
//! known key whose value is neither a string nor `null` drops the line.

/// The members a runtimed record is made of.
const KEYS: [&str; 5] = ["run_uid", "stream", "message", "pod", "invocation_id"];
/// Index of `message` in [`KEYS`]: its value is checked, never kept.
const MESSAGE: usize = 2;
/// Longest key compared against [`KEYS`]; longer keys are unknown ones.
const MAX_KEY_BYTES: usize = 32;
/// Longest value kept for a known member other than the message.
pub const MAX_VALUE_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Expect {
    /// Before the opening brace.
    #[default]
    Open,
    Key,
    Colon,
    Value,
    CommaOrEnd,
    /// After the closing brace: only whitespace may follow.
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    None,
    /// Inside a top-level key.
    Key,
    /// Inside the string value of the member `key`.
    Value,
    /// Inside a top-level scalar (number, `true`, `false`, `null`).
    Scalar,
    /// Inside a string nested deeper than the top level.
    Nested,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
enum Member {
    #[default]
    Absent,
    Null,
    Str(String),
}

/// The state of one scan; [`TopLevelScan::reset`] starts a new line.
#[derive(Debug)]
pub struct TopLevelScan {
    expect: Expect,
    token: Token,
    escaped: bool,
    /// Depth of nested objects and arrays below the top level.
    depth: u32,
    /// Raw bytes of the key, value or scalar being read (bounded).
    raw: Vec<u8>,
    raw_cut: bool,
    /// The known member whose value comes next.
    key: Option<usize>,
    members: [Member; KEYS.len()],
    seen: [bool; KEYS.len()],
    /// Whether a member was read (`{}` is an object, `{"a":1,}` is not).
    any_member: bool,
    /// Set when the line cannot be a record (malformed, repeated or mistyped known member).
    rejected: bool,
}

impl Default for TopLevelScan {
    fn default() -> Self {
        Self {
            expect: Expect::Open,
            token: Token::None,
            escaped: false,
            depth: 0,
            raw: Vec::new(),
            raw_cut: false,
            key: None,
            members: Default::default(),
            seen: [false; KEYS.len()],
            any_member: false,
            rejected: false,
        }
    }
}

/// The top-level members of a complete object.
#[derive(Debug, PartialEq, Eq)]
pub struct TopLevelFields {
    members: [Member; KEYS.len()],
}

impl TopLevelFields {
    /// The string value of a top-level member, `None` when absent or `null`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let i = KEYS.iter().position(|k| *k == key)?;
        match &self.members[i] {
            Member::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl TopLevelScan {
    /// Starts over, as for a new log.
    pub fn reset(&mut self) {
        let raw = std::mem::take(&mut self.raw);
        *self = Self {
            raw,
            ..Self::default()
        };
        self.raw.clear();
    }

    /// The members read, when the bytes fed were exactly one object that can be a record.
    pub fn fields(&self) -> Option<TopLevelFields> {
        if self.rejected || self.expect != Expect::Done {
            return None;
        }
        Some(TopLevelFields {
            members: self.members.clone(),
        })
    }

    /// Feeds the next bytes of the line.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.rejected {
            if matches!(self.token, Token::Key | Token::Value | Token::Nested) {
                // Inside a string: jump to the next quote or backslash.
                if self.escaped {
                    self.escaped = false;
                    self.keep(&bytes[..1]);
                    bytes = &bytes[1..];
                    continue;
                }
                match memchr::memchr2(b'"', b'\\', bytes) {
                    None => {
                        self.keep(bytes);
                        return;
                    }
                    Some(i) => {
                        self.keep(&bytes[..i]);
                        if bytes[i] == b'\\' {
                            self.escaped = true;
                            self.keep(b"\\");
                        } else {
                            self.end_string();
                        }
                        bytes = &bytes[i + 1..];
                    }
                }
                continue;
            }
            let b = bytes[0];
            bytes = &bytes[1..];
            self.byte(b);
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let limit = match self.token {
            Token::Key => MAX_KEY_BYTES,
            Token::Value if self.key.is_some_and(|k| k != MESSAGE) => MAX_VALUE_BYTES,
            Token::Scalar => 8,
            _ => return,
        };
        let room = limit.saturating_sub(self.raw.len());
        if bytes.len() > room {
            self.raw_cut = true;
        }
        self.raw.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    fn start(&mut self, token: Token) {
        self.token = token;
        self.raw.clear();
        self.raw_cut = false;
    }

    fn end_string(&mut self) {
        match self.token {
            Token::Key => {
                self.key = if self.raw_cut {
                    None
                } else {
                    decode(&self.raw).and_then(|k| KEYS.iter().position(|known| *known == k))
                };
                if let Some(k) = self.key {
                    if self.seen[k] {
                        self.rejected = true;
                    }
                    self.seen[k] = true;
                }
                self.expect = Expect::Colon;
            }
            Token::Value => {
                if let Some(k) = self.key.take()
                    && k != MESSAGE
                {
                    match decode(&self.raw) {
                        Some(s) if !self.raw_cut => self.members[k] = Member::Str(s),
                        _ => self.rejected = true,
                    }
                }
                self.expect = Expect::CommaOrEnd;
            }
            _ => {}
        }
        self.token = Token::None;
    }

    fn end_scalar(&mut self) {
        if let Some(k) = self.key.take() {
            if self.raw == b"null" {
                self.members[k] = Member::Null;
            } else {
                self.rejected = true;
            }
        }
        self.token = Token::None;
        self.expect = Expect::CommaOrEnd;
    }

    fn byte(&mut self, b: u8) {
        let ws = matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        if self.token == Token::Scalar {
            if ws || b == b',' || b == b'}' {
                self.end_scalar();
            } else {
                self.keep(&[b]);
                return;
            }
        }
        if self.depth > 0 {
            match b {
                b'"' => self.start(Token::Nested),
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.expect = Expect::CommaOrEnd;
                    }
                }
                _ => {}
            }
            return;
        }
        if ws {
            return;
        }
        match (self.expect, b) {
            (Expect::Open, b'{') => self.expect = Expect::Key,
            (Expect::Key, b'"') => {
                self.any_member = true;
                self.start(Token::Key);
            }
            (Expect::Key, b'}') if !self.any_member => self.expect = Expect::Done,
            (Expect::Colon, b':') => self.expect = Expect::Value,
            (Expect::Value, b'"') => self.start(Token::Value),
            (Expect::Value, b'{' | b'[') => {
                if self.key.take().is_some() {
                    self.rejected = true;
                }
                self.depth = 1;
            }
            (Expect::Value, _) => {
                self.start(Token::Scalar);
                self.keep(&[b]);
            }
            (Expect::CommaOrEnd, b',') => self.expect = Expect::Key,
            (Expect::CommaOrEnd, b'}') => self.expect = Expect::Done,
            _ => self.rejected = true,
        }
    }
}

fn decode(raw: &[u8]) -> Option<String> {
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    serde_json::from_slice(&quoted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_pieces(line: &[u8], piece: usize) -> Option<TopLevelFields> {
        let mut s = TopLevelScan::default();
        for chunk in line.chunks(piece) {
            s.feed(chunk);
        }
        s.fields()
    }

    #[test]
    fn piece_size_does_not_matter() {
        let line = br#" {"a":{"run_uid":"n","b":[1,"x\"y"]},"run_uid":"u\"1","n":-1.5e3,"stream":null,"message":"m\\","pod":"p"} "#;
        for piece in 1..line.len() {
            let f = scan_in_pieces(line, piece).expect("an object");
            assert_eq!(f.get("run_uid"), Some("u\"1"), "piece {piece}");
            assert_eq!(f.get("stream"), None);
            assert_eq!(f.get("pod"), Some("p"));
        }
    }

    #[test]
    fn malformed_or_incomplete_is_no_object() {
        for line in [
            &br#"{"run_uid":"u""#[..],
            br#"{"run_uid":"u"} x"#,
            br#"{"run_uid" "u"}"#,
            br#"{"run_uid":"u",}"#,
            br#"["run_uid","u"]"#,
            br#"{"run_uid":true}"#,
            br#"{"pod":{"x":1}}"#,
        ] {
            assert_eq!(
                scan_in_pieces(line, 3),
                None,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert!(scan_in_pieces(b"{}", 1).is_some());
    }

    #[test]
    fn reset_starts_over() {
        let mut s = TopLevelScan::default();
        s.feed(br#"{"run_uid":"a","run_uid":"b"}"#);
        assert_eq!(s.fields(), None);
        s.reset();
        s.feed(br#"{"run_uid":"a"}"#);
        assert_eq!(s.fields().unwrap().get("run_uid"), Some("a"));
    }
}
