//! The history index: a first blame of a file walks only the
//! commits that changed it, told by an index of each commit's changed
//! files, and answers exactly as a fresh blame and `git blame` do, through
//! linear edits, merges (one side taken, both sides changed), renames,
//! files added late and mode changes; an index brought forward after new
//! commits (or a rewritten HEAD) blames as one built afresh; on disk
//! (`.xfile_cache/blame/history.idx`), a damaged or linked index file is
//! ignored and never followed.

use crate::common;

use std::path::Path;

use common::git_repo::{GitRepo, blame_lines, cli_blame_lines, fresh_blame_lines};
use xfile::git::{HistoryIndex, IndexBounds, KeptBlame, MAX_INDEX_COMMITS, Repo};

const BOUNDS: IndexBounds = IndexBounds {
    deadline: std::time::Duration::from_secs(60),
    max_new: usize::MAX,
    max_commits: MAX_INDEX_COMMITS,
};

fn numbered(prefix: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{prefix}{i} = {i}\n")).collect()
}

fn kept_per_line(kept: &KeptBlame) -> Vec<(String, Option<String>)> {
    let mut lines = Vec::new();
    for run in &kept.runs {
        for _ in run.start..=run.end {
            let id = kept.commits[run.commit as usize].id.clone();
            lines.push((id, run.source_path.clone()));
        }
    }
    lines
}

/// Blames each of `paths` through `index` and checks it against a fresh
/// blame and git's; every one must come from the index.
fn check_through(root: &Path, index: &HistoryIndex, paths: &[&str]) {
    let repo = Repo::open(root).unwrap();
    for path in paths {
        let through = repo
            .blame_through_index(path, index)
            .unwrap()
            .unwrap_or_else(|| panic!("{path}: the index gave no blame"));
        let lines = kept_per_line(&through);
        let fresh = blame_lines(&repo.blame(path, None, None).unwrap());
        assert_eq!(lines, fresh, "{path} against a fresh blame");
        let ids: Vec<String> = lines.into_iter().map(|(id, _)| id).collect();
        assert_eq!(
            ids,
            common::git_repo::git_blame_ids(root, path),
            "{path} against git"
        );
    }
}

fn index_of(root: &Path, previous: Option<HistoryIndex>) -> HistoryIndex {
    Repo::open(root)
        .unwrap()
        .history_index(previous, &BOUNDS)
        .unwrap()
        .expect("an index")
}

/// A history with the shapes blame must get right: linear edits,
/// repeated lines, a merge taking one side, a merge changing the file
/// against both parents, a file added late, a rename with an edit, a mode
/// change.
fn awkward_history() -> GitRepo {
    let repo = GitRepo::init();
    repo.write("a.py", &numbered("a", 30));
    repo.write("b.py", &"pass\n".repeat(6));
    repo.write("notes.txt", "one\n");
    repo.commit("Ann", 1, "Start");
    repo.edit("a.py", "a3 = 3", "a3 = 30");
    repo.commit("Bob", 2, "Three");
    // Repeated lines: where an insertion goes is the slider's choice.
    repo.edit("b.py", "pass\n", "pass\npass\n    x = 1\npass\n");
    repo.write("late.py", &numbered("late", 5));
    repo.commit("Cid", 3, "Passes, and a late file");
    // A side branch changing a.py, merged after main changed it too.
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.edit("a.py", "a20 = 20", "a20 = 200");
    repo.edit("late.py", "late2 = 2", "late2 = 20");
    repo.commit("Dee", 4, "Twenty on the side");
    repo.git(&["checkout", "-q", "main"]);
    repo.edit("a.py", "a5 = 5", "a5 = 50");
    repo.commit("Eve", 5, "Five");
    repo.git_at(
        "2024-01-06T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "side", "-m", "Merge side"],
    );
    // A branch that leaves a.py alone, merged: a.py taken from one side.
    repo.git(&["checkout", "-q", "-b", "docs"]);
    repo.write("notes.txt", "one\ntwo\n");
    repo.commit("Ann", 7, "Notes");
    repo.git(&["checkout", "-q", "main"]);
    repo.edit("a.py", "a9 = 9", "a9 = 90");
    repo.commit("Bob", 8, "Nine");
    repo.git_at(
        "2024-01-09T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "docs", "-m", "Merge docs"],
    );
    // A rename with an edit, then edits under the new name.
    repo.git(&["mv", "late.py", "moved.py"]);
    repo.edit("moved.py", "late4 = 4", "late4 = 40");
    repo.commit("Cid", 10, "Move late to moved");
    repo.edit("moved.py", "late5 = 5", "late5 = 50");
    repo.commit("Dee", 11, "Five of moved");
    // A mode change alone, then an edit.
    repo.git(&["update-index", "--chmod=+x", "b.py"]);
    repo.commit_staged("Eve", 12, "Executable");
    repo.edit("a.py", "a30 = 30", "a30 = 300");
    repo.commit("Ann", 13, "Thirty");
    repo
}

