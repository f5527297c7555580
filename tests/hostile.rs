//! A hostile repository: sensitive files behind in-root links, links in
//! place of xfile's own logs, FIFOs and sockets in place of every file
//! xfile reads, skips that say why, and outside paths that tell nothing
//! about the outside. Symlinks, FIFOs and
//! sockets cannot live in git, so every tree here is built at test time.

#![cfg(unix)]

use crate::common;
use common::write;

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use xfile::engine::datalog::RELATIONS;
use xfile::service::Service;
use xfile::service::live::Live;
use xfile::workspace::{self, NoticeKind};

/// What the secret files hold; none of it may come out of xfile.
const SECRETS: &[&str] = &["s3cret-token-value", "SECRET_DOCSTRING", "secret_only_name"];

const SECRET_SOURCE: &str = r#"API_TOKEN = "s3cret-token-value"


def leaked_helper():
    """SECRET_DOCSTRING"""


def secret_only_name():
    return API_TOKEN
"#;

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c_path =
        std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in a temp path");
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(
        unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

/// Runs `f` on a thread of its own and fails the test if it has not
/// finished in 60 s: a hang must fail, not stall the suite.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    common::bounded(Duration::from_secs(60), f).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Everything a client can get out of the index about its files: the
/// read, the injection log, the export (graph, warnings), every relation
/// queried whole and explained.
fn everything_served(service: &Service, read: &str) -> String {
    let mut out = service.read_with_context(read).unwrap_or_default();
    for event in service.recent_injections(None, 100).unwrap_or_default() {
        out.push_str(&format!("{event:?}\n"));
    }
    out.push_str(&serde_json::to_string(&service.export()).unwrap());
    for relation in RELATIONS {
        let pattern = format!(
            "{}({})",
            relation.name,
            vec!["_"; relation.args.len()].join(", ")
        );
        if let Ok(result) = service.query(&pattern) {
            out.push_str(&format!("{result:?}\n"));
        }
        if let Ok(explanation) = service.explain(&pattern) {
            out.push_str(&explanation.to_text());
        }
    }
    out
}

fn assert_no_secret(served: &str) {
    for secret in SECRETS {
        assert!(!served.contains(secret), "`{secret}` leaked:\n{served}");
    }
}

/// A project whose `.py` names link to sensitive files, and a file that
/// imports them.
fn project_with_linked_secrets() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for secret in [".env", "keys/id_rsa", "tls/server.key", "aws_credentials"] {
        write(root, secret, SECRET_SOURCE);
    }
    symlink(root.join(".env"), root.join("settings.py")).unwrap();
    symlink(root.join("keys/id_rsa"), root.join("deploy_key.py")).unwrap();
    symlink(root.join("tls/server.key"), root.join("tls_config.py")).unwrap();
    symlink(root.join("aws_credentials"), root.join("cloud.py")).unwrap();
    write(root, "helper.py", "def help_me():\n    return 1\n");
    write(
        root,
        "main.py",
        "from settings import API_TOKEN, leaked_helper\nimport deploy_key\nimport tls_config\n\
         from cloud import *\nfrom helper import help_me\n\nleaked_helper()\nhelp_me()\n",
    );
    dir
}

#[test]
fn py_links_to_env_keys_and_credentials_are_not_indexed_and_leak_nowhere_f1() {
    let dir = project_with_linked_secrets();
    let service = Service::open(dir.path()).unwrap();
    let paths: Vec<&str> = service.engine().paths().collect();
    assert_eq!(paths, ["helper.py", "main.py"]);
    let notices = service.summary().notices;
    for link in ["settings.py", "deploy_key.py", "tls_config.py", "cloud.py"] {
        let notice = notices
            .iter()
            .find(|n| n.path == link)
            .unwrap_or_else(|| panic!("no notice for {link}: {notices:?}"));
        assert_eq!(notice.kind, NoticeKind::Sensitive, "{notice:?}");
    }
    let served = everything_served(&service, "main.py");
    assert!(served.contains("help_me"), "the helper is still served");
    assert_no_secret(&served);
    // Asked for directly, the link is refused as sensitive.
    let error = service.read_with_context("settings.py").unwrap_err();
    assert_eq!(error.code(), "sensitive_file", "{error}");
}

