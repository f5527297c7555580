//! Git history through gix: log, blame and diff
//! on real repositories built with `git` in temporary directories, checked
//! against exact answers and against git's own output; awkward
//! repositories (empty, detached, shallow, not a repository) and refused
//! arguments.

use crate::common;

use common::git_repo::{GitRepo, git_in};
use xfile::git::{FileStatus, GitError, LogQuery, Repo, WalkBounds};

const MODELS: &str =
    "class User:\n    def save(self):\n        return 1\n\n\ndef helper():\n    return 2\n";

/// Six commits: two on main, a feature branch merged with --no-ff, a
/// change on main before the merge, and a rename with an edit last.
fn history() -> GitRepo {
    let repo = GitRepo::init();
    repo.write("app/models.py", MODELS);
    repo.write("README.md", "hello\n");
    repo.commit("Ann", 1, "Add models");
    repo.write("app/models.py", &MODELS.replace("return 1", "return 10"));
    repo.commit("Bob", 2, "Tune save");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("app/utils.py", "def util():\n    return 3\n");
    repo.commit("Cid", 3, "Add utils");
    repo.git(&["checkout", "-q", "main"]);
    repo.write(
        "app/models.py",
        &MODELS
            .replace("return 1", "return 10")
            .replace("return 2", "return 20"),
    );
    repo.commit("Bob", 4, "Tweak helper");
    repo.git_at(
        "2024-01-05T10:00:00+00:00",
        &["merge", "-q", "--no-ff", "feature", "-m", "Merge feature"],
    );
    repo.git(&["mv", "app/models.py", "app/core.py"]);
    let moved = std::fs::read_to_string(repo.path().join("app/core.py")).unwrap();
    repo.write("app/core.py", &(moved + "\n\ndef extra():\n    return 4\n"));
    repo.commit("Ann", 6, "Move models to core");
    repo
}

fn summaries(repo: &Repo, query: &LogQuery) -> Vec<String> {
    repo.log(query)
        .expect("log")
        .commits
        .iter()
        .map(|c| c.summary.clone())
        .collect()
}

/// What `git log --format=%s` says, for comparison.
fn git_summaries(repo: &GitRepo, args: &[&str]) -> Vec<String> {
    let mut all = vec!["log", "--format=%s"];
    all.extend_from_slice(args);
    repo.git(&all).lines().map(str::to_string).collect()
}

fn query(limit: usize) -> LogQuery<'static> {
    LogQuery {
        limit,
        ..LogQuery::default()
    }
}

#[test]
fn log_lists_history_with_merges_newest_first_fr_001() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    let log = git.log(&query(10)).unwrap();
    let lines: Vec<String> = log
        .commits
        .iter()
        .map(|c| format!("{} {} {} {}", c.date, c.author, c.merge, c.summary))
        .collect();
    assert_eq!(
        lines,
        [
            "2024-01-06 10:00:00 +0000 Ann false Move models to core",
            "2024-01-05 10:00:00 +0000 Ann true Merge feature",
            "2024-01-04 10:00:00 +0000 Bob false Tweak helper",
            "2024-01-03 10:00:00 +0000 Cid false Add utils",
            "2024-01-02 10:00:00 +0000 Bob false Tune save",
            "2024-01-01 10:00:00 +0000 Ann false Add models",
        ]
    );
    assert_eq!(log.commits[0].id, repo.rev("HEAD"));
    assert_eq!(log.commits[0].email, "ann@example.com");
    assert!(!log.more);
    assert_eq!(log.head, xfile::git::HeadState::Branch("main".to_string()));
    // The limit cuts, and says more match.
    let two = git.log(&query(2)).unwrap();
    assert_eq!(two.commits.len(), 2);
    assert!(two.more);
}

