//! A hostile repository against the git layer: programs its configuration
//! names, a `.git` that leads to another repository, secrets the sensitive
//! list missed, a file too large to blame. Real repositories built with
//! `git` at test time.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::git_repo::{GitRepo, git_in};
use common::mcp_client::Client;
use serde_json::json;
use xfile::git::{GitError, Repo};

/// `xfile ARGS --root ROOT`: (status, stdout, stderr).
fn xfile(root: &Path, args: &[&str]) -> (i32, String, String) {
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

fn open_error(root: &Path) -> GitError {
    match Repo::open(root) {
        Ok(_) => panic!("{} opened", root.display()),
        Err(error) => error,
    }
}

const MODELS: &str =
    "class User:\n    def save(self):\n        return 1\n\n\ndef helper():\n    return 2\n";
const SERVICE: &str = "from app.models import helper\n\n\ndef run():\n    return helper()\n";

mod programs_f2 {
    use super::*;

    /// A committed project whose configuration then names a program at
    /// every place git would run one: clean, smudge and process filters
    /// for its files, a textconv driver, `core.fsmonitor` and hooks. Each
    /// program leaves a file in the returned directory (outside the
    /// repository) when it runs. The working tree has a change and a file
    /// touched without one (git hashes it through the clean filter).
    fn armed() -> (GitRepo, tempfile::TempDir) {
        let repo = GitRepo::init();
        repo.write("app/__init__.py", "");
        repo.write("app/models.py", MODELS);
        repo.write("app/service.py", SERVICE);
        repo.write("notes.txt", "notes\n");
        repo.write(
            ".gitattributes",
            "*.py filter=evil diff=evil\n*.txt filter=proc\n",
        );
        repo.commit("Ann", 1, "Project");
        repo.write("app/models.py", &MODELS.replace("return 2", "return 3"));
        repo.commit("Ann", 2, "Tune helper");
        let marks = tempfile::tempdir().expect("tempdir");
        let mark = |name: &str| format!("touch {}/{name}", marks.path().display());
        let script = marks.path().join("program.sh");
        std::fs::write(&script, format!("#!/bin/sh\n{}\ncat\n", mark("script"))).unwrap();
        let hook = format!("#!/bin/sh\n{}\n", mark("hook"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        for name in [
            "post-index-change",
            "post-checkout",
            "reference-transaction",
        ] {
            let path = repo.path().join(".git/hooks").join(name);
            std::fs::write(&path, &hook).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        for (key, value) in [
            ("filter.evil.clean", format!("{}; cat", mark("clean"))),
            ("filter.evil.smudge", format!("{}; cat", mark("smudge"))),
            ("filter.evil.required", "true".to_string()),
            ("filter.proc.process", mark("process")),
            ("diff.evil.textconv", format!("{}; cat", mark("textconv"))),
            ("diff.evil.command", mark("command")),
            ("core.fsmonitor", script.display().to_string()),
        ] {
            repo.git(&["config", key, &value]);
        }
        // From here on no git command runs in the repository: git itself
        // would start these programs.
        repo.write("app/models.py", &MODELS.replace("return 2", "return 4"));
        repo.write("notes.txt", "notes, more\n");
        let service = repo.path().join("app/service.py");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&service)
            .and_then(|f| f.set_modified(later))
            .unwrap();
        (repo, marks)
    }

    /// What ran: the marks left, the script itself aside.
    fn ran(marks: &Path) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(marks)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "program.sh")
            .collect();
        found.sort();
        found
    }

    #[test]
    fn filters_textconv_fsmonitor_and_hooks_never_run_issue_39_f2() {
        let (repo, marks) = armed();
        let root = repo.path();
        let (status, out, err) = xfile(&root, &["git", "diff"]);
        assert_eq!(status, 0, "{err}");
        // Compared raw: the change shows as it is on disk.
        assert!(out.contains("modified app/models.py"), "{out}");
        assert!(out.contains("+    return 4"), "{out}");
        assert!(out.contains("modified notes.txt"), "{out}");
        assert!(!out.contains("app/service.py"), "{out}");
        assert_eq!(ran(marks.path()), Vec::<String>::new(), "git diff");
        let (status, out, err) = xfile(
            &root,
            &["git", "diff", "--base", "HEAD~1", "--head", "HEAD"],
        );
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("+    return 3"), "{out}");
        assert_eq!(
            ran(marks.path()),
            Vec::<String>::new(),
            "git diff of commits"
        );
        let (status, out, err) = xfile(&root, &["git", "log", "app/models.py"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("Tune helper"), "{out}");
        assert_eq!(ran(marks.path()), Vec::<String>::new(), "git log");
        let (status, out, err) = xfile(&root, &["git", "blame", "app/models.py"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("line 7: not committed yet"), "{out}");
        assert!(out.contains("lines 1-6: "), "{out}");
        assert_eq!(ran(marks.path()), Vec::<String>::new(), "git blame");
        let (status, out, err) = xfile(&root, &["impact"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("app/models.py::helper (modified"), "{out}");
        assert!(out.contains("app/service.py::run"), "{out}");
        assert_eq!(ran(marks.path()), Vec::<String>::new(), "impact");
        let mut client = Client::start(&root);
        let (is_error, text) = client.call("impact", json!({}));
        assert!(!is_error, "{text}");
        assert!(text.contains("app/models.py::helper"), "{text}");
        let (is_error, text) = client.call("git_diff", json!({}));
        assert!(!is_error, "{text}");
        assert!(text.contains("+    return 4"), "{text}");
        let (is_error, text) = client.call("git_blame", json!({"file_path": "app/models.py"}));
        assert!(!is_error, "{text}");
        drop(client);
        assert_eq!(ran(marks.path()), Vec::<String>::new(), "MCP");
    }
}

mod outside_the_root_f5 {
    use super::*;

    /// `mono`, a repository with a secret committed, beside an empty
    /// directory `root` that holds one Python file.
    fn mono_and_root() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().unwrap();
        let mono = base.join("mono");
        std::fs::create_dir_all(mono.join("app")).unwrap();
        git_in(&mono, &["init", "-q", "-b", "main"]);
        std::fs::write(mono.join("app/keys.py"), "TOKEN = 'mono-secret-4711'\n").unwrap();
        git_in(&mono, &["add", "-A"]);
        git_in(&mono, &["commit", "-q", "-m", "Mono"]);
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        (dir, mono, root)
    }

    /// Every way in refuses, and says why; nothing of `mono` is shown.
    fn refused_everywhere(root: &Path, why: &str) {
        let error = open_error(root);
        assert_eq!(error.code(), "git_outside_root", "{error}");
        let message = error.to_string();
        assert!(message.contains(why), "{message}");
        assert!(
            message.contains("xfile reads git only inside the root"),
            "{message}"
        );
        for args in [
            &["git", "diff"][..],
            &["git", "log"],
            &["git", "blame", "a.py"],
            &["impact"],
        ] {
            let (status, out, err) = xfile(root, args);
            assert_eq!(status, 2, "{args:?}: {out}{err}");
            assert!(
                err.contains("reads git only inside the root"),
                "{args:?}: {err}"
            );
            assert!(!out.contains("mono-secret") && !err.contains("mono-secret"));
            assert!(!out.contains("keys.py"), "{args:?}: {out}");
        }
        let mut client = Client::start(root);
        for tool in ["impact", "git_diff"] {
            let (is_error, text) = client.call(tool, json!({}));
            assert!(is_error, "{tool}: {text}");
            assert!(
                text.contains("reads git only inside the root"),
                "{tool}: {text}"
            );
            assert!(
                !text.contains("mono-secret") && !text.contains("keys.py"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_dot_git_file_naming_another_repository_is_refused_issue_39_f5() {
        let (_dir, _mono, root) = mono_and_root();
        std::fs::write(root.join(".git"), "gitdir: ../mono/.git\n").unwrap();
        refused_everywhere(&root, "gitdir: ../mono/.git");
    }

    #[test]
    fn a_dot_git_link_to_another_repository_is_refused_issue_39_f5() {
        let (_dir, mono, root) = mono_and_root();
        std::os::unix::fs::symlink(mono.join(".git"), root.join(".git")).unwrap();
        refused_everywhere(&root, "a link to");
    }

    #[test]
    fn a_dot_git_sharing_another_repository_is_refused_issue_39_f5() {
        let (_dir, _mono, root) = mono_and_root();
        // A git directory of the root's own in appearance, whose objects,
        // refs and configuration are `mono`'s (as a linked worktree's are
        // its main repository's).
        let dot_git = root.join(".git");
        std::fs::create_dir_all(&dot_git).unwrap();
        std::fs::write(dot_git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(dot_git.join("commondir"), "../../mono/.git\n").unwrap();
        for dir in ["objects", "refs"] {
            std::fs::create_dir_all(dot_git.join(dir)).unwrap();
        }
        refused_everywhere(&root, "commondir");
    }

    #[test]
    fn core_worktree_outside_the_root_is_refused_issue_39_f5() {
        let (_dir, mono, root) = mono_and_root();
        git_in(&root, &["init", "-q", "-b", "main"]);
        git_in(&root, &["config", "core.worktree", mono.to_str().unwrap()]);
        refused_everywhere(&root, "core.worktree");
        // Pointing at the root's parent (relative to the git directory),
        // the root is a part of that work tree: refused too (git would
        // read the whole parent).
        git_in(&root, &["config", "core.worktree", "../.."]);
        let error = open_error(&root);
        assert_eq!(error.code(), "git_outside_root", "{error}");
    }

    #[test]
    fn a_separate_git_dir_is_read_once_it_names_the_root_issue_39_f5() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let store = base.join("store.git");
        git_in(
            &base,
            &[
                "init",
                "-q",
                "-b",
                "main",
                "--separate-git-dir",
                store.to_str().unwrap(),
                "root",
            ],
        );
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        git_in(&root, &["add", "-A"]);
        git_in(&root, &["commit", "-q", "-m", "First"]);
        let error = open_error(&root);
        assert_eq!(error.code(), "git_outside_root", "{error}");
        assert!(
            error.to_string().contains("git config core.worktree"),
            "{error}"
        );
        git_in(&root, &["config", "core.worktree", root.to_str().unwrap()]);
        let repo = Repo::open(&root).expect("named as its work tree");
        std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
        let diff = repo.diff(None, None, None).unwrap();
        let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.py"]);
    }

    #[test]
    fn a_linked_worktree_shows_only_its_own_files_issue_39_f5() {
        let repo = GitRepo::init();
        repo.write("app/a.py", "x = 1\n");
        repo.write("app/b.py", "y = 1\n");
        repo.commit("Ann", 1, "First");
        let wt_dir = tempfile::tempdir().unwrap();
        let wt = wt_dir.path().canonicalize().unwrap().join("wt");
        repo.git(&["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()]);
        // The main checkout's own change is not the worktree's.
        repo.write("app/b.py", "y = 2\n");
        std::fs::write(wt.join("app/a.py"), "x = 3\n").unwrap();
        let git = Repo::open(&wt).expect("a linked worktree is read");
        let diff = git.diff(None, None, None).unwrap();
        let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["app/a.py"]);
        let (status, out, err) = xfile(&wt, &["git", "diff"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("+x = 3") && !out.contains("y = 2"), "{out}");
        // Another directory that claims that worktree's git directory is
        // not the worktree it names.
        let (_dir, _mono, root) = mono_and_root();
        let claimed = repo.path().join(".git/worktrees/wt");
        assert!(claimed.is_dir());
        std::fs::write(
            root.join(".git"),
            format!("gitdir: {}\n", claimed.display()),
        )
        .unwrap();
        let error = open_error(&root);
        assert_eq!(error.code(), "git_outside_root", "{error}");
    }

    #[test]
    fn a_submodule_is_read_as_its_own_repository_issue_39_f5() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let sub = base.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        git_in(&sub, &["init", "-q", "-b", "main"]);
        std::fs::write(sub.join("s.py"), "s = 1\n").unwrap();
        git_in(&sub, &["add", "-A"]);
        git_in(&sub, &["commit", "-q", "-m", "Sub"]);
        let sup = base.join("super");
        std::fs::create_dir_all(&sup).unwrap();
        git_in(&sup, &["init", "-q", "-b", "main"]);
        std::fs::write(sup.join("top.py"), "t = 1\n").unwrap();
        git_in(
            &sup,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                sub.to_str().unwrap(),
                "sub",
            ],
        );
        git_in(&sup, &["commit", "-q", "-am", "Super"]);
        let root = sup.join("sub");
        assert!(root.join(".git").is_file());
        std::fs::write(root.join("s.py"), "s = 2\n").unwrap();
        std::fs::write(sup.join("top.py"), "t = 2\n").unwrap();
        let git = Repo::open(&root).expect("a submodule is read");
        let diff = git.diff(None, None, None).unwrap();
        let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["s.py"]);
    }

    #[test]
    fn a_directory_swapped_for_a_link_out_of_the_root_is_not_read_issue_39_f5() {
        let repo = GitRepo::init();
        repo.write("lib/util.py", "u = 1\n");
        repo.write("app/a.py", "a = 1\n");
        repo.commit("Ann", 1, "First");
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("util.py"), "u = 'OUTSIDE-SECRET'\n").unwrap();
        std::fs::remove_dir_all(repo.path().join("lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), repo.path().join("lib")).unwrap();
        let (status, out, err) = xfile(&repo.path(), &["git", "diff"]);
        assert_eq!(status, 0, "{err}");
        assert!(!out.contains("OUTSIDE-SECRET"), "{out}");
        let (_, out, _) = xfile(&repo.path(), &["git", "diff", "--json"]);
        assert!(!out.contains("OUTSIDE-SECRET"), "{out}");
    }

    #[test]
    fn a_root_below_the_work_tree_still_reads_its_own_part_issue_39_f5() {
        let repo = GitRepo::init();
        repo.write("sub/pkg/a.py", "x = 1\n");
        repo.write("other/b.py", "y = 1\n");
        repo.commit("Ann", 1, "First");
        // A rename into the root from outside it: an addition here, and
        // nothing of the file's former content outside the root is read.
        repo.git(&["mv", "other/b.py", "sub/pkg/b.py"]);
        repo.write("sub/pkg/a.py", "x = 2\n");
        repo.write("other/c.py", "secret_outside = 1\n");
        repo.commit("Ann", 2, "Move b in");
        let root = repo.path().join("sub");
        let git = Repo::open(&root).unwrap();
        let diff = git.diff(Some("HEAD~1"), Some("HEAD"), None).unwrap();
        let files: Vec<String> = diff
            .files
            .iter()
            .map(|f| format!("{} {:?}", f.path, f.status))
            .collect();
        assert_eq!(files, ["pkg/a.py Modified", "pkg/b.py Added"]);
        repo.write("sub/pkg/a.py", "x = 3\n");
        repo.write("other/c.py", "secret_outside = 2\n");
        let diff = git.diff(None, None, None).unwrap();
        let paths: Vec<&str> = diff.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["pkg/a.py"]);
    }
}

mod secrets_f12 {
    use super::*;

    /// A private key of several lines, one of them `tag`.
    fn key(tag: &str) -> String {
        let mut lines = vec!["-----BEGIN OPENSSH PRIVATE KEY-----".to_string()];
        lines.extend((0..8).map(|i| format!("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ{i}")));
        lines.push(tag.to_string());
        lines.push("-----END OPENSSH PRIVATE KEY-----\n".to_string());
        lines.join("\n")
    }

    #[test]
    fn git_answers_never_show_what_the_list_missed_issue_39_f12() {
        let repo = GitRepo::init();
        let secrets = [
            (".pypirc", "[pypi]\npassword = pypi-SECRET-1\n".to_string()),
            (
                ".npmrc",
                "//registry.npmjs.org/:_authToken=SECRET-2\n".to_string(),
            ),
            (".ENV", "API_KEY=SECRET-3\n".to_string()),
            (
                "deploy/.aws/credentials",
                "aws_secret_access_key = SECRET-4\n".to_string(),
            ),
            ("deploy/.kube/config", "token: SECRET-5\n".to_string()),
            ("keys/id_ed25519", key("SECRET-6")),
            ("app/.Env.local", "SECRET-7\n".to_string()),
        ];
        for (path, text) in &secrets {
            repo.write(path, text);
        }
        repo.write("app/__init__.py", "");
        repo.write("app/models.py", MODELS);
        repo.commit("Ann", 1, "Project");
        for (path, text) in &secrets {
            repo.write(path, &text.replace("SECRET", "SECRET-NEW"));
        }
        repo.write("app/models.py", &MODELS.replace("return 2", "return 3"));
        let root = repo.path();
        let (status, out, err) = xfile(&root, &["git", "diff"]);
        assert_eq!(status, 0, "{err}");
        assert!(!out.contains("SECRET-"), "{out}");
        for (path, _) in &secrets {
            assert!(out.contains(&format!("modified {path}")), "{path}: {out}");
        }
        assert!(out.contains("may hold secrets"), "{out}");
        assert!(out.contains("+    return 3"), "{out}");
        let (_, json, _) = xfile(&root, &["git", "diff", "--json"]);
        assert!(!json.contains("SECRET-"), "{json}");
        // A secret renamed to an innocent name (and changed) keeps its
        // secrecy where the diff sees the rename.
        repo.git(&["mv", "keys/id_ed25519", "keys/deploy.txt"]);
        repo.commit("Ann", 2, "Rotate");
        let (status, out, err) = xfile(
            &root,
            &["git", "diff", "--base", "HEAD~1", "--head", "HEAD"],
        );
        assert_eq!(status, 0, "{err}");
        assert!(!out.contains("SECRET-"), "{out}");
        assert!(
            out.contains("renamed keys/id_ed25519 -> keys/deploy.txt"),
            "{out}"
        );
        for path in [".pypirc", ".npmrc", ".ENV", "deploy/.aws/credentials"] {
            let (status, _, err) = xfile(&root, &["git", "blame", path]);
            assert_eq!(status, 2, "{path}");
            assert!(err.contains("may hold secrets"), "{path}: {err}");
        }
        let mut client = Client::start(&root);
        let (is_error, text) = client.call("git_diff", json!({"base": "HEAD~1", "head": "HEAD"}));
        assert!(!is_error, "{text}");
        assert!(
            !text.contains("SECRET-") && text.contains(".npmrc"),
            "{text}"
        );
        let (is_error, text) = client.call("git_blame", json!({"file_path": ".npmrc"}));
        assert!(is_error && text.contains("may hold secrets"), "{text}");
        let (is_error, text) = client.call("read_with_context", json!({"file_path": ".ENV"}));
        assert!(is_error && !text.contains("SECRET"), "{text}");
    }

    #[test]
    fn impact_lists_a_sensitive_python_file_without_reading_it_issue_39_f12() {
        let repo = GitRepo::init();
        repo.write("app/__init__.py", "");
        repo.write(
            "app/credentials.py",
            "TOKEN = 'SECRET-9'\n\n\ndef token():\n    return TOKEN\n",
        );
        repo.write("app/models.py", MODELS);
        repo.commit("Ann", 1, "Project");
        repo.write(
            "app/credentials.py",
            "TOKEN = 'SECRET-10'\n\n\ndef token():\n    return TOKEN\n",
        );
        repo.write("app/models.py", &MODELS.replace("return 2", "return 3"));
        let (status, out, err) = xfile(&repo.path(), &["impact"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("2 files changed"), "{out}");
        assert!(out.contains("app/models.py::helper"), "{out}");
        assert!(
            !out.contains("credentials.py::") && !out.contains("SECRET"),
            "{out}"
        );
    }
}

mod size_f13 {
    use super::*;

    /// Lines enough to pass the 4 MiB limit of the git tools.
    fn huge(tag: &str) -> String {
        (0..120_000)
            .map(|i| format!("{tag}_{i:06} = 'padding padding padding'\n"))
            .collect()
    }

    #[test]
    fn blame_refuses_a_file_over_the_diff_limit_issue_39_f13() {
        let repo = GitRepo::init();
        repo.write("big.py", &huge("v"));
        repo.write("small.py", "x = 1\n");
        repo.commit("Ann", 1, "Big");
        let root = repo.path();
        let git = Repo::open(&root).unwrap();
        let error = git.blame("big.py", Some(7), Some(8)).unwrap_err();
        assert_eq!(error.code(), "file_too_large", "{error}");
        assert!(error.to_string().contains("4194304-byte limit"), "{error}");
        let (status, _, err) = xfile(
            &root,
            &[
                "git",
                "blame",
                "big.py",
                "--start-line",
                "7",
                "--end-line",
                "8",
            ],
        );
        assert_eq!(status, 2, "{err}");
        assert!(err.contains("4194304-byte limit"), "{err}");
        let mut client = Client::start(&root);
        let (is_error, text) = client.call(
            "git_blame",
            json!({"file_path": "big.py", "start_line": 7, "end_line": 8}),
        );
        assert!(is_error && text.contains("4194304-byte limit"), "{text}");
        let (is_error, text) = client.call("git_blame", json!({"file_path": "small.py"}));
        assert!(!is_error, "{text}");
    }

    #[test]
    fn blame_takes_a_huge_old_version_for_binary_as_git_would_answer_issue_39_f13() {
        let repo = GitRepo::init();
        repo.write("mod.py", "a = 1\nb = 2\n");
        repo.commit("Ann", 1, "Small");
        repo.write("mod.py", &huge("w"));
        repo.commit("Bob", 2, "Huge");
        repo.write("mod.py", "c = 3\nd = 4\n");
        repo.commit("Cid", 3, "Small again");
        let root = repo.path();
        let blame = Repo::open(&root)
            .unwrap()
            .blame("mod.py", None, None)
            .unwrap();
        let ids = common::git_repo::blame_lines(&blame);
        let git: Vec<String> = common::git_repo::git_blame_ids(&root, "mod.py");
        let ours: Vec<String> = ids.into_iter().map(|(id, _)| id).collect();
        assert_eq!(ours, git);
        // Through the kept blames and the history index, the same.
        let (status, out, err) = xfile(&root, &["git", "blame", "mod.py"]);
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("Small again"), "{out}");
    }
}
