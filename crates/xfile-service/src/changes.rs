//! What an update changed in the graph: relationships and warnings that
//! came and went (what `xfile watch` prints per update).
//!
//! The engine's update path keeps only per-file rule results fresh and
//! does not say which relationships changed, and an edit to one file can
//! change another file's relationships (a re-export removed, an import that
//! now resolves to a new file), so every file has to be looked at. Looking
//! is cheap: a file's typed references (interned ids, stable across
//! updates of one index) come from its own memoized rule stage, and only a
//! file whose references differ, or whose text changed, is rendered and
//! compared. [`GraphTracker`] therefore keeps, per file, the references and
//! their rendered edges from the previous update, and the previous
//! warnings (an `Arc`: the service computes them once per engine state;
//! they rest on the whole-project union, which the update path skips, so
//! tracking them costs one union per update).
//!
//! A relationship or warning whose line moved is not a change: items are
//! compared by what they relate, not where they are (see [`diff`]).

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::Service;
use super::live::Live;
use super::model::{RelationshipType, UpdateReport, Warning};
use super::relationships;
use super::warnings::Warnings;
use xfile_engine::Reference;

/// How many added (and how many removed) items of each kind are listed.
pub const LISTED: usize = 20;

/// One relationship as a change names it. It has no target line: a
/// file's edges are rendered again only when its own references change, so
/// a target line would go stale when the target file moves a definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    pub source_file: String,
    pub line_number: u32,
    pub relationship_type: RelationshipType,
    pub target_symbol: Option<String>,
    pub target_file: String,
    /// For imports: the file that finally defines the imported name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defined_in: Option<String>,
}

/// Items that came and went; at most [`LISTED`] of each, with the totals.
#[derive(Debug, Serialize)]
pub struct Changes<T> {
    pub added: Vec<T>,
    pub removed: Vec<T>,
    pub added_total: usize,
    pub removed_total: usize,
}

impl<T> Default for Changes<T> {
    fn default() -> Self {
        Changes {
            added: Vec::new(),
            removed: Vec::new(),
            added_total: 0,
            removed_total: 0,
        }
    }
}

impl<T: Clone> Changes<T> {
    fn add(&mut self, item: &T) {
        if self.added.len() < LISTED {
            self.added.push(item.clone());
        }
        self.added_total += 1;
    }

    fn remove(&mut self, item: &T) {
        if self.removed.len() < LISTED {
            self.removed.push(item.clone());
        }
        self.removed_total += 1;
    }
}

impl<T> Changes<T> {
    pub fn is_empty(&self) -> bool {
        self.added_total == 0 && self.removed_total == 0
    }
}

/// What one update changed in the graph.
#[derive(Debug, Default, Serialize)]
pub struct GraphChanges {
    pub relationships: Changes<Edge>,
    pub warnings: Changes<Warning>,
}

/// The graph as last seen, to compare each update with.
pub struct GraphTracker {
    files: FxHashMap<String, FileEdges>,
    warnings: Arc<Warnings>,
}

struct FileEdges {
    references: Vec<Reference>,
    edges: Vec<Edge>,
}

/// A comparison, computed on a snapshot, applied to the tracker after.
struct Comparison {
    changes: GraphChanges,
    /// Files whose edges are new (`None`: the file is gone).
    files: Vec<(String, Option<FileEdges>)>,
    warnings: Arc<Warnings>,
}

impl GraphTracker {
    pub fn new(service: &Service) -> GraphTracker {
        let engine = service.engine();
        let files = engine
            .paths()
            .map(|path| {
                let references = engine.references_from(path);
                let edges = edges(service, &references);
                (path.to_string(), FileEdges { references, edges })
            })
            .collect();
        GraphTracker {
            files,
            warnings: service.all_warnings(),
        }
    }

    /// What changed since the last update, which `report` describes.
    pub fn update(&mut self, live: &Live, report: &UpdateReport) -> GraphChanges {
        let comparison = live.read(|service| self.compare(service, report));
        for (path, edges) in comparison.files {
            match edges {
                Some(edges) => self.files.insert(path, edges),
                None => self.files.remove(&path),
            };
        }
        self.warnings = comparison.warnings;
        comparison.changes
    }

