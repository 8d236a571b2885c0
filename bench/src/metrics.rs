//! Values out of a Prometheus text exposition.

use anyhow::Result;

/// The sum of every sample of `name` (all label sets); 0 when absent.
pub fn sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let rest = if let Some(r) = rest.strip_prefix('{') {
                &r[r.find('}')? + 1..]
            } else {
                rest
            };
            let value = rest.strip_prefix(' ')?;
            value.split_whitespace().next()?.parse::<f64>().ok()
        })
        .sum::<f64>()
        // An empty sum is -0.0; print 0.
        + 0.0
}

/// The Console's counters the benchmarks look at.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub log_bytes_read: f64,
    pub follow_streams: f64,
    /// Open upstream `pods/log` follow streams (one per followed Pod, once followers share them).
    pub upstream_streams: f64,
    /// Open followers (both listeners).
    pub followers: f64,
    pub token_reviews: f64,
    pub access_reviews: f64,
}

/// Scrapes `<admin>/metrics`.
pub async fn scrape(admin_url: &str) -> Result<Counters> {
    let text = crate::http::get_plain(&format!("{admin_url}/metrics")).await?;
    Ok(Counters {
        log_bytes_read: sum(&text, "kruntimes_console_log_read_bytes_total"),
        follow_streams: sum(&text, "kruntimes_console_log_follow_streams"),
        upstream_streams: sum(&text, "kruntimes_console_log_upstream_streams"),
        followers: sum(&text, "kruntimes_console_log_followers"),
        token_reviews: sum(&text, "kruntimes_console_token_reviews_total"),
        access_reviews: sum(&text, "kruntimes_console_access_reviews_total"),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_label_sets() {
        let text =
            "# HELP x y\nfoo_total{a=\"1\"} 2\nfoo_total{a=\"2\"} 3.5\nfoo_total_other 9\nfoo 1\n";
        assert_eq!(super::sum(text, "foo_total"), 5.5);
        assert_eq!(super::sum(text, "foo"), 1.0);
        assert_eq!(super::sum(text, "bar"), 0.0);
    }
}
