//! Blame in a shallow clone: `xfile git blame` and a server's
//! `git_blame` answer exactly as `git blame --porcelain` does in the
//! clone (lines older than the cut go to the commits at the cut, git's
//! boundary commits), neither keeps a blame or the history index there
//! (both would go stale when the clone is deepened, which moves neither
//! HEAD nor the contents), and after `git fetch --deepen` or
//! `--unshallow` the answers follow the deeper history at once.

use crate::common;

use std::path::{Path, PathBuf};

use common::git_repo::{GitRepo, blame_lines, cli_blame_lines, git_blame_ids, git_in};
use xfile::git::{HistoryIndex, Repo};
use xfile::service::{Service, history};

const FILES: [&str; 2] = ["a.py", "c.py"];

fn numbered(prefix: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{prefix}{i} = {i}\n")).collect()
}

/// Twelve commits: `a.py` edited in most, a side branch merged, `b.py`
/// renamed to `c.py` with an edit; so every depth cuts through lines of
/// both files.
fn origin() -> GitRepo {
    let repo = GitRepo::init();
    repo.write("a.py", &numbered("a", 20));
    repo.write("b.py", &numbered("b", 8));
    repo.commit("Ann", 1, "Start");
    for (day, line) in [(2u32, 3), (3, 6), (4, 9), (5, 12), (6, 4)] {
        repo.edit(
            "a.py",
            &format!("a{line} = {line}\n"),
            &format!("a{line} = {day}\n"),
        );
        repo.commit(["Bob", "Cid"][day as usize % 2], day, &format!("Day {day}"));
    }
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.edit("a.py", "a15 = 15\n", "a15 = 150\n");
    repo.edit("b.py", "b2 = 2\n", "b2 = 20\n");
    repo.commit("Dee", 7, "Fifteen aside");
    repo.git(&["checkout", "-q", "main"]);
    repo.edit("a.py", "a2 = 2\n", "a2 = 20\n");
    repo.commit("Eve", 8, "Two");
    repo.git_at(
        "2024-01-09T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "side", "-m", "Merge side"],
    );
    repo.git(&["mv", "b.py", "c.py"]);
    repo.edit("c.py", "b5 = 5\n", "b5 = 50\n");
    repo.commit("Ann", 10, "Move b to c");
    repo.edit("a.py", "a18 = 18\n", "a18 = 180\n");
    repo.commit("Bob", 11, "Eighteen");
    repo.edit("c.py", "b7 = 7\n", "b7 = 70\n");
    repo.commit("Cid", 12, "Seven of c");
    repo
}

/// A clone of `origin` `depth` commits deep, in a temporary directory.
fn shallow_clone(origin: &GitRepo, depth: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    git_in(
        dir.path(),
        &["clone", "-q", "--depth", &depth.to_string(), &url, "clone"],
    );
    let root = dir.path().join("clone").canonicalize().unwrap();
    (dir, root)
}

/// What the clone's blame directory holds (empty when there is none).
fn kept_files(root: &Path) -> Vec<String> {
    match std::fs::read_dir(root.join(".xfile_cache/blame")) {
        Ok(entries) => entries
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".bin") || name == "history.idx")
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn cli_ids(root: &Path, path: &str) -> Vec<String> {
    cli_blame_lines(root, path)
        .into_iter()
        .map(|line| line.id)
        .collect()
}

/// Each file's blame, by the CLI, a fresh blame and a server's answer,
/// against `git blame --porcelain` in the clone; gives git's ids back.
fn check_all(root: &Path, service: &Service) -> Vec<Vec<String>> {
    let repo = Repo::open(root).unwrap();
    FILES
        .iter()
        .map(|path| {
            let git = git_blame_ids(root, path);
            assert_eq!(cli_ids(root, path), git, "{path}: the CLI against git");
            let fresh = repo.blame(path, None, None).unwrap();
            let fresh_ids: Vec<String> = blame_lines(&fresh).into_iter().map(|l| l.0).collect();
            assert_eq!(fresh_ids, git, "{path}: a fresh blame against git");
            assert_eq!(
                service.git_blame(path, None, None).unwrap(),
                history::blame_text(&fresh, service.answer_token_limit()),
                "{path}: the server against a fresh blame"
            );
            git
        })
        .collect()
}