const FILES: [&str; 4] = ["a.py", "b.py", "moved.py", "notes.txt"];

#[test]
fn a_blame_through_the_index_is_the_fresh_blame_through_merges_renames_and_late_files() {
    let repo = awkward_history();
    let root = repo.path();
    let index = index_of(&root, None);
    assert_eq!(index.head().unwrap().to_string(), repo.rev("HEAD"));
    assert_eq!(
        index.commits(),
        repo.git(&["rev-list", "--all", "--count"])
            .trim()
            .parse::<usize>()
            .unwrap()
    );
    check_through(&root, &index, &FILES);
    // Round trip through the file format.
    let decoded = HistoryIndex::decode(&index.encode()).expect("decodes");
    assert_eq!(decoded, index);
    // An index for another HEAD is not used.
    repo.write("notes.txt", "one\ntwo\nthree\n");
    repo.commit("Bob", 14, "Three notes");
    assert!(
        Repo::open(&root)
            .unwrap()
            .blame_through_index("a.py", &index)
            .unwrap()
            .is_none()
    );
}

#[test]
fn an_index_brought_forward_blames_as_one_built_afresh() {
    let repo = awkward_history();
    let root = repo.path();
    let old = index_of(&root, None);
    // New commits, one a merge that changed the file on both sides.
    repo.edit("a.py", "a1 = 1", "a1 = 10");
    repo.commit("Bob", 14, "One");
    repo.git(&["checkout", "-q", "-b", "more"]);
    repo.edit("a.py", "a25 = 25", "a25 = 250");
    repo.commit("Cid", 15, "Twenty-five aside");
    repo.git(&["checkout", "-q", "main"]);
    repo.edit("moved.py", "late1 = 1", "late1 = 10");
    repo.edit("a.py", "a2 = 2", "a2 = 20");
    repo.commit("Dee", 16, "Two");
    repo.git_at(
        "2024-01-17T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "more", "-m", "Merge more"],
    );
    let forward = index_of(&root, Some(old.clone()));
    let afresh = index_of(&root, None);
    assert_eq!(forward.head(), afresh.head());
    assert_eq!(forward.commits(), afresh.commits());
    check_through(&root, &forward, &FILES);
    // HEAD rewritten (an amended commit): the new commits are added, the
    // blames still exact.
    repo.edit("a.py", "a7 = 7", "a7 = 70");
    repo.git(&["add", "-A"]);
    repo.git_at(
        "2024-01-18T10:00:00+00:00",
        &["commit", "-q", "--amend", "-m", "Merge more, and seven"],
    );
    let rewritten = index_of(&root, Some(forward));
    assert_eq!(rewritten.head().unwrap().to_string(), repo.rev("HEAD"));
    check_through(&root, &rewritten, &FILES);
    // Bringing forward is bounded: past `max_new` commits, no index.
    let few = IndexBounds {
        max_new: 1,
        ..BOUNDS
    };
    repo.edit("a.py", "a8 = 8", "a8 = 80");
    repo.commit("Eve", 19, "Eight");
    repo.edit("a.py", "a8 = 80", "a8 = 800");
    repo.commit("Ann", 20, "Eight again");
    assert!(
        Repo::open(&root)
            .unwrap()
            .history_index(Some(old), &few)
            .unwrap()
            .is_none()
    );
}

