//! Warnings: the rules' `Warning` tuples rendered with message,
//! code line, explanation and guidance, less what configuration suppresses;
//! and the warning log, `.cross_file_context_logs/warnings.jsonl`.
//!
//! Test modules are left out by the rules (rules/warnings.dl), because
//! that is a fact about the code base. Suppression by file, glob and type is
//! applied here instead: it is configuration, it changes without any code
//! changing, and keeping it out of the program means editing the
//! configuration never re-runs the Datalog program.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::jsonl;
use super::model::{Severity, Warning};
use xfile_engine::Engine;
use xfile_engine::datalog::{self, Node, Pattern, Site};
use xfile_python::{DynamicPattern, ImportTarget, ModuleFacts};
use xfile_workspace::Config;

const LOG_FILE: &str = "warnings.jsonl";

/// Source lines quoted in a warning are cut to this many characters.
const PATTERN_CHARS: usize = 120;

/// Why configuration suppressed a warning, most specific first: when
/// several apply, the first in this order is the reason given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SuppressedBy {
    /// `file_specific_suppressions: {file: [type]}`.
    FileType,
    /// `suppress_<type>_warnings: true`.
    Type,
    /// A file listed in `suppress_warnings`.
    File,
    /// A glob or directory listed in `suppress_warnings`.
    Directory,
}

impl SuppressedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SuppressedBy::FileType => "file_type",
            SuppressedBy::Type => "type",
            SuppressedBy::File => "file",
            SuppressedBy::Directory => "directory",
        }
    }
}

/// The suppression settings of the configuration, checked against the
/// project's files.
pub struct Suppression {
    files: BTreeSet<String>,
    directories: GlobSet,
    types: BTreeSet<Pattern>,
    per_file: BTreeMap<String, BTreeSet<Pattern>>,
    warn_on_wildcards: bool,
}

impl Suppression {
    /// Reads the settings; every entry that names no indexed file or
    /// directory, is no valid glob or names no warning type gives a message
    /// and is ignored, the rest still apply.
    pub fn new(config: &Config, root: &Path, engine: &Engine) -> (Suppression, Vec<String>) {
        let mut problems = Vec::new();
        let mut files = BTreeSet::new();
        let mut directories = GlobSetBuilder::new();
        for entry in &config.suppress_warnings {
            let glob = if entry.contains(['*', '?', '[', '{']) {
                entry.trim_start_matches("./").to_string()
            } else {
                let path = normalize(entry);
                if engine.contains(&path) {
                    files.insert(path);
                    continue;
                }
                if path.is_empty() || !root.join(&path).is_dir() {
                    problems.push(format!(
                        "suppress_warnings: `{entry}` is neither an indexed Python file nor a directory of the project; ignored"
                    ));
                    continue;
                }
                format!("{path}/**")
            };
            match GlobBuilder::new(&glob).literal_separator(true).build() {
                Ok(glob) => {
                    directories.add(glob);
                }
                Err(error) => problems.push(format!(
                    "suppress_warnings: `{entry}` is not a valid glob ({error}); ignored"
                )),
            }
        }
        let mut per_file = BTreeMap::new();
        for (file, names) in &config.file_specific_suppressions {
            let path = normalize(file);
            if !engine.contains(&path) {
                problems.push(format!(
                    "file_specific_suppressions: `{file}` is not an indexed Python file; ignored"
                ));
                continue;
            }
            let patterns: BTreeSet<Pattern> = names
                .iter()
                .filter_map(|name| {
                    let pattern = Pattern::from_name(name);
                    if pattern.is_none() {
                        problems.push(format!(
                            "file_specific_suppressions: `{name}` (for {file}) is not a warning type; use one of {}",
                            known_types()
                        ));
                    }
                    pattern
                })
                .collect();
            per_file.insert(path, patterns);
        }
        let types = [
            (
                Pattern::DynamicImport,
                config.suppress_dynamic_import_warnings,
            ),
            (
                Pattern::DynamicDispatch,
                config.suppress_dynamic_dispatch_warnings,
            ),
            (
                Pattern::MonkeyPatching,
                config.suppress_monkey_patching_warnings,
            ),
            (Pattern::ExecEval, config.suppress_exec_eval_warnings),
            (Pattern::Decorator, config.suppress_decorator_warnings),
            (Pattern::Metaclass, config.suppress_metaclass_warnings),
            (
                Pattern::CircularImport,
                config.suppress_circular_import_warnings,
            ),
        ]
        .into_iter()
        .filter(|(_, suppressed)| *suppressed)
        .map(|(pattern, _)| pattern)
        .collect();
        let suppression = Suppression {
            files,
            directories: directories.build().unwrap_or_else(|_| GlobSet::empty()),
            types,
            per_file,
            warn_on_wildcards: config.warn_on_wildcards,
        };
        (suppression, problems)
    }

