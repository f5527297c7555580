//! String-keyed links (Django signals, pluggy hooks, entry-point groups)
//! as one typed list keyed by the string that ties the two ends together,
//! for linking across projects: two projects link where one's definition
//! or provided entry point and the other's use share a kind of key. Within
//! one project the rules link them already (rules/plugins*.dl). Also reads
//! the entry points the project's `pyproject.toml` files declare.

use std::collections::BTreeSet;
use std::path::Path;

use super::Service;
use xfile_engine::{EntryPointSpec, LinkTuple, is_marker, parse_entry_points};
use xfile_workspace::{self as workspace, Notice, NoticeKind};

/// The source line quoted with a link is cut to this many characters.
const CONTEXT_CHARS: usize = 200;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum LinkKind {
    SignalDefinition,
    SignalReceiver,
    SignalSender,
    HookSpec,
    HookImpl,
    EntryPointProvided,
    EntryPointLoaded,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StringLink {
    pub kind: LinkKind,
    /// Signals: the definition's dotted name (`corelib.signals.user_saved`),
    /// or for a signal from outside the project the dotted name it is
    /// imported by; pluggy: `project.hook`; entry points: the group.
    pub key: String,
    /// Root-relative.
    pub file: String,
    pub line: u32,
    /// The source line, trimmed and bounded.
    pub context: String,
}

impl Service {
    /// Every string-keyed link of the project, by file, then line, then
    /// kind; computed once per engine state.
    pub fn string_links(&self) -> Vec<StringLink> {
        let links = self
            .links
            .get(self.engine.changes(), || self.compute_links());
        links.as_ref().clone()
    }

    fn compute_links(&self) -> Vec<StringLink> {
        let engine = &self.engine;
        let texts = crate::texts::Texts::new(engine);
        let mut links: Vec<StringLink> = engine
            .string_link_sites()
            .into_iter()
            .filter_map(|link| {
                let line = engine
                    .facts(&link.file)?
                    .sites
                    .get(link.site as usize)?
                    .line;
                let (kind, key) = match link.what {
                    LinkTuple::SignalDefinition { name } => (
                        LinkKind::SignalDefinition,
                        format!("{}.{name}", engine.module_name(&link.file)),
                    ),
                    LinkTuple::SignalReceiver {
                        signal_file,
                        signal,
                    } => (
                        LinkKind::SignalReceiver,
                        self.signal_key(&signal_file, &signal),
                    ),
                    LinkTuple::SignalSender {
                        signal_file,
                        signal,
                    } => (
                        LinkKind::SignalSender,
                        self.signal_key(&signal_file, &signal),
                    ),
                    LinkTuple::HookSpec { project, hook } => {
                        (LinkKind::HookSpec, format!("{project}.{hook}"))
                    }
                    LinkTuple::HookImpl { project, hook } => {
                        (LinkKind::HookImpl, format!("{project}.{hook}"))
                    }
                    LinkTuple::LoadsEntryPoints { group } => (LinkKind::EntryPointLoaded, group),
                };
                let context = texts.line(&link.file, line, bounded).unwrap_or_default();
                Some(StringLink {
                    kind,
                    key,
                    file: link.file,
                    line,
                    context,
                })
            })
            .chain(engine.entry_points().iter().map(|spec| StringLink {
                kind: LinkKind::EntryPointProvided,
                key: spec.group.clone(),
                file: spec.pyproject.clone(),
                line: spec.line,
                context: bounded(&spec.text),
            }))
            .collect();
        links.sort_by(|a, b| {
            (&a.file, a.line, kind_rank(&a.kind), &a.key).cmp(&(
                &b.file,
                b.line,
                kind_rank(&b.kind),
                &b.key,
            ))
        });
        links.dedup();
        links
    }

    /// The dotted name of signal `name` defined in `file`, a project file
    /// or a marker such as `<third-party:django.db.models.signals>`.
    fn signal_key(&self, file: &str, name: &str) -> String {
        let module = if is_marker(file) {
            let inner = file.trim_start_matches('<').trim_end_matches('>');
            inner
                .split_once(':')
                .map_or(inner, |(_, dotted)| dotted)
                .to_string()
        } else {
            self.engine.module_name(file)
        };
        format!("{module}.{name}")
    }
}

fn kind_rank(kind: &LinkKind) -> u8 {
    kind.clone() as u8
}

fn bounded(line: &str) -> String {
    line.trim().chars().take(CONTEXT_CHARS).collect()
}

/// The entry points declared in the root's `pyproject.toml` and in the
/// sub-projects' (`markers`: root-relative marker files), with a notice
/// for each file that cannot be read or is not valid TOML.
pub(crate) fn declared_entry_points(
    root: &Path,
    markers: &BTreeSet<String>,
) -> (Vec<EntryPointSpec>, Vec<Notice>) {
    let pyprojects = std::iter::once("pyproject.toml").chain(
        markers
            .iter()
            .map(String::as_str)
            .filter(|m| m.ends_with("/pyproject.toml")),
    );
    let mut specs = Vec::new();
    let mut notices = Vec::new();
    for pyproject in pyprojects {
        let parsed = workspace::read_config_file(&root.join(pyproject)).and_then(|text| {
            text.map_or(Ok(Vec::new()), |text| {
                parse_entry_points(pyproject, &text).map_err(|e| format!("not valid TOML ({e})"))
            })
        });
        match parsed {
            Ok(found) => specs.extend(found),
            Err(problem) => notices.push(Notice {
                path: pyproject.to_string(),
                kind: NoticeKind::Config,
                message: format!("{pyproject}: {problem}; its entry points are ignored"),
            }),
        }
    }
    (specs, notices)
}
