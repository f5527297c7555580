//! Real git repositories in temporary directories, built with the `git`
//! binary: fixed names, e-mails and dates, no user or system
//! configuration, so answers are exact.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct GitRepo {
    pub dir: tempfile::TempDir,
}

/// `git` in `dir` with a clean configuration.
pub fn git_in(dir: &Path, args: &[&str]) -> String {
    run(dir, None, args)
}

/// `git blame --porcelain`'s commit for each line of `path` ("-" for a
/// line not committed yet).
pub fn git_blame_ids(dir: &Path, path: &str) -> Vec<String> {
    let porcelain = git_in(dir, &["blame", "--porcelain", path]);
    porcelain
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let id = words.next()?;
            words.next()?;
            words.next()?;
            (id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| {
                if id.bytes().all(|b| b == b'0') {
                    "-".to_string()
                } else {
                    id.to_string()
                }
            })
        })
        .collect()
}

/// Each line's commit id ("-" when not committed) and former path.
pub fn blame_lines(blame: &xfile::git::Blame) -> Vec<(String, Option<String>)> {
    let mut lines = Vec::new();
    for range in &blame.ranges {
        for _ in range.start..=range.end {
            let id = range.commit.as_ref().map_or("-".into(), |c| c.id.clone());
            lines.push((id, range.source_path.clone()));
        }
    }
    lines
}

/// A fresh blame of `path` at `root`, line by line.
pub fn fresh_blame_lines(root: &Path, path: &str) -> Vec<(String, Option<String>)> {
    let repo = xfile::git::Repo::open(root).expect("repository");
    blame_lines(&repo.blame(path, None, None).expect("blame"))
}

/// One line of `xfile git blame --json`: its commit id ("-" when not
/// committed), the commit's summary and the line's former path.
pub struct CliBlameLine {
    pub id: String,
    pub summary: String,
    pub source_path: Option<String>,
}

/// `xfile git blame PATH --json` at `root`, line by line.
pub fn cli_blame_lines(root: &Path, path: &str) -> Vec<CliBlameLine> {
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["git", "blame", path, "--json", "--root"])
        .arg(root)
        .output()
        .expect("xfile runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let mut lines = Vec::new();
    for range in value["ranges"].as_array().expect("ranges") {
        let start = range["start"].as_u64().expect("start");
        let end = range["end"].as_u64().expect("end");
        for _ in start..=end {
            lines.push(CliBlameLine {
                id: range["commit"]["id"].as_str().unwrap_or("-").to_string(),
                summary: range["commit"]["summary"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                source_path: range["source_path"].as_str().map(str::to_string),
            });
        }
    }
    lines
}

/// `git args` in `dir`, with both dates set to `date` when given.
fn run(dir: &Path, date: Option<&str>, args: &[&str]) -> String {
    let mut command = Command::new("git");
    command
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ann")
        .env("GIT_AUTHOR_EMAIL", "ann@example.com")
        .env("GIT_COMMITTER_NAME", "Ann")
        .env("GIT_COMMITTER_EMAIL", "ann@example.com");
    if let Some(date) = date {
        command
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date);
    }
    let output = command.output().expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl GitRepo {
    /// `git init -b main` in a fresh temporary directory.
    pub fn init() -> GitRepo {
        let dir = tempfile::tempdir().expect("tempdir");
        git_in(dir.path(), &["init", "-q", "-b", "main"]);
        GitRepo { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().expect("canonical")
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(self.dir.path(), args)
    }

    pub fn write(&self, path: &str, text: &str) {
        let file = self.dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }

    /// Replaces the first `from` in the file at `path` with `to`.
    pub fn edit(&self, path: &str, from: &str, to: &str) {
        let text = std::fs::read_to_string(self.dir.path().join(path)).expect("read");
        assert!(text.contains(from), "{path} has no {from}");
        self.write(path, &text.replacen(from, to, 1));
    }

    /// Stages everything and commits as `author` on day `day` of
    /// January 2024 at 10:00 UTC.
    pub fn commit(&self, author: &str, day: u32, message: &str) {
        self.git(&["add", "-A"]);
        self.commit_staged(author, day, message);
    }

    /// Step `step` of a seeded random history of `path`: one to `most`
    /// edits of `lines` (a line changed, a `pass` inserted (repeated lines,
    /// where diffs have choices to make), a line deleted while more than
    /// five remain, a new line inserted), then the file written and
    /// committed on day `2 + step` by one of three authors in turn.
    pub fn random_step(
        &self,
        path: &str,
        lines: &mut Vec<String>,
        rng: &mut super::Lcg,
        step: u32,
        most: usize,
    ) {
        for _ in 0..1 + rng.below(most) {
            let at = rng.below(lines.len());
            match rng.below(4) {
                0 => lines[at] = format!("x{at} = {step}"),
                1 => lines.insert(at, "pass".to_string()),
                2 if lines.len() > 5 => {
                    lines.remove(at);
                }
                _ => lines.insert(at, format!("y{step} = {at}")),
            }
        }
        self.write(path, &(lines.join("\n") + "\n"));
        self.commit(
            ["Bob", "Cid", "Dee"][step as usize % 3],
            2 + step,
            &format!("Step {step}"),
        );
    }

    pub fn commit_staged(&self, author: &str, day: u32, message: &str) {
        let date = format!("2024-01-{day:02}T10:00:00+00:00");
        let who = format!("{author} <{}@example.com>", author.to_lowercase());
        self.git_at(&date, &["commit", "-q", "--author", &who, "-m", message]);
    }

    /// A git command with both dates set (commits, merges).
    pub fn git_at(&self, date: &str, args: &[&str]) -> String {
        run(self.dir.path(), Some(date), args)
    }

    pub fn rev(&self, revision: &str) -> String {
        self.git(&["rev-parse", revision]).trim().to_string()
    }
}
