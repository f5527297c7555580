//! Git history and change impact on a generated history of 1,000 commits
//! over Django 5.2.8: `git_log` (the project, and one file), `git_blame` of
//! a 2,065-line file with 242 commits of history, and `impact` of a
//! 10-file change in the working tree. Each is timed through what the MCP
//! tools call, p50 and p95: cold (the repository opened for each call, as
//! the CLI does; for blame, with nothing kept on disk, with the blame an
//! earlier process kept for HEAD, and with one kept for an older HEAD, 1,
//! 10 and 100 commits back; with only the history index kept, for HEAD
//! and for 10, 100, 500 and 700 commits back, and what bringing that index
//! forward costs alone) and in a server (`Service`: the
//! repository opened once, blames kept per content and HEAD, the base
//! versions' definitions parsed once, the blames of the files changed
//! last computed ahead as a server does once indexed). Then the history
//! walk behind the recency boost, over all 1,000 commits.
//!
//! Run `scripts/fetch_django.sh`, then `scripts/git_history.py`, then
//! `cargo bench --bench git`. Figures go in docs/performance.md.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use xfile::git::{HistoryIndex, LogQuery, Repo, WalkBounds};
use xfile::service::Service;
use xfile::service::history;

/// The answer budget the tools use by default.
const BUDGET: usize = 8_000;
const BLAMED: &str = "django/db/models/fields/related.py";
/// A long file no recent commit changed, so not blamed ahead.
const NOT_AHEAD: &str = "django/db/models/sql/query.py";
/// A long file kept on disk by an earlier process (and not changed by
/// recent commits): a server's first call of it reads the kept blame.
const KEPT_ONLY: &str = "django/db/models/sql/compiler.py";
/// Modules whose first `return` line the impact benchmark edits.
const CHANGED: [&str; 10] = [
    "django/utils/text.py",
    "django/utils/html.py",
    "django/utils/functional.py",
    "django/db/models/query.py",
    "django/db/models/base.py",
    "django/forms/forms.py",
    "django/http/request.py",
    "django/urls/resolvers.py",
    "django/template/base.py",
    "django/contrib/auth/models.py",
];

fn repo() -> Option<PathBuf> {
    let path = std::env::var_os("XFILE_BENCH_GIT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/django-git")
        });
    match path.canonicalize() {
        Ok(path) if path.join(".git").is_dir() => Some(path),
        _ => {
            eprintln!(
                "no benchmark repository at {}; run scripts/fetch_django.sh, then scripts/git_history.py",
                path.display()
            );
            None
        }
    }
}

/// Runs `f` `runs` times (after one warm-up) and prints p50 and p95.
fn measure(name: &str, runs: usize, f: impl FnMut()) {
    measure_after(name, runs, || {}, f);
}

/// [`measure`], with `setup` run (untimed) before each call.
fn measure_after(name: &str, runs: usize, mut setup: impl FnMut(), mut f: impl FnMut()) {
    setup();
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            setup();
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "{name:<40} p50 {:>8.2} ms   p95 {:>8.2} ms   ({runs} runs)",
        at(0.50).as_secs_f64() * 1e3,
        at(0.95).as_secs_f64() * 1e3
    );
}

/// The kept blame of `BLAMED` at `HEAD~back` (first parents): its file
/// and bytes, made by blaming with that commit checked out. HEAD is back
/// where it was after.
fn kept_at(root: &Path, kept: &Path, back: usize) -> (PathBuf, Vec<u8>) {
    let _ = std::fs::remove_dir_all(kept);
    git(
        root,
        &["checkout", "-q", "--detach", &format!("HEAD~{back}")],
    );
    history::blame(root, BUDGET, BLAMED, None, None).expect("blame");
    git(root, &["checkout", "-q", "main"]);
    let file = std::fs::read_dir(kept)
        .expect("a kept blame")
        .map(|entry| entry.expect("readable").path())
        .find(|path| path.extension().is_some_and(|e| e == "bin"))
        .expect("a kept blame");
    let bytes = std::fs::read(&file).expect("readable");
    (file, bytes)
}

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Edits the first `return` line of each of `CHANGED`; gives the texts back.
fn change_ten_files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut originals = Vec::new();
    for file in CHANGED {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).expect("a Django module");
        let changed = text.replacen("    return ", "    return  ", 1);
        assert_ne!(text, changed, "{file} has no return line");
        std::fs::write(&path, changed).expect("writable");
        originals.push((path, text));
    }
    originals
}

