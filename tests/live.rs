//! Live updates: updates
//! read from disk, freshness on read, snapshots under concurrent updates, the
//! watcher's polling fallback with backoff, and incremental equals
//! from-scratch over 500 edits on disk.

use crate::common::{self, wait_until};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use xfile::service::Service;
use xfile::service::live::{Involved, Live};
use xfile::watch::{self, Message, Watch};

fn live_copy(fixture: &str) -> (tempfile::TempDir, Arc<Live>) {
    let dir = common::copy_fixture(fixture);
    let live = Live::open(dir.path()).expect("opens");
    (dir, live)
}

fn root_of(live: &Live) -> PathBuf {
    live.root().to_path_buf()
}

/// Every output relation and every relationship, rendered.
fn state(service: &Service) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    (
        common::rendered_outputs(service.engine()),
        common::lines(service),
    )
}

fn assert_same_as_scratch(live: &Live, context: &str) {
    live.read(|s| common::assert_stages_match_reference(s.engine()));
    let incremental = live.read(state);
    let fresh = Service::open(live.root()).expect("fresh index");
    let scratch = state(&fresh);
    assert_eq!(incremental.1, scratch.1, "relationships differ {context}");
    for ((name, got), (_, want)) in incremental.0.iter().zip(&scratch.0) {
        assert_eq!(got, want, "relation {name} differs {context}");
    }
}

fn dependents(live: &Live, file: &str) -> Vec<String> {
    live.read(|s| {
        s.dependents(file)
            .map(|rs| rs.iter().map(|r| r.source_file.clone()).collect())
            .unwrap_or_default()
    })
}

#[test]
fn a_callers_edge_is_re_resolved_when_the_callee_file_changes() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    assert!(dependents(&live, "shop/pricing.py").contains(&"main.py".to_string()));
    let pricing = root.join("shop/pricing.py");
    let text = std::fs::read_to_string(&pricing).unwrap();
    std::fs::write(&pricing, text.replace("def discount(", "def rebate(")).unwrap();
    let report = live.apply(std::slice::from_ref(&pricing), "test").unwrap();
    assert_eq!(report.modified, ["shop/pricing.py"]);
    assert!(report.datalog_rerun);
    // main.py still imports and calls `discount`, which no longer exists: no
    // stale inbound edge may survive.
    let calls = live.read(|s| {
        s.dependencies("main.py")
            .unwrap()
            .iter()
            .map(common::line)
            .collect::<Vec<_>>()
    });
    assert!(
        !calls
            .iter()
            .any(|l| l.contains("function_call shop/pricing.py discount")),
        "{calls:#?}"
    );
    // The import statement stays, now naming nothing that is defined.
    assert!(
        calls.contains(&"main.py:2:5 import shop/pricing.py discount -".to_string()),
        "{calls:#?}"
    );
    assert_same_as_scratch(&live, "after renaming the callee");
}

#[test]
fn a_body_only_edit_on_disk_reruns_one_parse_and_no_datalog() {
    let (_dir, live) = live_copy("live_edits");
    let models = root_of(&live).join("shop/models.py");
    let text = std::fs::read_to_string(&models).unwrap();
    std::fs::write(&models, text.replace("return Item()", "return Item(\"x\")")).unwrap();
    let report = live.apply(&[models], "test").unwrap();
    assert_eq!(report.modified, ["shop/models.py"]);
    assert_eq!(report.queries.executed, ["module_facts(shop/models.py)"]);
    assert!(!report.datalog_rerun);
    let touched = live
        .apply(&[root_of(&live).join("main.py")], "test")
        .unwrap();
    assert!(touched.modified.is_empty() && touched.queries.executed.is_empty());
    assert_eq!(touched.unchanged, 1);
}

/// A served project keeps a text only until its facts are extracted and
/// reads it back from disk when an answer shows it: the indexed text while
/// the disk still has it, none while the disk holds an edit not yet
/// applied (its lines would not be the ones the facts describe: a read of
/// the file is refused as `file_changed`), and the edit once it is.
#[test]
fn a_text_is_read_back_only_while_the_disk_still_has_the_indexed_one() {
    let (_dir, live) = live_copy("live_edits");
    let pricing = root_of(&live).join("shop/pricing.py");
    let indexed = std::fs::read_to_string(&pricing).unwrap();
    let text = |live: &Live| live.read(|s| s.engine().text("shop/pricing.py"));
    assert_eq!(text(&live).as_deref(), Some(indexed.as_str()));
    let edited = indexed.replace("def discount(amount)", "def discount(amount, rate=0.1)");
    assert_ne!(edited, indexed);
    std::fs::write(&pricing, &edited).unwrap();
    assert_eq!(text(&live), None);
    let refused = live.read(|s| s.read_with_context("shop/pricing.py").map_err(|e| e.code()));
    assert_eq!(refused, Err("file_changed"));
    let report = live.apply(std::slice::from_ref(&pricing), "test").unwrap();
    assert_eq!(report.modified, ["shop/pricing.py"]);
    assert_eq!(text(&live).as_deref(), Some(edited.as_str()));
    let context = live.read(|s| s.read_with_context("shop/pricing.py").unwrap());
    assert!(
        context.contains("def discount(amount, rate=0.1)"),
        "{context}"
    );
}

