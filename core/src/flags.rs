//! Flag value types shared by the programs' command lines.

/// A duration flag: `10s`, `500ms`, `2m`.
#[derive(Clone, Copy, Debug)]
pub struct DurationArg(pub std::time::Duration);

impl std::str::FromStr for DurationArg {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (num, unit) = s
            .find(|c: char| !c.is_ascii_digit())
            .map(|i| s.split_at(i))
            .ok_or_else(|| format!("{s:?}: a unit is required (ms, s, m, h)"))?;
        let n: u64 = num.parse().map_err(|_| format!("{s:?}: not a duration"))?;
        let d = match unit {
            "ms" => std::time::Duration::from_millis(n),
            "s" => std::time::Duration::from_secs(n),
            "m" => std::time::Duration::from_secs(n * 60),
            "h" => std::time::Duration::from_secs(n * 3600),
            _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s, m or h)")),
        };
        Ok(Self(d))
    }
}

impl From<DurationArg> for std::time::Duration {
    fn from(d: DurationArg) -> Self {
        d.0
    }
}
