//! When each file last changed in a commit, for the recency boost of
//! ranking: one walk of recent history from HEAD, newest commit first,
//! each commit's tree compared with its first parent's. The walk is
//! bounded three ways (a start date, a number of commits, a deadline), so
//! that it never holds an answer up for long; what it did not reach has
//! no time, which ranks like an old change.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;

use super::{GitError, Repo, failed};

/// How far a walk goes.
#[derive(Clone, Copy, Debug)]
pub struct WalkBounds {
    /// Commits older than this (seconds since the epoch) are not walked.
    pub since: i64,
    pub max_commits: usize,
    pub deadline: Duration,
}

/// Root-relative path → commit time (seconds since the epoch) of the
/// newest commit the walk saw changing it.
#[derive(Clone, Debug, Default)]
pub struct ChangeTimes {
    pub times: HashMap<String, i64>,
    /// False when a bound other than the start date stopped the walk.
    pub complete: bool,
}

impl Repo {
    /// The commit HEAD points at; `None` for a repository without commits.
    pub fn head_id(&self) -> Option<ObjectId> {
        self.repo.head_id().ok().map(|id| id.detach())
    }

    /// The files changed by the commits reachable from HEAD within
    /// `bounds`, with when they last were.
    pub fn change_times(&self, bounds: &WalkBounds) -> Result<ChangeTimes, GitError> {
        let started = Instant::now();
        let mut found = ChangeTimes {
            times: HashMap::new(),
            complete: true,
        };
        let Some(head) = self.head_id() else {
            return Ok(found);
        };
        let walk = self
            .repo
            .rev_walk([head])
            .sorting(Sorting::ByCommitTimeCutoff {
                order: CommitTimeOrder::NewestFirst,
                seconds: bounds.since,
            })
            .all()
            .map_err(failed)?;
        // One blob-diff cache for the whole walk (rename tracking is off,
        // so it is never filled; the tree diff still asks for one).
        let mut cache = self.resource_cache()?;
        for (walked, info) in walk.enumerate() {
            if walked == bounds.max_commits || started.elapsed() > bounds.deadline {
                found.complete = false;
                break;
            }
            let info = info.map_err(failed)?;
            let time = info.commit_time();
            let tree = info.object().map_err(failed)?.tree().map_err(failed)?;
            // The first parent's tree; a root commit adds everything. A
            // parent missing at a shallow clone's cut says nothing of when
            // its files changed: that commit is skipped.
            let parent = match info.parent_ids().next() {
                Some(parent) => match self.repo.find_commit(parent.detach()) {
                    Ok(commit) => commit.tree().map_err(failed)?,
                    Err(_) => continue,
                },
                None => self.repo.empty_tree(),
            };
            parent
                .changes()
                .map_err(failed)?
                .options(|o| {
                    o.track_rewrites(None);
                })
                .for_each_to_obtain_tree_with_cache(&tree, &mut cache, |change| {
                    if !change.entry_mode().is_tree()
                        && let Some(path) = self.root_relative(&change.location().to_str_lossy())
                    {
                        let newest = found.times.entry(path.to_string()).or_insert(time);
                        *newest = (*newest).max(time);
                    }
                    Ok(std::ops::ControlFlow::Continue(()))
                })
                .map_err(failed)?;
        }
        Ok(found)
    }
}