#[test]
fn reads_are_fresh_even_without_a_watcher() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let before = live.read_fresh(&Involved::Dependencies("main.py".into()), |s| {
        s.read_with_context("main.py").unwrap()
    });
    assert!(before.contains("def discount(amount)"), "{before}");
    // A dependency changes on disk; nobody tells the service.
    let pricing = root.join("shop/pricing.py");
    let text = std::fs::read_to_string(&pricing).unwrap();
    std::fs::write(
        &pricing,
        text.replace("def discount(amount)", "def discount(amount, rate=0.1)"),
    )
    .unwrap();
    let after = live.read_fresh(&Involved::Dependencies("main.py".into()), |s| {
        s.read_with_context("main.py").unwrap()
    });
    assert!(after.contains("def discount(amount, rate=0.1)"), "{after}");
    // A dependency deleted behind the service's back: the deleted-import note names
    // the file and when it went.
    std::fs::remove_file(&pricing).unwrap();
    let gone = live.read_fresh(&Involved::Dependencies("main.py".into()), |s| {
        s.read_with_context("main.py").unwrap()
    });
    assert!(
        gone.contains("imports shop.pricing from shop/pricing.py, which was deleted at"),
        "{gone}"
    );
}

/// A rename no watcher reported: the answer that finds the old name gone
/// takes in the new one in the same update, so it shows the dependent under
/// its new name, and nothing is left for a watcher's update after it.
#[test]
fn a_rename_is_read_whole_without_a_watcher() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let involved = Involved::Dependents("shop/pricing.py".into());
    let sources = |live: &Live| -> Vec<String> {
        live.read_fresh(&involved, |s| {
            let mut files: Vec<String> = s
                .dependents("shop/pricing.py")
                .unwrap()
                .into_iter()
                .map(|r| r.source_file)
                .collect();
            files.sort();
            files.dedup();
            files
        })
    };
    assert!(sources(&live).contains(&"main.py".to_string()));
    std::fs::rename(root.join("main.py"), root.join("entry.py")).unwrap();
    let after = sources(&live);
    assert!(after.contains(&"entry.py".to_string()), "{after:?}");
    assert!(!after.contains(&"main.py".to_string()), "{after:?}");
    let again = live.apply(&[root.join("main.py"), root.join("entry.py")], "watcher");
    assert!(
        !again.unwrap().changed(),
        "the read took in the whole rename"
    );
    assert_same_as_scratch(&live, "after a rename read without a watcher");
}

/// Never older than the disk, new files included. A file created a
/// moment ago, unseen by any watcher, is read with its content and context.
#[test]
fn a_new_file_is_read_with_context_without_a_watcher() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    std::fs::write(
        root.join("fresh.py"),
        "from shop.pricing import discount\n\nprint(discount(3))\n",
    )
    .unwrap();
    let read = live.read_fresh(&Involved::Dependencies("fresh.py".into()), |s| {
        s.read_with_context("fresh.py")
    });
    let text = read.expect("a file created on disk is read, not file_not_found");
    assert!(text.contains("def discount(amount)"), "{text}");
    assert!(text.contains("print(discount(3))"), "{text}");
    // Its import is now a dependent of the imported file, for everyone.
    let dependents = live.read(|s| s.dependents("shop/pricing.py").unwrap());
    assert!(dependents.iter().any(|r| r.source_file == "fresh.py"));
    // Paths that are not indexable stay errors: outside the root, missing.
    let missing = live.read_fresh(&Involved::Dependencies("nope.py".into()), |s| {
        s.read_with_context("nope.py")
    });
    assert!(missing.is_err());
    let outside = live.read_fresh(&Involved::Dependencies("../x.py".into()), |s| {
        s.read_with_context("../x.py")
    });
    assert!(outside.is_err());
}

#[test]
fn readers_keep_answering_while_updates_apply() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (live, stop) = (live.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    let count = live.read(|s| s.relationships().len());
                    assert!(count > 0);
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    let main = root.join("main.py");
    let original = std::fs::read_to_string(&main).unwrap();
    for i in 0..40 {
        let text = if i % 2 == 0 {
            format!("from shop.models import make_item\nmake_item()\n{original}")
        } else {
            original.clone()
        };
        std::fs::write(&main, text).unwrap();
        live.apply(std::slice::from_ref(&main), "test").unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        assert!(reader.join().expect("reader did not panic") > 0);
    }
    assert_same_as_scratch(&live, "after concurrent reads");
}

/// A native watcher that never starts, counting the attempts.
static FAILING_ATTEMPTS: AtomicUsize = AtomicUsize::new(0);

fn failing_native(_: mpsc::Sender<Message>) -> notify::Result<Box<dyn notify::Watcher + Send>> {
    FAILING_ATTEMPTS.fetch_add(1, Ordering::SeqCst);
    Err(notify::Error::new(notify::ErrorKind::MaxFilesWatch))
}

