//! Ranking boosts: recency (a file's last commit, or an edit
//! the service saw), module proximity (the package of the file in hand)
//! and the session's reads multiply the base score of search results and
//! of `read_with_context`'s used definitions; each can be weighted or
//! switched off in the configuration.
//!
//! `tests/fixtures/ranking/` has three functions named `handle`, equal in
//! match and use, in files that the last tie-break (the shorter path)
//! orders other/b.py, pkg/sub/a.py, pkg/handlers.py; `pkg/api.py` uses
//! all three, one line each, in that order (so `read_with_context`'s
//! last tie-break, first use, orders them the same way; pkg/handlers.py
//! is in its package). Each boost alone decides their order, and
//! switching it off gives the base order back.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::git_repo::GitRepo;
use common::mcp_client::Client;
use serde_json::json;
use xfile::service::live::Live;
use xfile::service::ranking::Accesses;
use xfile::service::search::SearchOptions;
use xfile::service::{ReadOptions, Service};

const BASE_ORDER: [&str; 3] = ["other/b.py", "pkg/sub/a.py", "pkg/handlers.py"];
const CONFIG: &str = ".cross_file_context_links.yml";

/// The files of the `handle` search results, best first.
fn searched(service: &Service, context: Option<&str>, accesses: &Accesses) -> Vec<String> {
    let options = SearchOptions {
        include_preview: false,
        context_file: context.map(str::to_string),
        accesses: accesses.clone(),
        ..SearchOptions::default()
    };
    let answer = service.search("handle", &options).unwrap();
    answer
        .clusters
        .iter()
        .map(|c| c.seeds[0].file.clone())
        .collect()
}

/// The files of the definitions `read_with_context` injects for
/// `pkg/api.py`, in its order.
fn injected(service: &Service, accesses: &Accesses) -> Vec<String> {
    let options = ReadOptions {
        accesses: accesses.clone(),
        ..ReadOptions::default()
    };
    let text = service.read_with_options("pkg/api.py", &options).unwrap();
    let section = text.split("\n---\n").next().unwrap();
    section
        .lines()
        .filter_map(|line| line.split_once("  # ")?.1.split_once(':'))
        .map(|(file, _)| file.to_string())
        .collect()
}

fn open_with(root: &Path, config: &str) -> Service {
    std::fs::write(root.join(CONFIG), config).unwrap();
    Service::open(root).unwrap()
}

fn none() -> Accesses {
    Accesses::new()
}

#[test]
fn without_boosts_the_base_order_holds() {
    let dir = common::copy_fixture("ranking");
    // No repository, edits or reads, no file in hand: nothing to boost.
    let service = Service::open(dir.path()).unwrap();
    assert_eq!(searched(&service, None, &none()), BASE_ORDER);
    let off = open_with(dir.path(), "ranking:\n  enabled: false\n");
    assert_eq!(searched(&off, None, &none()), BASE_ORDER);
    // Two files share a directory with pkg/api.py: nearness, then path.
    assert_eq!(
        searched(&off, Some("pkg/api.py"), &none()),
        ["pkg/sub/a.py", "pkg/handlers.py", "other/b.py"]
    );
    assert_eq!(injected(&off, &none()), BASE_ORDER);
}

#[test]
fn the_module_boost_lifts_results_in_the_package_of_the_file_in_hand() {
    let dir = common::copy_fixture("ranking");
    let service = Service::open(dir.path()).unwrap();
    // pkg/sub/a.py and pkg/handlers.py are equally near pkg/api.py by
    // directories shared; only pkg/handlers.py is in its package.
    assert_eq!(
        searched(&service, Some("pkg/api.py"), &none()),
        ["pkg/handlers.py", "pkg/sub/a.py", "other/b.py"]
    );
    assert_eq!(
        injected(&service, &none()),
        ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
    );
    let off = open_with(dir.path(), "ranking:\n  module_weight: 0\n");
    assert_eq!(
        searched(&off, Some("pkg/api.py"), &none()),
        ["pkg/sub/a.py", "pkg/handlers.py", "other/b.py"]
    );
    assert_eq!(injected(&off, &none()), BASE_ORDER);
}

#[test]
fn the_frequency_boost_lifts_files_the_session_reads_often() {
    let dir = common::copy_fixture("ranking");
    let service = Service::open(dir.path()).unwrap();
    let accesses = Accesses::from([
        ("pkg/handlers.py".to_string(), 2),
        ("pkg/sub/a.py".to_string(), 30),
    ]);
    let boosted = ["pkg/sub/a.py", "pkg/handlers.py", "other/b.py"];
    assert_eq!(searched(&service, None, &accesses), boosted);
    // Read with context, pkg/api.py is the file in hand: pkg/handlers.py's
    // module boost with two reads (1.3 × 1.02) edges out thirty reads
    // of pkg/sub/a.py (1.3).
    assert_eq!(
        injected(&service, &accesses),
        ["pkg/handlers.py", "pkg/sub/a.py", "other/b.py"]
    );
    let off = open_with(dir.path(), "ranking:\n  frequency_weight: 0\n");
    assert_eq!(searched(&off, None, &accesses), BASE_ORDER);
    assert_eq!(
        injected(&off, &accesses),
        ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
    );
}