#[test]
fn a_shallow_clone_blames_as_git_does_and_keeps_nothing_that_deepening_would_stale() {
    let origin = origin();
    let (_dir, root) = shallow_clone(&origin, 3);
    assert!(Repo::open(&root).unwrap().is_shallow());
    // The server path: its warm-up keeps no index in a shallow clone, and
    // its blames (ahead and asked) keep nothing on disk.
    assert!(!history::keep_index(&root).unwrap());
    let service = Service::open(&root).unwrap();
    service.precompute_blames();
    let shallow = check_all(&root, &service);
    // The cut is git's boundary: some lines are given to a commit at it.
    let cut = git_in(&root, &["rev-parse", "HEAD~2"]).trim().to_string();
    assert!(shallow[0].contains(&cut), "{shallow:?}");
    assert_eq!(kept_files(&root), Vec::<String>::new());
    let text = String::from_utf8(
        std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(["git", "blame", "a.py", "--root"])
            .arg(&root)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(text.contains("shallow clone"), "{text}");

    // Deepened, still shallow: HEAD and the contents are the same, the
    // blames are not; the server's blames kept in memory must not answer.
    git_in(&root, &["fetch", "-q", "--deepen", "4", "origin"]);
    assert!(Repo::open(&root).unwrap().is_shallow());
    let deeper = check_all(&root, &service);
    assert_ne!(deeper, shallow, "deepening changed no blame");
    assert_eq!(kept_files(&root), Vec::<String>::new());

    // Whole: the blames are the origin's, and from now on kept, with the
    // history index the CLI keeps after its answer.
    git_in(&root, &["fetch", "-q", "--unshallow", "origin"]);
    assert!(!Repo::open(&root).unwrap().is_shallow());
    let whole = check_all(&root, &service);
    for (path, ids) in FILES.iter().zip(&whole) {
        assert_eq!(ids, &git_blame_ids(&origin.path(), path), "{path}");
    }
    let index = std::fs::read(root.join(".xfile_cache/blame/history.idx")).expect("an index");
    let index = HistoryIndex::decode(&index).expect("decodes");
    assert_eq!(
        index.commits().to_string(),
        git_in(&root, &["rev-list", "--count", "HEAD"]).trim()
    );
    // A file blamed through it: still git's answer.
    let through = Repo::open(&root)
        .unwrap()
        .blame_through_index("a.py", &index)
        .unwrap()
        .expect("blamed through the index");
    let mut ids = Vec::new();
    for run in &through.runs {
        for _ in run.start..=run.end {
            ids.push(through.commits[run.commit as usize].id.clone());
        }
    }
    assert_eq!(ids, whole[0]);
}

#[test]
fn the_index_is_not_built_in_a_shallow_clone_even_when_asked_directly() {
    let origin = origin();
    let (_dir, root) = shallow_clone(&origin, 2);
    let repo = Repo::open(&root).unwrap();
    // `history_index` refuses: its records would hold the grafted cut as
    // the history's roots, and nothing in them says so.
    assert!(
        repo.history_index(None, &history::INDEX_BOUNDS)
            .unwrap()
            .is_none()
    );
    // An index built in the full origin and copied in is not used either:
    // a blame through it would walk past the cut.
    let full = Repo::open(&origin.path())
        .unwrap()
        .history_index(None, &history::INDEX_BOUNDS)
        .unwrap()
        .expect("an index in the origin");
    let dir = root.join(".xfile_cache/blame");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("history.idx"), full.encode()).unwrap();
    for path in FILES {
        assert_eq!(cli_ids(&root, path), git_blame_ids(&root, path), "{path}");
    }
    // Left as it was: not brought forward, nothing kept beside it.
    assert_eq!(
        std::fs::read(dir.join("history.idx")).unwrap(),
        full.encode()
    );
    assert_eq!(kept_files(&root), ["history.idx"]);
}
