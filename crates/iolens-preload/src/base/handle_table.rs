//! A lock-free table from a handle (an MPI request or file, the address of an aio control
//! block) to a few words: what the hook families that wait for a completion keep meanwhile.

use std::sync::atomic::{AtomicU64, Ordering::*};

/// A lock-free open-addressing table from a handle to a few words, for the files opened and
/// the nonblocking calls in flight. Slots are claimed by compare-exchange on the key; a key is
/// looked up only by the thread that completes what it names, after its post returned.
pub(crate) struct HandleTable {
    keys: [AtomicU64; TABLE_SLOTS],
    words: [[AtomicU64; WORDS]; TABLE_SLOTS],
    /// Entries in use: lookups are skipped while it is 0 (the program's own communication).
    live: AtomicU64,
}

const TABLE_SLOTS: usize = 4096;
pub(crate) const WORDS: usize = 6;
/// How far from its home slot an entry may lie: bounds every lookup of a missing key.
const PROBES: usize = 64;
const EMPTY: u64 = 0;
const FREED: u64 = u64::MAX;

impl HandleTable {
    pub(crate) const fn new() -> HandleTable {
        HandleTable {
            keys: [const { AtomicU64::new(EMPTY) }; TABLE_SLOTS],
            words: [const { [const { AtomicU64::new(0) }; WORDS] }; TABLE_SLOTS],
            live: AtomicU64::new(0),
        }
    }

    fn home(key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize % TABLE_SLOTS
    }

    fn slots(key: u64) -> impl Iterator<Item = usize> {
        let home = Self::home(key);
        (0..PROBES).map(move |i| (home + i) % TABLE_SLOTS)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.live.load(Relaxed) == 0
    }

    /// Stores `words` under `key`, replacing a stale entry of the same key (a request whose
    /// completion was never seen, its handle now reused). False when the neighbourhood is full.
    pub(crate) fn insert(&self, key: u64, words: [u64; WORDS]) -> bool {
        if key == EMPTY || key == FREED {
            return false;
        }
        let found = Self::slots(key).find(|&s| self.keys[s].load(Acquire) == key);
        let slot = found.or_else(|| {
            Self::slots(key).find(|&s| {
                let k = self.keys[s].load(Relaxed);
                (k == EMPTY || k == FREED) && self.keys[s].compare_exchange(k, key, AcqRel, Relaxed).is_ok()
            })
        });
        let Some(s) = slot else { return false };
        for (w, v) in self.words[s].iter().zip(words) {
            w.store(v, Relaxed);
        }
        if found.is_none() {
            self.live.fetch_add(1, Relaxed);
        }
        true
    }

    fn find(&self, key: u64) -> Option<usize> {
        if key == EMPTY || key == FREED {
            return None;
        }
        for s in Self::slots(key) {
            match self.keys[s].load(Acquire) {
                k if k == key => return Some(s),
                EMPTY => return None,
                _ => {}
            }
        }
        None
    }

    fn words_of(&self, slot: usize) -> [u64; WORDS] {
        std::array::from_fn(|i| self.words[slot][i].load(Relaxed))
    }

    /// Removes every entry, handing its words to `each`.
    pub(crate) fn drain(&self, each: impl FnMut([u64; WORDS])) {
        self.drain_matching(|_| true, each);
    }

    /// Removes every entry whose words `matches`, handing its words to `each`.
    pub(crate) fn drain_matching(
        &self,
        matches: impl Fn(&[u64; WORDS]) -> bool,
        mut each: impl FnMut([u64; WORDS]),
    ) {
        if self.is_empty() {
            return;
        }
        for slot in 0..TABLE_SLOTS {
            let key = self.keys[slot].load(Acquire);
            if key == EMPTY || key == FREED || !matches(&self.words_of(slot)) {
                continue;
            }
            if let Some(words) = self.take_slot(slot, key) {
                each(words);
            }
        }
    }

    /// Removes the entry in `slot` if it still holds `key`; its words.
    fn take_slot(&self, slot: usize, key: u64) -> Option<[u64; WORDS]> {
        let words = self.words_of(slot);
        self.keys[slot].compare_exchange(key, FREED, AcqRel, Relaxed).ok()?;
        self.live.fetch_sub(1, Relaxed);
        Some(words)
    }

    pub(crate) fn take(&self, key: u64) -> Option<[u64; WORDS]> {
        self.take_slot(self.find(key)?, key)
    }

    /// Sets word `i` of `key`'s entry to `value` unless it was set already (non-zero).
    pub(crate) fn set_once(&self, key: u64, i: usize, value: u64) {
        if let Some(s) = self.find(key) {
            let _ = self.words[s][i].compare_exchange(0, value, Relaxed, Relaxed);
        }
    }

    /// The words of `key`'s entry.
    pub(crate) fn get(&self, key: u64) -> Option<[u64; WORDS]> {
        self.find(key).map(|s| self.words_of(s))
    }

    /// Sets the words of `key`'s entry from word `first` on to `values`; the entry's words, or
    /// `None` when there is no entry.
    pub(crate) fn set_words(&self, key: u64, first: usize, values: &[u64]) -> Option<[u64; WORDS]> {
        let s = self.find(key)?;
        for (w, v) in self.words[s][first..].iter().zip(values) {
            w.store(*v, Relaxed);
        }
        Some(self.words_of(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_keeps_entries_apart_and_replaces_a_stale_key() {
        let t = Box::new(HandleTable::new());
        // Keys that share a home slot probe on.
        let keys: Vec<u64> = (1..200u64).map(|i| i * 0x1000).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(t.insert(*k, [i as u64, 0, 0, 0, 0, 0]));
        }
        assert!(t.insert(keys[3], [77, 0, 0, 0, 0, 0]), "a reused handle replaces its stale entry");
        assert_eq!(t.live.load(Relaxed), keys.len() as u64);
        assert_eq!(t.take(keys[3]).unwrap()[0], 77);
        assert_eq!(t.take(keys[3]), None, "taken once");
        for (i, k) in keys.iter().enumerate().filter(|(i, _)| *i != 3) {
            assert_eq!(t.take(*k).unwrap()[0], i as u64);
        }
        assert!(t.is_empty());
        assert_eq!(t.take(0x5555), None);
        assert!(!t.insert(EMPTY, [0; WORDS]) && !t.insert(FREED, [0; WORDS]), "reserved keys");
    }

    #[test]
    fn a_full_neighbourhood_refuses_instead_of_probing_on() {
        let t = Box::new(HandleTable::new());
        let home = HandleTable::home(1);
        let same_home: Vec<u64> =
            (1..u64::MAX).filter(|k| HandleTable::home(*k) == home).take(PROBES + 1).collect();
        for k in &same_home[..PROBES] {
            assert!(t.insert(*k, [0; WORDS]));
        }
        assert!(!t.insert(same_home[PROBES], [0; WORDS]));
        assert!(t.take(same_home[0]).is_some());
        assert!(t.insert(same_home[PROBES], [5; WORDS]), "a freed slot is reused");
        assert_eq!(t.get(same_home[PROBES]).unwrap()[0], 5);
    }
}