#[test]
fn boosts_multiply_and_switch_off_together() {
    let dir = common::copy_fixture("ranking");
    let service = Service::open(dir.path()).unwrap();
    // Module 1.3 for pkg/handlers.py against 40 reads (1.4) of
    // other/b.py: the reads win; with 10 reads of pkg/handlers.py too
    // (1.3 × 1.1 = 1.43), pkg/handlers.py is first again.
    let reads = |pairs: &[(&str, u32)]| -> Accesses {
        pairs.iter().map(|(f, n)| (f.to_string(), *n)).collect()
    };
    let other = reads(&[("other/b.py", 40)]);
    assert_eq!(
        searched(&service, Some("pkg/api.py"), &other),
        ["other/b.py", "pkg/handlers.py", "pkg/sub/a.py"]
    );
    let both = reads(&[("other/b.py", 40), ("pkg/handlers.py", 10)]);
    assert_eq!(
        searched(&service, Some("pkg/api.py"), &both),
        ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
    );
    // A weight scales its boost: module 1 + 2 × 0.3 = 1.6 beats 1.4.
    let doubled = open_with(dir.path(), "ranking:\n  module_weight: 2\n");
    assert_eq!(
        searched(&doubled, Some("pkg/api.py"), &other),
        ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
    );
    let off = open_with(dir.path(), "ranking:\n  enabled: false\n");
    assert_eq!(searched(&off, None, &both), BASE_ORDER);
    assert_eq!(injected(&off, &both), BASE_ORDER);
}

/// Seconds since the epoch, `ago` before now, as git takes a date.
fn git_date(ago: Duration) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    format!("{} +0000", (now - ago).as_secs())
}

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

/// The fixture committed a month ago, then pkg/handlers.py changed in a
/// commit three days ago and pkg/sub/a.py in one two hours ago.
fn fixture_history() -> GitRepo {
    let repo = GitRepo::init();
    let fixture = common::fixture("ranking");
    for file in [
        "other/__init__.py",
        "other/b.py",
        "pkg/__init__.py",
        "pkg/api.py",
        "pkg/handlers.py",
        "pkg/sub/__init__.py",
        "pkg/sub/a.py",
    ] {
        repo.write(file, &std::fs::read_to_string(fixture.join(file)).unwrap());
    }
    let commit = |ago: Duration, message: &str| {
        repo.git(&["add", "-A"]);
        repo.git_at(&git_date(ago), &["commit", "-q", "-m", message]);
    };
    commit(30 * DAY, "The project");
    let touch = |file: &str| {
        let path = repo.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n# changed\n")).unwrap();
    };
    touch("pkg/handlers.py");
    commit(3 * DAY, "Handlers");
    touch("pkg/sub/a.py");
    commit(2 * HOUR, "Sub");
    repo
}

#[test]
fn the_recency_boost_lifts_files_by_their_last_commit() {
    let repo = fixture_history();
    let service = Service::open(&repo.path()).unwrap();
    // Two hours ago 1.5, three days ago 1.2, a month ago 1.
    let recent = ["pkg/sub/a.py", "pkg/handlers.py", "other/b.py"];
    assert_eq!(searched(&service, None, &none()), recent);
    // Read with context: pkg/handlers.py has the module boost too (1.2 ×
    // 1.3 = 1.56 against 1.5).
    assert_eq!(
        injected(&service, &none()),
        ["pkg/handlers.py", "pkg/sub/a.py", "other/b.py"]
    );
    let off = open_with(&repo.path(), "ranking:\n  recency_weight: 0\n");
    assert_eq!(searched(&off, None, &none()), BASE_ORDER);
    // A new commit moves HEAD: the commit times are walked again.
    let path = repo.path().join("other/b.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n# now\n")).unwrap();
    repo.git(&["add", "-A"]);
    repo.git_at(&git_date(Duration::ZERO), &["commit", "-q", "-m", "Now"]);
    assert_eq!(
        searched(&service, None, &none()),
        ["other/b.py", "pkg/sub/a.py", "pkg/handlers.py"]
    );
}

#[test]
fn without_a_repository_recency_comes_from_the_edits_seen() {
    let dir = common::copy_fixture("ranking");
    let live = Live::open(dir.path()).unwrap();
    live.read(|s| assert_eq!(searched(s, None, &none()), BASE_ORDER));
    // Edited now, and (by its modification time) three days ago.
    let edit = |file: &str, ago: Duration| {
        let path = dir.path().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}\n# edited\n")).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - ago).unwrap();
        live.apply(&[path], "test").unwrap();
    };
    edit("pkg/handlers.py", Duration::ZERO);
    edit("other/b.py", 3 * DAY);
    live.read(|s| {
        assert_eq!(
            searched(s, None, &none()),
            ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
        )
    });
}

#[test]
fn over_mcp_the_sessions_reads_count() {
    let dir = common::copy_fixture("ranking");
    let mut client = Client::start(dir.path());
    let files = |client: &mut Client| -> Vec<String> {
        let (error, text) = client.call(
            "search_with_context",
            json!({"query": "handle", "includePreview": false}),
        );
        assert!(!error, "{text}");
        let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
        answer["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["seeds"][0]["file"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(files(&mut client), BASE_ORDER);
    let (error, text) = client.call("read_with_context", json!({"file_path": "pkg/handlers.py"}));
    assert!(!error, "{text}");
    assert_eq!(
        files(&mut client),
        ["pkg/handlers.py", "other/b.py", "pkg/sub/a.py"]
    );
}
