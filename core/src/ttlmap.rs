//! A small concurrent map of cached answers, each with its own deadline, read
//! without awaiting anything: the hit path of the token, access and gateway
//! caches. The asynchronous caches behind it still make (and coalesce) the
//! calls on a miss; this map only answers what they already decided, never
//! past the same deadline.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::RwLock;
use std::time::Instant;

const SHARDS: usize = 16;

/// One shard: entries with their deadlines.
type Shard<K, V> = RwLock<HashMap<K, (V, Instant)>>;

/// Entries with deadlines, in shards so concurrent readers and a writer
/// rarely meet.
pub struct TtlMap<K, V> {
    hasher: RandomState,
    shards: Box<[Shard<K, V>]>,
    per_shard: usize,
}

impl<K: Hash + Eq, V: Clone> TtlMap<K, V> {
    /// Holds about `capacity` entries at most.
    pub fn new(capacity: usize) -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            per_shard: capacity.div_ceil(SHARDS).max(1),
        }
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> &Shard<K, V> {
        let i = self.hasher.hash_one(key) as usize % SHARDS;
        &self.shards[i]
    }

    /// The value, if present and its deadline has not passed.
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get_until(key).map(|(v, _)| v)
    }

    /// The value and its deadline, if present and the deadline has not passed.
    pub fn get_until<Q>(&self, key: &Q) -> Option<(V, Instant)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let shard = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
        let (v, deadline) = shard.get(key)?;
        (Instant::now() < *deadline).then(|| (v.clone(), *deadline))
    }

    /// Keeps `value` until `deadline`. A full shard first drops its expired
    /// entries, and is emptied when that is not enough (the asynchronous
    /// cache behind still answers).
    pub fn insert(&self, key: K, value: V, deadline: Instant) {
        let now = Instant::now();
        if deadline <= now {
            return;
        }
        let mut shard = self.shard(&key).write().unwrap_or_else(|e| e.into_inner());
        if shard.len() >= self.per_shard && !shard.contains_key(&key) {
            shard.retain(|_, (_, d)| *d > now);
            if shard.len() >= self.per_shard {
                shard.clear();
            }
        }
        shard.insert(key, (value, deadline));
    }

    /// Entries held (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_entry_is_answered_until_its_deadline_only() {
        // Room for every entry in any shard (a full shard is emptied).
        let m = TtlMap::new(1000);
        let now = Instant::now();
        m.insert("a".to_owned(), 1, now + Duration::from_secs(60));
        m.insert("b".to_owned(), 2, now + Duration::from_millis(30));
        m.insert("c".to_owned(), 3, now);
        assert_eq!(m.get("a"), Some(1));
        assert_eq!(m.get("b"), Some(2));
        assert_eq!(
            m.get("c"),
            None,
            "an entry already past its deadline is not kept"
        );
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(m.get("b"), None, "an expired entry is never answered");
        assert_eq!(m.get("a"), Some(1));
    }

    #[test]
    fn the_map_stays_within_its_capacity() {
        let m = TtlMap::new(64);
        let later = Instant::now() + Duration::from_secs(60);
        for i in 0..10_000u32 {
            m.insert(i, i, later);
            assert_eq!(m.get(&i), Some(i), "the newest entry is always kept");
        }
        assert!(m.len() <= 64 + SHARDS, "{} entries held", m.len());
    }

    #[test]
    fn replacing_an_entry_moves_its_deadline() {
        let m = TtlMap::new(4);
        let now = Instant::now();
        m.insert(1u8, "old", now + Duration::from_millis(20));
        m.insert(1u8, "new", now + Duration::from_secs(60));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(m.get(&1), Some("new"));
    }
}