    fn compare(&self, service: &Service, report: &UpdateReport) -> Comparison {
        let engine = service.engine();
        let touched: HashSet<&str> = (report.added.iter())
            .chain(&report.modified)
            .chain(&report.removed)
            .map(String::as_str)
            .collect();
        let mut changes = GraphChanges::default();
        let mut files = Vec::new();
        for path in engine.paths() {
            let references = engine.references_from(path);
            let old = self.files.get(path);
            // After a reload the ids come from a new interner: compare
            // rendered edges only. A file whose text changed has new sites.
            let same = !report.reloaded
                && !touched.contains(path)
                && old.is_some_and(|old| old.references == references);
            if same {
                continue;
            }
            let edges = edges(service, &references);
            let old_edges = old.map_or(&[][..], |old| &old.edges[..]);
            diff(
                old_edges,
                &edges,
                |e| {
                    (
                        e.relationship_type,
                        e.target_symbol.as_deref(),
                        e.target_file.as_str(),
                        e.defined_in.as_deref(),
                    )
                },
                |e| e.line_number,
                &mut changes.relationships,
            );
            files.push((path.to_string(), Some(FileEdges { references, edges })));
        }
        let mut gone: Vec<&String> = (self.files.keys())
            .filter(|path| !engine.contains(path))
            .collect();
        gone.sort();
        for path in gone {
            for edge in &self.files[path].edges {
                changes.relationships.remove(edge);
            }
            files.push((path.clone(), None));
        }
        let warnings = service.all_warnings();
        for (before, now) in warnings.changed_since(Some(&self.warnings)) {
            diff(
                before,
                now,
                |w| {
                    (
                        w.file.as_str(),
                        w.warning_type,
                        w.pattern.as_str(),
                        w.message.as_str(),
                    )
                },
                |w| w.line,
                &mut changes.warnings,
            );
        }
        Comparison {
            changes,
            files,
            warnings,
        }
    }
}

fn edges(service: &Service, references: &[Reference]) -> Vec<Edge> {
    relationships::render(service.engine(), references)
        .into_iter()
        .map(|r| Edge {
            source_file: r.source_file,
            line_number: r.line_number,
            relationship_type: r.relationship_type,
            target_symbol: r.target_symbol,
            target_file: r.target_file,
            defined_in: r.metadata.defined_in,
        })
        .collect()
}

/// Records in `changes` the items of `new` that `old` lacks and the items
/// of `old` that `new` lacks, as multisets of `key` (what an item relates,
/// without its position): an item that only moved to another line is
/// neither. When a key's count changed, items on the same line pair up
/// first, so the one that came or went is the one listed; the rest pair
/// in order.
fn diff<'a, T: Clone, K: Hash + Eq>(
    old: &'a [T],
    new: &'a [T],
    key: impl Fn(&'a T) -> K,
    line: impl Fn(&T) -> u32,
    changes: &mut Changes<T>,
) {
    let mut groups: FxHashMap<K, (Vec<usize>, Vec<usize>)> = FxHashMap::default();
    for (i, item) in old.iter().enumerate() {
        groups.entry(key(item)).or_default().0.push(i);
    }
    for (i, item) in new.iter().enumerate() {
        groups.entry(key(item)).or_default().1.push(i);
    }
    let mut removed = vec![false; old.len()];
    let mut added = vec![false; new.len()];
    for (mut olds, news) in groups.into_values() {
        if olds.len() == news.len() {
            continue;
        }
        let mut unpaired = Vec::new();
        for n in news {
            match olds.iter().position(|&o| line(&old[o]) == line(&new[n])) {
                Some(p) => {
                    olds.remove(p);
                }
                None => unpaired.push(n),
            }
        }
        let moved = olds.len().min(unpaired.len());
        for &o in &olds[moved..] {
            removed[o] = true;
        }
        for &n in &unpaired[moved..] {
            added[n] = true;
        }
    }
    for (item, _) in new.iter().zip(&added).filter(|(_, added)| **added) {
        changes.add(item);
    }
    for (item, _) in old.iter().zip(&removed).filter(|(_, removed)| **removed) {
        changes.remove(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key and a line.
    type Item = (String, u32);

    /// The added and the removed items.
    fn run(old: &[(&str, u32)], new: &[(&str, u32)]) -> (Vec<Item>, Vec<Item>) {
        let owned = |items: &[(&str, u32)]| -> Vec<Item> {
            items.iter().map(|(k, l)| (k.to_string(), *l)).collect()
        };
        let mut changes = Changes::default();
        diff(
            &owned(old),
            &owned(new),
            |item| item.0.as_str(),
            |item| item.1,
            &mut changes,
        );
        (changes.added, changes.removed)
    }

    #[test]
    fn moved_items_are_no_change() {
        assert_eq!(
            run(&[("a", 1), ("b", 2)], &[("a", 5), ("b", 6)]),
            (vec![], vec![])
        );
    }

    #[test]
    fn a_second_item_with_the_same_key_is_the_one_on_a_new_line() {
        let (added, removed) = run(&[("f", 3), ("f", 9)], &[("f", 3), ("f", 4), ("f", 9)]);
        assert_eq!(added, [("f".to_string(), 4)]);
        assert!(removed.is_empty());
        let (added, removed) = run(&[("f", 3), ("f", 9)], &[("g", 1), ("f", 9)]);
        assert_eq!(added, [("g".to_string(), 1)]);
        assert_eq!(removed, [("f".to_string(), 3)]);
    }

    #[test]
    fn lists_are_bounded_and_totals_are_not() {
        let old: Vec<Item> = Vec::new();
        let new: Vec<Item> = (0..50).map(|i| (format!("k{i}"), i)).collect();
        let mut changes = Changes::default();
        diff(&old, &new, |i| i.0.as_str(), |i| i.1, &mut changes);
        assert_eq!(changes.added.len(), LISTED);
        assert_eq!(changes.added_total, 50);
    }
}