fn write_importer(root: &Path, name: &str) -> PathBuf {
    let path = root.join(name);
    std::fs::write(&path, "from shop.models import make_item\n\nmake_item()\n").unwrap();
    path
}

#[test]
fn a_failing_watcher_falls_back_to_polling_and_retries_with_backoff() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let options = watch::Options {
        poll_interval: Duration::from_millis(50),
        backoff_unit: Duration::from_millis(5),
        force_poll: false,
        native: failing_native,
        ..watch::Options::default()
    };
    let (updates, received) = mpsc::channel();
    let watcher = Watch::start(live.clone(), options, move |report| {
        let _ = updates.send(report.added.clone());
    });
    // One start and five retries after 1, 2, 4, 8, 16 units.
    wait_until("the watcher gives up", || watcher.status().gave_up);
    let status = watcher.status();
    assert_eq!(status.failures, 6, "{status:?}");
    assert_eq!(FAILING_ATTEMPTS.load(Ordering::SeqCst), 6);
    assert_eq!(status.mode, "poll");
    assert!(status.watched_dirs >= 4, "{status:?}");
    // Polling still delivers changes, in a new directory too.
    std::fs::create_dir(root.join("extra")).unwrap();
    write_importer(&root, "extra/new_user.py");
    let added = received
        .recv_timeout(Duration::from_secs(20))
        .expect("an update");
    assert_eq!(added, ["extra/new_user.py"]);
    assert!(dependents(&live, "shop/models.py").contains(&"extra/new_user.py".to_string()));
}

/// The sender of the watcher [`injecting_native`] made last.
static INJECT: std::sync::Mutex<Option<mpsc::Sender<Message>>> = std::sync::Mutex::new(None);

/// The platform's watcher, whose events go where the watcher's thread
/// reads them; the sender is kept so a test can add events of its own.
fn injecting_native(
    sender: mpsc::Sender<Message>,
) -> notify::Result<Box<dyn notify::Watcher + Send>> {
    *INJECT.lock().unwrap() = Some(sender.clone());
    let watcher = notify::recommended_watcher(move |event| {
        let _ = sender.send(Message::Event(event));
    })?;
    Ok(Box::new(watcher))
}

#[test]
fn access_events_never_hold_a_change_back() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    // A batch that only a quiet spell closes: were access events (our own
    // reads raise them) to keep it open, no change would ever be taken.
    let options = watch::Options {
        force_poll: false,
        max_batch: Duration::from_secs(3600),
        native: injecting_native,
        ..watch::Options::default()
    };
    let watcher = Watch::start(live.clone(), options, |_| {});
    wait_until("the watcher runs", || watcher.status().mode == "native");
    let inject = INJECT
        .lock()
        .unwrap()
        .clone()
        .expect("the watcher's sender");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reads = {
        let stop = stop.clone();
        let path = root.join("shop/models.py");
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let event =
                    notify::Event::new(notify::EventKind::Access(notify::event::AccessKind::Any))
                        .add_path(path.clone());
                if inject.send(Message::Event(Ok(event))).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    write_importer(&root, "tools/new_user.py");
    wait_until("the new importer is a dependent amid access events", || {
        dependents(&live, "shop/models.py").contains(&"tools/new_user.py".to_string())
    });
    stop.store(true, Ordering::SeqCst);
    reads.join().unwrap();
}

#[test]
fn the_native_watcher_sees_creations_edits_renames_and_deletions() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let options = watch::Options {
        force_poll: false,
        ..watch::Options::default()
    };
    let watcher = Watch::start(live.clone(), options, |_| {});
    wait_until("the watcher runs", || watcher.status().mode == "native");
    let has = |file: &str| dependents(&live, "shop/models.py").contains(&file.to_string());

    let importer = write_importer(&root, "tools/new_user.py");
    wait_until("the new importer is a dependent", || {
        has("tools/new_user.py")
    });

    std::fs::write(&importer, "def unrelated():\n    return 1\n").unwrap();
    wait_until("the removed import is gone", || !has("tools/new_user.py"));

    write_importer(&root, "tools/new_user.py");
    wait_until("the import is back", || has("tools/new_user.py"));
    std::fs::rename(&importer, root.join("renamed_user.py")).unwrap();
    wait_until("the rename is seen", || {
        has("renamed_user.py") && !has("tools/new_user.py")
    });

    std::fs::rename(root.join("tools"), root.join("scripts")).unwrap();
    wait_until("the moved directory is seen", || {
        has("scripts/report.py") && !has("tools/report.py")
    });

    std::fs::remove_file(root.join("renamed_user.py")).unwrap();
    wait_until("the deleted file is gone", || !has("renamed_user.py"));

    // A sub-project marker is seen too: shop/ searches itself first.
    let uses_pricing =
        || dependents(&live, "shop/pricing.py").contains(&"shop/user.py".to_string());
    std::fs::write(root.join("shop/user.py"), "import pricing\n").unwrap();
    wait_until("the new file is indexed", || {
        live.read(|s| s.engine().contains("shop/user.py"))
    });
    assert!(!uses_pricing());
    std::fs::write(root.join("shop/setup.cfg"), "[metadata]\nname = shop\n").unwrap();
    wait_until("the sub-project is seen", uses_pricing);
    std::fs::remove_file(root.join("shop/setup.cfg")).unwrap();
    wait_until("the sub-project is gone", || !uses_pricing());
    assert_same_as_scratch(&live, "after watched changes");
}

