//! Ten projects served together, in process: copies of the Django tree,
//! the first as is and nine with the package renamed (`django1`, …), so
//! that their absolute `django.*` imports land in the first project. Times
//! the cross-project index build, `cross_refs` and a cross-project
//! `get_dependents`, as percentiles over repeated calls.
//!
//! Run `scripts/fetch_django.sh` first (or set XFILE_BENCH_TREE), then
//! `cargo bench --bench federation`. Figures go in docs/performance.md.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use xfile::federation::links::{self, CrossIndex, Peer};
use xfile::service::Service;

const PROJECTS: usize = 10;
const RUNS: usize = 200;

fn tree() -> Option<PathBuf> {
    let path = std::env::var_os("XFILE_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/django-5.2.8")
        });
    path.is_dir().then_some(path)
}

/// The ten copies under `target/bench-data/federation`, made once with
/// hard links (nothing writes to them).
fn copies(tree: &Path) -> Vec<PathBuf> {
    let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/federation");
    (0..PROJECTS)
        .map(|i| {
            let copy = base.join(format!("p{i}"));
            if !copy.is_dir() {
                std::fs::create_dir_all(&base).expect("bench dir");
                let status = Command::new("cp")
                    .arg("-al")
                    .arg(tree)
                    .arg(&copy)
                    .status()
                    .expect("cp runs");
                assert!(status.success(), "cp -al {}", tree.display());
                if i > 0 {
                    std::fs::rename(copy.join("django"), copy.join(format!("django{i}")))
                        .expect("rename the package");
                }
            }
            copy
        })
        .collect()
}

fn percentiles(mut times: Vec<Duration>) -> String {
    times.sort();
    let at = |p: usize| times[(times.len() * p / 100).min(times.len() - 1)];
    format!(
        "p50 {:.2} ms, p95 {:.2} ms",
        at(50).as_secs_f64() * 1e3,
        at(95).as_secs_f64() * 1e3
    )
}

fn timed(what: &str, mut f: impl FnMut() -> usize) {
    let mut times = Vec::with_capacity(RUNS);
    let mut size = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        size = f();
        times.push(started.elapsed());
    }
    println!("{what}: {} ({size} items)", percentiles(times));
}

fn main() {
    let Some(tree) = tree() else {
        eprintln!("no benchmark tree; run scripts/fetch_django.sh");
        return;
    };
    let started = Instant::now();
    let peers: Vec<Peer> = copies(&tree)
        .iter()
        .enumerate()
        .map(|(i, root)| Peer {
            name: format!("p{i}"),
            service: Service::open(root).expect("opens"),
        })
        .collect();
    println!(
        "opened {PROJECTS} projects in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let index = CrossIndex::build(&peers);
    println!(
        "cross-project index (cold): {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let started = Instant::now();
    let again = CrossIndex::build(&peers);
    println!(
        "cross-project index (references cached): {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    drop(again);

    for symbol in ["Model", "models.Model", "slugify", "get_object_or_404"] {
        timed(&format!("cross_refs {symbol}"), || {
            links::cross_refs(&peers, &index, symbol, 100).total
        });
    }
    for file in ["django/db/models/base.py", "django/utils/text.py"] {
        timed(&format!("get_dependents {file}: its project"), || {
            peers[0].service.dependents(file).expect("indexed").len()
        });
        timed(&format!("get_dependents {file}: 9 other projects"), || {
            links::dependents_across(&peers, &index, 0, file, None)
                .0
                .len()
        });
    }
    timed("collection_map", || {
        links::collection_map(&peers, &index, None).edges.len()
    });
}
