//! Resident memory of a process from `/proc/PID/status`.

use anyhow::{Context, Result};

/// Resident set size now and its peak, in KiB.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
    /// The anonymous part of `rss_kib` (the heap, stacks): without the
    /// pages of the executable and other files, which the process may map
    /// once whatever it holds.
    pub anon_kib: u64,
}

pub fn memory(pid: u32) -> Result<Memory> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Ok(Memory {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
        anon_kib: field("RssAnon:"),
    })
}

/// Resets the peak (VmHWM) to the current RSS, so the next peak belongs to
/// what happens next (`echo 5 > /proc/PID/clear_refs`).
pub fn reset_peak(pid: u32) -> Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")
        .with_context(|| format!("resetting the peak RSS of {pid}"))
}

/// KiB as MiB with one decimal.
pub fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// CPU time (user + system) a process has used so far, in seconds.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces): state is the first.
    let rest = text.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime, in USER_HZ (100 per second on Linux).
    Ok((ticks(11) + ticks(12)) as f64 / 100.0)
}

/// How idle cores wait: the cpuidle driver and governor and, with the
/// `haltpoll` driver, how long an idle core polls before it halts
/// (`guest_halt_poll_ns`; the kernel's default is 200000, 0 halts at
/// once). A wake-up sent to a halted virtual CPU waits for the host to run
/// it again, which sets the pace of one call at a time.
pub fn idle_config() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
    let base = "/sys/devices/system/cpu/cpuidle";
    let (Ok(driver), Ok(governor)) = (
        read(&format!("{base}/current_driver")),
        read(&format!("{base}/current_governor")),
    ) else {
        return "cpuidle not available".into();
    };
    match read("/sys/module/haltpoll/parameters/guest_halt_poll_ns") {
        Ok(ns) if driver == "haltpoll" => {
            format!("cpuidle {driver}, governor {governor}, guest_halt_poll_ns {ns}")
        }
        _ => format!("cpuidle {driver}, governor {governor}"),
    }
}

/// The 1, 5 and 15 minute load averages, as `/proc/loadavg` gives them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