// --- incremental equals from-scratch, 500 edits on disk ----------------

/// Lines the random edits insert: imports of every form, re-exports, star
/// imports, `__all__`, calls, bases, and a syntax error.
const SNIPPETS: &[&str] = &[
    "from shop.models import Item\n",
    "from shop import *\n",
    "from .models import Order\n",
    "from . import pricing\n",
    "import shop.pricing\n",
    "from shop.api.client import Client\n",
    "from shop.api import *\n",
    "from main import run\n",
    "from tools.report import *\n",
    "from shop.pricing import price as cost\n",
    "from .pricing import discount\n",
    "run()\n",
    "Item()\n",
    "cost(3)\n",
    "price(1)\n",
    "make_item()\n",
    "shop.pricing.discount(2)\n",
    "class Sub(Item):\n    pass\n",
    "class Remote(Client):\n    pass\n",
    "def helper():\n    return discount(2)\n",
    "__all__ = [\"price\"]\n",
    "__all__ = [\"Item\", \"make_item\", \"helper\"]\n",
    "def broken(:\n",
    // Resolve only inside a sub-project (shop/, tools/ as one), or to a
    // module too large to index.
    "import models\n",
    "from api.client import Client\n",
    "import report\n",
    "import extra.huge\n",
];

const DIRS: &[&str] = &["", "shop", "shop/api", "tools", "extra"];

fn python_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// One random edit; returns the paths it touched (as a watcher would see them).
fn random_edit(root: &Path, rng: &mut common::Lcg, step: usize) -> Vec<PathBuf> {
    let files = python_files(root);
    let path = files[rng.below(files.len())].clone();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    let write = |lines: &[String]| std::fs::write(&path, lines.concat()).unwrap();
    match rng.below(12) {
        0 | 1 => {
            let at = rng.below(lines.len() + 1);
            lines.insert(
                at.min(lines.len()),
                SNIPPETS[rng.below(SNIPPETS.len())].into(),
            );
            write(&lines);
        }
        2 if !lines.is_empty() => {
            lines.remove(rng.below(lines.len()));
            write(&lines);
        }
        3 => {
            std::fs::write(&path, text.replacen("def ", "def renamed_", 1)).unwrap();
        }
        4 => {
            let dir = root.join(DIRS[rng.below(DIRS.len())]);
            std::fs::create_dir_all(&dir).unwrap();
            let to = dir.join(format!("moved_{step}.py"));
            std::fs::rename(&path, &to).unwrap();
            return vec![path, to];
        }
        5 if files.len() > 4 => {
            std::fs::remove_file(&path).unwrap();
        }
        6 => {
            let dir = root.join(DIRS[rng.below(DIRS.len())]);
            std::fs::create_dir_all(&dir).unwrap();
            let new = dir.join(format!("new_{step}.py"));
            let body: String = (0..3)
                .map(|_| SNIPPETS[rng.below(SNIPPETS.len())])
                .collect();
            std::fs::write(&new, body).unwrap();
            return vec![new];
        }
        7 => {
            // Introduce a syntax error, or fix the one that is there.
            if text.contains("def broken(:\n") {
                std::fs::write(&path, text.replace("def broken(:\n", "")).unwrap();
            } else {
                lines.push("def broken(:\n".into());
                write(&lines);
            }
        }
        9 => {
            // A sub-project marker appears or goes (not at the root: that
            // is the project's own configuration).
            let dirs: Vec<&&str> = DIRS.iter().filter(|d| !d.is_empty()).collect();
            let dir = root.join(dirs[rng.below(dirs.len())]);
            let marker = dir.join(["pyproject.toml", "setup.py", "setup.cfg"][rng.below(3)]);
            if marker.exists() {
                std::fs::remove_file(&marker).unwrap();
            } else {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&marker, "").unwrap();
            }
            return vec![marker];
        }
        10 => {
            // A module grows past the size limit, or shrinks back.
            let huge = root.join("extra/huge.py");
            if huge.exists() {
                std::fs::remove_file(&huge).unwrap();
            } else {
                std::fs::create_dir_all(root.join("extra")).unwrap();
                std::fs::write(&huge, "VALUE = 1\n".repeat(10_001)).unwrap();
            }
            return vec![huge];
        }
        8 => {
            let all = [
                "__all__ = [\"price\"]\n",
                "__all__ = [\"Item\", \"Order\"]\n",
                "",
            ];
            let new_all = all[rng.below(all.len())];
            lines.retain(|l| !l.starts_with("__all__"));
            lines.push(new_all.into());
            write(&lines);
        }
        _ => {
            // Move a whole directory (a package rename), if there is one.
            let dirs: Vec<&&str> = DIRS.iter().filter(|d| !d.is_empty()).collect();
            let from = root.join(dirs[rng.below(dirs.len())]);
            if from.is_dir() && !from.ends_with("shop") {
                let to = root.join(format!("pkg_{step}"));
                std::fs::rename(&from, &to).unwrap();
                return vec![from, to];
            }
        }
    }
    vec![path]
}

