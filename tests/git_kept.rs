//! Kept blames: a whole-file blame kept for one HEAD answers
//! later blames, in this process or the next, exactly as a fresh blame
//! would: as it is for the same HEAD, brought forward through the commits
//! since when HEAD moved on (merges and renames included), computed afresh
//! when it cannot be; the working tree's edits are diffed in. On disk
//! (`.xfile_cache/blame/`), a damaged or linked file is ignored, never
//! followed. Every answer is checked against a fresh blame and `git blame`.

use crate::common;

use std::cell::RefCell;
use std::path::Path;

use common::git_repo::{GitRepo, blame_lines, cli_blame_lines, fresh_blame_lines};
use xfile::git::{BlameStore, KeptBlame, Repo};

/// A store in memory that marks what it hands back: every kept commit's
/// summary gets a `kept:` prefix, so an answer shows which lines came
/// from the kept blame and which from a walk.
#[derive(Default)]
struct Marked {
    kept: RefCell<Option<KeptBlame>>,
    saves: RefCell<usize>,
}

impl BlameStore for Marked {
    fn load(&self, path: &str) -> Option<KeptBlame> {
        let mut kept = self.kept.borrow().clone().filter(|k| k.path == path)?;
        for commit in &mut kept.commits {
            if !commit.summary.starts_with("kept:") {
                commit.summary = format!("kept: {}", commit.summary);
            }
        }
        Some(kept)
    }

    fn save(&self, blame: &KeptBlame) {
        *self.kept.borrow_mut() = Some(blame.clone());
        *self.saves.borrow_mut() += 1;
    }
}

/// Blames `path` with `store`, checks the answer against a fresh blame and
/// git's, and says whether any line came from the kept blame.
fn blame_checked(repo: &GitRepo, store: &Marked, path: &str) -> bool {
    let root = repo.path();
    let git = Repo::open(&root).unwrap();
    let kept = git
        .blame_cached(path, None, None, None, Some(store))
        .unwrap();
    let fresh = git.blame(path, None, None).unwrap();
    assert_eq!(blame_lines(&kept), blame_lines(&fresh), "{path}");
    let ids: Vec<String> = blame_lines(&kept).into_iter().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        common::git_repo::git_blame_ids(&root, path),
        "{path} against git"
    );
    // A range cut from the kept blame is the range blamed fresh.
    let lines = fresh.lines;
    let part = git
        .blame_cached(path, Some(2), Some(lines - 1), None, Some(store))
        .unwrap();
    let fresh_part = git.blame(path, Some(2), Some(lines - 1)).unwrap();
    assert_eq!(blame_lines(&part), blame_lines(&fresh_part), "{path} 2..");
    kept.ranges.iter().any(|r| {
        r.commit
            .as_ref()
            .is_some_and(|c| c.summary.starts_with("kept:"))
    })
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line_{i} = {i}\n")).collect()
}

