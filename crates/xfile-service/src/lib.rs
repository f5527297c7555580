//! Business logic over one project: indexing, relationships, dependencies,
//! the graph export and relation queries. No protocol types live here; the
//! CLI and (later) the MCP server are thin adapters over [`Service`].

// What other crates can reach is declared `pub`; everything else says
// `pub(crate)`, so a signature tells a reader whether it is the API.
#![warn(unreachable_pub)]

pub mod blame_store;
pub mod breaks;
pub mod cache;
pub mod calls;
pub mod changes;
pub mod context;
pub mod explain;
pub mod external;
pub mod failed_writes;
mod git_cache;
pub mod graph;
pub mod history;
pub mod impact;
pub mod import_graph;
pub(crate) mod injections;
pub mod jsonl;
pub mod links;
pub mod live;
pub mod model;
pub mod outline;
pub mod paging;
pub mod query;
pub mod ranking;
pub mod relationships;
pub mod search;
pub mod text;
mod texts;
mod update;
pub mod warm;
pub(crate) mod warnings;
pub mod watch;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustc_hash::FxHashMap;

pub use self::context::{ReadError, ReadOptions};
use self::model::{
    ConnectedFile, Export, ExportMetadata, FileEntry, GraphMetadata, IndexSummary, ParseErrorEntry,
    QueryResult, Relationship, Warning, WarningReport,
};
use xfile_engine::datalog::Pattern;
use xfile_engine::{Change, Engine, Layer, TestPatterns};
use xfile_workspace::discover::Stamp;
use xfile_workspace::{self as workspace, Config, Notice, NoticeKind, PathError};

/// A value derived from one engine state (`Engine::changes`), shared by
/// the snapshots of a service and recomputed once the state moves on.
struct PerState<T>(Arc<Mutex<Option<Stamped<T>>>>);

/// A value and the `Engine::changes` it was computed at.
type Stamped<T> = (u64, Arc<T>);

impl<T> Clone for PerState<T> {
    fn clone(&self) -> Self {
        PerState(self.0.clone())
    }
}

impl<T> PerState<T> {
    fn new() -> Self {
        PerState(Arc::new(Mutex::new(None)))
    }

    fn get(&self, changes: u64, compute: impl FnOnce() -> T) -> Arc<T> {
        self.get_or_update(changes, |_| compute())
    }

    /// The value of the state `changes`, if it has been computed.
    fn current(&self, changes: u64) -> Option<Arc<T>> {
        let slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some((at, value)) if *at == changes => Some(value.clone()),
            _ => None,
        }
    }

    /// [`PerState::get`], computing from the value of an older state when
    /// there is one (to reuse what did not change).
    fn get_or_update(&self, changes: u64, compute: impl FnOnce(Option<&T>) -> T) -> Arc<T> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Some((at, value)) if *at == changes => value.clone(),
            old => {
                let value = Arc::new(compute(old.as_ref().map(|(_, v)| v.as_ref())));
                *slot = Some((changes, value.clone()));
                value
            }
        }
    }
}