#[test]
fn a_file_swapped_for_a_link_to_a_secret_while_serving_is_dropped_f1() {
    let dir = project_with_linked_secrets();
    let root = dir.path().canonicalize().unwrap();
    let live = Live::open(&root).unwrap();
    assert!(live.read(|s| s.engine().contains("helper.py")));
    // helper.py becomes a link to the key, as an attacker's checkout would do.
    std::fs::remove_file(root.join("helper.py")).unwrap();
    symlink(root.join("keys/id_rsa"), root.join("helper.py")).unwrap();
    live.apply(&[root.join("helper.py")], "test").unwrap();
    assert!(!live.read(|s| s.engine().contains("helper.py")));
    assert_no_secret(&live.read(|s| everything_served(s, "main.py")));
}

/// A project with a warning to log (a dynamic import) and a context to inject.
fn project_that_logs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "helper.py", "def help_me():\n    return 1\n");
    write(
        dir.path(),
        "main.py",
        "import importlib\nfrom helper import help_me\n\nhelp_me()\nimportlib.import_module(NAME)\n",
    );
    dir
}

/// An injection event line, as an outside file planted behind a link
/// would hold it.
const OUTSIDE_EVENT: &str = r#"{"timestamp":1.0,"event_type":"context_injection","trigger":"read","trigger_file":"main.py","source_file":"helper.py","symbol":"help_me","lines":"1-2","snippet":"OUTSIDE-CONTENT","cache_hit":false,"cache_age_seconds":0.0,"token_count":1}"#;

fn outside_logs() -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    write(
        outside.path(),
        "injections.jsonl",
        &format!("{OUTSIDE_EVENT}\n"),
    );
    write(outside.path(), "warnings.jsonl", "");
    outside
}

fn assert_outside_untouched(outside: &Path) {
    assert_eq!(
        std::fs::read_to_string(outside.join("injections.jsonl")).unwrap(),
        format!("{OUTSIDE_EVENT}\n")
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("warnings.jsonl")).unwrap(),
        ""
    );
    let names: Vec<_> = std::fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "nothing created outside: {names:?}");
}

#[test]
fn a_symlinked_log_directory_turns_logging_off_and_is_never_read_f2() {
    let dir = project_that_logs();
    let outside = outside_logs();
    symlink(outside.path(), dir.path().join(".cross_file_context_logs")).unwrap();
    let service = Service::open(dir.path()).unwrap();
    let error = service.log_warnings().unwrap_err().to_string();
    assert!(
        error.contains("symlink") && error.contains("logging is off"),
        "{error}"
    );
    let text = service.read_with_context("main.py").unwrap();
    assert!(text.contains("help_me"), "the read still answers: {text}");
    assert!(service.recent_injections(None, 10).unwrap().is_empty());
    assert_outside_untouched(outside.path());
}

#[test]
fn symlinked_log_files_are_neither_appended_to_nor_read_f2() {
    let dir = project_that_logs();
    let outside = outside_logs();
    let logs = dir.path().join(".cross_file_context_logs");
    std::fs::create_dir(&logs).unwrap();
    for name in ["injections.jsonl", "warnings.jsonl"] {
        symlink(outside.path().join(name), logs.join(name)).unwrap();
    }
    let service = Service::open(dir.path()).unwrap();
    assert!(service.log_warnings().is_err());
    service.read_with_context("main.py").unwrap();
    assert!(service.recent_injections(None, 10).unwrap().is_empty());
    assert_outside_untouched(outside.path());
}