    /// Wildcard imports warn only when `warn_on_wildcards` is set; that is
    /// an opt-in, not a suppression, so it is not counted as one.
    fn enabled(&self, pattern: Pattern) -> bool {
        pattern != Pattern::WildcardImport || self.warn_on_wildcards
    }

    /// The most specific suppression of a `pattern` warning in `file`.
    pub fn reason(&self, file: &str, pattern: Pattern) -> Option<SuppressedBy> {
        if self
            .per_file
            .get(file)
            .is_some_and(|types| types.contains(&pattern))
        {
            Some(SuppressedBy::FileType)
        } else if self.types.contains(&pattern) {
            Some(SuppressedBy::Type)
        } else if self.files.contains(file) {
            Some(SuppressedBy::File)
        } else if self.directories.is_match(file) {
            Some(SuppressedBy::Directory)
        } else {
            None
        }
    }
}

fn normalize(path: &str) -> String {
    path.trim_start_matches("./")
        .trim_end_matches('/')
        .to_string()
}

fn known_types() -> String {
    Pattern::ALL
        .iter()
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every warning of the project, rendered, after suppression: per file,
/// so that after an update only the files whose warnings changed are
/// rendered again (rendering splits a file into lines; on a large project
/// rendering them all took tens of milliseconds after every edit).
#[derive(Debug, Default)]
pub struct Warnings {
    /// The files with a warning, active or suppressed, by path.
    files: BTreeMap<String, Arc<FileWarnings>>,
}

/// One file's warnings, and what they were rendered from.
#[derive(Debug, Default)]
struct FileWarnings {
    /// The file's change stamp when rendered (`Engine::revision`).
    revision: Option<u64>,
    tuples: Vec<datalog::Warning>,
    /// Sorted by line, column, type and message.
    active: Vec<Warning>,
    /// The circular-import warnings by site, each as rendered (`None`:
    /// none was). Their messages name the modules of a cycle, which other
    /// files decide, so they are checked again on every update.
    cycles: Vec<(Site, Option<Warning>)>,
    suppressed: BTreeMap<SuppressedBy, usize>,
}

impl FileWarnings {
    /// These warnings, if they still hold for `tuples` at `revision`: the
    /// same, or with the cycles' messages written again. Only the cycles
    /// are rendered, not the file's lines split again.
    fn kept(
        self: &Arc<Self>,
        renderer: &Renderer,
        revision: Option<u64>,
        tuples: &[datalog::Warning],
    ) -> Option<Arc<FileWarnings>> {
        if self.revision != revision || self.tuples != tuples {
            return None;
        }
        let file = tuples.first()?.0;
        let mut cycles = Vec::with_capacity(self.cycles.len());
        for (site, rendered) in &self.cycles {
            let message = renderer.cycle_message(file, *site);
            let again = match (rendered, message) {
                (Some(was), Some(message)) => Some(Warning {
                    message,
                    ..was.clone()
                }),
                (None, None) => None,
                // A cycle that came or went: render the file again.
                _ => return None,
            };
            cycles.push((*site, again));
        }
        if cycles == self.cycles {
            return Some(Arc::clone(self));
        }
        let mut active: Vec<Warning> = self
            .active
            .iter()
            .filter(|w| w.warning_type != Pattern::CircularImport)
            .cloned()
            .chain(cycles.iter().filter_map(|(_, w)| w.clone()))
            .collect();
        sort_and_dedup(&mut active);
        Some(Arc::new(FileWarnings {
            revision,
            tuples: self.tuples.clone(),
            active,
            cycles,
            suppressed: self.suppressed.clone(),
        }))
    }
}

/// In a file's order: line, column, type, message; each once (`from m
/// import a, b` is one site per name; one warning is enough).
fn sort_and_dedup(warnings: &mut Vec<Warning>) {
    warnings.sort_by(|a, b| {
        (a.line, a.column, a.warning_type, &a.message).cmp(&(
            b.line,
            b.column,
            b.warning_type,
            &b.message,
        ))
    });
    warnings.dedup();
}

impl Warnings {
    /// Renders the rules' warnings, reusing from `previous` (the warnings of
    /// an earlier state of the same service) every file whose text and
    /// warning tuples did not change.
    pub fn compute(
        engine: &Engine,
        suppression: &Suppression,
        previous: Option<&Warnings>,
    ) -> Warnings {
        let renderer = Renderer { engine };
        let mut files = BTreeMap::new();
        // The tuples come sorted, so each file's are together.
        for tuples in engine.warning_tuples().chunk_by(|a, b| a.0 == b.0) {
            let path = engine.interner().node_text(tuples[0].0);
            let revision = engine.revision(&path);
            let kept = previous
                .and_then(|p| p.files.get(path.as_ref()))
                .and_then(|old| old.kept(&renderer, revision, tuples));
            let rendered = kept.unwrap_or_else(|| {
                Arc::new(render_file(&renderer, suppression, &path, revision, tuples))
            });
            if !rendered.active.is_empty() || !rendered.suppressed.is_empty() {
                files.insert(path.to_string(), rendered);
            }
        }
        Warnings { files }
    }

    /// Every active warning, by file, line, column and type.
    pub fn active(&self) -> impl Iterator<Item = &Warning> {
        self.files.values().flat_map(|f| f.active.iter())
    }

    /// The active warnings of `file` (root-relative).
    pub fn of_file(&self, file: &str) -> &[Warning] {
        self.files.get(file).map_or(&[], |f| f.active.as_slice())
    }

    pub fn suppressed_counts(&self, file: Option<&str>) -> BTreeMap<&'static str, usize> {
        let mut counts = BTreeMap::new();
        for (path, rendered) in &self.files {
            if file.is_some_and(|f| f != path) {
                continue;
            }
            for (reason, count) in &rendered.suppressed {
                *counts.entry(reason.as_str()).or_default() += count;
            }
        }
        counts
    }

    /// Per file whose warnings are not the very ones `earlier` holds (every
    /// file, when there is none), its active warnings before and now: where
    /// the warnings an update brought or took can be.
    pub fn changed_since<'a>(
        &'a self,
        earlier: Option<&'a Warnings>,
    ) -> impl Iterator<Item = (&'a [Warning], &'a [Warning])> {
        let changed = self.files.iter().filter_map(move |(path, rendered)| {
            let old = earlier.and_then(|e| e.files.get(path));
            if old.is_some_and(|old| Arc::ptr_eq(old, rendered)) {
                return None;
            }
            let before = old.map_or(&[][..], |old| old.active.as_slice());
            Some((before, rendered.active.as_slice()))
        });
        let gone = earlier
            .into_iter()
            .flat_map(|e| e.files.iter())
            .filter(|(path, _)| !self.files.contains_key(*path))
            .map(|(_, old)| (old.active.as_slice(), &[][..]));
        changed.chain(gone)
    }
}

