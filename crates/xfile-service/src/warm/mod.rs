//! The warm-start cache, two files in `.xfile_cache/`:
//!
//! - `index.bin`: each file's parse and extraction (`ModuleFacts`, the
//!   costliest part of a cold index) by content hash, so a restart that
//!   must index parses only the files whose text changed. Everything
//!   downstream (resolution, rules) is derived again, so such a start
//!   answers exactly as a cold one: a cached entry is used only for the
//!   very text (SHA-256) it was extracted from, and only from a file
//!   written with the same key.
//! - `answers.bin` (`answers.rs`): the answers that must come at once
//!   (`deps`, `dependents`, a server's first answers of those) with the
//!   state of the tree they hold for, compared by stamps before anything
//!   is read; any difference and the start indexes as above.
//!
//! Why not salsa's `persistence` feature (salsa 0.28.5, with `inventory`):
//! it serializes the whole database, inputs and every memo opted in, and a
//! persisted memo's dependencies must be persisted too. Ours would need
//! the engine's own `Interner` (its ids are in every stage tuple, and it
//! lives outside salsa) saved in lockstep, serde on the crepe-generated
//! relation types, and the matchers (`GlobSet`s) rebuilt rather than
//! stored. Even then a start would read every file to set the text inputs,
//! decode the whole database (the stage outputs of 2,800 files) and let
//! salsa re-verify every memo before the first answer: far over a tenth of
//! a cold index. The answers file skips all of that for the common case
//! (nothing changed) and is a rendering of what the engine answers, so it
//! cannot disagree with it.

pub mod answers;
pub(crate) mod disk;
pub mod format;
mod stamps;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::Serialize;

use self::answers::Tree;
use self::format::{Entry, Hash, sha256};
pub(crate) use self::stamps::now;
use crate::model::Relationship;
use xfile_engine::{Engine, FileText, TextRef};
use xfile_python::ModuleFacts;
use xfile_workspace::config::Config;
use xfile_workspace::{Notice, NoticeKind};

pub use self::disk::{DIR, FILE, Leftovers};

/// A file whose facts encode larger than this is parsed on every start.
const MAX_RECORD: usize = 8 * 1024 * 1024;
/// The cache file never grows past this; files past it are parsed again.
const MAX_BYTES: usize = 512 * 1024 * 1024;
/// While serving, the cache is written at most this often.
const WRITE_EVERY: Duration = Duration::from_secs(30);

/// `--no-cache`: set once by the CLI before any project opens.
static DISABLED: AtomicBool = AtomicBool::new(false);

pub fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

pub(crate) fn enabled() -> bool {
    !DISABLED.load(Ordering::Relaxed)
}

/// Creates the cache directory before an index reads the tree: created
/// later, it would change the root's stamp after the read began, and the
/// answers that index writes would not be trusted by the next start.
pub(crate) fn prepare(root: &Path) {
    if enabled() {
        let _ = disk::ensure_dir(root);
        disk::sweep_leftovers(root);
    }
}

/// At a start that answers without indexing: the temporary files writers
/// that are gone (a `kill -9`) left are removed, as an index's start
/// removes them ([`prepare`]).
pub fn sweep_leftovers(root: &Path) {
    if enabled() {
        disk::sweep_leftovers(root);
    }
}

/// What a cache is valid for: this xfile build (version, the rules and the
/// front end's sources, hashed by `build.rs`), the configuration and the
/// search roots. The facts depend only on the text and the front end; the
/// rest is in the key to be safe, and costs at most a rebuild.
#[derive(Clone, Debug)]
pub(crate) struct Key {
    digest: Hash,
    /// The answers' key: also the sources of discovery, the engine and the
    /// rendering, which the answers come from and the facts do not.
    answers: Hash,
}

