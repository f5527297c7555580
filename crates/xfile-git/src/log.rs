//! `git log` for the project or a path in it: newest commit first, the
//! commits that changed the path (the project root when no path is
//! given), filtered by date and author.

use std::collections::HashMap;

use gix::ObjectId;
use gix::revision::walk::Sorting;
use gix::traverse::commit::simple::CommitTimeOrder;

use super::{Commit, GitError, HeadState, Repo, args, failed};

/// Commits a log lists by default, and at most.
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 200;

/// What a log asks for; strings as the user gave them.
#[derive(Clone, Debug, Default)]
pub struct LogQuery<'a> {
    /// Root-relative or absolute, inside the root; a file or a directory.
    pub path: Option<&'a str>,
    /// Commits listed at most (1..=[`MAX_LIMIT`]).
    pub limit: usize,
    /// Commits made at or after this date (see [`GitError::InvalidDate`]).
    pub since: Option<&'a str>,
    /// Commits made at or before this date.
    pub until: Option<&'a str>,
    /// Part of the author's name or e-mail, any case.
    pub author: Option<&'a str>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Log {
    pub head: HeadState,
    /// The root-relative path asked about, if any.
    pub path: Option<String>,
    /// Newest first, at most the limit.
    pub commits: Vec<Commit>,
    /// More commits matched than the limit let through.
    pub more: bool,
    /// The history is cut short: the repository is a shallow clone.
    pub shallow: bool,
}

impl Repo {
    pub fn log(&self, query: &LogQuery<'_>) -> Result<Log, GitError> {
        let path = query.path.map(|p| args::path(&self.root, p)).transpose()?;
        let since = query.since.map(parse_date).transpose()?;
        let until = query.until.map(parse_date).transpose()?;
        let author = query.author.map(str::to_lowercase);
        let head = self.head_state()?;
        let shallow = self.is_shallow();
        if let HeadState::Unborn(_) = head {
            return Err(GitError::NoCommits);
        }
        let tip = self.head_commit()?;
        // Which part of the tree counts: the path, else the root (when it
        // is a directory inside the work tree), else everything.
        let filter = match path.as_deref() {
            Some(p) if !p.is_empty() => Some(self.repo_path(p)),
            _ if !self.prefix.is_empty() => Some(self.prefix.trim_end_matches('/').to_string()),
            _ => None,
        };
        let mut entries = EntryMemo::default();
        let sorting = match since {
            // Commit times ahead of `since` may still have older parents,
            // but git's --since stops the same way.
            Some(seconds) => Sorting::ByCommitTimeCutoff {
                order: CommitTimeOrder::NewestFirst,
                seconds,
            },
            None => Sorting::ByCommitTime(CommitTimeOrder::NewestFirst),
        };
        let walk = self
            .repo
            .rev_walk([tip.id])
            .sorting(sorting)
            .all()
            .map_err(failed)?;
        let mut commits = Vec::new();
        let mut more = false;
        for info in walk {
            let info = info.map_err(failed)?;
            let time = info.commit_time();
            if since.is_some_and(|s| time < s) || until.is_some_and(|u| time > u) {
                continue;
            }
            if let Some(filter) = &filter {
                let parents: Vec<ObjectId> = info.parent_ids().map(|id| id.detach()).collect();
                if !entries.changed(&self.repo, info.id, &parents, filter)? {
                    continue;
                }
            }
            let commit = info.object().map_err(failed)?;
            let commit = Commit::read(&commit)?;
            if let Some(author) = &author
                && !commit.author.to_lowercase().contains(author)
                && !commit.email.to_lowercase().contains(author)
            {
                continue;
            }
            if commits.len() == query.limit.clamp(1, MAX_LIMIT) {
                more = true;
                break;
            }
            commits.push(commit);
        }
        Ok(Log {
            head,
            path,
            commits,
            more,
            shallow,
        })
    }
}

/// The object a path names in each commit's tree, looked up once per
/// commit (a commit is a parent of the next one walked).
#[derive(Default)]
struct EntryMemo {
    entries: HashMap<ObjectId, Option<ObjectId>>,
}

impl EntryMemo {
    /// The path's object in `commit`; `None` when it is absent, and when
    /// the commit itself is missing (the parent of a shallow clone's
    /// oldest commit), so that commit counts as adding the path.
    fn entry(
        &mut self,
        repo: &gix::Repository,
        commit: ObjectId,
        path: &str,
    ) -> Result<Option<ObjectId>, GitError> {
        if let Some(found) = self.entries.get(&commit) {
            return Ok(*found);
        }
        let found = match repo.find_commit(commit) {
            Ok(commit) => commit
                .tree()
                .map_err(failed)?
                .lookup_entry_by_path(path)
                .map_err(failed)?
                .map(|entry| entry.object_id()),
            Err(_) => None,
        };
        self.entries.insert(commit, found);
        Ok(found)
    }

    /// Whether `commit` changed `path`: it differs from every parent's
    /// (a merge that took one side's version unchanged did not change
    /// it), or, for a root commit, the path exists.
    fn changed(
        &mut self,
        repo: &gix::Repository,
        commit: ObjectId,
        parents: &[ObjectId],
        path: &str,
    ) -> Result<bool, GitError> {
        let mine = self.entry(repo, commit, path)?;
        if parents.is_empty() {
            return Ok(mine.is_some());
        }
        for &parent in parents {
            if self.entry(repo, parent, path)? == mine {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Seconds since the epoch of a date the user wrote.
fn parse_date(input: &str) -> Result<i64, GitError> {
    let now = gix::date::Zoned::now();
    gix::date::parse(input.trim(), Some(now))
        .map(|time| time.seconds)
        .map_err(|_| GitError::InvalidDate(input.to_string()))
}
