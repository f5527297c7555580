//! Hot spots: the definitions agents
//! most likely search for, scored ahead of time (many dependents, names a
//! package re-exports or `__all__` lists, handler and service naming, classes),
//! with their clusters computed with every relationship expanded, so a search
//! that lands on one needs no call-graph walk.
//!
//! An entry is valid while the files it touches (its seed's, and every
//! related symbol's) keep their revision and its seed's file keeps its
//! dependents (a new caller must depend on it); a stale entry is computed
//! again when hit. The cache holds at most [`MAX_HOT`] entries and evicts
//! the least hit, then the oldest.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

use rustc_hash::FxHashMap;

use super::{Cluster, Expand, KeptCluster, Kind, SearchOptions};
use crate::Service;

/// The call depth hot spots are expanded to (the search default).
pub(crate) const HOT_DEPTH: usize = 2;
/// Entries kept at most.
pub(crate) const MAX_HOT: usize = 50;
/// Dependents from which a definition's use counts.
const MIN_USES: usize = 5;
/// Name patterns of handlers and services.
const PREFIXES: [&str; 7] = [
    "get", "set", "create", "update", "delete", "handle", "process",
];
const SUFFIXES: [&str; 5] = ["Service", "Handler", "Manager", "Controller", "View"];

struct HotEntry {
    cluster: Cluster,
    /// The seed's file.
    file: String,
    /// Files the cluster shows, with the revision it was computed at.
    touched: Vec<(String, Option<u64>)>,
    /// The seed file's dependents then.
    dependents: Vec<String>,
    hits: u64,
    at: Instant,
}

#[derive(Default)]
pub(crate) struct HotSpots {
    entries: Mutex<FxHashMap<String, HotEntry>>,
}

impl HotSpots {
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn put(&self, id: String, entry: HotEntry) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.contains_key(&id) && entries.len() >= MAX_HOT {
            let victim = entries
                .iter()
                .min_by_key(|(_, e)| (e.hits, e.at))
                .map(|(id, _)| id.clone());
            if let Some(victim) = victim {
                entries.remove(&victim);
            }
        }
        entries.insert(id, entry);
    }
}

/// What a search reads from the cache: the cluster, or why not.
pub(crate) enum Lookup {
    Hit(Box<Cluster>),
    Stale,
    Absent,
}

impl Service {
    /// Scores every definition and computes the clusters of the best
    /// [`MAX_HOT`], every relationship expanded. Returns how many.
    ///
    /// The search index it scores is the one a search built, or else one
    /// made for this alone and dropped after: a session that never
    /// searches does not keep it (a fifth of the heap on Django).
    pub fn precompute_hot_spots(&self) -> usize {
        let index = self
            .kept_symbol_index()
            .unwrap_or_else(|| std::sync::Arc::new(super::SymbolIndex::build(&self.engine, None)));
        let exported = self.exported_names();
        let mut scored: Vec<(u32, &super::Entry)> = index
            .entries()
            .filter(|e| e.kind != Kind::Module && e.kind != Kind::Variable)
            .filter_map(|e| {
                let score = self.hot_score(e, &exported);
                (score > 0).then_some((score, e))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id().cmp(&b.1.id())));
        let mut computed = 0;
        let ahead = self.ahead();
        for (_, entry) in scored.into_iter().take(MAX_HOT) {
            // Between clusters: an update waiting for this snapshot goes
            // first (it waits until every snapshot is dropped), and the
            // work is tried again once the tree is quiet.
            self.engine.check_cancelled();
            ahead.compute_hot(entry);
            computed += 1;
        }
        computed
    }

    fn hot_score(&self, entry: &super::Entry, exported: &BTreeSet<(String, String)>) -> u32 {
        let mut score = 0;
        let uses = self.engine.usage_count(&entry.file, &entry.qualname);
        if uses >= MIN_USES {
            score += (uses as u32 / 2).min(10);
        }
        let lower = entry.name.to_lowercase();
        if PREFIXES.iter().any(|p| lower.starts_with(p))
            || SUFFIXES.iter().any(|s| entry.name.ends_with(s))
        {
            score += 3;
        }
        let is_exported = exported.contains(&(entry.file.to_string(), entry.qualname.to_string()));
        if is_exported {
            score += 5;
        }
        if entry.kind == Kind::Class {
            score += 2;
        }
        // Naming and kind alone do not make a hot spot: something must use it
        // or export it.
        if uses < MIN_USES && !is_exported {
            return 0;
        }
        score
    }

    /// Definitions a package `__init__` re-exports or a module's `__all__`
    /// lists: the project's entry points.
    fn exported_names(&self) -> BTreeSet<(String, String)> {
        let mut exported = BTreeSet::new();
        for path in self.engine.paths().filter(|p| p.ends_with("__init__.py")) {
            for name in self.engine.imported_names(path) {
                exported.insert((name.file, name.symbol));
            }
        }
        for path in self.engine.paths() {
            let Some(facts) = self.engine.facts(path) else {
                continue;
            };
            if let xfile_python::DunderAll::Names(names) = &facts.semantic.all {
                for name in names {
                    exported.insert((path.to_string(), name.to_string()));
                }
            }
        }
        exported
    }

