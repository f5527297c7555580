//! Working memory cache of injected snippets: least
//! recently used first out once the byte limit is passed, and an entry is
//! stale as soon as its defining file's revision moved on.

use std::time::Instant;

use lru::LruCache;
use serde::Serialize;

/// A rendered snippet for one definition, at one revision of its file.
#[derive(Clone)]
pub struct Entry {
    pub text: String,
    /// cl100k_base tokens of `text`, counted once when rendered.
    pub tokens: usize,
    pub revision: u64,
    pub created: Instant,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStatistics {
    pub hits: u64,
    pub misses: u64,
    /// Lookups that found an entry for an older file revision.
    pub staleness_refreshes: u64,
    pub evictions: u64,
    pub entries: usize,
    pub size_bytes: usize,
    pub peak_size_bytes: usize,
    pub size_limit_bytes: usize,
}

pub struct SnippetCache {
    entries: LruCache<(String, String), Entry>,
    /// Entries older than this are refreshed (`cache_expiry_minutes`).
    expiry: std::time::Duration,
    stats: CacheStatistics,
}

/// What a lookup found.
pub enum Lookup {
    Hit(Entry),
    /// Nothing usable: render the snippet and [`SnippetCache::insert`] it.
    Miss,
}

impl SnippetCache {
    pub fn new(limit_bytes: usize, expiry: std::time::Duration) -> Self {
        Self {
            entries: LruCache::unbounded(),
            expiry,
            stats: CacheStatistics {
                size_limit_bytes: limit_bytes,
                ..CacheStatistics::default()
            },
        }
    }

    /// The snippet of `symbol` in `file` if cached for `revision` and not
    /// expired.
    pub fn get(&mut self, file: &str, symbol: &str, revision: u64) -> Lookup {
        self.lookup(file, symbol, revision, true)
    }

    /// [`SnippetCache::get`] for work done ahead of any caller: the hit,
    /// miss and staleness counts stay as they are.
    pub fn get_uncounted(&mut self, file: &str, symbol: &str, revision: u64) -> Lookup {
        self.lookup(file, symbol, revision, false)
    }

    fn lookup(&mut self, file: &str, symbol: &str, revision: u64, counted: bool) -> Lookup {
        let key = (file.to_string(), symbol.to_string());
        let count = u64::from(counted);
        match self.entries.get(&key) {
            Some(entry) if entry.revision == revision && entry.created.elapsed() < self.expiry => {
                self.stats.hits += count;
                Lookup::Hit(entry.clone())
            }
            Some(_) => {
                self.stats.staleness_refreshes += count;
                if let Some(stale) = self.entries.pop(&key) {
                    self.stats.size_bytes -= stale.text.len();
                }
                self.sync_count();
                Lookup::Miss
            }
            None => {
                self.stats.misses += count;
                Lookup::Miss
            }
        }
    }

    pub fn insert(&mut self, file: &str, symbol: &str, entry: Entry) {
        self.stats.size_bytes += entry.text.len();
        if let Some(old) = self
            .entries
            .put((file.to_string(), symbol.to_string()), entry)
        {
            self.stats.size_bytes -= old.text.len();
        }
        while self.stats.size_bytes > self.stats.size_limit_bytes && self.entries.len() > 1 {
            let Some((_, evicted)) = self.entries.pop_lru() else {
                break;
            };
            self.stats.size_bytes -= evicted.text.len();
            self.stats.evictions += 1;
        }
        self.stats.peak_size_bytes = self.stats.peak_size_bytes.max(self.stats.size_bytes);
        self.sync_count();
    }

    fn sync_count(&mut self) {
        self.stats.entries = self.entries.len();
    }

    pub fn statistics(&self) -> CacheStatistics {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str, revision: u64) -> Entry {
        Entry {
            text: text.to_string(),
            tokens: 1,
            revision,
            created: Instant::now(),
        }
    }

    #[test]
    fn hits_misses_staleness_and_lru_eviction_fr13_to_fr16() {
        let mut cache = SnippetCache::new(10, std::time::Duration::from_secs(600));
        assert!(matches!(cache.get("a.py", "f", 1), Lookup::Miss));
        cache.insert("a.py", "f", entry("12345", 1));
        assert!(matches!(cache.get("a.py", "f", 1), Lookup::Hit(_)));
        // A newer revision of a.py makes the entry stale.
        assert!(matches!(cache.get("a.py", "f", 2), Lookup::Miss));
        cache.insert("a.py", "f", entry("12345", 2));
        cache.insert("b.py", "g", entry("1234", 1));
        // Touch f so that g is the least recently used, then overflow.
        assert!(matches!(cache.get("a.py", "f", 2), Lookup::Hit(_)));
        cache.insert("c.py", "h", entry("123", 1));
        let stats = cache.statistics();
        assert_eq!(
            (
                stats.hits,
                stats.misses,
                stats.staleness_refreshes,
                stats.evictions
            ),
            (2, 1, 1, 1)
        );
        assert!(matches!(cache.get("b.py", "g", 1), Lookup::Miss));
        assert_eq!(stats.entries, 2);
        assert_eq!(stats.size_bytes, 8);
        assert_eq!(stats.peak_size_bytes, 9);
    }

    #[test]
    fn expired_entries_are_refreshed_fr14() {
        let mut cache = SnippetCache::new(100, std::time::Duration::ZERO);
        cache.insert("a.py", "f", entry("x", 1));
        assert!(matches!(cache.get("a.py", "f", 1), Lookup::Miss));
        assert_eq!(cache.statistics().staleness_refreshes, 1);
    }
}