#[test]
fn seeded_random_histories_blame_through_the_index_as_git_does() {
    // Seeded edits (`GitRepo::random_step`) on two branches merged now and
    // then.
    let mut rng = common::Lcg(0x2545_f491_4f6c_dd1d);
    let repo = GitRepo::init();
    let mut lines: Vec<String> = (0..30).map(|i| format!("x{i} = {i}")).collect();
    repo.write("m.py", &(lines.join("\n") + "\n"));
    repo.commit("Ann", 1, "Start");
    for step in 0..20u32 {
        repo.random_step("m.py", &mut lines, &mut rng, step, 3);
        if step % 5 == 4 {
            // A side commit touching another file, merged back.
            repo.git(&["checkout", "-q", "-b", &format!("s{step}")]);
            repo.write("other.txt", &format!("{step}\n"));
            repo.commit("Eve", 2 + step, "Other");
            repo.git(&["checkout", "-q", "main"]);
            repo.git_at(
                &format!("2024-01-{:02}T11:00:00+00:00", 2 + step),
                &["merge", "-q", "--no-ff", &format!("s{step}"), "-m", "Merge"],
            );
        }
    }
    let root = repo.path();
    check_through(&root, &index_of(&root, None), &["m.py", "other.txt"]);
}

fn index_file(root: &Path) -> std::path::PathBuf {
    root.join(".xfile_cache/blame/history.idx")
}

#[test]
fn the_cli_keeps_the_index_after_its_answer_and_ignores_a_damaged_or_linked_one() {
    let repo = awkward_history();
    let root = repo.path();
    // The first blame answers without an index, then keeps one.
    assert_eq!(cli_lines(&root, "a.py"), fresh_blame_lines(&root, "a.py"));
    let file = index_file(&root);
    let good = std::fs::read(&file).expect("the index is kept");
    let index = HistoryIndex::decode(&good).expect("decodes");
    assert_eq!(index.head().unwrap().to_string(), repo.rev("HEAD"));
    // A file never blamed: through the index.
    assert_eq!(
        cli_lines(&root, "moved.py"),
        fresh_blame_lines(&root, "moved.py")
    );
    // New commits: the index is brought forward by the next blame.
    repo.edit("b.py", "    x = 1", "    x = 2");
    repo.commit("Bob", 14, "Two");
    assert_eq!(cli_lines(&root, "b.py"), fresh_blame_lines(&root, "b.py"));
    let forward = HistoryIndex::decode(&std::fs::read(&file).unwrap()).expect("decodes");
    assert_eq!(forward.head().unwrap().to_string(), repo.rev("HEAD"));
    assert_eq!(forward.commits(), index.commits() + 1);
    // Damaged: garbage, cut, one byte flipped, another format. Ignored
    // (the answer is the fresh blame) and written over with a good one.
    let good = std::fs::read(&file).unwrap();
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x40;
    for damaged in [
        b"garbage".to_vec(),
        good[..good.len() / 2].to_vec(),
        flipped,
        [b"xfile history 0\n".as_slice(), &good[16..]].concat(),
    ] {
        std::fs::write(&file, &damaged).unwrap();
        assert!(HistoryIndex::decode(&damaged).is_none());
        assert_eq!(
            cli_lines(&root, "notes.txt"),
            fresh_blame_lines(&root, "notes.txt")
        );
        let rebuilt = HistoryIndex::decode(&std::fs::read(&file).unwrap());
        assert!(
            rebuilt.is_some_and(|i| i.head() == forward.head() && i.commits() == forward.commits())
        );
    }
    // A link in the index's place, to a good index outside: not read, and
    // replaced (the link itself, never its target).
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("history.idx");
    std::fs::write(&target, b"not an index").unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    assert_eq!(cli_lines(&root, "a.py"), fresh_blame_lines(&root, "a.py"));
    assert_eq!(std::fs::read(&target).unwrap(), b"not an index");
    assert!(!std::fs::symlink_metadata(&file).unwrap().is_symlink());
    assert!(HistoryIndex::decode(&std::fs::read(&file).unwrap()).is_some());
}