/// Every file xfile reads, as a FIFO (and a Python file as a socket).
const FIFOS: &[&str] = &[
    ".cross_file_context_links.yml",
    ".gitignore",
    "pytest.ini",
    "pyproject.toml",
    "tox.ini",
    "setup.cfg",
    "sub/.gitignore",
    "pipe.py",
    ".cross_file_context_logs/warnings.jsonl",
    ".cross_file_context_logs/injections.jsonl",
];

fn project_of_fifos() -> tempfile::TempDir {
    let dir = project_that_logs();
    write(dir.path(), "sub/kept_out.py", "X = 1\n");
    std::fs::create_dir(dir.path().join(".cross_file_context_logs")).unwrap();
    for fifo in FIFOS {
        mkfifo(&dir.path().join(fifo));
    }
    std::os::unix::net::UnixListener::bind(dir.path().join("socket.py")).unwrap();
    dir
}

#[test]
fn fifos_in_place_of_every_file_xfile_reads_are_skipped_with_notices_f3() {
    let dir = project_of_fifos();
    let root = dir.path().to_path_buf();
    let (notices, logged, injected, recent) =
        within_a_minute("indexing a tree of FIFOs", move || {
            let service = Service::open(&root).unwrap();
            let logged = service.log_warnings().map_err(|e| e.to_string());
            let injected = service.read_with_context("main.py").unwrap();
            let recent = service.recent_injections(None, 10).unwrap();
            (service.summary().notices, logged, injected, recent)
        });
    let told = |path: &str| {
        notices
            .iter()
            .any(|n| n.path == path && n.message.contains("not a regular file"))
    };
    for path in [
        ".cross_file_context_links.yml",
        ".gitignore",
        "pytest.ini",
        "pyproject.toml",
        "tox.ini",
        "setup.cfg",
        "sub/.gitignore",
        "pipe.py",
        "socket.py",
    ] {
        assert!(told(path), "no notice for {path}: {notices:#?}");
    }
    assert!(logged.is_err_and(|e| e.contains("FIFO")));
    assert!(injected.contains("help_me"));
    assert!(recent.is_empty());
}

#[test]
fn xfile_index_finishes_on_a_tree_of_fifos_f3() {
    let dir = project_of_fifos();
    let root = dir.path().to_path_buf();
    let output = within_a_minute("xfile index", move || {
        Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(["index", "--root"])
            .arg(&root)
            .output()
            .unwrap()
    });
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("pipe.py: not read: it is not a regular file (a FIFO)"),
        "{stdout}"
    );
}

#[test]
fn serve_answers_every_tool_with_fifo_logs_f3() {
    let dir = project_of_fifos();
    let root = dir.path().to_path_buf();
    let answers = within_a_minute("xfile serve over a tree of FIFOs", move || {
        let mut client = common::mcp_client::Client::start(&root);
        let calls = [
            ("get_warnings", serde_json::json!({})),
            (
                "read_with_context",
                serde_json::json!({"file_path": "main.py"}),
            ),
            ("get_recent_injections", serde_json::json!({})),
        ];
        calls.map(|(tool, arguments)| (tool, client.call(tool, arguments)))
    });
    for (tool, (is_error, text)) in answers {
        assert!(!is_error, "{tool}: {text}");
    }
}

#[test]
fn the_ignore_file_check_keeps_a_git_worktree_ignore_files_f3() {
    // In a worktree `.git` is a file, so `.git/info/exclude` cannot exist:
    // that is no reason to stop honouring `.gitignore`.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".git", "gitdir: /nonexistent/worktrees/x\n");
    write(dir.path(), ".gitignore", "generated/\n");
    write(dir.path(), "main.py", "import os\n");
    write(dir.path(), "generated/out.py", "X = 1\n");
    let service = Service::open(dir.path()).unwrap();
    let paths: Vec<&str> = service.engine().paths().collect();
    assert_eq!(paths, ["main.py"]);
    assert_eq!(service.summary().notices, []);
}