#[test]
fn five_hundred_disk_edits_match_a_fresh_index_invariant_6() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let mut rng = common::Lcg(7);
    let mut edits = 0;
    for batch in 0..50 {
        let mut touched = Vec::new();
        for i in 0..10 {
            touched.extend(random_edit(&root, &mut rng, batch * 10 + i));
            edits += 1;
        }
        live.apply(&touched, "test").unwrap();
        assert_same_as_scratch(&live, &format!("after batch {batch}"));
    }
    assert_eq!(edits, 500);
}

#[test]
fn sub_project_markers_and_oversized_modules_change_resolution_live() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let deps = |live: &Live, file: &str| {
        live.read(|s| {
            s.dependencies(file)
                .unwrap()
                .iter()
                .map(|r| r.target_file.clone())
                .collect::<Vec<_>>()
        })
    };
    let user = root.join("shop/user.py");
    std::fs::write(&user, "import models\n").unwrap();
    live.apply(std::slice::from_ref(&user), "test").unwrap();
    assert_eq!(deps(&live, "shop/user.py"), ["<third-party:models>"]);
    // shop/ becomes a sub-project: its own directory is searched first.
    let marker = root.join("shop/setup.py");
    std::fs::write(&marker, "").unwrap();
    let report = live.apply(std::slice::from_ref(&marker), "test").unwrap();
    assert!(report.layout_changed && report.changed(), "{report:?}");
    assert_eq!(deps(&live, "shop/user.py"), ["shop/models.py"]);
    assert_same_as_scratch(&live, "after a sub-project marker appeared");
    std::fs::remove_file(&marker).unwrap();
    let report = live.apply(std::slice::from_ref(&marker), "test").unwrap();
    assert!(report.layout_changed, "{report:?}");
    assert_eq!(deps(&live, "shop/user.py"), ["<third-party:models>"]);
    assert_same_as_scratch(&live, "after the marker went");
    // A module that grows past the size limit stays a target.
    let pricing = root.join("shop/pricing.py");
    let text = std::fs::read_to_string(&pricing).unwrap();
    std::fs::write(&pricing, format!("{text}{}", "\n".repeat(10_001))).unwrap();
    let report = live.apply(std::slice::from_ref(&pricing), "test").unwrap();
    assert_eq!(report.removed, ["shop/pricing.py"]);
    assert!(report.layout_changed, "{report:?}");
    assert!(deps(&live, "main.py").contains(&"shop/pricing.py".to_string()));
    assert_same_as_scratch(&live, "after a module grew too large");
    std::fs::write(&pricing, text).unwrap();
    let report = live.apply(std::slice::from_ref(&pricing), "test").unwrap();
    assert_eq!(report.added, ["shop/pricing.py"]);
    assert_same_as_scratch(&live, "after it shrank back");
}

// --- over MCP, with the server's own watcher -----------------------------

