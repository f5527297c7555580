//! Applying changes seen on disk to a [`Service`]: the incremental path
//! behind the watcher and the freshness check, for edits and deletions alike.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::live::Involved;
use super::model::UpdateReport;
use super::{Service, breaks, elapsed_ms, links, ms, rfc3339, warnings};
use xfile_engine::{self as engine, EntryPointSpec};
use xfile_workspace::config::CONFIG_FILE;
use xfile_workspace::discover::{self, Stamp};
use xfile_workspace::pytest;
use xfile_workspace::{Notice, NoticeKind, PathError, SourceText};

/// Files whose change means the set of indexed files must be recomputed.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore"];

/// Changes read from disk, not yet written to the model.
pub struct Pending {
    report: UpdateReport,
    started: Instant,
    change: Change,
}

enum Change {
    Reload(Box<Service>),
    Files {
        scope: Vec<PathBuf>,
        files: Vec<SourceText>,
        notices: Vec<Notice>,
        dirs: Vec<PathBuf>,
        /// Every sub-project marker after the change.
        markers: BTreeSet<String>,
        /// The declared entry points, read again when a sub-project's
        /// `pyproject.toml` changed or the sub-projects did.
        entry_points: Option<(Vec<EntryPointSpec>, Vec<Notice>)>,
        /// What the edited files were before (`breaks`), and the facts of
        /// their new texts.
        recorded: Box<breaks::Recorded>,
    },
}

impl Pending {
    /// Whether writing this would change nothing.
    pub fn is_empty(&self) -> bool {
        !self.report.changed()
    }

    pub fn into_report(self) -> UpdateReport {
        let mut report = self.report;
        report.durations.total_ms = elapsed_ms(self.started);
        report.finished_at = rfc3339(SystemTime::now());
        report
    }
}

/// Changes written to the inputs; derived relations not yet brought up to date.
pub struct Written {
    report: UpdateReport,
    started: Instant,
}

fn is_sub_pyproject(path: &str) -> bool {
    path.ends_with("/pyproject.toml")
}

/// How many entries of a directory [`Service::stale`] looks at for the
/// new half of a rename: bounds a read on a huge directory.
const BESIDE_LIMIT: usize = 10_000;

fn in_scope(root: &Path, scope: &[PathBuf], relative: &str) -> bool {
    let absolute = root.join(relative);
    scope.iter().any(|s| absolute.starts_with(s))
}

