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
    /// The last places, kept for light callers ([`Caps::with_reserve`]).
    reserve: OnceLock<Reserve>,
}

#[derive(Debug)]
struct CapCounters {
    in_use: Gauge,
    refused_total: Counter,
    refused_per_caller: Counter,
    refused_reserve: Counter,
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
            refused_reserve: refused("reserve"),
        }
    }
}

/// The flag that sets every cap's reserve for light callers.
pub const RESERVE_FLAG: &str = "--reserve-for-light-callers";

/// The last places of a cap, kept for light callers: a caller that would
/// hold more than `light` with what it asks may not take any of the last
/// `places`. So callers that each take their whole own share (several
/// addresses or identities together) fill the cap only up to its reserve,
/// and a caller that holds little is still served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserve {
    /// Places (or bytes) at the end of the cap kept.
    pub places: usize,
    /// The most a caller may hold and still take them.
    pub light: usize,
}

impl Reserve {
    /// `percent` % of `max` kept for callers holding at most a sixteenth of
    /// `max_per_caller` (at least one place).
    pub fn share(max: usize, max_per_caller: usize, percent: u8) -> Self {
        Self {
            places: (max as u128 * u128::from(percent.min(100)) / 100) as usize,
            light: (max_per_caller / 16).max(1),
        }
    }

    /// Does the reserve refuse `more` to a caller holding `mine`, with
    /// `used` of `max` taken?
    pub fn refuses(&self, used: usize, mine: usize, more: usize, max: usize) -> bool {
        used.saturating_add(more) > max.saturating_sub(self.places)
            && mine.saturating_add(more) > self.light
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
    /// Only the reserve is left, and the caller holds too much to take it.
    #[error(
        "too many {what} (the last {places} of {max} are kept for callers holding at most {light}; {flag} sets it); retry later"
    )]
    Reserved {
        /// What is counted, for the message ("open follows").
        what: &'static str,
        /// The places kept.
        places: usize,
        /// The bound on all callers together.
        max: usize,
        /// The most a caller may hold and take them.
        light: usize,
        /// The flag that sets the reserve.
        flag: &'static str,
    },
}