#[test]
fn every_kind_of_skip_gets_a_notice_with_its_reason_f9() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "main.py", "import os\n");
    write(root, ".hidden_pkg/a.py", "A = 1\n");
    write(root, ".hidden_pkg/b.py", "B = 1\n");
    write(root, ".hidden_module.py", "H = 1\n");
    symlink(root.join("missing.py"), root.join("dangling.py")).unwrap();
    symlink(root.join("self_loop.py"), root.join("self_loop.py")).unwrap();
    std::fs::create_dir(root.join("pkg")).unwrap();
    symlink(root.join("pkg"), root.join("pkg/again")).unwrap();
    mkfifo(&root.join("fifo.py"));
    // 20,000 lines ended by a lone CR each, as old Mac files are.
    write(root, "cr_only.py", &"x = 1\r".repeat(20_000));
    let latin1_name = std::ffi::OsStr::from_bytes(b"caf\xe9.py");
    std::fs::write(root.join(latin1_name), "C = 1\n").unwrap();
    let service = Service::open(root).unwrap();
    let notices = service.summary().notices;
    let kind_of = |path: &str| notices.iter().find(|n| n.path == path).map(|n| n.kind);
    assert_eq!(
        kind_of(".hidden_pkg"),
        Some(NoticeKind::Hidden),
        "{notices:#?}"
    );
    assert_eq!(
        kind_of(".hidden_pkg/a.py"),
        None,
        "a hidden directory is one notice"
    );
    assert_eq!(kind_of(".hidden_module.py"), Some(NoticeKind::Hidden));
    assert_eq!(
        kind_of("dangling.py"),
        Some(NoticeKind::Dangling),
        "{notices:#?}"
    );
    assert_eq!(
        kind_of("self_loop.py"),
        Some(NoticeKind::SymlinkLoop),
        "{notices:#?}"
    );
    assert_eq!(
        kind_of("pkg/again"),
        Some(NoticeKind::SymlinkLoop),
        "{notices:#?}"
    );
    assert_eq!(kind_of("fifo.py"), Some(NoticeKind::NotRegular));
    assert_eq!(
        kind_of("cr_only.py"),
        Some(NoticeKind::TooLarge),
        "{notices:#?}"
    );
    assert_eq!(
        kind_of("caf\\xe9.py"),
        Some(NoticeKind::NonUtf8Name),
        "{notices:#?}"
    );
    // Never indexed under a garbled name no tool could address.
    let paths: Vec<&str> = service.engine().paths().collect();
    assert_eq!(paths, ["main.py"]);
}

#[test]
fn live_updates_keep_one_notice_per_skipped_entry_f9() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "main.py", "import os\n");
    write(&root, ".hidden_pkg/a.py", "A = 1\n");
    mkfifo(&root.join("fifo.py"));
    let live = Live::open(&root).unwrap();
    // Changes inside and beside skipped entries, seen by the watcher.
    write(&root, ".hidden_pkg/b.py", "B = 1\n");
    write(&root, "other.py", "import main\n");
    symlink(root.join("missing.py"), root.join("dangling.py")).unwrap();
    let changed = [".hidden_pkg/b.py", "other.py", "dangling.py", "fifo.py"].map(|p| root.join(p));
    live.apply(&changed, "test").unwrap();
    let notices = |s: &Service| -> Vec<String> {
        s.summary()
            .notices
            .iter()
            .map(|n| format!("{}: {}", n.path, n.message))
            .collect()
    };
    let fresh = Service::open(&root).unwrap();
    assert_eq!(live.read(notices), notices(&fresh));
    assert_eq!(notices(&fresh).len(), 3, "{:?}", notices(&fresh));
}