/// One project's state. A clone is a snapshot (see [`Engine`]): cheap, and
/// sharing the caches; [`live::Live`] hands snapshots to readers while it
/// applies updates to its own copy.
#[derive(Clone)]
pub struct Service {
    root: PathBuf,
    config: Arc<Config>,
    engine: Engine,
    notices: Arc<Vec<Notice>>,
    /// Each indexed file's metadata when it was read, for freshness checks.
    stamps: Arc<FxHashMap<String, Stamp>>,
    /// The directories discovery entered, absolute: what a watcher watches.
    dirs: Arc<BTreeSet<PathBuf>>,
    /// Sub-project marker files below the root, root-relative.
    markers: Arc<BTreeSet<String>>,
    /// Files removed by an update, and when: for the note that tells the
    /// files importing one that it was deleted.
    deleted: Arc<BTreeMap<String, SystemTime>>,
    /// Files an update found changed (added or with new text), and their
    /// modification time then: the edits the recency boost counts.
    edited: Arc<BTreeMap<String, SystemTime>>,
    /// The repository, blames, base versions and commit times, shared by
    /// the snapshots.
    git: Arc<git_cache::GitCache>,
    cache: Arc<Mutex<cache::SnippetCache>>,
    suppression: Arc<warnings::Suppression>,
    /// Rendered warnings, for the engine state they were computed at.
    warnings: PerState<warnings::Warnings>,
    /// What the warning log was last given, shared by the snapshots.
    logged: Arc<Mutex<Option<warnings::Logged>>>,
    /// The symbol index `search` matches against, per engine state.
    symbols: PerState<search::SymbolIndex>,
    /// References to third-party modules and the modules provided, for
    /// links across projects.
    external: PerState<external::ExternalRefs>,
    modules: PerState<external::Modules>,
    /// An answer budget smaller than the configured one, for answers that
    /// share it between projects.
    budget: Option<usize>,
    /// Work done ahead (hot spots), not for a caller: its snippet lookups
    /// leave the cache statistics, which describe what callers were
    /// served, as they are.
    ahead: bool,
    /// String-keyed links (`links::StringLink`), per engine state.
    links: PerState<Vec<links::StringLink>>,
    /// Clusters a search answered with, for expansion by id.
    clusters: Arc<search::ClusterCache>,
    /// The edited files before their edits, for what an edit may break.
    befores: Arc<breaks::Befores>,
    /// Clusters of the likeliest searches, computed ahead.
    hot: Arc<search::HotSpots>,
    timings: model::PhaseTimings,
    /// How this project's first index used the warm-start cache.
    warm: Arc<warm::Outcome>,
    /// Writes the warm-start cache after updates (none with `--no-cache`).
    writer: Option<Arc<warm::Writer>>,
}

/// Files with syntax errors the index summary names (the count says all).
const PARSE_ERRORS_NAMED: usize = 20;

impl Service {
    /// Indexes the project at `root` from scratch.
    pub fn open(root: &Path) -> Result<Service, PathError> {
        Self::open_with_progress(root, &|_| {})
    }

    /// Like [`Service::open`], reporting each phase to `progress`.
    pub fn open_with_progress(root: &Path, progress: &dyn Fn(&str)) -> Result<Service, PathError> {
        let started = Instant::now();
        let Gathered {
            root,
            read_from,
            config,
            mut notices,
            discover_ms,
            dirs,
            markers,
            stamps,
            sub_projects,
            warm_key,
            files,
            settings,
        } = Gathered::read(root, progress)?;
        progress(&format!("analyzing {} files", files.len()));
        let mut engine = Engine::new(config.extra_search_paths.clone());
        let text_root = root.clone();
        engine.set_text_loader(Arc::new(move |path| {
            xfile_workspace::discover::read_again(&text_root, path)
        }));
        let phase = Instant::now();
        let cached = warm::load(&root, &warm_key);
        let (files, warm) = cached.attach(files);
        if let Some(notice) = &warm.notice {
            tracing::warn!("{notice}");
        }
        let applied = engine.apply(Change { files, ..settings });
        let analyze_ms = ms(applied.analysis_time);
        let parse_ms = elapsed_ms(phase) - analyze_ms;
        let tree = warm::answers::Tree {
            read_from,
            watched: warm::watched(&root, &dirs, &markers, &notices),
            dirs: dirs.iter().cloned().collect(),
            sub_projects,
            budget: usize::try_from(config.answer_token_limit).unwrap_or(usize::MAX),
        };
        let writer = warm::Writer::new(&root, warm_key, tree).map(Arc::new);
        if let Some(writer) = &writer {
            writer.first(&engine, cached.is_current(&warm));
        }
        let (suppression, suppression_problems) =
            warnings::Suppression::new(&config, &root, &engine);
        notices.extend(suppression_problems.into_iter().map(|message| Notice {
            path: workspace::config::CONFIG_FILE.to_string(),
            kind: NoticeKind::Config,
            message,
        }));
        let cache_bytes =
            usize::try_from(config.cache_size_limit_kb.saturating_mul(1024)).unwrap_or(usize::MAX);
        let service = Service {
            suppression: Arc::new(suppression),
            warnings: PerState::new(),
            logged: Arc::default(),
            symbols: PerState::new(),
            external: PerState::new(),
            modules: PerState::new(),
            budget: None,
            ahead: false,
            links: PerState::new(),
            hot: Arc::default(),
            befores: Arc::default(),
            clusters: Arc::new(search::ClusterCache::new(std::time::Duration::from_secs(
                config.cache_expiry_minutes.saturating_mul(60),
            ))),
            cache: Arc::new(Mutex::new(cache::SnippetCache::new(
                cache_bytes,
                std::time::Duration::from_secs(config.cache_expiry_minutes.saturating_mul(60)),
            ))),
            root,
            config: Arc::new(config),
            engine,
            notices: Arc::new(notices),
            stamps: Arc::new(stamps),
            dirs: Arc::new(dirs),
            markers: Arc::new(markers),
            deleted: Arc::default(),
            edited: Arc::default(),
            git: Arc::default(),
            warm: Arc::new(warm),
            writer,
            timings: model::PhaseTimings {
                discover_ms,
                parse_ms,
                analyze_ms,
                total_ms: elapsed_ms(started),
            },
        };
        Ok(service)
    }

