//! Git history as answers: `git_log`, `git_blame` and `git_diff` in
//! markdown (diffs in ```diff fences), each cut to the answer budget item
//! by item (commits, line ranges, hunks) with a closing line that says
//! what was left out and how to ask for it.

use std::fmt::Write;
use std::path::Path;

use super::blame_store::DiskBlames;
use super::context::count_tokens;
use super::paging::fitting;
use crate::git::{
    Blame, BlameStore, Commit, Diff, FileStatus, GitError, HeadState, Log, LogQuery, Repo,
};

/// Tokens kept for an answer's closing line.
const CLOSING_TOKENS: usize = 60;

fn head_text(head: &HeadState) -> String {
    match head {
        HeadState::Branch(name) => format!("on branch {name}"),
        HeadState::Detached(id) => format!("detached HEAD at {id}"),
        HeadState::Unborn(name) => format!("on branch {name}, no commits yet"),
    }
}

fn commit_line(commit: &Commit) -> String {
    format!(
        "`{}` {} {} <{}>{}: {}",
        commit.short_id(),
        commit.date,
        commit.author,
        commit.email,
        if commit.merge { " (merge)" } else { "" },
        commit.summary
    )
}

const SHALLOW_NOTE: &str = "The repository is a shallow clone: older history is missing (`git fetch --unshallow` fetches it).\n";

/// `git_log`: the commits, newest first.
pub fn log(root: &Path, budget: usize, query: &LogQuery<'_>) -> Result<String, GitError> {
    let log = Repo::open(root)?.log(query)?;
    Ok(log_text(&log, budget))
}

pub fn log_text(log: &Log, budget: usize) -> String {
    let render = |n: usize| {
        let mut out = format!(
            "## git log {} ({})\n\n",
            log.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("."),
            head_text(&log.head)
        );
        if log.shallow {
            out.push_str(SHALLOW_NOTE);
        }
        for commit in &log.commits[..n] {
            let _ = writeln!(out, "- {}", commit_line(commit));
        }
        out
    };
    let keep = fitting(
        log.commits.len(),
        budget.saturating_sub(CLOSING_TOKENS),
        |n| count_tokens(&render(n)),
    );
    let mut out = render(keep);
    if log.commits.is_empty() {
        out.push_str("No commits match.\n");
    } else if keep < log.commits.len() {
        let _ = writeln!(
            out,
            "\n{keep} of {} commits shown, cut by the {budget}-token answer budget; ask with a smaller limit or narrower dates.",
            log.commits.len()
        );
    } else if log.more {
        let _ = writeln!(
            out,
            "\nMore commits match; ask with a larger limit, or with since/until."
        );
    }
    out
}

/// The store as blame takes it: none when the cache is switched off.
pub(crate) fn kept(store: &Option<DiskBlames>) -> Option<&dyn BlameStore> {
    store.as_ref().map(|store| store as &dyn BlameStore)
}

/// `git_blame`: who last changed each run of lines, from the blame kept
/// on disk when there is one (see `blame_store.rs`).
pub fn blame(
    root: &Path,
    budget: usize,
    file: &str,
    start: Option<u32>,
    end: Option<u32>,
) -> Result<String, GitError> {
    let store = DiskBlames::new(root);
    let blame = Repo::open(root)?.blame_cached(file, start, end, None, kept(&store))?;
    Ok(blame_text(&blame, budget))
}

pub fn blame_text(blame: &Blame, budget: usize) -> String {
    let render = |n: usize| {
        let (first, last) = match (blame.ranges.first(), blame.ranges.last()) {
            (Some(first), Some(last)) => (first.start, last.end),
            _ => (1, blame.lines),
        };
        let mut out = format!(
            "## git blame {}:{first}-{last} ({} lines in the file)\n\n",
            blame.path, blame.lines
        );
        if blame.shallow {
            out.push_str(SHALLOW_NOTE);
        }
        for range in &blame.ranges[..n] {
            let lines = if range.start == range.end {
                format!("line {}", range.start)
            } else {
                format!("lines {}-{}", range.start, range.end)
            };
            let _ = match &range.commit {
                Some(commit) => write!(out, "- {lines}: {}", commit_line(commit)),
                None => write!(out, "- {lines}: not committed yet"),
            };
            if let Some(from) = &range.source_path {
                let _ = write!(out, " (in {from} then)");
            }
            out.push('\n');
        }
        out
    };
    let keep = fitting(
        blame.ranges.len(),
        budget.saturating_sub(CLOSING_TOKENS),
        |n| count_tokens(&render(n)),
    );
    let mut out = render(keep);
    if let Some(next) = blame.ranges.get(keep) {
        let _ = writeln!(
            out,
            "\n{keep} of {} line ranges shown, cut by the {budget}-token answer budget; ask again with start_line: {}.",
            blame.ranges.len(),
            next.start
        );
    }
    out
}

/// `git_diff`: the files changed with their counts, then the hunks.
pub fn diff(
    root: &Path,
    budget: usize,
    base: Option<&str>,
    head: Option<&str>,
    path: Option<&str>,
) -> Result<String, GitError> {
    let diff = Repo::open(root)?.diff(base, head, path)?;
    Ok(diff_text(&diff, budget))
}