#[test]
fn log_of_a_path_lists_the_commits_that_changed_it_as_git_does_fr_001() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    let of = |path: &'static str| {
        summaries(
            &git,
            &LogQuery {
                path: Some(path),
                ..query(10)
            },
        )
    };
    // A path that a rename deleted keeps its history; the merge, which
    // took main's version unchanged, did not change it.
    assert_eq!(
        of("app/models.py"),
        [
            "Move models to core",
            "Tweak helper",
            "Tune save",
            "Add models"
        ]
    );
    // The new name starts at the rename (git log without --follow).
    assert_eq!(of("app/core.py"), ["Move models to core"]);
    // A file from the merged branch: its own commit, not the merge.
    assert_eq!(of("app/utils.py"), ["Add utils"]);
    // A directory: the merge changed it, unlike either parent.
    assert_eq!(of("app").len(), 6);
    // The root itself, named: the whole history.
    assert_eq!(of(".").len(), 6);
    for path in [
        "app/models.py",
        "app/core.py",
        "app/utils.py",
        "app",
        "README.md",
    ] {
        assert_eq!(of(path), git_summaries(&repo, &["--", path]), "{path}");
    }
}

#[test]
fn log_filters_by_author_and_dates_fr_001() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    let by_bob = LogQuery {
        author: Some("BOB@"),
        ..query(10)
    };
    assert_eq!(summaries(&git, &by_bob), ["Tweak helper", "Tune save"]);
    let window = LogQuery {
        since: Some("2024-01-02"),
        until: Some("2024-01-04 12:00:00 +0000"),
        ..query(10)
    };
    assert_eq!(
        summaries(&git, &window),
        ["Tweak helper", "Add utils", "Tune save"]
    );
    let bad = LogQuery {
        since: Some("yesterdayish"),
        ..query(10)
    };
    assert!(matches!(git.log(&bad), Err(GitError::InvalidDate(_))));
}

/// `git blame --porcelain`'s commit for each line, for comparison.
fn git_blame(repo: &GitRepo, path: &str) -> Vec<String> {
    let porcelain = repo.git(&["blame", "--porcelain", path]);
    let mut commits = Vec::new();
    for line in porcelain.lines() {
        let mut words = line.split(' ');
        if let (Some(id), Some(_), Some(_)) = (words.next(), words.next(), words.next())
            && id.len() == 40
            && id.bytes().all(|b| b.is_ascii_hexdigit())
        {
            commits.push(id.to_string());
        }
    }
    commits
}

#[test]
fn blame_follows_the_rename_and_agrees_with_git_fr_002() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    let blame = git.blame("app/core.py", None, None).unwrap();
    assert_eq!(blame.lines, 11);
    let ranges: Vec<String> = blame
        .ranges
        .iter()
        .map(|r| {
            let commit = r.commit.as_ref().map_or("-", |c| c.summary.as_str());
            let from = r.source_path.as_deref().unwrap_or("");
            format!("{}-{} {commit} {from}", r.start, r.end)
        })
        .collect();
    assert_eq!(
        ranges,
        [
            "1-2 Add models app/models.py",
            "3-3 Tune save app/models.py",
            "4-6 Add models app/models.py",
            "7-7 Tweak helper app/models.py",
            "8-11 Move models to core ",
        ]
    );
    let mut per_line = Vec::new();
    for range in &blame.ranges {
        for _ in range.start..=range.end {
            per_line.push(range.commit.as_ref().unwrap().id.clone());
        }
    }
    assert_eq!(per_line, git_blame(&repo, "app/core.py"));
    // A range, and lines not committed yet.
    repo.write(
        "app/core.py",
        &std::fs::read_to_string(repo.path().join("app/core.py"))
            .unwrap()
            .replace("return 20", "return 200"),
    );
    let part = git.blame("app/core.py", Some(6), Some(8)).unwrap();
    let shown: Vec<(u32, u32, Option<&str>)> = part
        .ranges
        .iter()
        .map(|r| {
            (
                r.start,
                r.end,
                r.commit.as_ref().map(|c| c.summary.as_str()),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (6, 6, Some("Add models")),
            (7, 7, None),
            (8, 8, Some("Move models to core")),
        ]
    );
    let past = git.blame("app/core.py", Some(40), None);
    assert_eq!(
        past.unwrap_err().to_string(),
        "app/core.py has 11 lines; ask for lines between 1 and 11"
    );
}