/// One file's warning tuples rendered, after suppression.
fn render_file(
    renderer: &Renderer,
    suppression: &Suppression,
    path: &str,
    revision: Option<u64>,
    tuples: &[datalog::Warning],
) -> FileWarnings {
    let mut rendered = FileWarnings {
        revision,
        tuples: tuples.to_vec(),
        ..FileWarnings::default()
    };
    let engine = renderer.engine;
    // Read once, when the first warning to render needs the lines.
    let text = std::cell::OnceCell::new();
    let mut lookup = None;
    for &datalog::Warning(file, site, pattern) in tuples {
        if !suppression.enabled(pattern) {
            continue;
        }
        if let Some(reason) = suppression.reason(path, pattern) {
            *rendered.suppressed.entry(reason).or_default() += 1;
            continue;
        }
        let lookup = match &lookup {
            Some(lookup) => lookup,
            None => match engine.facts(path) {
                Some(facts) => {
                    let text = text.get_or_init(|| engine.text(path)).as_deref();
                    lookup.insert(FileLookup::new(facts, text))
                }
                None => break,
            },
        };
        let warning = renderer.render(path, file, site, pattern, lookup);
        if pattern == Pattern::CircularImport {
            rendered.cycles.push((site, warning.clone()));
        }
        rendered.active.extend(warning);
    }
    sort_and_dedup(&mut rendered.active);
    rendered
}

/// Which dynamic pattern or import of a file sits at each site, and its
/// lines (split once: a file may have hundreds of warnings).
struct FileLookup<'a> {
    facts: &'a ModuleFacts,
    lines: Vec<&'a str>,
    dynamic: FxHashMap<u32, &'a DynamicPattern>,
    imports: FxHashMap<u32, &'a ImportTarget>,
}

impl<'a> FileLookup<'a> {
    fn new(facts: &'a ModuleFacts, text: Option<&'a str>) -> Self {
        let semantic = &facts.semantic;
        FileLookup {
            facts,
            lines: text.map(|text| text.lines().collect()).unwrap_or_default(),
            dynamic: semantic
                .dynamic
                .iter()
                .map(|d| (d.site, &d.pattern))
                .collect(),
            imports: semantic
                .imports
                .iter()
                .map(|i| (i.site, &i.target))
                .collect(),
        }
    }
}