fn status_text(status: &FileStatus, path: &str) -> String {
    match status {
        FileStatus::Added => format!("added {path}"),
        FileStatus::Deleted => format!("deleted {path}"),
        FileStatus::Modified => format!("modified {path}"),
        FileStatus::Renamed { from } => format!("renamed {from} -> {path}"),
    }
}

pub fn diff_text(diff: &Diff, budget: usize) -> String {
    let budget = budget.saturating_sub(CLOSING_TOKENS);
    let mut summary = format!(
        "## git diff {} -> {}\n\n{} files changed, {} insertions(+), {} deletions(-)\n\n",
        diff.base,
        diff.head,
        diff.files.len(),
        diff.insertions(),
        diff.deletions()
    );
    // The file list first, cut too when it alone is over the budget.
    let file_line = |file: &crate::git::FileDiff| {
        let mut line = format!("- {}", status_text(&file.status, &file.path));
        match file.withheld {
            Some(why) => {
                let _ = write!(line, " ({why})");
            }
            None if file.insertions + file.deletions > 0 => {
                let _ = write!(line, " (+{} -{})", file.insertions, file.deletions);
            }
            None => {}
        }
        line + "\n"
    };
    let lines: Vec<String> = diff.files.iter().map(file_line).collect();
    let listed = fitting(lines.len(), budget, |n| {
        count_tokens(&summary) + count_tokens(&lines[..n].concat())
    });
    summary.push_str(&lines[..listed].concat());
    if listed < lines.len() {
        let _ = writeln!(
            summary,
            "\n{listed} of {} files listed, cut by the {budget}-token answer budget; ask with a path to see part of the change.",
            lines.len()
        );
        return summary;
    }
    // Then whole hunks, file by file, while they fit.
    let hunks: Vec<(usize, &crate::git::Hunk)> = diff
        .files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.hunks.iter().map(move |h| (i, h)))
        .collect();
    let render = |n: usize| {
        let mut out = String::new();
        let mut open: Option<usize> = None;
        for &(file, hunk) in &hunks[..n] {
            if open != Some(file) {
                if open.is_some() {
                    out.push_str("```\n");
                }
                let _ = write!(out, "\n### {}\n```diff\n", diff.files[file].path);
                open = Some(file);
            }
            out.push_str(&hunk.header);
            out.push('\n');
            out.push_str(&hunk.lines);
        }
        if open.is_some() {
            out.push_str("```\n");
        }
        out
    };
    let room = budget.saturating_sub(count_tokens(&summary));
    let mut shown = fitting(hunks.len(), room, |n| count_tokens(&render(n)));
    let mut out = summary;
    let first = render(shown.min(1));
    if shown == 1 && count_tokens(&first) > room {
        // One hunk alone is over the budget: its first lines, fence closed.
        out.push_str(super::text::lines_within(&first, room.saturating_sub(10)));
        out.push_str("```\n");
        shown = 0;
    } else {
        out.push_str(&render(shown));
    }
    if shown < hunks.len() {
        let files: std::collections::BTreeSet<&str> = hunks[shown..]
            .iter()
            .map(|(file, _)| diff.files[*file].path.as_str())
            .collect();
        let next = files.iter().next().copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "\n{} of {} hunks not shown in full (in {} files), cut by the {budget}-token answer budget; ask with path: {next} to see one file (`xfile git diff --json` prints everything).",
            hunks.len() - shown,
            hunks.len(),
            files.len()
        );
    }
    out
}

/// The git tools of a served project: the repository opened once, blames
/// kept per file content and HEAD, those of the files changed last
/// computed ahead.
impl super::Service {
    /// Computes ahead, here and now, the blames of the files the newest
    /// commits changed (a server does this once its index is ready, and
    /// again on a thread of its own when a git tool sees HEAD moved).
    pub fn precompute_blames(&self) {
        self.git.warm_blames(self.root());
    }

    /// The files whose blames [`Service::precompute_blames`] computed for
    /// the current HEAD.
    pub fn blamed_ahead(&self) -> Vec<String> {
        match self.git.repo(self.root()).map(|repo| repo.head_id()) {
            Ok(Some(head)) => self.git.blamed_ahead(head),
            _ => Vec::new(),
        }
    }

    pub fn git_log(&self, query: &LogQuery<'_>) -> Result<String, GitError> {
        let log = self.git.repo(self.root())?.log(query)?;
        self.git.warm_blames_later(self.root());
        Ok(log_text(&log, self.answer_token_limit()))
    }

    pub fn git_blame(
        &self,
        file: &str,
        start: Option<u32>,
        end: Option<u32>,
    ) -> Result<String, GitError> {
        let repo = self.git.repo(self.root())?;
        let store = DiskBlames::new(self.root());
        let blame = repo.blame_cached(file, start, end, Some(&self.git.blames), kept(&store))?;
        self.git.warm_blames_later(self.root());
        Ok(blame_text(&blame, self.answer_token_limit()))
    }

    pub fn git_diff(
        &self,
        base: Option<&str>,
        head: Option<&str>,
        path: Option<&str>,
    ) -> Result<String, GitError> {
        let diff = self.git.repo(self.root())?.diff(base, head, path)?;
        self.git.warm_blames_later(self.root());
        Ok(diff_text(&diff, self.answer_token_limit()))
    }
}
