//! A first whole-file blame through the history index (`index.rs`): the
//! walk gix's blame makes, but visiting only the commits whose tree
//! changed the file, told by the index instead of looking the path up in
//! every commit and diffing every tree.
//!
//! From HEAD, while the file's history is a single line: a commit that
//! did not change the file against its first parent passes every line to
//! it; one that did passes the lines to the first parent with the same
//! blob, if any (a merge taking one side, as blame does); else, with a
//! single parent holding the file, the line diff gives the lines it
//! changed to it and the rest to the parent; a root commit takes what is
//! left. Anything else (the file added, perhaps by a rename; a merge that
//! changed it; a version taken for binary; a commit the index does not
//! hold) hands the lines still looked for to gix's blame from that
//! commit, whose walk from there is the one it would have made from HEAD.
//!
//! The index is checked as it is read: each changing commit's blob must
//! be the version the walk holds, and where the walk ends or hands over,
//! the commit's tree must hold that version; a record that disagrees is
//! no index (blamed by gix from HEAD).

use std::collections::HashMap;

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::diff::blob::Algorithm;

use super::super::{GitError, Repo, failed};
use super::index::{Change, HistoryIndex};
use super::kept::Owner;
use super::lines::{Differ, Tracked};

impl Repo {
    /// Every line's owner of the file at `repo_path`, as committed at
    /// `head` (blob `blob`), through `index`; `None` when the index is
    /// not for `head` or disagrees with the repository.
    pub(super) fn indexed_owners(
        &self,
        index: &HistoryIndex,
        repo_path: &str,
        head: ObjectId,
        blob: ObjectId,
        algorithm: Algorithm,
    ) -> Result<Option<Vec<Owner>>, GitError> {
        if index.head() != Some(head) {
            return Ok(None);
        }
        let changes: HashMap<u32, Change> = index
            .changes
            .get(repo_path)
            .map(|list| list.iter().map(|c| (c.commit, *c)).collect())
            .unwrap_or_default();
        let mut differ = Differ::new(self, repo_path, algorithm)?;
        let mut tracked = Tracked::new(super::line_count(&self.blob(blob)?));
        let (mut at, mut at_blob) = (index.head_position(), blob);
        // Each step goes to a parent; more steps than commits is a cycle
        // only a damaged record has.
        for _ in 0..=index.nodes.len() {
            let Some(node) = index.nodes.get(at as usize) else {
                return Ok(None);
            };
            let change = changes.get(&at);
            if change.is_some_and(|c| c.blob != Some(at_blob)) {
                return Ok(None);
            }
            if node.parents.is_empty() {
                if self.blob_in(node.id, repo_path)? != Some(at_blob) {
                    return Ok(None);
                }
                tracked.give_rest(node.id);
                break;
            }
            let first = node.parents[0];
            let Some(change) = change else {
                // Unchanged against the first parent: everything passes
                // there, unless the index does not hold it.
                if index.nodes.get(first as usize).is_none() {
                    return self.hand_over(tracked, node.id, at_blob, repo_path, algorithm);
                }
                at = first;
                continue;
            };
            if node
                .parents
                .iter()
                .any(|&p| index.nodes.get(p as usize).is_none())
            {
                return self.hand_over(tracked, node.id, at_blob, repo_path, algorithm);
            }
            let mut in_parents = vec![change.before];
            for &parent in &node.parents[1..] {
                in_parents.push(self.blob_in(index.nodes[parent as usize].id, repo_path)?);
            }
            if let Some(same) = in_parents.iter().position(|b| *b == Some(at_blob)) {
                at = node.parents[same];
                continue;
            }
            let (1, Some(before)) = (node.parents.len(), change.before) else {
                return self.hand_over(tracked, node.id, at_blob, repo_path, algorithm);
            };
            let Some(map) = differ.unchanged(before, at_blob)? else {
                return self.hand_over(tracked, node.id, at_blob, repo_path, algorithm);
            };
            if tracked.step(&map, node.id) {
                break;
            }
            (at, at_blob) = (first, before);
        }
        if !tracked.done() {
            return Ok(None);
        }
        Ok(tracked
            .owned
            .into_iter()
            .map(|commit| {
                commit.map(|commit| Owner {
                    commit,
                    source_path: None,
                })
            })
            .collect())
    }

    /// The lines `tracked` still looks for, in the version `at_blob` of
    /// `commit`, blamed by gix from there; with the lines owned already,
    /// every line's owner.
    fn hand_over(
        &self,
        tracked: Tracked,
        commit: ObjectId,
        at_blob: ObjectId,
        repo_path: &str,
        algorithm: Algorithm,
    ) -> Result<Option<Vec<Owner>>, GitError> {
        if self.blob_in(commit, repo_path)? != Some(at_blob) {
            return Ok(None);
        }
        let mut wanted: Vec<u32> = tracked.at_line.iter().flatten().map(|l| l + 1).collect();
        wanted.sort_unstable();
        let mut ranges: Vec<std::ops::RangeInclusive<u32>> = Vec::new();
        for line in wanted {
            match ranges.last_mut() {
                Some(last) if *last.end() + 1 == line => *last = *last.start()..=line,
                Some(last) if *last.end() == line => {}
                _ => ranges.push(line..=line),
            }
        }
        let graph = self.repo.commit_graph_if_enabled().map_err(failed)?;
        let outcome = self.blame_walk(
            &self.repo.objects,
            gix::blame::Start::Commit(commit),
            graph,
            repo_path,
            algorithm,
            gix::blame::BlameRanges::from_one_based_inclusive_ranges(ranges).map_err(failed)?,
        )?;
        // The owner of each line of `commit`'s version that was asked.
        let mut there: HashMap<u32, Owner> = HashMap::new();
        for entry in &outcome.entries {
            let source_path = entry
                .source_file_name
                .as_ref()
                .map(|name| self.source_path(&name.to_str_lossy()));
            for line in entry.start_in_blamed_file..entry.start_in_blamed_file + entry.len.get() {
                there.insert(
                    line,
                    Owner {
                        commit: entry.commit_id,
                        source_path: source_path.clone(),
                    },
                );
            }
        }
        let mut owners = Vec::with_capacity(tracked.at_line.len());
        for (line, owner) in tracked.at_line.iter().zip(&tracked.owned) {
            owners.push(match (owner, line) {
                (Some(commit), _) => Owner {
                    commit: *commit,
                    source_path: None,
                },
                (None, Some(line)) => match there.get(line) {
                    Some(owner) => owner.clone(),
                    // gix left it without a commit: not a blame to keep.
                    None => return Ok(None),
                },
                (None, None) => return Ok(None),
            });
        }
        Ok(Some(owners))
    }
}

impl Repo {
    /// The whole-file blame of `file` (root-relative) as committed at HEAD,
    /// through `index` alone; `None` when the index cannot give it (for
    /// another HEAD, or disagreeing with the repository). What a first
    /// blame with a kept index computes; tests and benchmarks compare it.
    pub fn blame_through_index(
        &self,
        file: &str,
        index: &HistoryIndex,
    ) -> Result<Option<super::KeptBlame>, GitError> {
        let (Some(head), Some(blob)) = (self.head_id(), self.blob_at("HEAD", file)?) else {
            return Ok(None);
        };
        if self.blob_too_large(blob)? {
            return Ok(None);
        }
        let algorithm = self.repo.diff_algorithm().map_err(failed)?;
        let owners = self.indexed_owners(index, &self.repo_path(file), head, blob, algorithm)?;
        owners
            .map(|owners| self.keep(file, head, blob, algorithm, &owners, &HashMap::new()))
            .transpose()
    }
}