#[test]
fn a_cached_blame_answers_as_a_fresh_one_and_follows_the_content_and_head() {
    let repo = history();
    let service = xfile::service::Service::open(&repo.path()).unwrap();
    let fresh = |start, end| {
        let blame = Repo::open(&repo.path())
            .unwrap()
            .blame("app/core.py", start, end)
            .unwrap();
        xfile::service::history::blame_text(&blame, service.answer_token_limit())
    };
    // The whole file first: a range is then cut from it.
    for (start, end) in [
        (None, None),
        (Some(6), Some(8)),
        (Some(3), None),
        (None, None),
    ] {
        assert_eq!(
            service.git_blame("app/core.py", start, end).unwrap(),
            fresh(start, end),
            "{start:?}-{end:?}"
        );
    }
    // An edit in the working tree: line 7 is not committed yet.
    let path = repo.path().join("app/core.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("return 20", "return 200")).unwrap();
    let edited = service.git_blame("app/core.py", Some(6), Some(8)).unwrap();
    assert_eq!(edited, fresh(Some(6), Some(8)));
    assert!(edited.contains("- line 7: not committed yet\n"), "{edited}");
    // Committed: HEAD moved, and so does the answer.
    repo.commit("Eve", 7, "Bigger helper");
    let committed = service.git_blame("app/core.py", Some(7), Some(7)).unwrap();
    assert_eq!(committed, fresh(Some(7), Some(7)));
    assert!(
        committed.contains("Eve <eve@example.com>: Bigger helper"),
        "{committed}"
    );
}

#[test]
fn blames_computed_ahead_answer_as_fresh_ones_and_follow_head() {
    let repo = history();
    let service = xfile::service::Service::open(&repo.path()).unwrap();
    let fresh = |path: &str| {
        let blame = Repo::open(&repo.path())
            .unwrap()
            .blame(path, None, None)
            .unwrap();
        xfile::service::history::blame_text(&blame, service.answer_token_limit())
    };
    // Newest change first; app/models.py, gone from the work tree since
    // the rename, cannot be blamed and is passed over.
    let expected = ["app/core.py", "app/utils.py", "README.md"];
    service.precompute_blames();
    assert_eq!(service.blamed_ahead(), expected);
    for path in expected {
        assert_eq!(service.git_blame(path, None, None).unwrap(), fresh(path));
    }
    // A range is cut from the whole-file blame computed ahead.
    let range = service.git_blame("app/core.py", Some(6), Some(8)).unwrap();
    let cold = Repo::open(&repo.path())
        .unwrap()
        .blame("app/core.py", Some(6), Some(8))
        .unwrap();
    assert_eq!(
        range,
        xfile::service::history::blame_text(&cold, service.answer_token_limit())
    );
    // A new commit moves HEAD: the next git answer starts the blames
    // ahead again, off its own path, for the new HEAD.
    let path = repo.path().join("app/core.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("return 20", "return 200")).unwrap();
    repo.git(&["add", "app/core.py"]);
    repo.commit_staged("Eve", 7, "Bigger helper");
    assert!(service.blamed_ahead().is_empty());
    service.git_log(&query(1)).unwrap();
    let waited = std::time::Instant::now();
    while service.blamed_ahead().len() < expected.len() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(60),
            "no blames ahead for the new HEAD"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(service.blamed_ahead(), expected);
    let after = service.git_blame("app/core.py", None, None).unwrap();
    assert_eq!(after, fresh("app/core.py"));
    assert!(
        after.contains("Eve <eve@example.com>: Bigger helper"),
        "{after}"
    );
}

#[test]
fn change_times_walk_from_head_within_their_bounds() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    // Day N of January 2024 at 10:00 UTC.
    let day = |n: i64| 1_704_067_200 + (n - 1) * 86_400 + 36_000;
    let walk = |since: i64, max_commits: usize| {
        let found = git
            .change_times(&WalkBounds {
                since,
                max_commits,
                deadline: std::time::Duration::from_secs(60),
            })
            .unwrap();
        let mut times: Vec<(String, i64)> = found.times.into_iter().collect();
        times.sort();
        (times, found.complete)
    };
    let text = |times: &[(&str, i64)]| -> Vec<(String, i64)> {
        times.iter().map(|(f, t)| (f.to_string(), *t)).collect()
    };
    // The merge brought app/utils.py to main on day 5; the rename deleted
    // app/models.py and added app/core.py on day 6.
    assert_eq!(
        walk(0, 100),
        (
            text(&[
                ("README.md", day(1)),
                ("app/core.py", day(6)),
                ("app/models.py", day(6)),
                ("app/utils.py", day(5)),
            ]),
            true
        )
    );
    assert_eq!(
        walk(day(5), 100),
        (
            text(&[
                ("app/core.py", day(6)),
                ("app/models.py", day(6)),
                ("app/utils.py", day(5)),
            ]),
            true
        )
    );
    assert_eq!(
        walk(0, 1),
        (
            text(&[("app/core.py", day(6)), ("app/models.py", day(6))]),
            false
        )
    );
}

#[test]
fn diff_between_commits_finds_the_rename_and_counts_lines_fr_003() {
    let repo = history();
    let git = Repo::open(&repo.path()).unwrap();
    let diff = git.diff(Some("HEAD~1"), Some("HEAD"), None).unwrap();
    assert_eq!(diff.files.len(), 1);
    let file = &diff.files[0];
    assert_eq!(file.path, "app/core.py");
    assert_eq!(
        file.status,
        FileStatus::Renamed {
            from: "app/models.py".to_string()
        }
    );
    assert_eq!((file.insertions, file.deletions), (4, 0));
    assert_eq!(file.hunks.len(), 1);
    assert_eq!(file.hunks[0].header, "@@ -5,3 +5,7 @@");
    assert_eq!(
        file.hunks[0].lines,
        " \n def helper():\n     return 20\n+\n+\n+def extra():\n+    return 4\n"
    );
    // Over the merge: what the feature branch brought.
    let merged = git.diff(Some("HEAD~2"), Some("HEAD~1"), None).unwrap();
    let paths: Vec<(&str, &FileStatus)> = merged
        .files
        .iter()
        .map(|f| (f.path.as_str(), &f.status))
        .collect();
    assert_eq!(paths, [("app/utils.py", &FileStatus::Added)]);
}

#[test]
fn diff_of_the_working_tree_against_head_by_default_fr_003() {
    let repo = history();
    repo.write("app/utils.py", "def util():\n    return 30\n");
    std::fs::remove_file(repo.path().join("README.md")).unwrap();
    repo.write("app/staged.py", "x = 1\n");
    repo.git(&["add", "app/staged.py"]);
    // Untracked files are not in a diff, as with `git diff HEAD`.
    repo.write("untracked.py", "y = 2\n");
    let git = Repo::open(&repo.path()).unwrap();
    let diff = git.diff(None, None, None).unwrap();
    assert_eq!(
        (diff.base.as_str(), diff.head.as_str()),
        ("HEAD", "working tree")
    );
    let files: Vec<(&str, &FileStatus, u32, u32)> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), &f.status, f.insertions, f.deletions))
        .collect();
    assert_eq!(
        files,
        [
            ("README.md", &FileStatus::Deleted, 0, 1),
            ("app/staged.py", &FileStatus::Added, 1, 0),
            ("app/utils.py", &FileStatus::Modified, 1, 1),
        ]
    );
    let numstat = repo.git(&["diff", "--numstat", "HEAD"]);
    assert_eq!(
        numstat,
        "0\t1\tREADME.md\n1\t0\tapp/staged.py\n1\t1\tapp/utils.py\n"
    );
    // One path only; and a change made and undone is no change.
    let one = git.diff(None, None, Some("app/utils.py")).unwrap();
    assert_eq!(one.files.len(), 1);
    repo.write("app/utils.py", "def util():\n    return 3\n");
    let undone = git.diff(None, None, Some("app/utils.py")).unwrap();
    assert!(undone.files.is_empty());
}

