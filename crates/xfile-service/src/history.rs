//! Git history as answers: `git_log`, `git_blame` and `git_diff` in
//! markdown (diffs in ```diff fences), each cut to the answer budget item
//! by item (commits, line ranges, hunks) with a closing line that says
//! what was left out and how to ask for it.

use std::fmt::Write;
use std::path::Path;

use super::blame_store::DiskBlames;
use super::context::count_tokens;
use super::paging::{fitting_parts, part_tokens};
use xfile_git::{
    Blame, BlameStore, Commit, Diff, FileStatus, GitError, HeadState, IndexBounds, Log, LogQuery,
    Repo,
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

/// How many of `lines` fit `budget` tokens after `head` (at least one):
/// every line tokenized once (`paging::part_tokens`), none of it when the
/// whole answer has fewer bytes than the budget has tokens (a token is at
/// least a byte).
fn fit(head: &str, lines: &[String], budget: usize) -> usize {
    let bytes = head.len() + lines.iter().map(String::len).sum::<usize>();
    if bytes <= budget {
        return lines.len();
    }
    fitting_parts(
        &part_tokens(lines),
        budget.saturating_sub(count_tokens(head)),
    )
}

/// `git_log`: the commits, newest first.
pub fn log(root: &Path, budget: usize, query: &LogQuery<'_>) -> Result<String, GitError> {
    let log = Repo::open(root)?.log(query)?;
    Ok(log_text(&log, budget))
}

pub fn log_text(log: &Log, budget: usize) -> String {
    let mut head = format!(
        "## git log {} ({})\n\n",
        log.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("."),
        head_text(&log.head)
    );
    if log.shallow {
        head.push_str(SHALLOW_NOTE);
    }
    let lines: Vec<String> = log
        .commits
        .iter()
        .map(|commit| format!("- {}\n", commit_line(commit)))
        .collect();
    let keep = fit(&head, &lines, budget.saturating_sub(CLOSING_TOKENS));
    let render = |n: usize| head.clone() + &lines[..n].concat();
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

/// How long building the history index may take off an answer's path (a
/// server's warm-up, the CLI after its answer); a history that takes
/// longer is blamed without it.
pub const INDEX_BOUNDS: IndexBounds = IndexBounds {
    deadline: std::time::Duration::from_secs(30),
    max_new: usize::MAX,
    max_commits: xfile_git::MAX_INDEX_COMMITS,
};

/// Brings the history index kept on disk to HEAD (built when there is
/// none), as a server's warm-up does; `Ok(false)` when none is kept (the
/// cache switched off, no commits, a shallow clone, past `INDEX_BOUNDS`).
pub fn keep_index(root: &Path) -> Result<bool, GitError> {
    let Some(store) = DiskBlames::new(root) else {
        return Ok(false);
    };
    Repo::open(root)?.keep_history_index(&store, &INDEX_BOUNDS)
}

/// The store as blame takes it: none when the cache is switched off.
pub fn kept(store: &Option<DiskBlames>) -> Option<&dyn BlameStore> {
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
    let (first, last) = match (blame.ranges.first(), blame.ranges.last()) {
        (Some(first), Some(last)) => (first.start, last.end),
        _ => (1, blame.lines),
    };
    let mut head = format!(
        "## git blame {}:{first}-{last} ({} lines in the file)\n\n",
        blame.path, blame.lines
    );
    if blame.shallow {
        head.push_str(SHALLOW_NOTE);
    }
    let lines: Vec<String> = blame
        .ranges
        .iter()
        .map(|range| {
            let lines = if range.start == range.end {
                format!("line {}", range.start)
            } else {
                format!("lines {}-{}", range.start, range.end)
            };
            let mut line = match &range.commit {
                Some(commit) => format!("- {lines}: {}", commit_line(commit)),
                None => format!("- {lines}: not committed yet"),
            };
            if let Some(from) = &range.source_path {
                let _ = write!(line, " (in {from} then)");
            }
            line.push('\n');
            line
        })
        .collect();
    let keep = fit(&head, &lines, budget.saturating_sub(CLOSING_TOKENS));
    let render = |n: usize| head.clone() + &lines[..n].concat();
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

/// The end of a ```diff fence.
const FENCE: &str = "```\n";

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
    let file_line = |file: &xfile_git::FileDiff| {
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
    let listed = fit(&summary, &lines, budget);
    summary.push_str(&lines[..listed].concat());
    if listed < lines.len() {
        let _ = writeln!(
            summary,
            "\n{listed} of {} files listed, cut by the {budget}-token answer budget; ask with a path to see part of the change.",
            lines.len()
        );
        return summary;
    }
    // Then whole hunks, file by file, while they fit: each hunk's text
    // with the heading and fence of its file when it is the file's first.
    let hunks: Vec<(usize, &xfile_git::Hunk)> = diff
        .files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.hunks.iter().map(move |h| (i, h)))
        .collect();
    let parts: Vec<String> = hunks
        .iter()
        .enumerate()
        .map(|(i, &(file, hunk))| {
            let mut part = String::new();
            if i == 0 || hunks[i - 1].0 != file {
                if i > 0 {
                    part.push_str(FENCE);
                }
                let _ = write!(part, "\n### {}\n```diff\n", diff.files[file].path);
            }
            part.push_str(&hunk.header);
            part.push('\n');
            part.push_str(&hunk.lines);
            part
        })
        .collect();
    let render = |n: usize| match n {
        0 => String::new(),
        n => parts[..n].concat() + FENCE,
    };
    let room = budget.saturating_sub(count_tokens(&summary));
    let costs = part_tokens(&parts);
    let fence = count_tokens(FENCE);
    let mut shown = fitting_parts(&costs, room.saturating_sub(fence));
    let mut out = summary;
    if shown == 1 && costs[0] + fence > room {
        // One hunk alone is over the budget: its first lines, fence closed.
        out.push_str(super::text::lines_within(
            &render(1),
            room.saturating_sub(10),
        ));
        out.push_str(FENCE);
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