fn mcp_dependents(client: &mut common::mcp_client::Client, file: &str) -> Vec<String> {
    let (is_error, text) = client.call(
        "get_dependents",
        serde_json::json!({"file_path": file, "format": "json"}),
    );
    assert!(!is_error, "{text}");
    let found: serde_json::Value = serde_json::from_str(&text).unwrap();
    found["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["source_file"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The end-to-end live-update scenario: a new importer, a
/// removed import, a deleted file and a renamed one, each seen through
/// `get_dependents` while the server runs.
fn server_follows_the_disk(env: &[(&str, &str)], trigger: &str) {
    let dir = common::copy_fixture("live_edits");
    let root = dir.path().canonicalize().unwrap();
    // explain_recomputation is an operations tool, off by default.
    std::fs::write(
        root.join(".cross_file_context_links.yml"),
        "enabled_tools: [explain_recomputation]\n",
    )
    .unwrap();
    let mut client = common::mcp_client::Client::start_with_env(&root, env);
    assert!(mcp_dependents(&mut client, "shop/models.py").contains(&"tools/report.py".into()));

    // A new file is taken in by the watcher with nobody asking (a read
    // would take it in itself: its directory changed).
    let importer = write_importer(&root, "new_user.py");
    wait_until("the watcher takes the new file in", || {
        let (_, text) = client.call("explain_recomputation", serde_json::json!({}));
        let explained: serde_json::Value = serde_json::from_str(&text).unwrap();
        explained["updates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["trigger"] == trigger && u["added"] == serde_json::json!(["new_user.py"]))
    });
    let mut has = |file: &str| mcp_dependents(&mut client, "shop/models.py").contains(&file.into());
    assert!(has("new_user.py"));
    std::fs::write(&importer, "VALUE = 1\n").unwrap();
    wait_until("the removed import is gone", || !has("new_user.py"));
    std::fs::rename(root.join("tools/report.py"), root.join("tools/summary.py")).unwrap();
    wait_until("the renamed file is seen", || {
        has("tools/summary.py") && !has("tools/report.py")
    });
    std::fs::remove_file(root.join("tools/summary.py")).unwrap();
    wait_until("the deleted file is gone", || !has("tools/summary.py"));

    // Deleting a dependency: its dependents get the deleted-import note.
    std::fs::remove_file(root.join("shop/pricing.py")).unwrap();
    let (_, text) = client.call(
        "read_with_context",
        serde_json::json!({"file_path": "main.py"}),
    );
    assert!(
        text.contains("imports shop.pricing from shop/pricing.py, which was deleted at"),
        "{text}"
    );

    let (_, text) = client.call("explain_recomputation", serde_json::json!({}));
    let explained: serde_json::Value = serde_json::from_str(&text).unwrap();
    let updates = explained["updates"].as_array().unwrap();
    assert!(
        updates
            .iter()
            .any(|u| u["added"] == serde_json::json!(["new_user.py"])
                && u["datalog_rerun"] == true
                && u["queries"]["executed"]
                    .as_array()
                    .unwrap()
                    .contains(&"module_facts(new_user.py)".into())),
        "{text}"
    );
    // Both halves of the rename in one update: the watcher's, or a read's
    // that found the old name gone and took in the file beside it.
    assert!(
        updates
            .iter()
            .any(|u| u["added"] == serde_json::json!(["tools/summary.py"])
                && u["removed"] == serde_json::json!(["tools/report.py"])),
        "{text}"
    );
    assert_eq!(
        explained["watcher"]["mode"],
        if trigger == "poll" { "poll" } else { "native" }
    );
}

#[test]
fn the_server_follows_the_disk_with_native_events() {
    server_follows_the_disk(&[], "watcher");
}

#[test]
fn the_server_follows_the_disk_by_polling_when_asked() {
    server_follows_the_disk(&[("XFILE_WATCHER", "poll")], "poll");
}

#[test]
fn a_settings_change_re_indexes_and_matches_a_fresh_index() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    std::fs::write(root.join("tools/check_dispatch.py"), "exec(\"x = 1\")\n").unwrap();
    live.apply(&[root.join("tools/check_dispatch.py")], "test")
        .unwrap();
    let exec_warned = |live: &Live| {
        live.read(|s| {
            s.warnings(Some("tools/check_dispatch.py"))
                .unwrap()
                .warnings
                .len()
        })
    };
    assert_eq!(exec_warned(&live), 1);
    // pytest now treats check_*.py as tests: exec/eval is expected there.
    let settings = root.join("pytest.ini");
    std::fs::write(&settings, "[pytest]\npython_files = check_*.py\n").unwrap();
    let report = live.apply(&[settings], "test").unwrap();
    assert!(report.reloaded);
    assert_eq!(exec_warned(&live), 0);
    assert_same_as_scratch(&live, "after a pytest settings change");
    // The configuration file likewise.
    let config = root.join(".cross_file_context_links.yml");
    std::fs::write(&config, "ignore_patterns: [\"tools/**\"]\n").unwrap();
    assert!(live.apply(&[config], "test").unwrap().reloaded);
    assert!(!live.read(|s| s.engine().contains("tools/report.py")));
    assert_same_as_scratch(&live, "after a configuration change");
}

/// `xfile watch --dump DIR`: per update, the recomputation trace and the
/// derivations of the changed files.
#[test]
fn watch_dump_writes_recomputation_traces_and_derivations() {
    let dir = common::copy_fixture("live_edits");
    let root = dir.path().canonicalize().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["watch", "--dump"])
        .arg(out.path())
        .arg("--root")
        .arg(&root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("watch starts");
    // Written until the watcher has seen it: it may start after the write.
    let trace = || {
        std::fs::read_dir(out.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("recomputation.json"))
            .find(|p| p.exists())
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut n = 0;
    while trace().is_none() && Instant::now() < deadline {
        n += 1;
        std::fs::write(
            root.join("main.py"),
            format!("import shop\n\nshop.price({n})\n"),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let trace = trace().expect("a recomputation trace");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(report["modified"], serde_json::json!(["main.py"]));
    assert!(
        report["queries"]["executed"]
            .as_array()
            .unwrap()
            .contains(&"module_facts(main.py)".into())
    );
    let update = trace.parent().unwrap();
    assert!(update.join("recomputation.txt").exists());
    let derivations = std::fs::read_to_string(update.join("main.py.txt")).expect("derivations");
    assert!(
        derivations.contains("Imports(main.py, 1:7, shop/__init__.py)"),
        "{derivations}"
    );
}

/// `xfile watch` in a copy of `live_edits`, its stdout lines sent as they
/// come; returns once it says it is watching (edits after that are seen).
fn spawn_watch(root: &Path, args: &[&str]) -> (std::process::Child, mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .arg("watch")
        .args(args)
        .arg("--root")
        .arg(root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("watch starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut stderr = std::io::BufReader::new(stderr).lines();
    let started = stderr.next().and_then(Result::ok).unwrap_or_default();
    assert!(started.starts_with("watching"), "{started}");
    let (sender, lines) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// Lines until one satisfies `last` (or 20 seconds pass).
fn lines_until(lines: &mpsc::Receiver<String>, last: impl Fn(&str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let done = last(&line);
                seen.push(line);
                if done {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    seen
}

/// What follows an update is the live service's, whichever adapter runs
/// it: `xfile watch` logs the warnings an edit adds, as the MCP server does.
#[test]
fn watch_logs_the_warnings_an_edit_adds() {
    let dir = common::copy_fixture("live_edits");
    let root = dir.path().canonicalize().unwrap();
    let log = root.join(".cross_file_context_logs/warnings.jsonl");
    let (mut child, lines) = spawn_watch(&root, &[]);
    std::fs::write(
        root.join("dynamic.py"),
        "def call(obj, name):\n    return getattr(obj, name)()\n",
    )
    .unwrap();
    lines_until(&lines, |line| line.contains("dynamic.py"));
    wait_until("the new file's warning is logged", || {
        std::fs::read_to_string(&log).is_ok_and(|text| text.contains("dynamic.py"))
    });
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn watch_prints_the_relationships_an_edit_adds_and_the_trace_only_when_asked() {
    let dir = common::copy_fixture("live_edits");
    let root = dir.path().canonicalize().unwrap();
    let (mut child, lines) = spawn_watch(&root, &[]);
    let main = root.join("main.py");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, format!("from shop.models import make_item\n{text}")).unwrap();
    let seen = lines_until(&lines, |line| line.contains("make_item"));
    let _ = child.kill();
    let _ = child.wait();
    let output = seen.join("\n");
    assert!(
        seen.iter()
            .any(|l| l.starts_with("update ") && l.ends_with("modified main.py")),
        "{output}"
    );
    assert!(
        seen.iter()
            .any(|l| l.trim() == "+ main.py:1  import  make_item -> shop/models.py"),
        "{output}"
    );
    // The other imports moved down a line: that is no change.
    assert!(!output.contains("- main.py"), "{output}");
    assert!(!output.contains("executed:"), "{output}");

    // --json --trace: one object per update, with the recomputation.
    let (mut child, lines) = spawn_watch(&root, &["--json", "--trace"]);
    std::fs::write(&main, text).unwrap();
    let seen = lines_until(&lines, |line| line.contains("make_item"));
    let _ = child.kill();
    let _ = child.wait();
    let update: serde_json::Value =
        serde_json::from_str(seen.last().expect("an update")).expect("one JSON object a line");
    assert_eq!(update["modified"], serde_json::json!(["main.py"]));
    assert_eq!(update["relationships"]["removed_total"], 1);
    assert_eq!(
        update["relationships"]["removed"][0],
        serde_json::json!({
            "source_file": "main.py",
            "line_number": 1,
            "relationship_type": "import",
            "target_symbol": "make_item",
            "target_file": "shop/models.py",
            "defined_in": "shop/models.py",
        })
    );
    assert!(
        update["trace"]["queries"]["executed"]
            .as_array()
            .expect("executed queries")
            .contains(&"module_facts(main.py)".into()),
        "{update}"
    );
}

/// What an update changed, seen from every file: removing a module takes
/// away the relationships of the files that used it, and adds the
/// unresolved import that remains.
#[test]
fn graph_changes_cover_files_the_update_did_not_touch() {
    use xfile::service::changes::GraphTracker;
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let mut tracker = live.read(GraphTracker::new);
    let pricing = root.join("shop/pricing.py");
    std::fs::remove_file(&pricing).unwrap();
    let report = live.apply(std::slice::from_ref(&pricing), "test").unwrap();
    let changes = tracker.update(&live, &report);
    let line = |e: &xfile::service::changes::Edge| {
        format!(
            "{}:{} {} -> {}",
            e.source_file,
            e.line_number,
            e.target_symbol.as_deref().unwrap_or("-"),
            e.target_file
        )
    };
    let removed: Vec<String> = changes.relationships.removed.iter().map(line).collect();
    assert!(
        removed.contains(&"main.py:2 discount -> shop/pricing.py".to_string()),
        "{removed:?}"
    );
    assert!(
        removed.contains(&"shop/pricing.py:1 Item -> shop/models.py".to_string()),
        "{removed:?}"
    );
    let added: Vec<String> = changes.relationships.added.iter().map(line).collect();
    for unresolved in [
        "main.py:2 discount -> <unresolved:shop.pricing>",
        "shop/__init__.py:2 * -> <unresolved:.pricing>",
    ] {
        assert!(added.contains(&unresolved.to_string()), "{added:?}");
    }
    assert_eq!(
        changes.relationships.removed_total,
        changes.relationships.removed.len()
    );

    // Back again: the same relationships return, and nothing else changed.
    std::fs::write(
        &pricing,
        std::fs::read_to_string(common::fixture("live_edits/shop/pricing.py")).unwrap(),
    )
    .unwrap();
    let report = live.apply(&[pricing], "test").unwrap();
    let back = tracker.update(&live, &report);
    let mut returned: Vec<String> = back.relationships.added.iter().map(line).collect();
    let mut went: Vec<String> = changes.relationships.removed.iter().map(line).collect();
    returned.sort();
    went.sort();
    assert_eq!(returned, went);
    // A body edit that only moves lines changes nothing.
    let main = root.join("main.py");
    let text = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, format!("\n\n{text}")).unwrap();
    let report = live.apply(&[main], "test").unwrap();
    let moved = tracker.update(&live, &report);
    assert!(
        moved.relationships.is_empty() && moved.warnings.is_empty(),
        "{moved:?}"
    );
}

/// An update reads the indexed files under the changed paths by ranges of
/// the sorted paths: a deleted directory takes its own files only, not the
/// module beside it with the same stem (`helpers.py` next to `helpers/`) nor
/// a sibling whose name starts the same (`helpers_more.py`).
#[test]
fn a_deleted_directory_takes_only_its_own_files() {
    let (_dir, live) = live_copy("package_vs_module");
    let root = root_of(&live);
    std::fs::write(root.join("helpers_more.py"), "import helpers\n").unwrap();
    live.apply(&[root.join("helpers_more.py")], "test").unwrap();
    std::fs::remove_dir_all(root.join("helpers")).unwrap();
    let report = live.apply(&[root.join("helpers")], "test").unwrap();
    let paths: Vec<String> = live.read(|s| s.engine().paths().map(str::to_string).collect());
    assert!(
        !paths.contains(&"helpers/extra.py".to_string()),
        "{paths:?}"
    );
    for kept in ["helpers.py", "helpers_more.py", "main.py", "utils.py"] {
        assert!(paths.contains(&kept.to_string()), "{kept}: {paths:?}");
    }
    assert_eq!(report.removed, ["helpers/extra.py"]);
    assert_same_as_scratch(&live, "after a directory was deleted");
}

/// A file a reader expects to edit is prepared in the background once
/// updates pause (`Live::expect_edit`), the answers stay those of a fresh
/// index, and an edit of it afterwards is seen as usual.
#[test]
fn a_file_expected_to_be_edited_is_prepared_after_a_pause() {
    let (_dir, live) = live_copy("member_calls");
    let path = "shop/models.py".to_string();
    let unprepared = |live: &Live| live.read(|s| s.unprepared(std::slice::from_ref(&path)));
    assert_eq!(unprepared(&live), std::slice::from_ref(&path));
    live.expect_edit(&path, Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !unprepared(&live).is_empty() {
        assert!(Instant::now() < deadline, "never prepared");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_same_as_scratch(&live, "after preparing");
    let file = root_of(&live).join(&path);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("import os\n{text}")).unwrap();
    live.apply(std::slice::from_ref(&file), "test")
        .expect("applies");
    assert_same_as_scratch(&live, "after the prepared file's edit");
}

/// As a server starts, the files modified last (within a day) are
/// expected to be edited (`Live::expect_recent_edits`), and so prepared
/// once updates pause; files older than that are not.
#[test]
fn the_files_modified_last_are_prepared_as_a_server_starts() {
    let dir = common::copy_fixture("member_calls");
    let long_ago = std::time::SystemTime::now() - Duration::from_secs(10 * 24 * 60 * 60);
    let recent = "shop/models.py".to_string();
    for entry in common::python_files(dir.path()) {
        if !entry.ends_with(&recent) {
            let file = std::fs::File::options()
                .write(true)
                .open(&entry)
                .expect("opens");
            file.set_modified(long_ago).expect("sets the time");
        }
    }
    let live = Live::open(dir.path()).expect("opens");
    let old = "shop/base.py".to_string();
    let unprepared = |live: &Live, path: &String| {
        !live
            .read(|s| s.unprepared(std::slice::from_ref(path)))
            .is_empty()
    };
    assert!(unprepared(&live, &recent) && unprepared(&live, &old));
    live.expect_recent_edits(Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_secs(20);
    while unprepared(&live, &recent) {
        assert!(Instant::now() < deadline, "never prepared");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        unprepared(&live, &old),
        "a file last modified ten days ago was prepared"
    );
    assert_same_as_scratch(&live, "after preparing the files modified last");
}

/// A file created an instant before a question about another file is in
/// its answer, with no watcher: the freshness check sees it in its
/// directory's modification time, however soon after the last one it was
/// created (two in one tick of the file system's clock), and in a
/// directory created with it.
#[test]
fn files_created_an_instant_before_a_question_are_in_its_answer() {
    let (_dir, live) = live_copy("live_edits");
    let root = root_of(&live);
    let involved = Involved::Dependents("shop/pricing.py".into());
    for round in 0..100 {
        let path = if round % 10 == 9 {
            let dir = format!("fresh_{round}");
            std::fs::create_dir(root.join(&dir)).unwrap();
            format!("{dir}/made_{round}.py")
        } else {
            format!("made_{round}.py")
        };
        std::fs::write(root.join(&path), "from shop.pricing import discount\n").unwrap();
        let sources: Vec<String> = live.read_fresh(&involved, |s| {
            s.dependents("shop/pricing.py")
                .unwrap()
                .iter()
                .map(|r| r.source_file.clone())
                .collect()
        });
        assert!(
            sources.contains(&path),
            "round {round}: {path} not in {sources:?}"
        );
    }
    assert_same_as_scratch(&live, "after 100 files created and asked about at once");
}