impl CapReached {
    /// The refusal of a reserve's places to a caller holding more than it
    /// allows.
    fn reserved(what: &'static str, max: usize, r: Reserve) -> Self {
        Self::Reserved {
            what,
            places: r.places,
            max,
            light: r.light,
            flag: RESERVE_FLAG,
        }
    }
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
            reserve: OnceLock::new(),
        })
    }

    /// Keeps `reserve`'s places for light callers (none by default).
    pub fn with_reserve(self: Arc<Self>, reserve: Reserve) -> Arc<Self> {
        let _ = self.reserve.set(reserve);
        self
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
        if let Some(r) = self.reserve.get()
            && r.refuses(open.0, mine, 1, self.max_total)
        {
            if let Some(c) = self.counters.get() {
                c.refused_reserve.inc();
            }
            return Err(CapReached::reserved(self.what, self.max_total, *r));
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

/// A budget of bytes held in memory at once, across every caller and per
/// caller (request bodies read before they are forwarded, WebSocket frames
/// not yet whole). A [`Held`] share grows as bytes arrive and returns them
/// when it shrinks or is dropped; a share that would take its caller or the
/// whole budget past a bound is refused as a cap: a 429 (or a close) naming
/// the flag, counted with the caps' refusals.
#[derive(Debug)]
pub struct ByteBudget {
    what: &'static str,
    max: usize,
    flag: &'static str,
    max_per_caller: usize,
    per_caller_flag: &'static str,
    /// Bytes held in total, and by each caller holding any.
    used: Mutex<(usize, HashMap<String, usize>)>,
    counters: OnceLock<CapCounters>,
    /// The last bytes, kept for light callers ([`ByteBudget::with_reserve`]).
    reserve: OnceLock<Reserve>,
}

/// Bytes held under a [`ByteBudget`] by one caller; dropping it returns them.
#[derive(Debug)]
pub struct Held {
    budget: Arc<ByteBudget>,
    caller: String,
    bytes: usize,
}

impl ByteBudget {
    /// A budget of `max` bytes of `what` ("bytes of /v1 request bodies"),
    /// set by `flag`, of which one caller may hold at most `max_per_caller`
    /// (set by `per_caller_flag`).
    pub fn new(
        what: &'static str,
        max: usize,
        flag: &'static str,
        max_per_caller: usize,
        per_caller_flag: &'static str,
    ) -> Arc<Self> {
        Arc::new(Self {
            what,
            max,
            flag,
            max_per_caller,
            per_caller_flag,
            used: Mutex::new((0, HashMap::new())),
            counters: OnceLock::new(),
            reserve: OnceLock::new(),
        })
    }

    /// Keeps `reserve`'s bytes for light callers (none by default).
    pub fn with_reserve(self: Arc<Self>, reserve: Reserve) -> Arc<Self> {
        let _ = self.reserve.set(reserve);
        self
    }

    /// Counts the bytes held, the bound and the refusals in `metrics`, as
    /// [`Caps::counted_in`] does (scopes `total` and `per_caller`).
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

    /// An empty share of `caller` (a user name), to grow as bytes arrive.
    pub fn hold(self: &Arc<Self>, caller: &str) -> Held {
        Held {
            budget: self.clone(),
            caller: caller.to_owned(),
            bytes: 0,
        }
    }

    /// Bytes held now, in every share.
    pub fn used(&self) -> usize {
        self.used.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// Bytes held now by `caller`, in all its shares.
    pub fn used_by(&self, caller: &str) -> usize {
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.1.get(caller).copied().unwrap_or(0)
    }
}

impl Held {
    /// Grows the share to at least `total` bytes, or says which bound the
    /// growth would pass (the share keeps what it had).
    pub fn reserve_to(&mut self, total: usize) -> Result<(), CapReached> {
        if total <= self.bytes {
            return Ok(());
        }
        self.resize_to(total)
    }

    /// Sets the share to `total` bytes: a smaller share returns bytes and
    /// always succeeds; a larger one is refused as [`Held::reserve_to`] is.
    pub fn resize_to(&mut self, total: usize) -> Result<(), CapReached> {
        let budget = &*self.budget;
        if total <= self.bytes {
            let less = self.bytes - total;
            if less > 0 {
                budget.give_back(&self.caller, less);
                self.bytes = total;
            }
            return Ok(());
        }
        let more = total - self.bytes;
        let mut used = budget.used.lock().unwrap_or_else(|e| e.into_inner());
        let mine = used.1.get(self.caller.as_str()).copied().unwrap_or(0);
        let refusal = if mine.saturating_add(more) > budget.max_per_caller {
            Some(CapReached::PerCaller {
                what: budget.what,
                caller: self.caller.clone(),
                max: budget.max_per_caller,
                flag: budget.per_caller_flag,
            })
        } else if used.0.saturating_add(more) > budget.max {
            Some(CapReached::Total {
                what: budget.what,
                max: budget.max,
                flag: budget.flag,
            })
        } else {
            budget
                .reserve
                .get()
                .filter(|r| r.refuses(used.0, mine, more, budget.max))
                .map(|r| CapReached::reserved(budget.what, budget.max, *r))
        };
        if let Some(refusal) = refusal {
            drop(used);
            if let Some(c) = budget.counters.get() {
                match refusal {
                    CapReached::PerCaller { .. } => c.refused_per_caller.inc(),
                    CapReached::Total { .. } => c.refused_total.inc(),
                    CapReached::Reserved { .. } => c.refused_reserve.inc(),
                };
            }
            return Err(refusal);
        }
        used.0 += more;
        *used.1.entry(self.caller.clone()).or_insert(0) += more;
        drop(used);
        self.bytes = total;
        if let Some(c) = budget.counters.get() {
            c.in_use.inc_by(i64::try_from(more).unwrap_or(i64::MAX));
        }
        Ok(())
    }

    /// Bytes in this share.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl ByteBudget {
    /// Returns `bytes` of `caller`'s.
    fn give_back(&self, caller: &str, bytes: usize) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.0 -= bytes;
        if let Some(n) = used.1.get_mut(caller) {
            *n -= bytes;
            if *n == 0 {
                used.1.remove(caller);
            }
        }
        drop(used);
        if let Some(c) = self.counters.get() {
            c.in_use.dec_by(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget.give_back(&self.caller, self.bytes);
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

    /// Callers that each take their whole share fill the cap only to its
    /// reserve; a light caller takes the reserve's places, up to `light`
    /// each; the refusal names the flag and is counted.
    #[test]
    fn heavy_callers_leave_the_reserve_to_light_ones() {
        let metrics = Metrics::default();
        let reserve = Reserve::share(100, 32, 25);
        assert_eq!(
            reserve,
            Reserve {
                places: 25,
                light: 2
            }
        );
        let caps = Caps::new("calls", 100, "--total", 32, "--per-caller")
            .with_reserve(reserve)
            .counted_in(&metrics, "console", "v1_calls");
        let mut held = Vec::new();
        for heavy in ["h1", "h2", "h3"] {
            while let Ok(s) = caps.acquire(heavy) {
                held.push(s);
            }
        }
        // 75 places; h3 got only 11 of its 32.
        assert_eq!(caps.open(), 75);
        let e = caps.acquire("h3").unwrap_err();
        assert!(
            matches!(
                e,
                CapReached::Reserved {
                    places: 25,
                    light: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains(RESERVE_FLAG), "{e}");
        // A light caller's first places come from the reserve; its third does not.
        let l1 = caps.acquire("light").unwrap();
        let _l2 = caps.acquire("light").unwrap();
        assert!(matches!(
            caps.acquire("light"),
            Err(CapReached::Reserved { .. })
        ));
        for n in 0..11 {
            held.push(caps.acquire(&format!("other{n}")).unwrap());
            held.push(caps.acquire(&format!("other{n}")).unwrap());
        }
        // 99 taken: the last place goes to a light caller, then the cap holds.
        assert_eq!(caps.open(), 99);
        assert!(matches!(
            caps.acquire("h1"),
            Err(CapReached::PerCaller { .. })
        ));
        let last = caps.acquire("late").unwrap();
        assert!(matches!(
            caps.acquire("later"),
            Err(CapReached::Total { .. })
        ));
        drop((l1, last));
        let refused = metrics
            .cap_refusals
            .get_or_create(&CapRefusalLabels {
                listener: "console",
                cap: "v1_calls",
                scope: "reserve",
            })
            .get();
        assert!(refused >= 2, "reserve refusals counted: {refused}");
        // Bytes alike: 60 of 80 for heavy holders, the rest in light shares.
        let budget = ByteBudget::new("bytes", 80, "--max", 40, "--per-caller")
            .with_reserve(Reserve::share(80, 40, 25));
        let mut a = budget.hold("a");
        a.reserve_to(40).unwrap();
        let mut b = budget.hold("b");
        assert!(matches!(b.reserve_to(21), Err(CapReached::Reserved { .. })));
        b.reserve_to(20).unwrap();
        let mut c = budget.hold("c");
        c.reserve_to(2).unwrap();
        assert!(matches!(c.reserve_to(3), Err(CapReached::Reserved { .. })));
        assert_eq!(budget.used(), 62);
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
        let budget = ByteBudget::new("bytes of bodies", 100, "--max-bytes", 100, "--per-caller")
            .counted_in(&metrics, "console", "v1_buffered_bytes");
        let mut a = budget.hold("alice");
        a.reserve_to(60).unwrap();
        a.reserve_to(40).unwrap();
        assert_eq!(a.bytes(), 60, "reserve_to never shrinks a share");
        let mut b = budget.hold("bob");
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
        let gauge = CapLabels {
            listener: "console",
            cap: "v1_buffered_bytes",
        };
        assert_eq!(metrics.cap_in_use.get_or_create(&gauge).get(), 0);
    }

    #[test]
    fn one_caller_holds_at_most_its_share_whatever_the_budget_has_left() {
        let metrics = Metrics::default();
        let budget = ByteBudget::new("bytes of bodies", 100, "--max-bytes", 30, "--per-caller")
            .counted_in(&metrics, "console", "v1_buffered_bytes");
        // One caller's shares add up: three calls of 10 bytes, then no more.
        let mut shares: Vec<Held> = (0..3).map(|_| budget.hold("mallory")).collect();
        for s in &mut shares {
            s.reserve_to(10).unwrap();
        }
        let mut fourth = budget.hold("mallory");
        let refused = fourth.reserve_to(1).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "too many bytes of bodies by \"mallory\" (at most 30 per caller; --per-caller sets it); retry later"
        );
        assert_eq!((budget.used(), budget.used_by("mallory")), (30, 30));
        // Another caller still has the rest of the budget.
        let mut alice = budget.hold("alice");
        alice.reserve_to(30).unwrap();
        // A share that shrinks makes room for its caller again.
        shares[0].resize_to(4).unwrap();
        assert_eq!(budget.used_by("mallory"), 24);
        fourth.reserve_to(6).unwrap();
        assert!(fourth.reserve_to(7).is_err());
        drop(shares);
        drop(fourth);
        assert_eq!((budget.used(), budget.used_by("mallory")), (30, 0));
        let refused = |scope| {
            metrics
                .cap_refusals
                .get_or_create(&CapRefusalLabels {
                    listener: "console",
                    cap: "v1_buffered_bytes",
                    scope,
                })
                .get()
        };
        assert_eq!((refused("per_caller"), refused("total")), (2, 0));
    }
}
