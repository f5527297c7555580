//! The second half of the warm-start cache: the answers themselves.
//!
//! `index.bin` spares a warm start the parsing, but resolution and the rule
//! stages still run, and they are most of an index. So the answers the
//! commands that must be instant give (`deps`, `dependents`, the MCP
//! server's first `get_dependencies`/`get_dependents`) are kept too, in
//! `answers.bin`, with the tree they are true of: every indexed file's
//! stamp and text hash, every directory the walk entered (a file created,
//! deleted or renamed changes its directory's stamp), and every other file
//! the index read or whose state it reported (configuration, pytest and
//! ignore files, sub-project markers, skipped files). A start that finds
//! all of them as recorded answers from the file without walking, reading
//! or analysing the tree; any difference, or anything it cannot vouch for,
//! and the answer comes from a fresh index as before, so answers always
//! equal a fresh index's.
//!
//! Why these answers and not salsa's `persistence` or the engine's own
//! state (the interner, the stage outputs): the rendered answer of one
//! file is what a command prints, it depends on nothing but the tree, and
//! it can be read alone (a table up front, then one record per file, each
//! with its own checksum), so a warm `deps` reads a few hundred kilobytes
//! of the file, not all of it. Persisting the engine's state would still
//! leave the engine to rebuild (salsa re-verifies every memo on load) and
//! the whole state to decode before the first answer.
//!
//! Layout: magic, format, key (`index.bin`'s and the sources of discovery,
//! the engine and the rendering: `build.rs`'s `XFILE_ANSWERS_HASH`), table length, SHA-256 of
//! the table; the table (MessagePack: stamps, and per file its record
//! spans); then the records: a file's relationships (`Wire`, MessagePack),
//! its dependents as (source file, position in the source's list), and
//! the qualified names it defines (MessagePack), which an answer about one
//! of its definitions checks the name against as a fresh index does.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::Key;
use super::disk;
use super::format::{Hash, sha256};
use super::stamps::{Nanos, Stamp};
use crate::model::{Metadata, Relationship, RelationshipType};
use crate::relationships;
use xfile_engine::Engine;
use xfile_workspace::config::Config;
use xfile_workspace::read::{Links, read_project_file};

pub const ANSWERS: &str = "answers.bin";
const MAGIC: [u8; 8] = *b"XFILEWA\0";
/// Bumped whenever the layout changes.
const FORMAT: u32 = 2;
const HEADER_LEN: usize = MAGIC.len() + 4 + 32 + 8 + 32;
/// The table is read whole: past this, the file is not one of ours.
const MAX_TABLE: u64 = 256 * 1024 * 1024;

/// What the answers are true of, besides the indexed files.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tree {
    /// When the index began reading the tree.
    pub read_from: Nanos,
    /// Every directory the walk entered, absolute.
    pub dirs: Vec<PathBuf>,
    /// Other files the index depends on or reported, relative to the root
    /// (or absolute, outside it), present or not.
    pub watched: Vec<String>,
    pub sub_projects: Vec<String>,
    /// The answer budget in tokens (`answer_token_limit`).
    pub budget: usize,
}

#[derive(Serialize, Deserialize)]
struct Table {
    /// `index.bin` as it was when this file was written: a damaged or
    /// replaced one is noticed (and rebuilt) by the start that reads it,
    /// so these answers are not used past it.
    facts: Option<Stamp>,
    read_from: Nanos,
    sub_projects: Vec<String>,
    /// Root-relative (`""` for the root).
    dirs: Vec<(String, Stamp)>,
    watched: Vec<(String, Option<Stamp>)>,
    files: Vec<Row>,
}

#[derive(Serialize, Deserialize)]
struct Row {
    path: String,
    stamp: Stamp,
    hash: Hash,
    deps: Span,
    dependents: Span,
    /// The qualified names the file defines, sorted.
    definitions: Span,
    /// Tokens of the text form of the first page (the first
    /// [`PAGE`] items) of the dependencies and of the dependents, when
    /// that text is too long to be known to fit the budget by its length:
    /// what paging them measures first, known without building the
    /// tokenizer.
    first_page: [Option<u32>; 2],
}

/// Items on a page unless asked otherwise.
pub const PAGE: usize = crate::paging::DEFAULT_LIMIT;