impl Service {
    /// The indexed files within `scope` (absolute paths under the root),
    /// sorted, each once: read by ranges of the sorted paths, so an update
    /// of one directory does not go over every file.
    fn indexed_within<'a>(&'a self, scope: &'a [PathBuf]) -> Vec<&'a str> {
        let mut found: Vec<&str> = Vec::new();
        for within in scope {
            // A path that is not valid UTF-8 holds no indexed file.
            if let Some(relative) = within.strip_prefix(&self.root).ok().and_then(Path::to_str) {
                found.extend(self.engine.paths_within(relative));
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// The indexed files among `files` (root-relative) whose metadata on
    /// disk no longer matches what was read, as absolute paths: a stat per
    /// file, cheap enough to run before every answer.
    ///
    /// A file that is gone may have been renamed: the Python files beside
    /// it that are not indexed come too, so that the update this leads to
    /// takes in both halves of a rename, and the watcher's update after it
    /// finds nothing left to do (otherwise a rename cost two updates in a
    /// row before the answer showed the new name).
    pub fn stale(&self, files: &[String]) -> Vec<PathBuf> {
        let mut stale = Vec::new();
        let mut gone_from = BTreeSet::new();
        for file in files {
            let absolute = self.root.join(file);
            let now = Stamp::read(&absolute);
            if now.as_ref() != self.stamps.get(file) {
                if now.is_none() {
                    gone_from.extend(absolute.parent().map(Path::to_path_buf));
                }
                stale.push(absolute);
            }
        }
        for dir in gone_from {
            stale.extend(self.unindexed_beside(&dir));
        }
        stale
    }

    /// The `.py` files directly in `dir` that are not indexed, at most
    /// [`BESIDE_LIMIT`] entries looked at (discovery decides later whether
    /// each is indexed at all: ignore rules, links, sizes).
    fn unindexed_beside(&self, dir: &Path) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .take(BESIDE_LIMIT)
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| self.unindexed_module(path))
            .collect()
    }

    /// Whether `path` is a `.py` file of the root that is not indexed.
    fn unindexed_module(&self, path: &Path) -> bool {
        path.extension().is_some_and(|e| e == "py")
            && path
                .strip_prefix(&self.root)
                .ok()
                .and_then(Path::to_str)
                .is_some_and(|relative| !self.stamps.contains_key(relative))
    }

    /// The directories that hold indexed files, and their ancestors up to
    /// the root, absolute: where a new module shows first (3,250
    /// directories discovery entered on Django, 651 of these).
    pub fn module_dirs(&self) -> BTreeSet<PathBuf> {
        let mut dirs = BTreeSet::new();
        for file in self.stamps.keys() {
            let mut dir = Path::new(file.as_str()).parent();
            while let Some(relative) = dir {
                if !dirs.insert(self.root.join(relative)) {
                    break;
                }
                dir = relative.parent();
            }
        }
        dirs
    }

    /// What may have appeared directly in `dir`, a directory discovery
    /// entered: `.py` files that are not indexed, and directories it has
    /// not entered that were made at or after `since` (hidden ones and
    /// `__pycache__` aside: an old directory discovery skips, such as
    /// `templates/`, is not walked again on every look; one moved in keeps
    /// its birth time and is left to the watcher), at most
    /// [`BESIDE_LIMIT`] entries looked at. Discovery decides whether each
    /// is indexed at all.
    pub fn appeared_in(&self, dir: &Path, since: SystemTime) -> Vec<PathBuf> {
        // One listing for both: this runs before answers.
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let new_dir = |entry: &std::fs::DirEntry, path: &Path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| !name.starts_with('.') && name != "__pycache__")
                && !self.dirs.contains(path)
                && entry
                    .metadata()
                    .and_then(|metadata| metadata.created())
                    .is_ok_and(|born| born >= since)
        };
        entries
            .take(BESIDE_LIMIT)
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                let kept = match entry.file_type() {
                    Ok(kind) if kind.is_dir() => new_dir(&entry, &path),
                    Ok(_) => self.unindexed_module(&path),
                    Err(_) => false,
                };
                kept.then_some(path)
            })
            .collect()
    }

    /// The indexed files an answer about `involved` rests on.
    pub fn involved(&self, involved: &Involved) -> Vec<String> {
        let related = |file: &str, dependents: bool| {
            let file = match self.resolve_file(file) {
                Ok(file) => file,
                // Not indexed (yet): if it lies inside the root, its stamp
                // (none held) differs from the disk's as soon as it exists,
                // so a file created a moment ago is read in before the
                // answer, whatever the watcher has seen.
                Err(_) => {
                    return xfile_workspace::resolve_user_path(&self.root, file)
                        .ok()
                        .filter(|relative| relative.ends_with(".py"))
                        .into_iter()
                        .collect();
                }
            };
            let others = if dependents {
                self.engine.dependent_files(&file)
            } else {
                self.engine.dependency_files(&file)
            };
            let mut files = vec![file];
            files.extend(others);
            files
        };
        match involved {
            Involved::Dependencies(file) => related(file, false),
            Involved::Dependents(file) => related(file, true),
            Involved::All => self.engine.paths().map(str::to_string).collect(),
        }
    }

    /// Reads what changed under `paths` (absolute files or directories,
    /// existing or not) through the discovery walk, without touching the
    /// model, so snapshots keep being served meanwhile. A change to the
    /// configuration re-indexes from scratch; a change to an ignore file
    /// walks the whole tree again.
    pub fn read_changes(&self, paths: &[PathBuf], trigger: &str) -> Result<Pending, PathError> {
        let started = Instant::now();
        let mut report = UpdateReport {
            trigger: trigger.to_string(),
            ..UpdateReport::default()
        };
        let named = |names: &[&str]| {
            paths.iter().any(|p| {
                p.file_name()
                    .is_some_and(|n| names.iter().any(|name| n == *name))
            })
        };
        // Settings that shape the whole index: read it again from scratch.
        let settings = paths.iter().any(|p| {
            p.parent() == Some(self.root.as_path())
                && p.file_name()
                    .is_some_and(|n| n == CONFIG_FILE || pytest::is_settings_file(n))
        });
        if settings {
            let mut fresh = Service::open(&self.root)?;
            // The snippet cache belongs to the session, not to one index.
            fresh.cache = self.cache.clone();
            // So do the edits seen and what is known of the repository.
            fresh.edited = self.edited.clone();
            fresh.git = self.git.clone();
            fresh.befores = self.befores.clone();
            report.reloaded = true;
            report.durations.read_ms = elapsed_ms(started);
            return Ok(Pending {
                report,
                started,
                change: Change::Reload(Box::new(fresh)),
            });
        }
        report.rescanned = named(IGNORE_FILES);
        let scope: Vec<PathBuf> = if report.rescanned {
            vec![self.root.clone()]
        } else {
            // A change that decides whether a directory is skipped (an
            // environment marker, an `__init__.py` in `build/`) re-reads
            // that directory whole, as a fresh index would read it.
            let mut scope: Vec<PathBuf> = paths
                .iter()
                .filter(|p| p.starts_with(&self.root))
                .flat_map(|p| {
                    let mut widened = discover::guarded(&self.root, p);
                    widened.push(p.clone());
                    widened
                })
                .collect();
            scope.sort();
            scope.dedup();
            scope
        };
        let found = discover::discover_within(&self.root, &self.config.ignore_patterns, &scope);
        let seen: BTreeSet<&str> = found.files.iter().map(|f| f.path.as_str()).collect();
        report.removed = self
            .indexed_within(&scope)
            .into_iter()
            .filter(|p| !seen.contains(p))
            .map(str::to_string)
            .collect();
        let markers: BTreeSet<String> = self
            .markers
            .iter()
            .filter(|m| !in_scope(&self.root, &scope, m))
            .cloned()
            .chain(found.markers)
            .collect();
        let mut unindexed: Vec<String> = super::too_large(&self.notices)
            .into_iter()
            .filter(|path| !in_scope(&self.root, &scope, path))
            .chain(super::too_large(&found.notices))
            .collect();
        unindexed.sort();
        report.layout_changed = markers != *self.markers || unindexed != self.engine.unindexed();
        let entry_points = (report.layout_changed || named(&["pyproject.toml"]))
            .then(|| links::declared_entry_points(&self.root, &markers));
        if let Some((specs, _)) = &entry_points {
            report.layout_changed |= specs.as_slice() != self.engine.entry_points();
        }
        let mut files = Vec::new();
        for file in found.files {
            match self.engine.text_is(&file.path, &file.text) {
                None => report.added.push(file.path.clone()),
                Some(false) => report.modified.push(file.path.clone()),
                Some(true) => report.unchanged += 1,
            }
            files.push(file);
        }
        let modified: Vec<(&str, &str)> = files
            .iter()
            .filter(|f| report.modified.contains(&f.path))
            .map(|f| (f.path.as_str(), f.text.as_str()))
            .collect();
        let recorded = Box::new(self.befores(&modified, &report.removed));
        report.durations.read_ms = elapsed_ms(started);
        Ok(Pending {
            report,
            started,
            change: Change::Files {
                scope,
                files,
                notices: found.notices,
                dirs: found.dirs,
                markers,
                entry_points,
                recorded,
            },
        })
    }

    /// Writes what [`Service::read_changes`] found into the inputs. Queries
    /// on other snapshots are cancelled, and this waits until they are gone.
    pub fn write_changes(&mut self, pending: Pending) -> Written {
        let Pending {
            mut report,
            started,
            change,
        } = pending;
        let phase = Instant::now();
        self.engine.record_executions();
        let inputs = match change {
            Change::Reload(fresh) => {
                *self = *fresh;
                engine::Change::default()
            }
            Change::Files {
                scope,
                files,
                notices,
                dirs,
                markers,
                entry_points,
                recorded,
            } => {
                let breaks::Recorded { befores, presets } = *recorded;
                self.keep_befores(befores);
                let mut presets: std::collections::HashMap<_, _> = presets.into_iter().collect();
                let sub_projects = discover::sub_project_dirs(&markers);
                let entry_points = entry_points.map(|(specs, found)| {
                    // The root's own pyproject.toml re-indexes from scratch;
                    // the sub-projects' notices are replaced.
                    let kept = Arc::make_mut(&mut self.notices);
                    kept.retain(|n| !(n.kind == NoticeKind::Config && is_sub_pyproject(&n.path)));
                    kept.extend(found);
                    specs
                });
                self.markers = Arc::new(markers);
                let known = Arc::make_mut(&mut self.dirs);
                for within in &scope {
                    // A directory's descendants sort right after it.
                    let gone: Vec<PathBuf> = known
                        .range(within.clone()..)
                        .take_while(|d| d.starts_with(within))
                        .cloned()
                        .collect();
                    for dir in gone {
                        known.remove(&dir);
                    }
                }
                known.extend(dirs);
                let now = SystemTime::now();
                let stamps = Arc::make_mut(&mut self.stamps);
                let deleted = Arc::make_mut(&mut self.deleted);
                for path in &report.removed {
                    stamps.remove(path);
                    deleted.insert(path.clone(), now);
                }
                let edited = Arc::make_mut(&mut self.edited);
                for path in &report.removed {
                    edited.remove(path);
                }
                let changed: std::collections::HashSet<&String> =
                    report.added.iter().chain(&report.modified).collect();
                let mut updates = Vec::new();
                for file in files {
                    if changed.contains(&file.path) {
                        edited.insert(file.path.clone(), file.stamp.modified.unwrap_or(now));
                    }
                    stamps.insert(file.path.clone(), file.stamp);
                    deleted.remove(&file.path);
                    updates.push((file.path, file.text));
                }
                let kept = Arc::make_mut(&mut self.notices);
                kept.retain(|n| {
                    n.kind == NoticeKind::Config || !in_scope(&self.root, &scope, &n.path)
                });
                kept.extend(notices.into_iter().filter(|n| n.kind != NoticeKind::Config));
                kept.sort_by(|a, b| a.path.cmp(&b.path));
                let mut change = engine::Change {
                    removed: report.removed.clone(),
                    sub_projects: Some(sub_projects),
                    entry_points,
                    unindexed: Some(super::too_large(kept)),
                    // Unchanged texts are skipped by the engine (no input write).
                    ..engine::Change::texts(updates)
                };
                for file in &mut change.files {
                    file.facts = presets.remove(&file.path);
                }
                change
            }
        };
        // Before the service is published again: this writes inputs, which
        // waits for every snapshot to be dropped. The rest of the analysis
        // runs in `finish`, beside readers.
        let applied = self.engine.apply_inputs(inputs);
        if !(applied.added.is_empty() && applied.removed.is_empty()) {
            // Suppression entries that name files depend on the file set.
            let (suppression, _) =
                warnings::Suppression::new(&self.config, &self.root, &self.engine);
            self.suppression = Arc::new(suppression);
        }
        report.durations.analyze_ms = ms(applied.analysis_time);
        report.durations.parse_ms = elapsed_ms(phase) - report.durations.analyze_ms;
        Written { report, started }
    }

    /// Brings the derived relations up to date after [`Service::write_changes`]
    /// and completes the report.
    pub fn finish(&mut self, written: Written) -> UpdateReport {
        let Written {
            mut report,
            started,
        } = written;
        let phase = Instant::now();
        self.engine.analyze();
        report.durations.analyze_ms += elapsed_ms(phase);
        report.queries = self.engine.take_executions();
        report.datalog_rerun = !report.queries.datalog_ms.is_empty();
        report.durations.total_ms = elapsed_ms(started);
        report.finished_at = rfc3339(SystemTime::now());
        report
    }

    /// Makes `files` (as [`Service::unprepared`] names them) ready for a
    /// cheap first edit ([`xfile_engine::Engine::prepare_for_edits`]):
    /// writes inputs, so no snapshot may be held; then
    /// [`Service::settle_prepared`] does the walk that edits are spared.
    pub fn prepare_for_edits(&mut self, files: &[String]) {
        self.engine
            .prepare_for_edits(files.iter().map(String::as_str));
    }

    /// The indexed files among `paths` (user paths) not prepared for
    /// edits yet, as [`Service::prepare_for_edits`] takes them.
    pub fn unprepared(&self, paths: &[String]) -> Vec<String> {
        paths
            .iter()
            .filter_map(|path| self.resolve_file(path).ok())
            .filter(|file| self.engine.needs_preparing(file))
            .collect()
    }

    /// The indexed files modified last before the index read them, newest
    /// first, at most `count`, none older than `within`: the files an
    /// agent resuming work is likeliest to edit next.
    pub fn recently_modified(&self, count: usize, within: std::time::Duration) -> Vec<String> {
        let Some(oldest) = SystemTime::now().checked_sub(within) else {
            return Vec::new();
        };
        let mut recent: Vec<(SystemTime, &String)> = self
            .stamps
            .iter()
            .filter_map(|(path, stamp)| Some((stamp.modified?, path)))
            .filter(|(modified, _)| *modified >= oldest)
            .collect();
        recent.sort_unstable_by(|a, b| b.cmp(a));
        recent
            .into_iter()
            .take(count)
            .map(|(_, path)| path.clone())
            .collect()
    }

    /// Verifies the derived relations after [`Service::prepare_for_edits`]:
    /// nothing they hold changes, so no cache above the engine is dropped.
    pub fn settle_prepared(&mut self) {
        self.engine.analyze();
    }

    /// When `module` (dotted, as an unresolved import names it) was last
    /// seen as a project file that an update removed: `(path, when)`.
    pub fn deleted_module(&self, module: &str) -> Option<(&str, SystemTime)> {
        self.deleted.iter().find_map(|(path, &when)| {
            (self.engine.module_name(path) == module).then_some((path.as_str(), when))
        })
    }
}
