//! Caps on concurrent long-lived work (`/v1` calls, follows), in total and
//! per caller. A [`Slot`] is held for the work's life and frees its place
//! when dropped, however the work ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

use crate::metrics::{CapLabels, CapRefusalLabels, Metrics};

/// One cap pair: what it bounds, its bounds and the flags that set them.
#[derive(Debug)]
pub struct Caps {
    /// What is counted, for messages: "concurrent /v1 calls", "open follows".
    what: &'static str,
    max_total: usize,
    total_flag: &'static str,
    max_per_caller: usize,
    per_caller_flag: &'static str,
    open: Mutex<(usize, HashMap<String, usize>)>,
    /// Where places taken and refusals are counted, once [`Caps::counted_in`] is called.
    counters: OnceLock<CapCounters>,
}

#[derive(Debug)]
struct CapCounters {
    in_use: Gauge,
    refused_total: Counter,
    refused_per_caller: Counter,
}

impl CapCounters {
    /// The counters of cap `cap` on `listener`, its bound `max` set.
    fn new(metrics: &Metrics, listener: &'static str, cap: &'static str, max: usize) -> Self {
        let labels = CapLabels { listener, cap };
        metrics
            .cap_limit
            .get_or_create(&labels)
            .set(i64::try_from(max).unwrap_or(i64::MAX));
        let refused = |scope| {
            metrics
                .cap_refusals
                .get_or_create(&CapRefusalLabels {
                    listener,
                    cap,
                    scope,
                })
                .clone()
        };
        Self {
            in_use: metrics.cap_in_use.get_or_create(&labels).clone(),
            refused_total: refused("total"),
            refused_per_caller: refused("per_caller"),
        }
    }
}

/// A cap was reached; the message names it and the flag that sets it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CapReached {
    /// The bound on all callers together is reached.
    #[error("too many {what} (at most {max} in total; {flag} sets it); retry later")]
    Total {
        /// What is counted, for the message ("open follows").
        what: &'static str,
        /// The bound.
        max: usize,
        /// The flag that sets the bound.
        flag: &'static str,
    },
    /// The caller's own bound is reached.
    #[error(
        "too many {what} by {caller:?} (at most {max} per caller; {flag} sets it); retry later"
    )]
    PerCaller {
        /// What is counted, for the message ("open follows").
        what: &'static str,
        /// The caller's user name.
        caller: String,
        /// The bound per caller.
        max: usize,
        /// The flag that sets the bound.
        flag: &'static str,
    },
}

/// A place taken under [`Caps`]; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    caps: Arc<Caps>,
    caller: String,
}

impl Caps {
    /// A cap pair on `what`: at most `max_total` places in all (set by
    /// `total_flag`) and `max_per_caller` per caller (set by
    /// `per_caller_flag`).
    pub fn new(
        what: &'static str,
        max_total: usize,
        total_flag: &'static str,
        max_per_caller: usize,
        per_caller_flag: &'static str,
    ) -> Arc<Self> {
        Arc::new(Self {
            what,
            max_total,
            total_flag,
            max_per_caller,
            per_caller_flag,
            open: Mutex::new((0, HashMap::new())),
            counters: OnceLock::new(),
        })
    }

    /// Counts this cap's places in use, its bound and its refusals in
    /// `metrics` under `listener` and `cap` (a fixed name: `follows`,
    /// `watches`, `v1_calls`).
    pub fn counted_in(
        self: Arc<Self>,
        metrics: &Metrics,
        listener: &'static str,
        cap: &'static str,
    ) -> Arc<Self> {
        let _ = self
            .counters
            .set(CapCounters::new(metrics, listener, cap, self.max_total));
        self
    }

    /// Takes a place for `caller` (a user name), or says which cap is reached.
    pub fn acquire(self: &Arc<Self>, caller: &str) -> Result<Slot, CapReached> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mine = open.1.get(caller).copied().unwrap_or(0);
        if mine >= self.max_per_caller {
            if let Some(c) = self.counters.get() {
                c.refused_per_caller.inc();
            }
            return Err(CapReached::PerCaller {
                what: self.what,
                caller: caller.to_owned(),
                max: self.max_per_caller,
                flag: self.per_caller_flag,
            });
        }
        if open.0 >= self.max_total {
            if let Some(c) = self.counters.get() {
                c.refused_total.inc();
            }
            return Err(CapReached::Total {
                what: self.what,
                max: self.max_total,
                flag: self.total_flag,
            });
        }
        open.0 += 1;
        if let Some(c) = self.counters.get() {
            c.in_use.inc();
        }
        *open.1.entry(caller.to_owned()).or_insert(0) += 1;
        Ok(Slot {
            caps: self.clone(),
            caller: caller.to_owned(),
        })
    }

    /// Places taken now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.caps.open.lock().unwrap_or_else(|e| e.into_inner());
        open.0 -= 1;
        if let Some(c) = self.caps.counters.get() {
            c.in_use.dec();
        }
        if let Some(n) = open.1.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                open.1.remove(&self.caller);
            }
        }
    }
}

/// A budget of bytes held in memory at once across every caller (request
/// bodies read before they are forwarded). A [`Held`] share returns its
/// bytes when dropped; a share that would take the budget past its bound is
/// refused as a cap: a 429 naming the flag, counted with the caps' refusals.
#[derive(Debug)]
pub struct ByteBudget {
    what: &'static str,
    max: usize,
    flag: &'static str,
    used: Mutex<usize>,
    counters: OnceLock<CapCounters>,
}