impl Key {
    /// `sub_projects` are the search roots discovery found; the configured
    /// ones (`extra_search_paths`) are part of `config`.
    pub(crate) fn new(config: &Config, sub_projects: &[String]) -> Key {
        let config = serde_json::to_vec(config).unwrap_or_default();
        let text = format!(
            "xfile {}\nformat {}\nrules {}\nfront end {}\nconfig {}\nsub-projects {:?}\n",
            env!("CARGO_PKG_VERSION"),
            format::FORMAT,
            xfile_engine::cache_keys::RULES,
            xfile_engine::cache_keys::FRONT_END,
            hex(&sha256(&config)),
            sub_projects,
        );
        let digest = sha256(text.as_bytes());
        let answers = format!(
            "{}\nengine {}\nanswers {}\n",
            hex(&digest),
            xfile_engine::cache_keys::ENGINE,
            env!("XFILE_ANSWERS_HASH")
        );
        Key {
            digest,
            answers: sha256(answers.as_bytes()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Cached facts by path, for one start.
pub(crate) struct Loaded {
    facts: FxHashMap<String, (Hash, Arc<ModuleFacts>)>,
    /// Why an existing cache file was not used.
    pub notice: Option<String>,
}

/// How a start used the cache.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Outcome {
    /// Files whose facts came from the cache.
    pub reused: usize,
    /// Files parsed (new, changed, or no usable cache).
    pub parsed: usize,
    /// Why the cache file was rebuilt, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

/// Reads the cache for `key`; a missing, foreign or damaged file gives an
/// empty one (with a notice, except when there is none at all).
pub(crate) fn load(root: &Path, key: &Key) -> Loaded {
    let mut loaded = Loaded {
        facts: FxHashMap::default(),
        notice: None,
    };
    if !enabled() {
        return loaded;
    }
    let bytes = match disk::read(root) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return loaded,
        Err(error) => {
            loaded.notice = Some(format!("cannot read the cache ({error}); rebuilding it"));
            return loaded;
        }
    };
    match format::decode(&bytes, &key.digest) {
        Ok(entries) => {
            loaded.facts = entries
                .into_iter()
                .map(|e| (e.path, (e.hash, e.facts)))
                .collect();
        }
        Err(rejected) => {
            loaded.notice = Some(format!(
                "{DIR}/{FILE} was not used: {rejected}; rebuilding it"
            ));
        }
    }
    loaded
}

impl Loaded {
    /// Each file with its cached facts when they were extracted from this
    /// very text, and how many were.
    pub(crate) fn attach(&self, files: Vec<(String, String)>) -> (Vec<FileText>, Outcome) {
        let files: Vec<FileText> = files
            .into_par_iter()
            .map(|(path, text)| {
                let facts = self.facts.get(&path).and_then(|(hash, facts)| {
                    (*hash == sha256(text.as_bytes())).then(|| Arc::clone(facts))
                });
                FileText { path, text, facts }
            })
            .collect();
        let reused = files.iter().filter(|f| f.facts.is_some()).count();
        let outcome = Outcome {
            reused,
            parsed: files.len() - reused,
            notice: self.notice.clone(),
        };
        (files, outcome)
    }

    /// Whether the cache on disk says what the engine holds now: every file
    /// reused and no other entry.
    pub(crate) fn is_current(&self, outcome: &Outcome) -> bool {
        outcome.parsed == 0 && outcome.reused == self.facts.len() && self.notice.is_none()
    }
}

fn write(root: &Path, key: &Key, entries: &[Entry]) -> std::io::Result<()> {
    disk::write(
        root,
        &format::encode(&key.digest, entries, MAX_RECORD, MAX_BYTES),
    )
}

/// Writes the cache for a project just indexed, and afterwards, while
/// serving, at most every [`WRITE_EVERY`] after updates, each time on a
/// thread of its own. A write that fails is logged and retried with a later
/// update: the cache is only a speed-up.
pub(crate) struct Writer {
    root: PathBuf,
    key: Key,
    /// What the answers file records besides the files (see `answers.rs`).
    tree: Tree,
    /// [`WRITE_EVERY`]; shorter in tests.
    every: Duration,
    last: Mutex<Option<Instant>>,
    busy: Arc<AtomicBool>,
    /// The last write's thread, joined when the writer goes, so a command
    /// that answered still leaves its cache behind before it exits.
    pending: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.flush();
    }
}

impl Writer {
    pub(crate) fn new(root: &Path, key: Key, tree: Tree) -> Option<Writer> {
        enabled().then(|| Writer {
            root: root.to_path_buf(),
            key,
            tree,
            every: WRITE_EVERY,
            last: Mutex::new(None),
            busy: Arc::default(),
            pending: Mutex::default(),
        })
    }

    /// After the first index: the facts written now unless they are
    /// current already, and the answers unless they are.
    pub(crate) fn first(&self, engine: &Engine, current: bool) {
        self.stamp();
        if !self.busy.swap(true, Ordering::AcqRel) {
            self.spawn(engine, !current);
        }
    }

    /// After an update: written when the last write is old enough and no
    /// write is under way.
    pub(crate) fn updated(&self, engine: &Engine) {
        let due = self
            .last
            .lock()
            .map(|last| last.is_none_or(|at| at.elapsed() >= self.every))
            .unwrap_or(false);
        if !due || self.busy.swap(true, Ordering::AcqRel) {
            return;
        }
        self.stamp();
        self.spawn(engine, true);
    }

    /// Writes on a thread of its own. The engine snapshot is held only
    /// while the answers are rendered (when the answers on disk do not hold
    /// for the tree) and the facts and references to the texts taken; an
    /// update that comes meanwhile cancels that and the write waits for a
    /// later update. The texts are read back one by one and hashed, and
    /// everything encoded and written, after the snapshot is dropped, so no
    /// update waits for the disk, and a command's answer does not either.
    /// A text that changed on disk since it was indexed is left out.
    fn spawn(&self, engine: &Engine, facts: bool) {
        let snapshot = engine.clone();
        let (root, key, busy) = (self.root.clone(), self.key.clone(), Arc::clone(&self.busy));
        let tree = self.tree.clone();
        let handle = std::thread::spawn(move || {
            let started = Instant::now();
            let stale = answers::Prebuilt::open(&root).is_err() && answers::worth_writing(&tree);
            let taken = salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| {
                let rendered = stale.then(|| answers::render(&snapshot));
                let held: Vec<(String, TextRef, Arc<ModuleFacts>)> = if facts || stale {
                    snapshot
                        .paths()
                        .filter_map(|path| {
                            let facts = Arc::clone(snapshot.shared_facts(path)?);
                            Some((path.to_string(), snapshot.text_ref(path)?, facts))
                        })
                        .collect()
                } else {
                    Vec::new()
                };
                (rendered, held)
            }));
            drop(snapshot);
            tracing::debug!(
                ms = crate::elapsed_ms(started),
                stale,
                taken = taken.is_ok(),
                "warm-start cache taken"
            );
            if let Ok((rendered, held)) = taken {
                let entries: Vec<Entry> = held
                    .into_par_iter()
                    .filter_map(|(path, text, facts)| {
                        Some(Entry {
                            hash: sha256(text.read()?.as_bytes()),
                            path,
                            facts,
                        })
                    })
                    .collect();
                if facts && let Err(error) = write(&root, &key, &entries) {
                    tracing::warn!("cannot write the warm-start cache: {error}");
                }
                if let Some(rendered) = rendered {
                    let texts: Vec<(String, Hash)> =
                        entries.into_iter().map(|e| (e.path, e.hash)).collect();
                    if let Err(error) = answers::write(rendered, &texts, &root, &key, &tree) {
                        tracing::warn!("cannot write the warm-start answers: {error}");
                    }
                }
            }
            tracing::debug!(ms = crate::elapsed_ms(started), "warm-start cache written");
            busy.store(false, Ordering::Release);
        });
        if let Ok(mut pending) = self.pending.lock()
            && let Some(previous) = pending.replace(handle)
        {
            let _ = previous.join();
        }
    }