#[test]
fn an_unreadable_directory_gets_a_notice_f9() {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // root reads any directory: nothing to skip.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "main.py", "import os\n");
    write(dir.path(), "locked/inner.py", "X = 1\n");
    let locked = dir.path().join("locked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let service = Service::open(dir.path());
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    let notices = service.unwrap().summary().notices;
    assert!(
        notices
            .iter()
            .any(|n| n.path == "locked" && n.kind == NoticeKind::Unreadable),
        "{notices:#?}"
    );
}

#[test]
fn xfile_index_lists_a_bounded_number_of_notices_f9() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "main.py", "import os\n");
    for i in 0..200 {
        write(dir.path(), &format!(".tool{i:03}/x.py"), "X = 1\n");
    }
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["index", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("  notices:        200\n"), "{stdout}");
    let listed = stdout
        .lines()
        .filter(|l| l.contains("hidden directory"))
        .count();
    assert_eq!(listed, 20, "{stdout}");
    assert!(stdout.contains("... and 180 more"), "{stdout}");
}

#[test]
fn outside_paths_get_one_answer_whether_or_not_they_exist_f10() {
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "exists.py", "X = 1\n");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "main.py", "X = 1\n");
    symlink(
        outside.path().join("exists.py"),
        root.join("to_existing.py"),
    )
    .unwrap();
    symlink(
        outside.path().join("missing.py"),
        root.join("to_missing.py"),
    )
    .unwrap();
    symlink(outside.path(), root.join("outdir")).unwrap();
    let existing = outside.path().join("exists.py");
    let missing = outside.path().join("missing.py");
    for (exists, not) in [
        (existing.to_str().unwrap(), missing.to_str().unwrap()),
        ("to_existing.py", "to_missing.py"),
        ("outdir/exists.py", "outdir/missing.py"),
        (
            "../../../../../../etc/passwd",
            "../../../../../../etc/not-here",
        ),
    ] {
        let code = |input: &str| match workspace::resolve_user_path(&root, input) {
            Ok(path) => format!("ok {path}"),
            Err(error) => error.code().to_string(),
        };
        assert_eq!(code(exists), "outside_root", "{exists}");
        assert_eq!(code(not), "outside_root", "{not}");
    }
    // Inside the root, a missing file is still just missing.
    let error = workspace::resolve_user_path(&root, "nope.py").unwrap_err();
    assert_eq!(error.code(), "file_not_found");
}

#[test]
fn a_config_linked_to_an_outside_yaml_is_refused_without_echoing_its_keys_f10() {
    let outside = tempfile::tempdir().unwrap();
    write(
        outside.path(),
        "private.yml",
        "private_key_name_xyz: 1\nother_private_key: [1]\n",
    );
    let dir = project_that_logs();
    symlink(
        outside.path().join("private.yml"),
        dir.path().join(".cross_file_context_links.yml"),
    )
    .unwrap();
    let service = Service::open(dir.path()).unwrap();
    let notices = service.summary().notices;
    let config: Vec<_> = notices
        .iter()
        .filter(|n| n.path == ".cross_file_context_links.yml")
        .collect();
    assert_eq!(config.len(), 1, "{notices:#?}");
    assert!(
        config[0].message.contains("outside the project root"),
        "{config:?}"
    );
    let text = format!("{notices:?}");
    assert!(!text.contains("private_key_name_xyz") && !text.contains("other_private_key"));
}

#[test]
fn one_from_import_of_100k_names_indexes_in_linear_time_f6() {
    // Before the fix each name's binding was looked up among all the
    // others: 100k names took minutes in a debug build; now a few seconds.
    const NAMES: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let defined: String = (0..100).map(|i| format!("n{i} = {i}\n")).collect();
    write(dir.path(), "m.py", &defined);
    let names: Vec<String> = (0..NAMES).map(|i| format!("n{i}")).collect();
    write(
        dir.path(),
        "big.py",
        &format!("from m import ({})\n", names.join(", ")),
    );
    write(dir.path(), "user.py", "from big import n5, n99999\n");
    let root = dir.path().to_path_buf();
    let (imports, used) = within_a_minute("indexing a 100k-name import", move || {
        let service = Service::open(&root).unwrap();
        let imports = service.dependencies("big.py").unwrap().len();
        let used: Vec<String> = service
            .dependencies("user.py")
            .unwrap()
            .iter()
            .map(|r| format!("{} {:?}", r.target_file, r.metadata.defined_in))
            .collect();
        (imports, used)
    });
    assert_eq!(imports, NAMES);
    // n5 is defined in m.py; n99999 is not defined anywhere.
    assert!(
        used.contains(&"big.py Some(\"m.py\")".to_string()),
        "{used:?}"
    );
}