fn main() {
    let Some(root) = repo() else { return };
    measure("git_log (project, limit 10)", 200, || {
        history::log(
            &root,
            BUDGET,
            &LogQuery {
                limit: 10,
                ..LogQuery::default()
            },
        )
        .expect("log");
    });
    measure("git_log (one file, limit 10)", 100, || {
        let query = LogQuery {
            path: Some(BLAMED),
            limit: 10,
            ..LogQuery::default()
        };
        history::log(&root, BUDGET, &query).expect("log");
    });
    let kept = root.join(".xfile_cache/blame");
    let forget = || match std::fs::remove_dir_all(&kept) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => panic!("{error}"),
        _ => {}
    };
    measure_after(
        "git_blame cold, nothing kept (2,065 lines, 242 commits)",
        20,
        forget,
        || {
            history::blame(&root, BUDGET, BLAMED, None, None).expect("blame");
        },
    );
    measure_after(
        "git_blame cold, nothing kept, lines 1000-1030",
        20,
        forget,
        || {
            history::blame(&root, BUDGET, BLAMED, Some(1000), Some(1030)).expect("blame");
        },
    );
    // The history index alone kept (as a server's warm-up or an earlier
    // `xfile git blame` leaves it): this file never blamed.
    let index_file = kept.join("history.idx");
    let build_index = || assert!(history::keep_index(&root).expect("walks"));
    measure_after("history index built (all commits)", 10, forget, build_index);
    let index_bytes = std::fs::read(&index_file).expect("an index");
    println!("  history index: {} bytes", index_bytes.len());
    let only_index = || {
        forget();
        std::fs::create_dir_all(&kept).expect("writable");
        std::fs::write(&index_file, &index_bytes).expect("writable");
    };
    let fresh = history::blame_text(
        &Repo::open(&root)
            .expect("a repository")
            .blame(BLAMED, None, None)
            .expect("blame"),
        BUDGET,
    );
    measure_after(
        "git_blame cold, never blamed, index kept",
        20,
        only_index,
        || {
            let answer = history::blame(&root, BUDGET, BLAMED, None, None).expect("blame");
            assert_eq!(answer, fresh);
        },
    );
    measure_after(
        "git_blame cold, never blamed, index kept, lines 1000-1030",
        20,
        only_index,
        || {
            history::blame(&root, BUDGET, BLAMED, Some(1000), Some(1030)).expect("blame");
        },
    );
    measure_after(
        "git_blame cold, never blamed, index kept (sql/query.py)",
        20,
        only_index,
        || {
            history::blame(&root, BUDGET, NOT_AHEAD, None, None).expect("blame");
        },
    );
    measure(
        "git_blame cold, kept for HEAD by an earlier process",
        50,
        || {
            let answer = history::blame(&root, BUDGET, BLAMED, None, None).expect("blame");
            assert_eq!(answer, fresh);
        },
    );
    measure("git_blame cold, kept, lines 1000-1030", 50, || {
        history::blame(&root, BUDGET, BLAMED, Some(1000), Some(1030)).expect("blame");
    });
    // An index kept for an older HEAD: what bringing it forward costs
    // alone (with the warm-up's bounds), then a first blame with it, which
    // brings it forward inline up to the blame's bound and past it walks
    // as if there were no index.
    for back in [10, 100, 500, 700] {
        forget();
        git(
            &root,
            &["checkout", "-q", "--detach", &format!("HEAD~{back}")],
        );
        build_index();
        git(&root, &["checkout", "-q", "main"]);
        let old = std::fs::read(&index_file).expect("an index");
        let previous = HistoryIndex::decode(&old).expect("an index");
        let mut added = 0;
        measure(
            &format!("history index brought forward from HEAD~{back}"),
            10,
            || {
                let forward = Repo::open(&root)
                    .expect("a repository")
                    .history_index(Some(previous.clone()), &history::INDEX_BOUNDS)
                    .expect("walks")
                    .expect("an index");
                added = forward.commits() - previous.commits();
            },
        );
        println!("  {added} commits added");
        measure_after(
            &format!("git_blame cold, never blamed, index kept for HEAD~{back}"),
            10,
            || {
                forget();
                std::fs::create_dir_all(&kept).expect("writable");
                std::fs::write(&index_file, &old).expect("writable");
            },
            || {
                let answer = history::blame(&root, BUDGET, BLAMED, None, None).expect("blame");
                assert_eq!(answer, fresh);
            },
        );
    }
    for back in [1, 10, 100] {
        let record = kept_at(&root, &kept, back);
        measure_after(
            &format!("git_blame cold, kept for HEAD~{back}"),
            20,
            || std::fs::write(&record.0, &record.1).expect("kept blame restored"),
            || {
                let answer = history::blame(&root, BUDGET, BLAMED, None, None).expect("blame");
                assert_eq!(answer, fresh);
            },
        );
    }
    let walk = Instant::now();
    let times = Repo::open(&root)
        .expect("a repository")
        .change_times(&WalkBounds {
            since: 0,
            max_commits: usize::MAX,
            deadline: Duration::from_secs(60),
        })
        .expect("walks");
    println!(
        "recency walk, all 1,000 commits: {:.1} ms, {} files",
        walk.elapsed().as_secs_f64() * 1e3,
        times.times.len()
    );
    // The server's figures start with nothing kept on disk but the blame
    // of `KEPT_ONLY`, as an earlier `xfile git blame` would leave it.
    forget();
    history::blame(&root, BUDGET, KEPT_ONLY, None, None).expect("blame");
    let originals = change_ten_files(&root);
    let service = Service::open(&root).expect("indexes");
    // What a server does once its index is ready, off the request path.
    let ahead = Instant::now();
    service.precompute_blames();
    let blamed = service.blamed_ahead();
    println!(
        "blames computed ahead: {:.1} ms, {} files",
        ahead.elapsed().as_secs_f64() * 1e3,
        blamed.len()
    );
    for (file, label) in [
        (BLAMED, "first call"),
        (NOT_AHEAD, "first call, another file"),
        (KEPT_ONLY, "first call, a file kept on disk"),
    ] {
        let first = Instant::now();
        service.git_blame(file, None, None).expect("blame");
        println!(
            "git_blame in a server, {label}: {:.1} ms ({file}, computed ahead: {})",
            first.elapsed().as_secs_f64() * 1e3,
            blamed.iter().any(|b| b == file)
        );
    }
    measure("git_blame in a server, again", 200, || {
        service.git_blame(BLAMED, None, None).expect("blame");
    });
    measure("git_blame in a server, lines 1000-1030", 200, || {
        service
            .git_blame(BLAMED, Some(1000), Some(1030))
            .expect("blame");
    });
    measure("git_diff cold (10 files changed)", 50, || {
        history::diff(&root, BUDGET, None, None, None).expect("diff");
    });
    measure("git_diff in a server (10 files changed)", 50, || {
        service.git_diff(None, None, None).expect("diff");
    });
    let first = Instant::now();
    service.impact(None, 2).expect("impact");
    println!(
        "impact in a server, first call: {:.1} ms",
        first.elapsed().as_secs_f64() * 1e3
    );
    let mut dependents = 0;
    measure("impact in a server (10 files changed, depth 2)", 20, || {
        let impact = service.impact(None, 2).expect("impact");
        dependents = impact.dependents.len() + impact.test_dependents.len();
        impact.to_text(BUDGET);
    });
    println!("  impact found {dependents} dependents");
    for (path, text) in originals {
        std::fs::write(path, text).expect("restored");
    }
}