    /// Waits for the write under way, if any.
    pub(crate) fn flush(&self) {
        let handle = self
            .pending
            .lock()
            .ok()
            .and_then(|mut pending| pending.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }

    fn stamp(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(Instant::now());
        }
    }
}

/// The files besides the Python sources whose contents or state an index
/// depends on (root-relative, or absolute outside the root): settings,
/// sub-project markers, ignore files wherever the walk may read them
/// (entered directories, the root's ancestors, git's global ones), and the
/// files discovery skipped or decoded with a notice (an edit can change
/// that). Files that do not exist are listed too: creating one matters.
pub(crate) fn watched(
    root: &Path,
    dirs: &BTreeSet<PathBuf>,
    markers: &BTreeSet<String>,
    notices: &[Notice],
) -> Vec<String> {
    // `.git/info/exclude` too wherever a directory may be a repository.
    const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".git/info/exclude"];
    let mut out: Vec<String> = [xfile_workspace::config::CONFIG_FILE]
        .into_iter()
        .chain(xfile_workspace::pytest::settings_files())
        .map(str::to_string)
        .collect();
    // In an entered directory, an ignore file created or removed changes
    // the directory's own stamp, which is compared anyway: only the ones
    // there are watched (for edits), and `.git/info/exclude` (which is
    // not in that listing) wherever there is a `.git`.
    for dir in dirs {
        if let Ok(relative) = dir.strip_prefix(root) {
            for name in IGNORE_FILES {
                // A link counts as there, whether or not it leads anywhere.
                let entry = name.split_once('/').map_or(name, |(git, _)| git);
                let there = std::fs::symlink_metadata(dir.join(entry)).is_ok();
                if there {
                    out.push(relative.join(name).to_string_lossy().into_owned());
                }
            }
        }
    }
    for ancestor in root.ancestors().skip(1) {
        for name in IGNORE_FILES {
            out.push(ancestor.join(name).to_string_lossy().into_owned());
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(home) = &home {
        out.push(home.join(".gitconfig").to_string_lossy().into_owned());
    }
    if let Some(config_home) = &config_home {
        for name in ["git/config", "git/ignore"] {
            out.push(config_home.join(name).to_string_lossy().into_owned());
        }
    }
    out.extend(markers.iter().cloned());
    out.extend(
        notices
            .iter()
            .filter(|n| {
                // A tool directory that may stop being one is among the
                // directories (`Discovery::dirs`); the others never do.
                !matches!(
                    n.kind,
                    NoticeKind::Hidden
                        | NoticeKind::Config
                        | NoticeKind::NonUtf8Name
                        | NoticeKind::ToolDirectory
                )
            })
            .map(|n| n.path.clone()),
    );
    out.sort();
    out.dedup();
    out
}

/// What `xfile cache info` shows.
#[derive(Debug, Serialize)]
pub struct Info {
    pub path: String,
    pub exists: bool,
    pub bytes: Option<u64>,
    pub files: Option<usize>,
    /// Whether this xfile, with the project's configuration, would use it.
    pub usable: bool,
    /// Why not, when it would not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The answers kept with it.
    pub answers: AnswersInfo,
    /// Temporary files of writes under way, or of writers that died.
    pub temporary: Leftovers,
}

/// Whether `deps` and `dependents` would answer from the cache now.
#[derive(Debug, Serialize)]
pub struct AnswersInfo {
    /// They hold for the tree as it is.
    pub current: bool,
    /// How many files they answer for, when current.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    /// Why they would not be used (absent, damaged, another key, or the
    /// first change found in the tree).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The cache of the project at `root` (a canonical root), checked against
/// the key this xfile would use there: configuration and a discovery walk
/// (for the sub-projects), no parsing.
pub fn info(root: &Path) -> Info {
    let (config, _) = Config::load(root);
    let discovery = xfile_workspace::discover::discover(root, &config.ignore_patterns);
    let sub_projects = xfile_workspace::discover::sub_project_dirs(&discovery.markers);
    let key = Key::new(&config, &sub_projects);
    let path = disk::dir(root).join(FILE).display().to_string();
    let bytes = disk::size(root);
    let (files, problem) = match disk::read(root) {
        Ok(data) => match format::decode(&data, &key.digest) {
            Ok(entries) => (Some(entries.len()), None),
            Err(rejected) => (None, Some(rejected.to_string())),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(error) => (None, Some(error.to_string())),
    };
    let answers = match answers::status(root) {
        Ok(files) => AnswersInfo {
            current: true,
            files: Some(files),
            problem: None,
        },
        Err(miss) => AnswersInfo {
            current: false,
            files: None,
            problem: Some(miss.to_string()),
        },
    };
    Info {
        answers,
        temporary: disk::leftovers(root),
        path,
        exists: bytes.is_some(),
        bytes,
        usable: files.is_some(),
        files,
        problem,
    }
}

/// What `deps` answers for `path` (root-relative) from the warm-start
/// answers of `root` (canonical), when they hold for the tree now.
pub fn cached_dependencies(root: &Path, path: &str) -> Option<Vec<Relationship>> {
    answers::Prebuilt::open(root).ok()?.dependencies(path)
}

/// What `dependents` answers for `path` from the warm-start answers.
pub fn cached_dependents(root: &Path, path: &str) -> Option<Vec<Relationship>> {
    answers::Prebuilt::open(root).ok()?.dependents(path)
}

/// Removes the cache; whether there was a cache directory to remove.
pub fn clean(root: &Path) -> std::io::Result<bool> {
    disk::clean(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use xfile_engine::Change;

    fn engine(texts: &[(&str, &str)]) -> Engine {
        let mut engine = Engine::new(Vec::new());
        engine.apply(Change::texts(
            texts.iter().map(|(p, t)| (p.to_string(), t.to_string())),
        ));
        engine
    }

    fn cached(root: &Path, key: &Key) -> Vec<String> {
        let bytes = disk::read(root).expect("cache");
        let entries = format::decode(&bytes, &key.digest).expect("decodes");
        entries.into_iter().map(|e| e.path).collect()
    }

    fn written(writer: &Writer) {
        let start = Instant::now();
        while writer.busy.load(Ordering::Acquire) {
            assert!(start.elapsed() < Duration::from_secs(20), "write hangs");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn updates_are_written_at_most_every_interval() {
        let root = tempfile::tempdir().expect("tempdir");
        let key = Key::new(&Config::default(), &[]);
        let mut writer = Writer::new(root.path(), key.clone(), Tree::default()).expect("enabled");
        writer.first(&engine(&[("a.py", "import b\n")]), false);
        written(&writer);
        assert_eq!(cached(root.path(), &key), ["a.py"]);
        // Within the interval: not written.
        let two = engine(&[("a.py", "import b\n"), ("b.py", "x = 1\n")]);
        writer.updated(&two);
        written(&writer);
        assert_eq!(cached(root.path(), &key), ["a.py"]);
        // Past it: written, in the background.
        writer.every = Duration::ZERO;
        writer.updated(&two);
        written(&writer);
        assert_eq!(cached(root.path(), &key), ["a.py", "b.py"]);
    }
}
