//! Work that must happen when a value goes away, however it goes (an
//! answer finished, a client disconnected, a task cancelled).

/// Runs its closure once, when dropped.
#[must_use = "the closure runs when the guard is dropped"]
pub struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    /// A guard that runs `f` when dropped.
    pub fn new(f: F) -> Self {
        Self(Some(f))
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn runs_once_on_drop() {
        let n = Cell::new(0);
        {
            let _g = OnDrop::new(|| n.set(n.get() + 1));
            assert_eq!(n.get(), 0);
        }
        assert_eq!(n.get(), 1);
    }
}