#[test]
fn binary_files_are_listed_without_lines_fr_003() {
    let repo = GitRepo::init();
    repo.write("logo.png", "\u{0}PNG one");
    repo.commit("Ann", 1, "Add logo");
    repo.write("logo.png", "\u{0}PNG two");
    let diff = Repo::open(&repo.path())
        .unwrap()
        .diff(None, None, None)
        .unwrap();
    assert_eq!(diff.files.len(), 1);
    assert_eq!(diff.files[0].withheld, Some("binary"));
    assert!(diff.files[0].hunks.is_empty());
    let text = xfile::service::history::diff_text(&diff, 2000);
    assert!(text.contains("- modified logo.png (binary)"), "{text}");
    let blame = Repo::open(&repo.path())
        .unwrap()
        .blame("logo.png", None, None);
    assert!(
        blame
            .unwrap_err()
            .to_string()
            .contains("it is a binary file")
    );
}

#[test]
fn a_huge_diff_is_cut_to_the_budget_and_says_how_to_see_the_rest_fr_003() {
    let repo = GitRepo::init();
    for i in 0..30 {
        let body: String = (0..200).map(|n| format!("line_{n} = {i}\n")).collect();
        repo.write(&format!("m{i:02}.py"), &body);
    }
    repo.commit("Ann", 1, "Many files");
    for i in 0..30 {
        let body: String = (0..200)
            .map(|n| format!("line_{n} = {}\n", i + n))
            .collect();
        repo.write(&format!("m{i:02}.py"), &body);
    }
    let root = repo.path();
    let text = xfile::service::history::diff(&root, 1000, None, None, None).unwrap();
    let tokens = xfile::service::context::count_tokens(&text);
    assert!(tokens <= 1000, "{tokens} tokens");
    assert!(
        text.starts_with("## git diff HEAD -> working tree\n\n30 files changed"),
        "{text}"
    );
    assert!(text.contains("- modified m29.py (+199 -199)"), "{text}");
    assert!(text.contains("ask with path: "), "{text}");
    // Fences open and close in pairs.
    assert_eq!(text.matches("```").count() % 2, 0, "{text}");
    // One file asked alone: its first hunk, cut, fence closed.
    let one = xfile::service::history::diff(&root, 300, None, None, Some("m03.py")).unwrap();
    assert!(xfile::service::context::count_tokens(&one) <= 300, "{one}");
    assert!(one.contains("```diff\n@@ -1,200 +1,200 @@\n"), "{one}");
    assert_eq!(one.matches("```").count() % 2, 0, "{one}");
}