/// A record: where it is after the table, and its checksum.
#[derive(Clone, Copy, Serialize, Deserialize)]
struct Span {
    at: u64,
    len: u32,
    check: [u8; 16],
}

/// A relationship as stored: its source is the file whose record holds it.
#[derive(Serialize, Deserialize)]
struct Wire {
    target_file: String,
    kind: u8,
    line: u32,
    column: u32,
    source_symbol: Option<String>,
    target_symbol: Option<String>,
    target_line: Option<u32>,
    import_style: Option<String>,
    /// Present or not, and then an alias or none.
    alias: Option<(Option<String>,)>,
    conditional: Option<bool>,
    condition: Option<String>,
    wildcard: Option<bool>,
    scope: Option<String>,
    defined_in: Option<String>,
}

const KINDS: [RelationshipType; 3] = [
    RelationshipType::Import,
    RelationshipType::FunctionCall,
    RelationshipType::Inheritance,
];

impl Wire {
    fn of(r: &Relationship) -> Wire {
        let m = &r.metadata;
        Wire {
            target_file: r.target_file.clone(),
            kind: KINDS
                .iter()
                .position(|k| *k == r.relationship_type)
                .and_then(|k| u8::try_from(k).ok())
                .unwrap_or(u8::MAX),
            line: r.line_number,
            column: r.column,
            source_symbol: r.source_symbol.clone(),
            target_symbol: r.target_symbol.clone(),
            target_line: r.target_line,
            import_style: m.import_style.map(str::to_string),
            alias: m.alias.clone().map(|a| (a,)),
            conditional: m.conditional,
            condition: m.condition.map(str::to_string),
            wildcard: m.wildcard,
            scope: m.scope.map(str::to_string),
            defined_in: m.defined_in.clone(),
        }
    }

    fn relationship(self, source_file: &str) -> Option<Relationship> {
        Some(Relationship {
            source_file: source_file.to_string(),
            target_file: self.target_file,
            relationship_type: *KINDS.get(usize::from(self.kind))?,
            line_number: self.line,
            column: self.column,
            source_symbol: self.source_symbol,
            target_symbol: self.target_symbol,
            target_line: self.target_line,
            metadata: Metadata {
                import_style: self.import_style.map(fixed),
                alias: self.alias.map(|(a,)| a),
                conditional: self.conditional,
                condition: self.condition.map(fixed),
                wildcard: self.wildcard,
                scope: self.scope.map(fixed),
                defined_in: self.defined_in,
            },
        })
    }
}

/// The metadata's words (`from`, `module`, ...) as the `&'static str`s the
/// model holds: each distinct word is leaked once, and there are a handful.
fn fixed(word: String) -> &'static str {
    static WORDS: OnceLock<Mutex<FxHashSet<&'static str>>> = OnceLock::new();
    let mut words = WORDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    match words.get(word.as_str()) {
        Some(known) => known,
        None => {
            let leaked: &'static str = Box::leak(word.into_boxed_str());
            words.insert(leaked);
            leaked
        }
    }
}

fn check(bytes: &[u8]) -> [u8; 16] {
    let hash = sha256(bytes);
    let mut check = [0; 16];
    check.copy_from_slice(&hash[..16]);
    check
}

/// Every file's relationships, and per file the (source, position) pairs
/// of the relationships that point into it, exactly as
/// `Engine::references_to` and `relationships::render` give them: sources
/// in path order, each source's in its own order.
pub(crate) struct Rendered {
    paths: Vec<String>,
    deps: Vec<Vec<Relationship>>,
    dependents: Vec<Vec<(u32, u32)>>,
    /// Each file's definitions' qualified names, sorted, each once.
    definitions: Vec<Vec<String>>,
}

/// Whether answers written now could be trusted by a later start: not
/// when a directory or another file they rest on changed since the index
/// began reading (a file created since, say), since the start would not
/// trust its stamp; rendering them would be work for nothing.
pub(crate) fn worth_writing(tree: &Tree) -> bool {
    let settled = |path: &Path| Stamp::at(path).is_none_or(|s| s.settled(tree.read_from));
    tree.dirs.iter().all(|dir| settled(dir))
}