#[test]
fn a_kept_blame_is_brought_forward_through_new_commits_as_a_fresh_blame_would_be() {
    let repo = GitRepo::init();
    let store = Marked::default();
    repo.write("a.py", &numbered(12));
    repo.write("README.md", "hello\n");
    repo.commit("Ann", 1, "Add a");
    assert!(!blame_checked(&repo, &store, "a.py"), "nothing kept yet");
    // One commit on top: the kept lines keep their commit.
    repo.edit("a.py", "line_3 = 3", "line_3 = 30");
    repo.commit("Bob", 2, "Three");
    assert!(blame_checked(&repo, &store, "a.py"));
    // Two, one adding a line.
    repo.edit("a.py", "line_8 = 8\n", "line_8 = 80\nline_8b = 81\n");
    repo.commit("Cid", 3, "Eight");
    repo.edit("a.py", "line_1 = 1", "line_1 = 10");
    repo.commit("Dee", 4, "One");
    assert!(blame_checked(&repo, &store, "a.py"));
    // A merge that changed the file against both parents: blamed afresh.
    let before_merge = repo.rev("HEAD");
    repo.git(&["checkout", "-q", "-b", "side", "HEAD~1"]);
    repo.edit("a.py", "line_10 = 10", "line_10 = 100");
    repo.commit("Eve", 5, "Ten on the side");
    repo.git(&["checkout", "-q", "main"]);
    repo.git_at(
        "2024-01-06T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "side", "-m", "Merge side"],
    );
    assert_ne!(repo.rev("HEAD"), before_merge);
    assert!(!blame_checked(&repo, &store, "a.py"));
    // A commit that leaves the file alone, then a merge that takes it
    // unchanged from its first parent: both passed through.
    repo.write("README.md", "hello again\n");
    repo.commit("Ann", 7, "Readme");
    repo.git(&["checkout", "-q", "-b", "docs"]);
    repo.write("docs.md", "docs\n");
    repo.commit("Bob", 8, "Docs");
    repo.git(&["checkout", "-q", "main"]);
    repo.edit("a.py", "line_12 = 12", "line_12 = 120");
    repo.commit("Cid", 9, "Twelve");
    repo.git_at(
        "2024-01-10T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "docs", "-m", "Merge docs"],
    );
    assert!(blame_checked(&repo, &store, "a.py"));
    // A rename: the new path has nothing kept; blamed afresh, following
    // the rename, then kept under its new name.
    repo.git(&["mv", "a.py", "b.py"]);
    repo.edit("b.py", "line_5 = 5", "line_5 = 50");
    repo.commit("Dee", 11, "Move a to b");
    assert!(!blame_checked(&repo, &store, "b.py"));
    repo.edit("b.py", "line_6 = 6", "line_6 = 60");
    repo.commit("Eve", 12, "Six");
    assert!(blame_checked(&repo, &store, "b.py"));
    // Edits in the working tree: not committed yet, the rest kept.
    repo.edit("b.py", "line_7 = 7", "line_7 = 70");
    repo.write(
        "b.py",
        &(std::fs::read_to_string(repo.path().join("b.py")).unwrap() + "tail = 1\n"),
    );
    assert!(blame_checked(&repo, &store, "b.py"));
    // HEAD moved back (an older commit checked out): the kept blame, for
    // a HEAD that is not behind it, is not used.
    let saves = *store.saves.borrow();
    repo.git(&["checkout", "-q", "-f", "HEAD~1"]);
    assert!(!blame_checked(&repo, &store, "b.py"));
    assert_eq!(*store.saves.borrow(), saves + 1, "the fresh blame is kept");
}

#[test]
fn an_amended_commit_is_not_taken_for_a_descendant() {
    let repo = GitRepo::init();
    let store = Marked::default();
    repo.write("a.py", &numbered(6));
    repo.commit("Ann", 1, "Add a");
    repo.edit("a.py", "line_2 = 2", "line_2 = 20");
    repo.commit("Bob", 2, "Two");
    assert!(!blame_checked(&repo, &store, "a.py"));
    repo.edit("a.py", "line_4 = 4", "line_4 = 40");
    repo.git(&["add", "-A"]);
    repo.git_at(
        "2024-01-03T10:00:00+00:00",
        &["commit", "-q", "--amend", "-m", "Two and four"],
    );
    assert!(!blame_checked(&repo, &store, "a.py"));
}

/// The kept blames' directory of a root.
fn kept_dir(root: &Path) -> std::path::PathBuf {
    root.join(".xfile_cache/blame")
}

/// The one kept file, its record decoded.
fn kept_file(root: &Path) -> (std::path::PathBuf, KeptBlame) {
    let files: Vec<_> = std::fs::read_dir(kept_dir(root))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let bytes = std::fs::read(&files[0]).unwrap();
    let record = bytes.strip_prefix(b"xfile blame 1\n".as_slice()).unwrap();
    (files[0].clone(), rmp_serde::from_slice(record).unwrap())
}

/// `kept` with every commit's summary marked, encoded as the store does.
fn marked(kept: &KeptBlame) -> Vec<u8> {
    let mut kept = kept.clone();
    for commit in &mut kept.commits {
        commit.summary = format!("kept: {}", commit.summary);
    }
    [
        b"xfile blame 1\n".as_slice(),
        &rmp_serde::to_vec(&kept).unwrap(),
    ]
    .concat()
}