    /// How the first index used the warm-start cache.
    pub fn warm_start(&self) -> &warm::Outcome {
        &self.warm
    }

    /// Waits until the warm-start cache's write under way (the first
    /// index's, in the background) is on disk: for a process about to exit
    /// without dropping its service.
    pub fn flush_warm(&self) {
        if let Some(writer) = &self.writer {
            writer.flush();
        }
    }

    /// After an update: the warm-start cache is written when due.
    pub(crate) fn updated_warm(&self) {
        if let Some(writer) = &self.writer {
            writer.updated(&self.engine);
        }
    }

    /// Appends the warnings not logged yet to `warnings.jsonl`,
    /// unless `enable_warning_logging` is off; returns how many it wrote.
    /// Adapters call it once a session has indexed (the MCP server, the
    /// `index` command), so that merely opening a project writes nothing.
    pub fn log_warnings(&self) -> std::io::Result<usize> {
        if !self.config.enable_warning_logging {
            return Ok(0);
        }
        let mut logged = self.logged.lock().unwrap_or_else(|e| e.into_inner());
        warnings::log_new(&self.root, &self.all_warnings(), &mut logged)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Tokens one page of a tool answer may take (`answer_token_limit`).
    pub fn answer_token_limit(&self) -> usize {
        let configured = usize::try_from(self.config.answer_token_limit).unwrap_or(usize::MAX);
        self.budget
            .map_or(configured, |share| share.min(configured))
    }

    /// This snapshot with an answer budget of at most `tokens`: an answer
    /// that several projects share gives each a part.
    pub fn with_answer_budget(&self, tokens: usize) -> Service {
        Service {
            budget: Some(tokens),
            ..self.clone()
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The directories discovery entered (absolute), for a watcher.
    /// Shared, so a watcher can keep it without copying 1,000 paths.
    pub fn dirs(&self) -> Arc<BTreeSet<PathBuf>> {
        self.dirs.clone()
    }

    /// Validates a user path and returns it root-relative; it must be an
    /// indexed Python file.
    pub fn resolve_file(&self, input: &str) -> Result<String, PathError> {
        indexed_file(&self.root, input, |relative| self.engine.contains(relative))
    }

    pub fn relationships(&self) -> Vec<Relationship> {
        relationships::all(&self.engine)
    }

    /// Relationships whose source is `file`.
    pub fn dependencies(&self, file: &str) -> Result<Vec<Relationship>, PathError> {
        Ok(self.dependencies_of(&self.resolve_file(file)?))
    }

    /// [`Service::dependencies`] for a path already validated and relative.
    pub fn dependencies_of(&self, file: &str) -> Vec<Relationship> {
        relationships::render(&self.engine, &self.engine.references_from(file))
    }

    /// Relationships that point at `file`, directly or (for imports) through
    /// a re-export that ends at a definition in it.
    pub fn dependents(&self, file: &str) -> Result<Vec<Relationship>, PathError> {
        let file = self.resolve_file(file)?;
        Ok(relationships::render(
            &self.engine,
            &self.engine.references_to(&file),
        ))
    }

    /// [`Service::dependents`] of one definition of `file`: relationships
    /// whose target is `symbol`, or, for a class, one of its members
    /// (`Model` takes in calls of `Model.save`). None found for a symbol
    /// the file does not define is an error, not an empty answer.
    pub fn dependents_of_symbol(
        &self,
        file: &str,
        symbol: &str,
    ) -> Result<Vec<Relationship>, calls::SymbolError> {
        let file = self.resolve_file(file)?;
        let symbol = symbol.trim();
        let mut dependents = self.dependents(&file)?;
        of_symbol(&mut dependents, symbol);
        if dependents.is_empty() {
            self.check_defined(&file, symbol)?;
        }
        Ok(dependents)
    }

    /// The file's text behind its cross-file context, for
    /// an agent: the injection is logged.
    pub fn read_with_context(&self, file: &str) -> Result<String, ReadError> {
        let options = ReadOptions {
            log: true,
            ..ReadOptions::default()
        };
        context::read_with_context(self, file, &options)
    }

    /// [`Service::read_with_context`] of a line range, or with another
    /// import depth or the sibling modules' names.
    pub fn read_with_options(
        &self,
        file: &str,
        options: &ReadOptions,
    ) -> Result<String, ReadError> {
        context::read_with_context(self, file, options)
    }

    /// The newest injection log events, optionally for one read file.
    pub fn recent_injections(
        &self,
        file: Option<&str>,
        limit: usize,
    ) -> Result<Vec<injections::InjectionEvent>, PathError> {
        let file = file.map(|f| self.resolve_file(f)).transpose()?;
        Ok(injections::recent(&self.root, file.as_deref(), limit))
    }

    /// How many other project files import (through any re-export chain),
    /// call or inherit from definition `symbol` of `file`: the count the
    /// context shows beside a widely used definition.
    pub fn usage_count(&self, file: &str, symbol: &str) -> usize {
        self.engine.usage_count(file, symbol)
    }

    pub fn cache_statistics(&self) -> cache::CacheStatistics {
        self.snippet_cache().statistics()
    }

    /// This snapshot for work done ahead of any caller (see `ahead`).
    pub(crate) fn ahead(&self) -> Service {
        Service {
            ahead: true,
            ..self.clone()
        }
    }

    fn snippet_cache(&self) -> std::sync::MutexGuard<'_, cache::SnippetCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// File-level notices (skipped files, encoding fallbacks, configuration
    /// problems), all or for one file.
    pub fn notices(&self, file: Option<&str>) -> Vec<Notice> {
        self.notices
            .iter()
            .filter(|n| file.is_none_or(|f| n.path == f))
            .cloned()
            .collect()
    }

    /// Every warning after suppression, computed once per engine state.
    pub fn all_warnings(&self) -> Arc<warnings::Warnings> {
        self.warnings
            .get_or_update(self.engine.changes(), |previous| {
                warnings::Warnings::compute(&self.engine, &self.suppression, previous)
            })
    }

    /// Warnings of `file` (validated and root-relative), after suppression.
    pub(crate) fn warnings_of(&self, file: &str) -> Vec<Warning> {
        self.all_warnings().of_file(file).to_vec()
    }

    /// Warnings and notices, all or for one file. A file may be
    /// one that was not indexed, to see why (its notices).
    pub fn warnings(&self, file: Option<&str>) -> Result<WarningReport, PathError> {
        let file = file
            .map(|f| workspace::resolve_user_path(&self.root, f))
            .transpose()?;
        let all = self.all_warnings();
        let warnings = match &file {
            Some(file) => self.warnings_of(file),
            None => all.active().cloned().collect(),
        };
        Ok(WarningReport {
            warnings,
            suppressed: all.suppressed_counts(file.as_deref()),
            notices: self.notices(file.as_deref()),
        })
    }

    pub fn query(&self, pattern: &str) -> Result<QueryResult, query::QueryError> {
        query::run(&self.engine, pattern)
    }

    /// Derivation trees of the tuples matching `pattern`, or why none holds.
    pub fn explain(&self, pattern: &str) -> Result<explain::Explanation, query::QueryError> {
        explain::explain(&self.engine, pattern)
    }

    /// The derivations of every derived tuple of `file`, or of every file.
    pub fn explain_dump(&self, file: Option<&str>) -> Result<explain::Dump<'_>, PathError> {
        let files = match file {
            Some(file) => vec![self.resolve_file(file)?],
            None => self.engine.paths().map(str::to_string).collect(),
        };
        Ok(explain::dump(&self.engine, files))
    }

    pub fn summary(&self) -> IndexSummary {
        let parse_errors: Vec<String> = self
            .engine
            .paths()
            .filter_map(|p| {
                let error = self.engine.facts(p)?.parse_error.clone()?;
                Some(format!("{p}:{}: {}", error.line, error.message))
            })
            .collect();
        IndexSummary {
            project_root: self.root.display().to_string(),
            files: self.engine.paths().count(),
            parse_errors: parse_errors.len(),
            parse_error_files: parse_errors.into_iter().take(PARSE_ERRORS_NAMED).collect(),
            relationships: relationships::counts(&self.engine),
            import_cycles: self.cycles().len(),
            warnings: self
                .all_warnings()
                .active()
                .fold(BTreeMap::new(), |mut counts, w| {
                    *counts.entry(w.warning_type.as_str()).or_default() += 1;
                    counts
                }),
            notices: self.notices.to_vec(),
            cache: (*self.warm).clone(),
            wall_time_ms: self.timings.total_ms,
            phases: self.timings.clone(),
        }
    }

    /// One entry per indexed file, with its count among `relationships`
    /// (all of them: a file counts as source and as target).
    pub fn file_entries(&self, relationships: &[Relationship]) -> Vec<FileEntry> {
        let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
        for r in relationships {
            *counts.entry(r.source_file.as_str()).or_default() += 1;
            if r.target_file != r.source_file {
                *counts.entry(r.target_file.as_str()).or_default() += 1;
            }
        }
        let program = self.engine.program();
        let interner = self.engine.interner();
        let mut untrackable: BTreeMap<String, Vec<Pattern>> = BTreeMap::new();
        for t in program.outputs.untrackable() {
            untrackable
                .entry(interner.node_text(t.0).to_string())
                .or_default()
                .push(t.1);
        }
        let test_modules: BTreeSet<String> = program
            .facts
            .iter()
            .filter_map(|fact| match fact {
                xfile_engine::datalog::InputFact::TestModule(t) => {
                    Some(interner.node_text(t.0).to_string())
                }
                _ => None,
            })
            .collect();
        let in_cycle: BTreeSet<String> = program
            .outputs
            .in_cycle()
            .iter()
            .map(|t| interner.node_text(t.0).to_string())
            .collect();
        self.engine
            .paths()
            .map(|path| {
                let absolute = self.root.join(path);
                FileEntry {
                    path: absolute.display().to_string(),
                    relative_path: path.to_string(),
                    last_modified: std::fs::metadata(&absolute)
                        .and_then(|m| m.modified())
                        .ok()
                        .map(rfc3339),
                    relationship_count: counts.get(path).copied().unwrap_or(0),
                    parse_error: self
                        .engine
                        .facts(path)
                        .and_then(|f| f.parse_error.as_ref())
                        .map(|e| ParseErrorEntry {
                            line: e.line,
                            column: e.column,
                            message: e.message.clone(),
                        }),
                    in_import_cycle: in_cycle.contains(path),
                    test_module: test_modules.contains(path),
                    untrackable_patterns: untrackable.remove(path).unwrap_or_default(),
                }
            })
            .collect()
    }

    pub fn export(&self) -> Export {
        let relationships = self.relationships();
        let files = self.file_entries(&relationships);
        let most_connected: Vec<ConnectedFile> = self
            .engine
            .most_depended_on(10)
            .into_iter()
            .map(|(file, count)| ConnectedFile {
                file,
                dependency_count: count,
            })
            .collect();
        Export {
            metadata: ExportMetadata {
                timestamp: rfc3339(SystemTime::now()),
                version: env!("CARGO_PKG_VERSION"),
                language: "python",
                project_root: self.root.display().to_string(),
                total_files: files.len(),
                total_relationships: relationships.len(),
            },
            files,
            relationships,
            warnings: self.all_warnings().active().cloned().collect(),
            notices: self.notices.to_vec(),
            graph_metadata: GraphMetadata {
                circular_imports: self.cycles(),
                most_connected_files: most_connected,
            },
            derived: query::derived(&self.engine),
        }
    }

    /// One shortest cycle per group of files that import each other in a
    /// circle, starting and ending at the group's first file by path.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        self.engine.cycles()
    }
}

/// Keeps the dependents whose target is `symbol` or, for a class, one of
/// its members.
pub fn of_symbol(dependents: &mut Vec<Relationship>, symbol: &str) {
    let member_prefix = format!("{symbol}.");
    dependents.retain(|r| {
        r.target_symbol
            .as_deref()
            .is_some_and(|t| t == symbol || t.starts_with(&member_prefix))
    });
}

/// Milliseconds since `since`, for reports and debug timings.
pub fn elapsed_ms(since: Instant) -> f64 {
    ms(since.elapsed())
}

pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn rfc3339(time: SystemTime) -> String {
    humantime::format_rfc3339_seconds(time).to_string()
}

/// `input` root-relative, if it names a Python file that `indexed` holds;
/// else the error that says why not.
fn indexed_file(
    root: &Path,
    input: &str,
    indexed: impl Fn(&str) -> bool,
) -> Result<String, PathError> {
    let relative = workspace::resolve_user_path(root, input)?;
    if !relative.ends_with(".py") && root.join(&relative).is_file() {
        return Err(PathError::NotPython(input.to_string()));
    }
    if indexed(&relative) {
        Ok(relative)
    } else {
        Err(PathError::NotFound(format!(
            "{input} (not an indexed Python file)"
        )))
    }
}

/// What an index reads before the engine runs: the configuration, every
/// Python file's text, and the settings the module tree depends on.
struct Gathered {
    root: PathBuf,
    /// When the reading began: what the warm-start answers are true of.
    read_from: i64,
    config: Config,
    notices: Vec<Notice>,
    discover_ms: f64,
    dirs: BTreeSet<PathBuf>,
    markers: BTreeSet<String>,
    stamps: FxHashMap<String, Stamp>,
    sub_projects: Vec<String>,
    warm_key: warm::Key,
    files: Vec<(String, String)>,
    /// The engine's settings, as a change with no files.
    settings: Change,
}

impl Gathered {
    fn read(root: &Path, progress: &dyn Fn(&str)) -> Result<Gathered, PathError> {
        let read_from = warm::now();
        let root = workspace::canonical_root(root)?;
        warm::prepare(&root);
        let (mut config, config_notices) = Config::load(&root);
        let mut notices: Vec<Notice> = config_notices
            .into_iter()
            .map(|message| Notice {
                path: workspace::config::CONFIG_FILE.to_string(),
                kind: NoticeKind::Config,
                message,
            })
            .collect();
        progress("discovering files");
        let phase = Instant::now();
        let discovery = workspace::discover::discover(&root, &config.ignore_patterns);
        let discover_ms = elapsed_ms(phase);
        let unindexed = too_large(&discovery.notices);
        notices.extend(discovery.notices);
        let dirs: BTreeSet<PathBuf> = discovery.dirs.into_iter().collect();
        let markers: BTreeSet<String> = discovery.markers.into_iter().collect();
        // Where the packaging metadata and the test settings put packages:
        // searched after the configured roots.
        let (package_roots, roots_notice) =
            workspace::package_roots::find(&root, &markers, &discovery.files);
        for found in package_roots {
            if !config.extra_search_paths.contains(&found.dir) {
                config.extra_search_paths.push(found.dir);
            }
        }
        notices.extend(roots_notice);
        let (pytest, pytest_problems) = workspace::pytest::load(&root);
        notices.extend(pytest_problems.into_iter().map(|(path, message)| Notice {
            path,
            kind: NoticeKind::Config,
            message,
        }));
        let sub_projects = workspace::discover::sub_project_dirs(&markers);
        let warm_key = warm::Key::new(&config, &sub_projects);
        let (entry_points, entry_point_notices) = links::declared_entry_points(&root, &markers);
        notices.extend(entry_point_notices);
        let stamps = discovery
            .files
            .iter()
            .map(|f| (f.path.clone(), f.stamp))
            .collect();
        let settings = Change {
            sub_projects: Some(sub_projects.clone()),
            unindexed: Some(unindexed),
            entry_points: Some(entry_points),
            test_patterns: Some(TestPatterns {
                python_files: pytest.python_files,
                testpaths: pytest.testpaths,
            }),
            layers: Some(
                config
                    .layers
                    .iter()
                    .map(|l| Layer {
                        name: l.name.clone(),
                        globs: l.globs.clone(),
                    })
                    .collect(),
            ),
            ..Change::default()
        };
        Ok(Gathered {
            root,
            read_from,
            config,
            notices,
            discover_ms,
            dirs,
            markers,
            stamps,
            sub_projects,
            warm_key,
            files: discovery
                .files
                .into_iter()
                .map(|f| (f.path, f.text))
                .collect(),
            settings,
        })
    }
}

/// The Python files skipped for their size: still modules that
/// imports resolve to.
fn too_large(notices: &[Notice]) -> Vec<String> {
    notices
        .iter()
        .filter(|n| n.kind == NoticeKind::TooLarge)
        .map(|n| n.path.clone())
        .collect()
}