/// Every file's answers (queries: run it inside `salsa::Cancelled::catch`
/// on a snapshot that updates may cancel).
pub(crate) fn render(engine: &Engine) -> Rendered {
    let mut paths: Vec<String> = engine.paths().map(str::to_string).collect();
    paths.sort();
    let index: FxHashMap<&str, u32> = paths
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((p.as_str(), u32::try_from(i).ok()?)))
        .collect();
    let interner = engine.interner();
    let mut deps = Vec::with_capacity(paths.len());
    let mut pointing: Vec<Vec<(u32, u32)>> = vec![Vec::new(); paths.len()];
    for (s, path) in paths.iter().enumerate() {
        let references = engine.references_from(path);
        let rendered = relationships::render_each(engine, &references);
        for (k, (_, i)) in rendered.iter().enumerate() {
            let r = &references[*i];
            let mut into = vec![r.target];
            into.extend(r.defined_in.filter(|d| *d != r.target));
            for node in into.into_iter().filter(|n| *n != r.source) {
                let target = interner.node_text(node);
                if let (Some(&f), Ok(s), Ok(k)) =
                    (index.get(&*target), u32::try_from(s), u32::try_from(k))
                {
                    pointing[f as usize].push((s, k));
                }
            }
        }
        deps.push(rendered.into_iter().map(|(r, _)| r).collect());
    }
    // Only the sources the dependents index lists, as `references_to`.
    let dependents = pointing
        .into_iter()
        .zip(&paths)
        .map(|(mut pairs, path)| {
            let listed: FxHashSet<u32> = engine
                .dependent_files(path)
                .iter()
                .filter_map(|d| index.get(d.as_str()).copied())
                .collect();
            pairs.retain(|(s, _)| listed.contains(s));
            pairs.sort_unstable();
            pairs.dedup();
            pairs
        })
        .collect();
    let definitions = paths
        .iter()
        .map(|path| {
            let mut names: Vec<String> = engine
                .facts(path)
                .map(|facts| {
                    facts
                        .definitions
                        .iter()
                        .map(|d| d.qualname.to_string())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names.dedup();
            names
        })
        .collect();
    Rendered {
        paths,
        deps,
        dependents,
        definitions,
    }
}

/// Writes the answers file for `rendered`, the answers of an index whose
/// texts have the hashes `texts`. Nothing is written when a file or
/// directory the answers rest on is gone already (the next start
/// re-indexes). Stamps are taken now, after the reads: one that changed
/// since the index began reading is unsettled (see `stamps.rs`), so it is
/// never trusted.
pub(crate) fn write(
    rendered: Rendered,
    texts: &[(String, Hash)],
    root: &Path,
    key: &Key,
    tree: &Tree,
) -> std::io::Result<()> {
    match encode_rendered(rendered, texts, root, key, tree) {
        Some(bytes) => disk::write_file(root, ANSWERS, &bytes),
        None => Ok(()),
    }
}

/// Each file's [`Row::first_page`] token counts. A text no longer than
/// half the budget in bytes fits whatever the answer's frame takes (a
/// token is at least a byte), so only longer ones are counted.
fn first_pages(rendered: &Rendered, budget: usize) -> Vec<[Option<u32>; 2]> {
    let counted = |list: &[&Relationship]| {
        let list: Vec<Relationship> = list.iter().take(PAGE).map(|r| (*r).clone()).collect();
        let text = crate::text::relationships(&list);
        (text.len() > budget / 2)
            .then(|| u32::try_from(crate::context::count_tokens(&text)).ok())
            .flatten()
    };
    (0..rendered.paths.len())
        .into_par_iter()
        .map(|f| {
            let deps: Vec<&Relationship> = rendered.deps[f].iter().take(PAGE).collect();
            let dependents: Vec<&Relationship> = rendered.dependents[f]
                .iter()
                .take(PAGE)
                .filter_map(|&(s, k)| rendered.deps.get(s as usize)?.get(k as usize))
                .collect();
            [counted(&deps), counted(&dependents)]
        })
        .collect()
}

fn encode_rendered(
    rendered: Rendered,
    texts: &[(String, Hash)],
    root: &Path,
    key: &Key,
    tree: &Tree,
) -> Option<Vec<u8>> {
    let hashes: FxHashMap<&str, &Hash> = texts.iter().map(|(p, h)| (p.as_str(), h)).collect();
    let mut records = Vec::new();
    let mut push = |bytes: Vec<u8>| -> Option<Span> {
        let span = Span {
            at: u64::try_from(records.len()).ok()?,
            len: u32::try_from(bytes.len()).ok()?,
            check: check(&bytes),
        };
        records.extend_from_slice(&bytes);
        Some(span)
    };
    let first_pages = first_pages(&rendered, tree.budget);
    let mut files = Vec::with_capacity(rendered.paths.len());
    for ((((path, deps), dependents), definitions), first_page) in rendered
        .paths
        .into_iter()
        .zip(rendered.deps)
        .zip(rendered.dependents)
        .zip(rendered.definitions)
        .zip(first_pages)
    {
        // A file's records in this order, its dependents last.
        let definitions = push(rmp_serde::to_vec(&definitions).ok()?)?;
        let wire: Vec<Wire> = deps.iter().map(Wire::of).collect();
        let deps = push(rmp_serde::to_vec(&wire).ok()?)?;
        let dependents = push(
            dependents
                .iter()
                .flat_map(|(s, k)| s.to_le_bytes().into_iter().chain(k.to_le_bytes()))
                .collect(),
        )?;
        let stamp = Stamp::at(&root.join(&path))?;
        let hash = **hashes.get(path.as_str())?;
        files.push(Row {
            path,
            stamp,
            hash,
            deps,
            dependents,
            definitions,
            first_page,
        });
    }
    let dirs = tree
        .dirs
        .iter()
        .map(|dir| {
            let relative = dir.strip_prefix(root).ok()?.to_str()?.to_string();
            Some((relative, Stamp::at(dir)?))
        })
        .collect::<Option<Vec<_>>>()?;
    let watched = tree
        .watched
        .iter()
        .map(|path| (path.clone(), Stamp::at(&root.join(path))))
        .collect();
    let table = Table {
        facts: index_stamp(root),
        read_from: tree.read_from,
        sub_projects: tree.sub_projects.clone(),
        dirs,
        watched,
        files,
    };
    let table = rmp_serde::to_vec(&table).ok()?;
    let mut out = Vec::with_capacity(HEADER_LEN + table.len() + records.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&key.answers);
    out.extend_from_slice(&u64::try_from(table.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&sha256(&table));
    out.extend_from_slice(&table);
    out.extend_from_slice(&records);
    Some(out)
}

/// Why the answers file was not used.
#[derive(Debug, thiserror::Error)]
pub enum Miss {
    #[error("there is none, or it cannot be read")]
    Absent,
    #[error("it is not a whole answers file of this xfile")]
    Damaged,
    #[error("it was written for another xfile build, rules, configuration or search roots")]
    Key,
    #[error("the tree changed since it was written: {0}")]
    Changed(String),
}

/// Answers read from `answers.bin`, valid for the tree as it was when
/// [`Prebuilt::open`] compared it.
pub struct Prebuilt {
    root: PathBuf,
    file: File,
    records_at: u64,
    table: Table,
    by_path: FxHashMap<String, usize>,
    /// Set when a record did not check out (the file is then removed, so
    /// that the next index writes it again).
    damaged: std::sync::atomic::AtomicBool,
    /// Each file's stamp when the tree was compared (a touched file's
    /// differs from the recorded one).
    seen: Vec<Stamp>,
    /// The configuration the key was checked with.
    pub config: Config,
}

impl Prebuilt {
    /// The answers file of `root` (canonical), if it was written for this
    /// xfile and configuration and the tree is as it records.
    pub fn open(root: &Path) -> Result<Prebuilt, Miss> {
        if !super::enabled() {
            return Err(Miss::Absent);
        }
        let (config, _) = Config::load(root);
        let (file, key, table, records_at) = read_table(root)?;
        if Key::new(&config, &table.sub_projects).answers != key {
            return Err(Miss::Key);
        }
        let seen = unchanged(root, &table)?;
        let by_path = table
            .files
            .iter()
            .enumerate()
            .map(|(i, row)| (row.path.clone(), i))
            .collect();
        Ok(Prebuilt {
            root: root.to_path_buf(),
            file,
            records_at,
            table,
            by_path,
            seen,
            damaged: Default::default(),
            config,
        })
    }

    fn record(&self, span: Span) -> Option<Vec<u8>> {
        let read = || {
            let mut bytes = vec![0; usize::try_from(span.len).ok()?];
            let at = self.records_at.checked_add(span.at)?;
            self.file.read_exact_at(&mut bytes, at).ok()?;
            (check(&bytes) == span.check).then_some(bytes)
        };
        let bytes = read();
        if bytes.is_none()
            && !self
                .damaged
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            disk::remove(&self.root, ANSWERS);
        }
        bytes
    }

    /// Whether a record read so far did not check out.
    pub fn damaged(&self) -> bool {
        self.damaged.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn deps_at(&self, row: usize) -> Option<Vec<Relationship>> {
        let row = self.table.files.get(row)?;
        let wire: Vec<Wire> = rmp_serde::from_slice(&self.record(row.deps)?).ok()?;
        wire.into_iter()
            .map(|w| w.relationship(&row.path))
            .collect()
    }

    /// What `Service::dependencies` answers for `path` (root-relative);
    /// `None` when the file holds no such record or it does not check out.
    pub fn dependencies(&self, path: &str) -> Option<Vec<Relationship>> {
        self.deps_at(*self.by_path.get(path)?)
    }

    /// The tokens of the text form of the first [`PAGE`] dependencies (or
    /// dependents) of `path`, when they were counted.
    pub fn first_page_tokens(&self, path: &str, dependents: bool) -> Option<usize> {
        let row = self.table.files.get(*self.by_path.get(path)?)?;
        usize::try_from(row.first_page[usize::from(dependents)]?).ok()
    }

    /// What `Service::dependents` answers for `path` (root-relative).
    pub fn dependents(&self, path: &str) -> Option<Vec<Relationship>> {
        let row = self.table.files.get(*self.by_path.get(path)?)?;
        let bytes = self.record(row.dependents)?;
        let mut out = Vec::new();
        let mut source: Option<(u32, Vec<Option<Relationship>>)> = None;
        for pair in bytes.chunks_exact(8) {
            let s = u32::from_le_bytes(pair[..4].try_into().ok()?);
            let k = usize::try_from(u32::from_le_bytes(pair[4..].try_into().ok()?)).ok()?;
            if source.as_ref().is_none_or(|(at, _)| *at != s) {
                let deps = self.deps_at(usize::try_from(s).ok()?)?;
                source = Some((s, deps.into_iter().map(Some).collect()));
            }
            let (_, deps) = source.as_mut()?;
            out.push(deps.get_mut(k)?.take()?);
        }
        Some(out)
    }

    /// What `Service::dependents_of_symbol` answers for `symbol` of `path`,
    /// when the answers can say it: the dependents whose target is the
    /// definition or one of its members, which, when there are none, the
    /// file must define (as a fresh index checks it). `None` when the file
    /// defines no such name, so that the index answers, with its error
    /// (no definition, or one the class inherits), word for word.
    pub fn dependents_of_symbol(&self, path: &str, symbol: &str) -> Option<Vec<Relationship>> {
        let symbol = symbol.trim();
        let mut list = self.dependents(path)?;
        crate::of_symbol(&mut list, symbol);
        if list.is_empty() && symbol != "<module>" && !self.defines(path, symbol)? {
            return None;
        }
        Some(list)
    }

    /// Whether `path` defines `qualname`; `None` when its record does not
    /// check out.
    fn defines(&self, path: &str, qualname: &str) -> Option<bool> {
        let row = self.table.files.get(*self.by_path.get(path)?)?;
        let names: Vec<String> = rmp_serde::from_slice(&self.record(row.definitions)?).ok()?;
        Some(
            names
                .binary_search_by(|name| name.as_str().cmp(qualname))
                .is_ok(),
        )
    }

    /// The files an answer about `path` rests on: itself and the other
    /// indexed files among `relationships`' ends.
    pub fn still(&self, path: &str, relationships: &[Relationship]) -> bool {
        let mut files: FxHashSet<&str> = relationships
            .iter()
            .flat_map(|r| [r.source_file.as_str(), r.target_file.as_str()])
            .collect();
        files.insert(path);
        files.into_iter().all(|file| {
            self.by_path
                .get(file)
                .is_none_or(|&row| Stamp::at(&self.root.join(file)).as_ref() == self.seen.get(row))
        })
    }
}

type Opened = (File, Hash, Table, u64);

fn read_table(root: &Path) -> Result<Opened, Miss> {
    let file = disk::open(root, ANSWERS).map_err(|_| Miss::Absent)?;
    let mut header = [0; HEADER_LEN];
    file.read_exact_at(&mut header, 0)
        .map_err(|_| Miss::Damaged)?;
    let rest = header.strip_prefix(&MAGIC).ok_or(Miss::Damaged)?;
    let (format, rest) = rest.split_first_chunk::<4>().ok_or(Miss::Damaged)?;
    let (key, rest) = rest.split_first_chunk::<32>().ok_or(Miss::Damaged)?;
    let (len, rest) = rest.split_first_chunk::<8>().ok_or(Miss::Damaged)?;
    let (checksum, _) = rest.split_first_chunk::<32>().ok_or(Miss::Damaged)?;
    if u32::from_le_bytes(*format) != FORMAT {
        return Err(Miss::Damaged);
    }
    let len = u64::from_le_bytes(*len);
    if len > MAX_TABLE {
        return Err(Miss::Damaged);
    }
    let mut table = vec![0; usize::try_from(len).map_err(|_| Miss::Damaged)?];
    let header_len = u64::try_from(HEADER_LEN).map_err(|_| Miss::Damaged)?;
    file.read_exact_at(&mut table, header_len)
        .map_err(|_| Miss::Damaged)?;
    if sha256(&table) != *checksum {
        return Err(Miss::Damaged);
    }
    let decoded: Table = rmp_serde::from_slice(&table).map_err(|_| Miss::Damaged)?;
    Ok((file, *key, decoded, header_len + len))
}

/// Whether the tree is as `table` records it: directories and other files
/// by their stamps (settled ones only), indexed files by their stamps, or
/// by their text's hash when a stamp is unsettled or moved (a `touch`).
/// Returns each file's stamp as found.
fn unchanged(root: &Path, table: &Table) -> Result<Vec<Stamp>, Miss> {
    fn changed<T>(what: &str) -> Result<T, Miss> {
        Err(Miss::Changed(what.to_string()))
    }
    if table.facts.is_none() || index_stamp(root) != table.facts {
        return changed(&format!("{}/{}", disk::DIR, disk::FILE));
    }
    for (dir, stamp) in &table.dirs {
        let now = Stamp::at(&root.join(dir));
        if now != Some(*stamp) || !stamp.settled(table.read_from) {
            return changed(if dir.is_empty() { "." } else { dir });
        }
    }
    for (path, stamp) in &table.watched {
        let now = Stamp::at(&root.join(path));
        if now != *stamp || stamp.is_some_and(|s| !s.settled(table.read_from)) {
            return changed(path);
        }
    }
    let seen: Vec<Option<Stamp>> = table
        .files
        .iter()
        .map(|row| Stamp::at(&root.join(&row.path)))
        .collect();
    let doubtful: Vec<&Row> = table
        .files
        .iter()
        .zip(&seen)
        .filter(|(row, now)| **now != Some(row.stamp) || !row.stamp.settled(table.read_from))
        .map(|(row, _)| row)
        .collect();
    // A file whose stamp cannot vouch for it is read (as discovery reads
    // it: inside the root, no sensitive file, regular files only) and
    // compared by hash; in parallel only when there are some, as starting
    // the thread pool costs more than the usual none.
    let differs = |row: &&&Row| {
        let read = read_project_file(root, &root.join(&row.path), Links::Resolve, row.stamp.len());
        !read.is_ok_and(|(_, bytes)| sha256(&bytes) == row.hash)
    };
    let differs = match doubtful.len() {
        0 => None,
        1 => doubtful.iter().find(differs),
        _ => doubtful.par_iter().find_any(differs),
    };
    if let Some(row) = differs {
        return changed(&row.path);
    }
    seen.into_iter()
        .zip(&table.files)
        .map(|(now, row)| now.ok_or_else(|| Miss::Changed(row.path.clone())))
        .collect()
}

fn index_stamp(root: &Path) -> Option<Stamp> {
    let path = disk::dir(root).join(disk::FILE);
    std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m))
}

/// How many files the answers file at `root` answers for, if it holds for
/// the tree now, else why not.
pub(crate) fn status(root: &Path) -> Result<usize, Miss> {
    Prebuilt::open(root).map(|p| p.table.files.len())
}