fn is_marked(lines: &[(String, Option<String>)]) -> bool {
    lines.iter().any(|(id, _)| id.starts_with("kept:"))
}

fn unmarked(lines: &[(String, Option<String>)]) -> Vec<(String, Option<String>)> {
    lines
        .iter()
        .map(|(id, from)| (id.trim_start_matches("kept:").to_string(), from.clone()))
        .collect()
}

#[test]
fn a_blame_kept_on_disk_answers_the_next_process_and_follows_head_and_content() {
    let repo = GitRepo::init();
    let root = repo.path();
    repo.write("a.py", &numbered(10));
    repo.commit("Ann", 1, "Add a");
    repo.edit("a.py", "line_4 = 4", "line_4 = 40");
    repo.commit("Bob", 2, "Four");
    let first = cli_lines(&root, "a.py");
    assert_eq!(first, fresh_blame_lines(&root, "a.py"));
    // The next process reads the kept blame (marked here, to see it).
    let (file, kept) = kept_file(&root);
    assert_eq!(kept.head, repo.rev("HEAD"));
    std::fs::write(&file, marked(&kept)).unwrap();
    let again = cli_lines(&root, "a.py");
    assert!(again.iter().all(|(id, _)| id.starts_with("kept:")));
    assert_eq!(unmarked(&again), first);
    // Content changed in the working tree: changed lines are not
    // committed yet, the rest still from the kept blame.
    repo.edit("a.py", "line_7 = 7", "line_7 = 70");
    let edited = cli_lines(&root, "a.py");
    assert_eq!(edited[6].0, "-");
    assert!(is_marked(&edited));
    assert_eq!(unmarked(&edited), fresh_blame_lines(&root, "a.py"));
    // HEAD moved: brought forward, then kept for the new HEAD.
    repo.commit("Cid", 3, "Seven");
    let moved = cli_lines(&root, "a.py");
    assert!(is_marked(&moved));
    assert_eq!(unmarked(&moved), fresh_blame_lines(&root, "a.py"));
    assert_eq!(kept_file(&root).1.head, repo.rev("HEAD"));
    // `cache clean` removes the kept blames with the rest.
    let cleaned = std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["cache", "clean", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(cleaned.status.success());
    assert!(!root.join(".xfile_cache").exists());
    // With the cache switched off nothing is kept.
    let off = std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["--no-cache", "git", "blame", "a.py", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(off.status.success());
    assert!(!root.join(".xfile_cache").exists());
}

#[test]
fn a_damaged_or_linked_kept_blame_is_ignored_and_never_followed() {
    let repo = GitRepo::init();
    let root = repo.path();
    repo.write("a.py", &numbered(8));
    repo.commit("Ann", 1, "Add a");
    let expected = cli_lines(&root, "a.py");
    let (file, kept) = kept_file(&root);
    // Damaged: garbage, a cut record, another format.
    let whole = marked(&kept);
    for damaged in [
        b"garbage".to_vec(),
        whole[..whole.len() / 2].to_vec(),
        [b"xfile blame 0\n".as_slice(), &whole[14..]].concat(),
    ] {
        std::fs::write(&file, damaged).unwrap();
        assert_eq!(cli_lines(&root, "a.py"), expected);
        // Written over with a good one.
        assert_eq!(kept_file(&root).1, kept);
    }
    // A record for another path under this path's name is not used.
    let mut other = kept.clone();
    other.path = "b.py".into();
    std::fs::write(&file, marked(&other)).unwrap();
    assert_eq!(cli_lines(&root, "a.py"), expected);
    // A link in the file's place, to a marked record outside: not read,
    // and replaced (the link itself, never its target).
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("kept.bin");
    std::fs::write(&target, marked(&kept)).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    assert_eq!(cli_lines(&root, "a.py"), expected);
    assert_eq!(std::fs::read(&target).unwrap(), marked(&kept));
    assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
    // A link in the directory's place: not read, not written through.
    let dir = kept_dir(&root);
    std::fs::remove_dir_all(&dir).unwrap();
    let outside_dir = outside.path().join("blame");
    std::fs::create_dir(&outside_dir).unwrap();
    std::fs::write(outside_dir.join(file.file_name().unwrap()), marked(&kept)).unwrap();
    std::os::unix::fs::symlink(&outside_dir, &dir).unwrap();
    assert_eq!(cli_lines(&root, "a.py"), expected);
    assert_eq!(std::fs::read_dir(&outside_dir).unwrap().count(), 1);
    assert!(std::fs::symlink_metadata(&dir).unwrap().is_symlink());
}

#[test]
fn blames_a_server_computed_ahead_answer_the_next_server() {
    let repo = GitRepo::init();
    let root = repo.path();
    repo.write("a.py", &numbered(6));
    repo.commit("Ann", 1, "Add a");
    repo.edit("a.py", "line_2 = 2", "line_2 = 20");
    repo.commit("Bob", 2, "Two");
    let first = xfile::service::Service::open(&root).unwrap();
    first.precompute_blames();
    assert_eq!(first.blamed_ahead(), ["a.py"]);
    drop(first);
    let (file, kept) = kept_file(&root);
    assert_eq!(kept.head, repo.rev("HEAD"));
    std::fs::write(&file, marked(&kept)).unwrap();
    // A restart: the new server's first blame is the kept one.
    let second = xfile::service::Service::open(&root).unwrap();
    let answer = second.git_blame("a.py", None, None).unwrap();
    assert!(
        answer.contains("Bob <bob@example.com>: kept: Two"),
        "{answer}"
    );
    let fresh = Repo::open(&root)
        .unwrap()
        .blame("a.py", None, None)
        .unwrap();
    assert_eq!(
        answer.replace("kept: ", ""),
        xfile::service::history::blame_text(&fresh, second.answer_token_limit())
    );
}

#[test]
fn brought_forward_over_random_edits_a_blame_stays_the_fresh_one() {
    // Seeded edits (`GitRepo::random_step`).
    let mut rng = common::Lcg(0x9e37_79b9_7f4a_7c15);
    let repo = GitRepo::init();
    let store = Marked::default();
    let mut lines: Vec<String> = (0..40).map(|i| format!("x{i} = {i}")).collect();
    repo.write("m.py", &(lines.join("\n") + "\n"));
    repo.commit("Ann", 1, "Start");
    let mut reused = 0;
    for step in 0..24u32 {
        repo.random_step("m.py", &mut lines, &mut rng, step, 4);
        if step % 3 == 2 && blame_checked(&repo, &store, "m.py") {
            reused += 1;
        }
    }
    assert!(reused >= 6, "brought forward {reused} times of 7");
}

#[test]
fn a_kept_blame_for_a_head_the_repository_lost_is_blamed_afresh() {
    let repo = GitRepo::init();
    let store = Marked::default();
    repo.write("a.py", &numbered(5));
    repo.commit("Ann", 1, "Add a");
    assert!(!blame_checked(&repo, &store, "a.py"));
    let mut kept = store.kept.borrow().clone().unwrap();
    kept.head = "ab".repeat(20);
    *store.kept.borrow_mut() = Some(kept);
    repo.edit("a.py", "line_3 = 3", "line_3 = 30");
    repo.commit("Bob", 2, "Three");
    assert!(!blame_checked(&repo, &store, "a.py"));
}

/// `xfile git blame PATH --json` at `root`: each line's commit id (with a
/// `kept:` prefix when its summary carries the store's mark) and former
/// path.
fn cli_lines(root: &Path, path: &str) -> Vec<(String, Option<String>)> {
    cli_blame_lines(root, path)
        .into_iter()
        .map(|line| {
            let id = if line.summary.starts_with("kept:") {
                format!("kept:{}", line.id)
            } else {
                line.id
            };
            (id, line.source_path)
        })
        .collect()
}