    /// The cluster of `entry` alone, every relationship expanded, cached.
    fn compute_hot(&self, entry: &super::Entry) -> Cluster {
        let options = SearchOptions {
            expand: Expand::all(),
            ..SearchOptions::default()
        };
        let kept = KeptCluster {
            seeds: vec![(entry.file.to_string(), entry.qualname.to_string())],
            depth: HOT_DEPTH,
            include_preview: true,
            kept_at: Instant::now(),
        };
        let seed = (
            super::MatchKind::Exact,
            self.engine.usage_count(&entry.file, &entry.qualname),
            entry,
        );
        let cluster = self.cluster(&[seed], &kept, &options);
        let related = &cluster.related;
        let mut files: BTreeSet<&str> = BTreeSet::from([&*entry.file]);
        for container in [&related.callers, &related.callees, &related.type_family] {
            files.extend(container.data.iter().map(|r| r.file.as_str()));
        }
        let touched = files
            .into_iter()
            .map(|f| (f.to_string(), self.engine.revision(f)))
            .collect();
        self.hot.put(
            entry.id(),
            HotEntry {
                cluster: cluster.clone(),
                file: entry.file.to_string(),
                touched,
                dependents: self.engine.dependent_files(&entry.file),
                hits: 0,
                at: Instant::now(),
            },
        );
        cluster
    }

    /// Computes again every cached hot spot an update made stale (the
    /// files it shows or its seed's dependents changed), so the next search
    /// finds it fresh. Returns how many. Only the entries of the stale hot
    /// spots' files are made: most updates leave every hot spot as it was,
    /// and rebuilding the search index after each of them was a fifth of a
    /// server's CPU time during a burst of edits.
    pub fn refresh_hot_spots(&self) -> usize {
        let (mut stale, files): (Vec<String>, BTreeSet<String>) = {
            let entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries
                .iter()
                .filter(|(_, hot)| !self.hot_valid(hot))
                .map(|(id, hot)| (id.clone(), hot.file.clone()))
                .unzip()
        };
        if stale.is_empty() {
            return 0;
        }
        stale.sort();
        let index = super::SymbolIndex::of_files(&self.engine, files.iter().map(String::as_str));
        let mut refreshed = 0;
        let ahead = self.ahead();
        for entry in index
            .entries()
            .filter(|e| stale.binary_search(&e.id()).is_ok())
        {
            self.engine.check_cancelled();
            ahead.refresh_hot(entry);
            refreshed += 1;
        }
        refreshed
    }

    /// The cached cluster of `entry`, if it is a hot spot and still valid.
    pub(crate) fn hot_cluster(&self, entry: &super::Entry) -> Lookup {
        self.check_hot(entry, true)
    }

    /// Whether a hot spot still shows what it would if computed now: none
    /// of the files it shows changed, nor its seed's dependents.
    fn hot_valid(&self, hot: &HotEntry) -> bool {
        hot.touched
            .iter()
            .all(|(file, revision)| self.engine.revision(file) == *revision)
            && self.engine.dependent_files(&hot.file) == hot.dependents
    }

    /// Whether `entry`'s hot spot is there and valid; `hit` counts it as
    /// served and answers its cluster.
    fn check_hot(&self, entry: &super::Entry, hit: bool) -> Lookup {
        let id = entry.id();
        let mut entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(hot) = entries.get_mut(&id) else {
            return Lookup::Absent;
        };
        if !self.hot_valid(hot) {
            return Lookup::Stale;
        }
        if !hit {
            return Lookup::Absent;
        }
        hot.hits += 1;
        Lookup::Hit(Box::new(hot.cluster.clone()))
    }

    /// Computes a stale hot spot again, keeping its hit count.
    pub(crate) fn refresh_hot(&self, entry: &super::Entry) -> Cluster {
        let hits = {
            let entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries.get(&entry.id()).map_or(0, |e| e.hits)
        };
        let cluster = self.compute_hot(entry);
        let mut entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hot) = entries.get_mut(&entry.id()) {
            hot.hits = hits;
        }
        cluster
    }

    /// How many hot spots are cached.
    pub fn hot_spot_count(&self) -> usize {
        self.hot.len()
    }

    /// The hot spots cached, as `path::Qualified.name`.
    pub fn hot_spot_ids(&self) -> Vec<String> {
        let entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids: Vec<String> = entries.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// How often searches were served the cached cluster of `symbol`
    /// (`path::Qualified.name`), if it is a hot spot.
    pub fn hot_spot_hits(&self, symbol: &str) -> Option<u64> {
        let entries = self.hot.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.get(symbol).map(|e| e.hits)
    }
}