#[test]
fn a_detached_head_is_said_and_logged_from_fr_004() {
    let repo = history();
    repo.git(&["checkout", "-q", "--detach", "HEAD~2"]);
    let git = Repo::open(&repo.path()).unwrap();
    let log = git.log(&query(2)).unwrap();
    let short = repo.rev("HEAD")[..10].to_string();
    assert_eq!(log.head, xfile::git::HeadState::Detached(short.clone()));
    assert_eq!(log.commits[0].summary, "Tweak helper");
    let text = xfile::service::history::log_text(&log, 2000);
    assert!(
        text.starts_with(&format!("## git log . (detached HEAD at {short})\n")),
        "{text}"
    );
    assert!(git.blame("app/models.py", None, None).is_ok());
}

#[test]
fn an_empty_repository_says_it_has_no_commits_fr_004() {
    let repo = GitRepo::init();
    repo.write("a.py", "x = 1\n");
    let git = Repo::open(&repo.path()).unwrap();
    let message = "the repository has no commits yet; commit once, then ask again";
    assert_eq!(git.log(&query(10)).unwrap_err().to_string(), message);
    assert_eq!(
        git.blame("a.py", None, None).unwrap_err().to_string(),
        message
    );
    assert_eq!(git.diff(None, None, None).unwrap_err().to_string(), message);
}