/// Bytes held under a [`ByteBudget`]; dropping it returns them.
#[derive(Debug)]
pub struct Held {
    budget: Arc<ByteBudget>,
    bytes: usize,
}

impl ByteBudget {
    /// A budget of `max` bytes of `what` ("bytes of /v1 request bodies"),
    /// set by `flag`.
    pub fn new(what: &'static str, max: usize, flag: &'static str) -> Arc<Self> {
        Arc::new(Self {
            what,
            max,
            flag,
            used: Mutex::new(0),
            counters: OnceLock::new(),
        })
    }

    /// Counts the bytes held, the bound and the refusals in `metrics`, as
    /// [`Caps::counted_in`] does (scope `total`).
    pub fn counted_in(
        self: Arc<Self>,
        metrics: &Metrics,
        listener: &'static str,
        cap: &'static str,
    ) -> Arc<Self> {
        let _ = self
            .counters
            .set(CapCounters::new(metrics, listener, cap, self.max));
        self
    }

    /// An empty share, to grow as bytes arrive.
    pub fn hold(self: &Arc<Self>) -> Held {
        Held {
            budget: self.clone(),
            bytes: 0,
        }
    }

    /// Bytes held now, in every share.
    pub fn used(&self) -> usize {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Held {
    /// Grows the share to at least `total` bytes, or says the budget is spent
    /// (the share keeps what it had).
    pub fn reserve_to(&mut self, total: usize) -> Result<(), CapReached> {
        if total <= self.bytes {
            return Ok(());
        }
        let more = total - self.bytes;
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        if used.saturating_add(more) > self.budget.max {
            drop(used);
            if let Some(c) = self.budget.counters.get() {
                c.refused_total.inc();
            }
            return Err(CapReached::Total {
                what: self.budget.what,
                max: self.budget.max,
                flag: self.budget.flag,
            });
        }
        *used += more;
        drop(used);
        self.bytes = total;
        if let Some(c) = self.budget.counters.get() {
            c.in_use.inc_by(i64::try_from(more).unwrap_or(i64::MAX));
        }
        Ok(())
    }

    /// Bytes in this share.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut used = self.budget.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= self.bytes;
        drop(used);
        if let Some(c) = self.budget.counters.get() {
            c.in_use
                .dec_by(i64::try_from(self.bytes).unwrap_or(i64::MAX));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_caller_then_total() {
        let caps = Caps::new("open follows", 3, "--total", 2, "--per-caller");
        let a1 = caps.acquire("alice").unwrap();
        let _a2 = caps.acquire("alice").unwrap();
        let e = caps.acquire("alice").unwrap_err();
        assert!(e.to_string().contains("--per-caller"), "{e}");
        assert!(e.to_string().contains("\"alice\""), "{e}");
        let _b1 = caps.acquire("bob").unwrap();
        let e = caps.acquire("bob").unwrap_err();
        assert!(matches!(e, CapReached::Total { max: 3, .. }), "{e}");
        drop(a1);
        assert_eq!(caps.open(), 2);
        let _b2 = caps.acquire("bob").unwrap();
    }

    #[test]
    fn places_and_refusals_are_counted_by_cap_and_scope() {
        let metrics = Metrics::default();
        let caps = Caps::new("open watch streams", 2, "--total", 1, "--per-caller")
            .counted_in(&metrics, "console", "watches");
        let labels = CapLabels {
            listener: "console",
            cap: "watches",
        };
        let refused = |scope| {
            metrics
                .cap_refusals
                .get_or_create(&CapRefusalLabels {
                    listener: "console",
                    cap: "watches",
                    scope,
                })
                .get()
        };
        assert_eq!(metrics.cap_limit.get_or_create(&labels).get(), 2);
        let a = caps.acquire("alice").unwrap();
        assert!(caps.acquire("alice").is_err());
        let _b = caps.acquire("bob").unwrap();
        assert!(caps.acquire("carol").is_err());
        assert_eq!(metrics.cap_in_use.get_or_create(&labels).get(), 2);
        assert_eq!((refused("per_caller"), refused("total")), (1, 1));
        drop(a);
        assert_eq!(metrics.cap_in_use.get_or_create(&labels).get(), 1);
    }

    #[test]
    fn a_byte_budget_refuses_past_its_bound_and_returns_what_is_dropped() {
        let metrics = Metrics::default();
        let budget = ByteBudget::new("bytes of bodies", 100, "--max-bytes").counted_in(
            &metrics,
            "console",
            "v1_buffered_bytes",
        );
        let mut a = budget.hold();
        a.reserve_to(60).unwrap();
        a.reserve_to(40).unwrap();
        assert_eq!(a.bytes(), 60, "a share never shrinks");
        let mut b = budget.hold();
        let refused = b.reserve_to(41).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "too many bytes of bodies (at most 100 in total; --max-bytes sets it); retry later"
        );
        assert_eq!(b.bytes(), 0);
        b.reserve_to(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        b.reserve_to(100).unwrap();
        drop(b);
        assert_eq!(budget.used(), 0);
        let labels = CapRefusalLabels {
            listener: "console",
            cap: "v1_buffered_bytes",
            scope: "total",
        };
        assert_eq!(metrics.cap_refusals.get_or_create(&labels).get(), 1);
    }
}