/// Every warning as text, in order.
fn warning_text(service: &Service) -> String {
    let report = service.warnings(None).unwrap();
    serde_json::to_string_pretty(&report.warnings).unwrap()
}

#[test]
fn circular_import_warnings_after_live_churn_match_a_fresh_index_byte_for_byte_f7() {
    // `import pkg.sub` imports pkg/__init__.py and pkg/sub.py at one site,
    // and each imports main back: two equally short cycles. Which one a
    // warning names must not depend on the order files became known.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root, "main.py", "import pkg.sub\n");
    write(&root, "pkg/sub.py", "import main\n");
    write(&root, "ring/a.py", "import ring.b\n");
    write(&root, "ring/c.py", "import ring.a\n");
    let live = Live::open(&root).unwrap();
    let churn: &[(&str, &str)] = &[
        ("pkg/__init__.py", "import main\n"),
        ("ring/b.py", "import ring.c\nimport ring.d\n"),
        ("ring/d.py", "import ring.a\n"),
        ("ring/__init__.py", ""),
        ("pkg/sub.py", "import main\nX = 1\n"),
        ("ring/a.py", "import ring.b\nimport ring.d\n"),
    ];
    for (path, text) in churn {
        write(&root, path, text);
        live.apply(&[root.join(path)], "test").unwrap();
        let fresh = Service::open(&root).unwrap();
        assert_eq!(
            live.read(warning_text),
            warning_text(&fresh),
            "after writing {path}"
        );
    }
    assert!(live.read(warning_text).contains("Circular import detected"));
}

#[test]
fn warnings_after_random_live_churn_match_a_fresh_index_byte_for_byte_f7() {
    // Files import each other at random, so cycles of equal length come and
    // go; the live copy learns files in churn order, a fresh index in path
    // order, and both must name the same cycles.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // Packages' `__init__` take part too: `import p.m1` runs p/__init__.py.
    let modules: Vec<(String, String)> = ["p", "q"]
        .iter()
        .flat_map(|pkg| {
            let init = (pkg.to_string(), format!("{pkg}/__init__.py"));
            let members = (0..5).map(move |i| (format!("{pkg}.m{i}"), format!("{pkg}/m{i}.py")));
            std::iter::once(init).chain(members)
        })
        .collect();
    write(&root, "p/m0.py", "");
    let live = Live::open(&root).unwrap();
    let mut random = common::Lcg(19);
    let mut with_cycles = 0;
    for step in 0..60 {
        let (_, path) = &modules[random.below(modules.len())];
        let file = root.join(path);
        if random.below(6) == 0 {
            let _ = std::fs::remove_file(&file);
        } else {
            let mut text = String::new();
            for _ in 0..1 + random.below(3) {
                let (other, _) = &modules[random.below(modules.len())];
                text.push_str(&match (other.split_once('.'), random.below(3)) {
                    (Some((package, name)), 1) => format!("from {package} import {name}\n"),
                    (_, 2) => format!("from {other} import *\n"),
                    _ => format!("import {other}\n"),
                });
            }
            write(&root, path, &text);
        }
        live.apply(&[file], "test").unwrap();
        if step % 4 == 3 {
            let fresh = Service::open(&root).unwrap();
            assert_eq!(
                live.read(warning_text),
                warning_text(&fresh),
                "at step {step}"
            );
            with_cycles += usize::from(warning_text(&fresh).contains("Circular import"));
        }
    }
    // Not vacuous: most checkpoints had cycles to name.
    assert!(
        with_cycles >= 8,
        "{with_cycles} of 15 checkpoints had cycles"
    );
}