#[test]
fn a_directory_outside_any_repository_is_not_a_git_repository_fr_004() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let error = Repo::open(&root).err().expect("not a repository");
    assert_eq!(error.code(), "not_a_git_repository");
    assert!(
        error.to_string().starts_with("Not a git repository"),
        "{error}"
    );
    let text = xfile::service::history::log(&root, 1000, &query(10)).unwrap_err();
    assert!(text.to_string().contains("run `git init` there"));
}

#[test]
fn a_shallow_clone_answers_and_says_history_is_cut_fr_004() {
    let origin = history();
    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", origin.path().display());
    git_in(
        clone.path(),
        &["clone", "-q", "--depth", "2", &url, "shallow"],
    );
    let root = clone.path().join("shallow").canonicalize().unwrap();
    let git = Repo::open(&root).unwrap();
    let log = git.log(&query(10)).unwrap();
    assert!(log.shallow);
    let summaries: Vec<&str> = log.commits.iter().map(|c| c.summary.as_str()).collect();
    // HEAD, the merge, and the merge's two parents at depth 2.
    assert_eq!(
        summaries,
        git_in(&root, &["log", "--format=%s"])
            .lines()
            .collect::<Vec<_>>()
    );
    let path_log = git
        .log(&LogQuery {
            path: Some("app/core.py"),
            ..query(10)
        })
        .unwrap();
    assert_eq!(path_log.commits.len(), 1);
    let blame = git.blame("app/core.py", None, None).unwrap();
    assert!(blame.shallow);
    assert_eq!(blame.ranges.last().unwrap().end, 11);
    let text = xfile::service::history::log_text(&log, 2000);
    assert!(text.contains("shallow clone"), "{text}");
}

#[test]
fn a_root_below_the_work_tree_sees_its_own_paths_and_history() {
    let repo = GitRepo::init();
    repo.write("sub/pkg/a.py", "x = 1\n");
    repo.commit("Ann", 1, "Add a");
    repo.write("other.py", "y = 1\n");
    repo.commit("Ann", 2, "Add other");
    let root = repo.path().join("sub");
    let git = Repo::open(&root).unwrap();
    assert_eq!(summaries(&git, &query(10)), ["Add a"]);
    repo.write("sub/pkg/a.py", "x = 2\n");
    repo.write("other.py", "y = 2\n");
    let diff = git.diff(None, None, None).unwrap();
    let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["pkg/a.py"]);
    assert_eq!(git.blame("pkg/a.py", None, None).unwrap().ranges.len(), 1);
    // The work tree's other files are outside this root.
    assert!(matches!(
        git.blame("../other.py", None, None),
        Err(GitError::OutsideRoot(..))
    ));
}

mod injection_fr_005 {
    use super::*;

    fn refused_revision(revision: &str) {
        let repo = history();
        let git = Repo::open(&repo.path()).unwrap();
        for error in [
            git.diff(Some(revision), None, None).unwrap_err(),
            git.diff(None, Some(revision), None).unwrap_err(),
        ] {
            assert_eq!(error.code(), "invalid_revision", "{revision}: {error}");
            assert!(error.to_string().contains("give a branch or tag name"));
        }
        // Nothing ran: no file appeared anywhere in the work tree.
        assert_eq!(repo.git(&["status", "--porcelain", "--ignored"]), "");
    }

    #[test]
    fn an_output_option_is_not_a_revision() {
        refused_revision("--output=/tmp/xfile-pwned");
    }