#[test]
fn a_server_keeps_the_index_before_its_blames_ahead() {
    let repo = awkward_history();
    let root = repo.path();
    let service = xfile::service::Service::open(&root).unwrap();
    service.precompute_blames();
    let index = HistoryIndex::decode(&std::fs::read(index_file(&root)).unwrap()).expect("an index");
    assert_eq!(index.head().unwrap().to_string(), repo.rev("HEAD"));
    for path in FILES {
        let answer = service.git_blame(path, None, None).unwrap();
        let fresh = Repo::open(&root).unwrap().blame(path, None, None).unwrap();
        assert_eq!(
            answer,
            xfile::service::history::blame_text(&fresh, service.answer_token_limit())
        );
    }
}

fn xfile(root: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn cache_info_reports_the_kept_blames_and_the_index_and_git_never_sees_them() {
    let repo = awkward_history();
    let root = repo.path();
    assert!(!root.join(".xfile_cache").exists());
    cli_lines(&root, "a.py");
    cli_lines(&root, "b.py");
    // `git blame` makes the cache directory as `index` does, with its own
    // `.gitignore`: the work tree stays clean.
    assert!(root.join(".xfile_cache/.gitignore").is_file());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let commits = repo.git(&["rev-list", "--all", "--count"]);
    let info: serde_json::Value =
        serde_json::from_str(&xfile(&root, &["cache", "info", "--json"])).unwrap();
    let blames = &info["blames"];
    assert_eq!(blames["blames"], 2, "{info}");
    assert!(blames["blame_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        blames["index"]["commits"].as_u64().unwrap().to_string(),
        commits.trim()
    );
    assert_eq!(blames["index"]["head"], repo.rev("HEAD").as_str());
    let text = xfile(&root, &["cache", "info"]);
    assert!(
        text.contains(&format!(
            "blames: 2 files kept, {} KiB; history index: {} commits,",
            blames["blame_bytes"].as_u64().unwrap().div_ceil(1024),
            commits.trim()
        )) && text.contains(", current"),
        "{text}"
    );
    // A new commit: the index is for the commit before, until a blame.
    repo.write("notes.txt", "new\n");
    repo.commit("Bob", 14, "Notes again");
    let text = xfile(&root, &["cache", "info"]);
    assert!(text.contains("brought forward by the next blame"), "{text}");
    // Damaged: said so.
    std::fs::write(index_file(&root), b"garbage").unwrap();
    let text = xfile(&root, &["cache", "info"]);
    assert!(
        text.contains("damaged, rebuilt by the next blame"),
        "{text}"
    );
}

/// `xfile git blame PATH --json` at `root`: each line's commit id and
/// former path.
fn cli_lines(root: &Path, path: &str) -> Vec<(String, Option<String>)> {
    cli_blame_lines(root, path)
        .into_iter()
        .map(|line| (line.id, line.source_path))
        .collect()
}

/// A store in memory: what the service's on-disk one keeps, without the
/// disk, so a test can hand blame an index built under its own bounds.
#[derive(Default)]
struct Memory {
    index: std::cell::RefCell<Option<HistoryIndex>>,
    blames: std::cell::RefCell<std::collections::HashMap<String, KeptBlame>>,
}

impl xfile::git::BlameStore for Memory {
    fn load(&self, path: &str) -> Option<KeptBlame> {
        self.blames.borrow().get(path).cloned()
    }
    fn save(&self, blame: &KeptBlame) {
        self.blames
            .borrow_mut()
            .insert(blame.path.clone(), blame.clone());
    }
    fn load_index(&self) -> Option<HistoryIndex> {
        self.index.borrow().clone()
    }
    fn save_index(&self, index: &HistoryIndex) {
        *self.index.borrow_mut() = Some(index.clone());
    }
}

fn capped(max_commits: usize) -> IndexBounds {
    IndexBounds {
        max_commits,
        ..BOUNDS
    }
}

#[test]
fn a_capped_index_ends_at_its_bound_and_the_walk_hands_older_history_to_gix() {
    let repo = awkward_history();
    let root = repo.path();
    let total: usize = repo
        .git(&["rev-list", "--all", "--count"])
        .trim()
        .parse()
        .unwrap();
    let git = Repo::open(&root).unwrap();
    for cap in [1, 2, 5, total - 1] {
        let index = git
            .history_index(None, &capped(cap))
            .unwrap()
            .expect("an index");
        assert_eq!(index.commits(), cap);
        assert_eq!(index.head().unwrap().to_string(), repo.rev("HEAD"));
        check_through(&root, &index, &FILES);
        // Through a store, as a first blame with an index kept does.
        let store = Memory::default();
        assert!(git.keep_history_index(&store, &capped(cap)).unwrap());
        assert_eq!(store.load_index_commits(), Some(cap));
        for path in FILES {
            let blame = git.blame_cached(path, None, None, None, Some(&store));
            assert_eq!(
                blame_lines(&blame.unwrap()),
                fresh_blame_lines(&root, path),
                "{path}, index capped at {cap}"
            );
        }
    }
    // At its bound, an index is built afresh rather than grown; under a
    // larger bound it is brought forward. Three new commits.
    let old = git.history_index(None, &capped(4)).unwrap().unwrap();
    for day in 14..17 {
        repo.edit("a.py", "a1", "a1_");
        repo.commit("Bob", day, "One more");
    }
    let afresh = git
        .history_index(Some(old.clone()), &capped(4))
        .unwrap()
        .unwrap();
    assert_eq!(afresh.commits(), 4);
    check_through(&root, &afresh, &FILES);
    let grown = git
        .history_index(Some(old.clone()), &BOUNDS)
        .unwrap()
        .unwrap();
    assert_eq!(grown.commits(), 7);
    check_through(&root, &grown, &FILES);
    // The bound reached while bringing forward: the newest commits are
    // added, the ones between them and the old index left out (a gap the
    // walk hands to gix at).
    let partial = git.history_index(Some(old), &capped(5)).unwrap().unwrap();
    assert_eq!(partial.commits(), 5);
    check_through(&root, &partial, &FILES);
}

#[test]
fn past_its_deadline_no_index_is_built_or_kept_and_blames_walk_without_it() {
    let repo = awkward_history();
    let root = repo.path();
    let git = Repo::open(&root).unwrap();
    let late = IndexBounds {
        deadline: std::time::Duration::ZERO,
        ..BOUNDS
    };
    assert!(git.history_index(None, &late).unwrap().is_none());
    let store = Memory::default();
    assert!(!git.keep_history_index(&store, &late).unwrap());
    assert!(store.load_index_commits().is_none());
    for path in FILES {
        let blame = git.blame_cached(path, None, None, None, Some(&store));
        assert_eq!(blame_lines(&blame.unwrap()), fresh_blame_lines(&root, path));
    }
}

impl Memory {
    fn load_index_commits(&self) -> Option<usize> {
        self.index.borrow().as_ref().map(HistoryIndex::commits)
    }
}
