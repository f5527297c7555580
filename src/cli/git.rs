//! `xfile git log|blame|diff`: the project's git history, as the MCP tools
//! `git_log`, `git_blame` and `git_diff` answer it (markdown within the
//! answer budget), or whole with `--json`. No index is needed.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use super::Failure;
use crate::git::{GitError, LogQuery, Repo};
use crate::service::blame_store::DiskBlames;
use crate::service::history;
use crate::workspace::{self, Config};

#[derive(Subcommand)]
pub(super) enum GitCommand {
    /// Commits that changed PATH (default: the project root), newest first.
    Log {
        path: Option<String>,
        /// Commits listed at most.
        #[arg(long, default_value_t = crate::git::DEFAULT_LOG_LIMIT)]
        limit: usize,
        /// Only commits made since this date (2024-05-01, `2 weeks ago`).
        #[arg(long)]
        since: Option<String>,
        /// Only commits made until this date.
        #[arg(long)]
        until: Option<String>,
        /// Only commits whose author's name or e-mail contains this.
        #[arg(long)]
        author: Option<String>,
    },
    /// Who last changed each line of FILE (as it is in the working tree).
    Blame {
        file: String,
        /// First line (1-based).
        #[arg(long)]
        start_line: Option<u32>,
        /// Last line (inclusive).
        #[arg(long)]
        end_line: Option<u32>,
    },
    /// Changes from BASE (default HEAD) to HEAD (default the working tree).
    Diff {
        /// A branch, tag, HEAD~N or commit hash.
        #[arg(long)]
        base: Option<String>,
        /// Compare with this revision instead of the working tree.
        #[arg(long)]
        head: Option<String>,
        /// Only this file or directory.
        path: Option<String>,
    },
}

impl From<GitError> for Failure {
    fn from(error: GitError) -> Self {
        let status = match error {
            GitError::Git(_) => 1,
            _ => 2,
        };
        Failure {
            message: error.to_string(),
            status,
        }
    }
}

pub(super) fn git(command: GitCommand, root: &Path, json: bool) -> Result<(), Failure> {
    let root = workspace::canonical_root(root)?;
    let budget = usize::try_from(Config::load(&root).0.answer_token_limit).unwrap_or(usize::MAX);
    let repo = Repo::open(&root)?;
    let mut out = std::io::stdout().lock();
    // The blame's store, kept to bring its history index up to date once
    // the answer is out.
    let mut blamed = None;
    let (text, value) = match command {
        GitCommand::Log {
            path,
            limit,
            since,
            until,
            author,
        } => {
            let path = path.map(|p| super::history_arg(&root, &p)).transpose()?;
            let log = repo.log(&LogQuery {
                path: path.as_deref(),
                limit,
                since: since.as_deref(),
                until: until.as_deref(),
                author: author.as_deref(),
            })?;
            (history::log_text(&log, budget), serde_json::to_value(&log)?)
        }
        GitCommand::Blame {
            file,
            start_line,
            end_line,
        } => {
            let file = super::file_arg(&root, &file)?;
            let store = DiskBlames::new(&root);
            let blame =
                repo.blame_cached(&file, start_line, end_line, None, history::kept(&store))?;
            blamed = store;
            (
                history::blame_text(&blame, budget),
                serde_json::to_value(&blame)?,
            )
        }
        GitCommand::Diff { base, head, path } => {
            let path = path.map(|p| super::history_arg(&root, &p)).transpose()?;
            let diff = repo.diff(base.as_deref(), head.as_deref(), path.as_deref())?;
            (
                history::diff_text(&diff, budget),
                serde_json::to_value(&diff)?,
            )
        }
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
    } else {
        write!(out, "{text}")?;
    }
    out.flush()?;
    if let Some(store) = blamed {
        // After the answer, not before it: the next blame of any file
        // walks only that file's commits (a server does this ahead).
        if let Err(error) = repo.keep_history_index(&store, &history::INDEX_BOUNDS) {
            tracing::debug!("no history index: {error}");
        }
    }
    Ok(())
}