    #[test]
    fn a_config_option_is_not_a_revision() {
        refused_revision("-c");
    }

    #[test]
    fn a_command_separator_is_not_a_revision() {
        refused_revision(";rm -rf .");
    }

    #[test]
    fn a_command_substitution_is_not_a_revision() {
        refused_revision("$(touch pwned)");
    }

    #[test]
    fn option_like_paths_are_refused() {
        let repo = history();
        let git = Repo::open(&repo.path()).unwrap();
        for path in ["--output=x", "-c", ":(top)app"] {
            let error = git.diff(None, None, Some(path)).unwrap_err();
            assert_eq!(error.code(), "invalid_parameter", "{path}: {error}");
            let error = git.blame(path, None, None).unwrap_err();
            assert_eq!(error.code(), "invalid_parameter", "{path}: {error}");
        }
    }

    #[test]
    fn paths_outside_the_root_are_refused() {
        let repo = history();
        let git = Repo::open(&repo.path().join("app")).unwrap();
        let outside = repo.path().join("README.md");
        for path in ["../README.md", "/etc/passwd", outside.to_str().unwrap()] {
            let log = git.log(&LogQuery {
                path: Some(path),
                ..query(10)
            });
            assert_eq!(log.unwrap_err().code(), "outside_root", "{path}");
            assert_eq!(
                git.blame(path, None, None).unwrap_err().code(),
                "outside_root",
                "{path}"
            );
            assert_eq!(
                git.diff(None, None, Some(path)).unwrap_err().code(),
                "outside_root",
                "{path}"
            );
        }
        // A link inside the root that leads out of it.
        std::os::unix::fs::symlink(&outside, repo.path().join("app/link.md")).unwrap();
        assert_eq!(
            git.blame("link.md", None, None).unwrap_err().code(),
            "outside_root"
        );
    }
}

mod cli {
    use super::*;
    use std::process::Command;

    fn xfile(root: &std::path::Path, args: &[&str]) -> (i32, String, String) {
        let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(args)
            .arg("--root")
            .arg(root)
            .output()
            .expect("xfile runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    #[test]
    fn git_subcommands_print_markdown_or_json() {
        let repo = history();
        let root = repo.path();
        let (status, out, err) = xfile(&root, &["git", "log", "app/core.py"]);
        assert_eq!(status, 0, "{err}");
        let id = &repo.rev("HEAD")[..10];
        assert_eq!(
            out,
            format!(
                "## git log app/core.py (on branch main)\n\n- `{id}` 2024-01-06 10:00:00 +0000 Ann <ann@example.com>: Move models to core\n"
            )
        );
        let (status, out, _) = xfile(&root, &["git", "blame", "app/core.py", "--json"]);
        assert_eq!(status, 0);
        let blame: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(blame["lines"], 11);
        let (status, out, _) = xfile(
            &root,
            &["git", "diff", "--base", "HEAD~1", "--head", "HEAD"],
        );
        assert_eq!(status, 0);
        assert!(
            out.starts_with("## git diff HEAD~1 -> HEAD\n\n1 files changed, 4 insertions(+), 0 deletions(-)\n\n- renamed app/models.py -> app/core.py (+4 -0)\n"),
            "{out}"
        );
    }

    #[test]
    fn refused_arguments_and_missing_repositories_exit_with_status_2() {
        let repo = history();
        let (status, _, err) = xfile(&repo.path(), &["git", "diff", "--base=--output=/tmp/x"]);
        assert_eq!(status, 2);
        assert!(err.contains("is not a revision xfile accepts"), "{err}");
        let (status, _, err) = xfile(&repo.path(), &["impact", "--base", "$(id)"]);
        assert_eq!(status, 2, "{err}");
        let plain = tempfile::tempdir().unwrap();
        let (status, _, err) = xfile(plain.path(), &["git", "log"]);
        assert_eq!(status, 2);
        assert!(err.starts_with("xfile: Not a git repository"), "{err}");
    }
}