struct Renderer<'a> {
    engine: &'a Engine,
}

impl Renderer<'_> {
    fn render(
        &self,
        path: &str,
        file: Node,
        site: Site,
        pattern: Pattern,
        lookup: &FileLookup,
    ) -> Option<Warning> {
        let position = *lookup.facts.sites.get(site.0 as usize)?;
        let at = format!("{path}:{}", position.line);
        let message = match (pattern, lookup.dynamic.get(&site.0)) {
            (Pattern::DynamicImport, Some(DynamicPattern::Import { callee, argument })) => {
                format!(
                    "⚠️ Dynamic import detected: `{}({argument})` - relationship tracking unavailable",
                    callee.path.join(".")
                )
            }
            (Pattern::DynamicDispatch, Some(DynamicPattern::Dispatch { object, name, .. })) => {
                format!(
                    "⚠️ Dynamic dispatch detected in {at} - relationship tracking unavailable for `getattr({object}, {name})`"
                )
            }
            (Pattern::MonkeyPatching, Some(DynamicPattern::AttributeAssignment { target })) => {
                format!(
                    "⚠️ Monkey patching detected in {at} - `{}` reassigned, relationship tracking may be inaccurate",
                    target.path.join(".")
                )
            }
            (Pattern::ExecEval, Some(DynamicPattern::Exec { .. })) => format!(
                "⚠️ Dynamic code execution detected in {at} - `exec()`/`eval()` prevents static analysis, relationships may be incomplete"
            ),
            (Pattern::Decorator, Some(DynamicPattern::Decorator { name })) => format!(
                "ℹ️ Decorator `{name}` in {at} may modify function behavior - tracking original definition only"
            ),
            (Pattern::Metaclass, Some(DynamicPattern::Metaclass { class, metaclass })) => format!(
                "ℹ️ Metaclass detected in {at} - class `{class}` uses metaclass `{metaclass}`, runtime behavior may differ from static definition"
            ),
            (Pattern::WildcardImport, _) => {
                let Some(ImportTarget::Star { level, module }) = lookup.imports.get(&site.0) else {
                    return None;
                };
                format!(
                    "⚠️ Wildcard import in {at} - `from {}{} import *` binds names that are not listed, only those that resolve for certain are tracked",
                    ".".repeat(*level as usize),
                    module.as_deref().unwrap_or_default()
                )
            }
            (Pattern::CircularImport, _) => self.cycle_message(file, site)?,
            _ => return None,
        };
        let line = lookup
            .lines
            .get(position.line.saturating_sub(1) as usize)
            .copied()
            .unwrap_or_default()
            .trim();
        let (severity, explanation, guidance) = describe(pattern);
        Some(Warning {
            warning_type: pattern,
            file: path.to_string(),
            line: position.line,
            column: position.column,
            severity,
            pattern: line.chars().take(PATTERN_CHARS).collect(),
            message,
            explanation: explanation.to_string(),
            guidance,
        })
    }

    fn cycle_message(&self, file: Node, site: Site) -> Option<String> {
        let interner = self.engine.interner();
        let path = interner.node_text(file);
        let target = interner.node_text(self.engine.import_target(&path, site)?);
        // The style guide is cited once, in the guidance, not on every cycle.
        Some(match self.engine.cycle_via(&path, &target) {
            Some(cycle) => format!(
                "⚠️ Circular import detected: {}",
                shown_cycle(cycle).join(" → ")
            ),
            None => format!(
                "⚠️ Circular import detected: {path} → {target} → … → {path} (a cycle through \
                 more modules than are searched; `xfile export` lists every cycle in full)"
            ),
        })
    }
}

/// Modules of a cycle named in full; a longer one keeps its first ones and
/// its last around one entry that says how many are left out, so that a
/// message or an answer stays small whatever the cycle (`xfile export`
/// has every cycle in full).
const CYCLE_SHOWN: usize = 12;

/// `cycle` (a path from a module back to it) as warnings, explanations and
/// graph answers show it.
pub(crate) fn shown_cycle(mut cycle: Vec<String>) -> Vec<String> {
    if cycle.len() <= CYCLE_SHOWN {
        return cycle;
    }
    let left_out = cycle.len() - (CYCLE_SHOWN - 1);
    let last = cycle.pop().unwrap_or_default();
    cycle.truncate(CYCLE_SHOWN - 2);
    cycle.push(format!("… {left_out} more modules …"));
    cycle.push(last);
    cycle
}

/// Severity, explanation and guidance of each warning type.
fn describe(pattern: Pattern) -> (Severity, &'static str, Option<&'static str>) {
    match pattern {
        Pattern::DynamicImport => (
            Severity::Warning,
            "The module name is computed at run time, so which module is imported cannot be known statically; no import relationship is recorded for it.",
            Some(
                "Import with a literal name (`importlib.import_module(\"pkg.mod\")` or an import statement) if the set of modules is known.",
            ),
        ),
        Pattern::DynamicDispatch => (
            Severity::Warning,
            "The attribute name is determined at run time, so which function is called cannot be known statically; no call relationship is recorded for it.",
            Some("Consider using explicit function calls if the function name is known."),
        ),
        Pattern::MonkeyPatching => (
            Severity::Warning,
            "An attribute of an imported module or class is replaced at run time; relationships and context show the original definition, not the replacement.",
            Some(
                "Prefer passing the replacement in explicitly (dependency injection) over reassigning another module's attributes; in tests, use mock.patch.",
            ),
        ),
        Pattern::ExecEval => (
            Severity::Warning,
            "Code run by exec() or eval() is only a string to static analysis: imports, calls and definitions inside it are not seen.",
            Some(
                "Consider using safer alternatives (importlib, ast.literal_eval, or explicit logic).",
            ),
        ),
        Pattern::Decorator => (
            Severity::Info,
            "A decorator can wrap or replace the function or class it decorates; the context shows the definition as written.",
            None,
        ),
        Pattern::Metaclass => (
            Severity::Info,
            "A metaclass can add, remove or change attributes when the class is created, so the class at run time may differ from its static definition.",
            None,
        ),
        Pattern::CircularImport => (
            Severity::Warning,
            "These modules import each other while they are being imported; which names exist depends on import order and can fail at run time.",
            Some(
                "A cycle is a good candidate for refactoring: move the shared names to a module both can import (Google Python Style Guide 3.19.14).",
            ),
        ),
        Pattern::WildcardImport => (
            Severity::Warning,
            "`import *` binds names without listing them; only names that resolve for certain are related.",
            Some("Import the names the module uses explicitly."),
        ),
    }
}

/// One line of the warning log.
#[derive(Serialize)]
struct LogEntry<'a> {
    timestamp: String,
    #[serde(flatten)]
    warning: &'a Warning,
}

/// What identifies a logged warning, read back to log each one once.
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct LoggedKey {
    #[serde(rename = "type")]
    warning_type: String,
    file: String,
    line: u32,
    column: u32,
    message: String,
}

impl LoggedKey {
    fn of(warning: &Warning) -> LoggedKey {
        LoggedKey {
            warning_type: warning.warning_type.as_str().to_string(),
            file: warning.file.clone(),
            line: warning.line,
            column: warning.column,
            message: warning.message.clone(),
        }
    }
}

/// What a service last wrote to the warning log: the warnings then, the
/// keys the log holds, and the log's size after the write.
pub(crate) struct Logged {
    warnings: Arc<Warnings>,
    keys: BTreeSet<LoggedKey>,
    size: u64,
}

/// Appends the warnings the log does not hold yet, so that indexing the
/// same tree again does not repeat them. Returns how many were written.
///
/// After the first call, `logged` spares reading the log back: only the
/// files whose warnings changed since are looked at, against the keys
/// kept. A log whose size is not the one left means another process wrote
/// to it (or it was removed), and it is read again.
pub(crate) fn log_new(
    root: &Path,
    warnings: &Arc<Warnings>,
    logged: &mut Option<Logged>,
) -> std::io::Result<usize> {
    let path = jsonl::log_path(root, LOG_FILE);
    let size = || std::fs::symlink_metadata(&path).map_or(0, |m| m.len());
    let (mut keys, earlier) = match logged.take().filter(|l| l.size == size()) {
        Some(l) => (l.keys, Some(l.warnings)),
        None => (jsonl::read_every(&path).into_iter().collect(), None),
    };
    let timestamp = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let entries: Vec<LogEntry> = warnings
        .changed_since(earlier.as_deref())
        .flat_map(|(_, now)| now)
        .filter(|w| keys.insert(LoggedKey::of(w)))
        .map(|warning| LogEntry {
            timestamp: timestamp.clone(),
            warning,
        })
        .collect();
    jsonl::append(&path, &entries)?;
    *logged = Some(Logged {
        warnings: Arc::clone(warnings),
        keys,
        size: size(),
    });
    Ok(entries.len())
}
