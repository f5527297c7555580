//! The symbol index: every definition of the project (modules, classes,
//! functions, methods, module-level names) with its qualified names, and
//! matching a query against it: exact, qualified, prefix, word parts of
//! snake_case and camelCase names, substring, and one or two typos.

use std::sync::Arc;
use xfile_engine::Engine;

use xfile_python::{DefinitionKind, Name};

/// One definition of the project.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// Shared by the file's entries.
    pub file: Arc<str>,
    /// `User.save`; empty for a module.
    pub qualname: Name,
    /// The last part of the qualified name (the module's own name for a module).
    pub name: Name,
    /// `app.models.User.save`.
    pub dotted: Name,
    pub kind: Kind,
    pub line: u32,
    /// Lower-case forms, kept for the matches every query tries; the
    /// words are made when a query of several words needs them. Names of
    /// up to 24 bytes (most) are stored inline: an index of every
    /// definition was 36 MB of a served Django, most of it small strings.
    lower_name: Name,
    lower_dotted: Name,
    /// Lower-case letters and digits only.
    squashed: Name,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Module,
    Class,
    Function,
    Method,
    Variable,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Module => "module",
            Kind::Class => "class",
            Kind::Function => "function",
            Kind::Method => "method",
            Kind::Variable => "variable",
        }
    }
}

/// How a query matched an entry; better matches first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    Exact,
    /// The same letters with other separators or case: `get cols` for
    /// `get_cols`, `truncatewordshtml` for `truncatewords_html`.
    SameWords,
    Qualified,
    Prefix,
    WordParts,
    /// The query starts a word of the name.
    Substring,
    Fuzzy,
    /// The query is inside a word of the name.
    Infix,
}

/// The entries of every file, each file's kept with the revision and
/// module name it was built from, so the next state's index rebuilds only
/// the files that changed (or whose module name did).
pub(crate) struct SymbolIndex {
    files: Vec<FileEntries>,
    /// Definitions again under the dotted names packages re-export them
    /// as (`django.core.cache.InvalidCacheKey`), for qualified queries.
    /// Rebuilt for every state: where an import resolves can change
    /// without the package's own file changing.
    aliases: Vec<Entry>,
}

struct FileEntries {
    revision: Option<u64>,
    module: String,
    entries: std::sync::Arc<Vec<Entry>>,
}

impl FileEntries {
    /// The entries of `path`'s definitions as `engine` has them now;
    /// `kept` is reused if made at the same revision under the same module
    /// name.
    fn of(engine: &Engine, path: &str, kept: Option<&FileEntries>) -> Option<FileEntries> {
        let revision = engine.revision(path);
        let module = engine.module_name(path);
        let entries = match kept {
            Some(kept) if kept.revision == revision && kept.module == module => {
                kept.entries.clone()
            }
            _ => std::sync::Arc::new(file_entries(engine, path, &module)?),
        };
        Some(FileEntries {
            revision,
            module,
            entries,
        })
    }
}

/// Splits `retryWithBackoff`, `retry_with_backoff` and `HTTPServer` into
/// lower-case words.
pub(crate) fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' || c == '.' || c == '-' || c.is_whitespace() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && !current.is_empty()
            && (chars[i - 1].is_lowercase()
                || chars[i - 1].is_ascii_digit()
                || chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
        if boundary {
            words.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

impl Entry {
    fn new(file: &Arc<str>, module: &str, qualname: &str, kind: Kind, line: u32) -> Entry {
        let name = match qualname.rsplit_once('.') {
            Some((_, last)) => last,
            None if qualname.is_empty() => module.rsplit('.').next().unwrap_or(module),
            None => qualname,
        };
        let dotted = match (module.is_empty(), qualname.is_empty()) {
            (_, true) => Name::from(module),
            (true, false) => Name::from(qualname),
            (false, false) => compact_str::format_compact!("{module}.{qualname}"),
        };
        Entry {
            file: file.clone(),
            qualname: Name::from(qualname),
            lower_name: Name::from(name.to_lowercase()),
            lower_dotted: Name::from(dotted.to_lowercase()),
            squashed: Name::from(squash(name)),
            name: Name::from(name),
            dotted,
            kind,
            line,
        }
    }

    /// `path::Qualified.name`, or the path for a module.
    pub(crate) fn id(&self) -> String {
        if self.qualname.is_empty() {
            self.file.to_string()
        } else {
            format!("{}::{}", self.file, self.qualname)
        }
    }

    /// The name's words ([`words`]).
    fn words(&self) -> Vec<String> {
        words(&self.name)
    }

    /// How `query` matches this entry, if it does, and how closely within
    /// that kind (0 is closest: the exact case, fewer typos, fewer words
    /// beyond the query's).
    fn matches(&self, query: &Query) -> Option<(MatchKind, u8)> {
        if let Some((path, qualname)) = &query.path {
            let found = *self.file == **path && self.qualname == *qualname;
            return found.then_some((MatchKind::Qualified, 0));
        }
        if query.qualified {
            let q = &query.lower;
            let lower_dotted = &self.lower_dotted;
            let suffix = lower_dotted.ends_with(q.as_str())
                && (lower_dotted.len() == q.len()
                    || lower_dotted.as_bytes()[lower_dotted.len() - q.len() - 1] == b'.');
            let qualname = self.qualname.eq_ignore_ascii_case(&query.text);
            let case = u8::from(!self.dotted.ends_with(&query.text));
            return (suffix || qualname).then_some((MatchKind::Qualified, case));
        }
        if self.lower_name == query.lower {
            return Some((MatchKind::Exact, u8::from(self.name != query.text)));
        }
        if self.squashed == query.squashed {
            return Some((MatchKind::SameWords, 0));
        }
        if self.lower_name.starts_with(&query.lower) {
            return Some((MatchKind::Prefix, 0));
        }
        // Each query word starts a word of the name, so it is in the name:
        // most entries are ruled out before their words are made.
        if query.words.len() > 1
            && query
                .words
                .iter()
                .all(|w| self.lower_name.contains(w.as_str()))
        {
            let own = self.words();
            if in_order_prefixes(&query.words, &own) {
                let extra = own.len().saturating_sub(query.words.len());
                return Some((MatchKind::WordParts, extra.min(255) as u8));
            }
        }
        let substring = query.lower.len() >= 3 && self.lower_name.contains(&query.lower);
        if substring && self.word_start_match(&query.lower) {
            return Some((MatchKind::Substring, 0));
        }
        let typos = match query.lower.chars().count() {
            0..=3 => 0,
            4..=7 => 1,
            _ => 2,
        };
        if typos > 0 && self.lower_name.len().abs_diff(query.lower.len()) <= typos {
            let distance = strsim::osa_distance(&self.lower_name, &query.lower);
            if distance <= typos {
                let case = u8::from(strsim::osa_distance(&self.name, &query.text) > distance);
                return Some((MatchKind::Fuzzy, (distance as u8) * 2 + case));
            }
        }
        substring.then_some((MatchKind::Infix, 0))
    }
}

impl Entry {
    /// Whether `lower` occurs in the name where a word starts (after `_`,
    /// at a capital, or at the start).
    fn word_start_match(&self, lower: &str) -> bool {
        self.lower_name.match_indices(lower).any(|(at, _)| {
            at == 0
                || self.name.as_bytes().get(at - 1) == Some(&b'_')
                // Lower-casing may move byte offsets in non-ASCII names:
                // `get` keeps a bad offset from panicking.
                || self
                    .name
                    .get(at..)
                    .is_some_and(|rest| rest.starts_with(|c: char| c.is_uppercase()))
        })
    }
}

impl Entry {
    /// How `query` matches this entry when it matches none strictly
    /// ([`Entry::matches`]): a typo in any part of a qualified name
    /// (`Sesion.execute`, `Consle.print`); word forms in any order, over
    /// the class's words too (`parse headers` for `parse_header`, `wrap
    /// text` for `Text.wrap`).
    fn matches_loosely(&self, query: &Query) -> Option<(MatchKind, u8)> {
        if query.path.is_some() {
            return None;
        }
        if query.qualified {
            return segment_typos(&query.lower, &self.lower_dotted)
                .map(|distance| (MatchKind::Fuzzy, distance.min(127) * 2));
        }
        if query.words.len() > 1
            && let Some(own) = self.words_any_order(&query.stems)
        {
            let extra = own.saturating_sub(query.words.len());
            return Some((MatchKind::WordParts, extra.min(255) as u8));
        }
        None
    }

    /// Whether every query word's base form (`stems`) starts a word of
    /// the qualified name in any order, and one of them a word of the name
    /// itself: then how many words the name has.
    fn words_any_order(&self, stems: &[String]) -> Option<usize> {
        // Most entries lack a word: ruled out before any word is made.
        if !stems.iter().all(|q| self.lower_dotted.contains(q.as_str())) {
            return None;
        }
        let own: Vec<String> = self.words().iter().map(|w| stem(w)).collect();
        let all: Vec<String> = words(&self.qualname).iter().map(|w| stem(w)).collect();
        let starts = |list: &[String], q: &str| list.iter().any(|w| w.starts_with(q));
        (stems.iter().all(|q| starts(&all, q)) && stems.iter().any(|q| starts(&own, q)))
            .then_some(own.len())
    }
}

/// A word's base form, roughly: plural and verb endings taken off
/// (`headers` → `header`, `parsing` → `pars`, `parsed` → `pars`, `parse`
/// → `pars`, `wrapping` → `wrap`), so that forms of one word start alike.
fn stem(word: &str) -> String {
    let mut word = word.to_string();
    for suffix in ["ies", "es", "s", "ing", "ed", "e"] {
        if word.len() > suffix.len() + 2 && word.ends_with(suffix) {
            word.truncate(word.len() - suffix.len());
            if suffix == "ies" {
                word.push('y');
            }
            // `wrapping` → `wrapp` → `wrap`.
            let bytes = word.as_bytes();
            let doubled = matches!(suffix, "ing" | "ed")
                && bytes.len() > 2
                && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
                && !b"aeiou".contains(&bytes[bytes.len() - 1]);
            if doubled {
                word.pop();
            }
            break;
        }
    }
    word
}

/// The typos between the query's dotted parts and the last as many parts
/// of `dotted`, each part within its own allowance (none up to 3 letters,
/// 1 up to 7, else 2); `None` when a part is too far.
fn segment_typos(query: &str, dotted: &str) -> Option<u8> {
    // From the last part back, without allocating: most entries fail on
    // their own name, the last part.
    let mut theirs = dotted.rsplit('.');
    let mut total = 0;
    for mine in query.rsplit('.') {
        let theirs = theirs.next()?;
        let allowed = match mine.chars().count() {
            0 => return None,
            1..=3 => 0,
            4..=7 => 1,
            _ => 2,
        };
        if mine.len().abs_diff(theirs.len()) > allowed {
            return None;
        }
        let distance = match allowed {
            0 => usize::from(mine != theirs),
            _ => strsim::osa_distance(mine, theirs),
        };
        if distance > allowed {
            return None;
        }
        total += distance;
    }
    (total > 0).then(|| u8::try_from(total).unwrap_or(u8::MAX))
}

/// Whether every query word starts a name word, in order (`get user`
/// matches `get_active_user`).
fn in_order_prefixes(query: &[String], name: &[String]) -> bool {
    let mut rest = name.iter();
    query
        .iter()
        .all(|q| rest.by_ref().any(|word| word.starts_with(q.as_str())))
}

/// Lower-case letters and digits, separators dropped.
fn squash(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

pub(crate) struct Query {
    /// `path::Qualified.name`: that definition only.
    path: Option<(String, String)>,
    text: String,
    lower: String,
    words: Vec<String>,
    /// The words' base forms ([`stem`]).
    stems: Vec<String>,
    squashed: String,
    qualified: bool,
}

impl Query {
    pub(crate) fn new(text: &str) -> Query {
        let path = text
            .trim()
            .split_once("::")
            .map(|(path, qualname)| (path.to_string(), qualname.to_string()));
        let text = text.trim().replace("::", ".");
        let qualified = text.contains('.');
        let words = words(&text);
        Query {
            path,
            lower: text.to_lowercase(),
            stems: words.iter().map(|w| stem(w)).collect(),
            words,
            squashed: squash(&text),
            qualified,
            text,
        }
    }
}

impl SymbolIndex {
    /// The index of `engine`'s state, reusing `previous`'s entries of the
    /// files whose revision and module name are unchanged.
    pub(crate) fn build(engine: &Engine, previous: Option<&SymbolIndex>) -> SymbolIndex {
        let mut reusable: rustc_hash::FxHashMap<&str, &FileEntries> = previous
            .map(|index| {
                index
                    .files
                    .iter()
                    .filter_map(|f| Some((&*f.entries.first()?.file, f)))
                    .collect()
            })
            .unwrap_or_default();
        let files = engine
            .paths()
            .filter_map(|path| {
                engine.check_cancelled();
                FileEntries::of(engine, path, reusable.remove(path))
            })
            .collect();
        let mut index = SymbolIndex {
            files,
            aliases: Vec::new(),
        };
        index.aliases = index.reexports(engine);
        index
    }

    /// The entries of the definitions in `paths` alone, with no
    /// re-exported name: for work on a few files without the whole index.
    pub(crate) fn of_files<'a>(
        engine: &Engine,
        paths: impl IntoIterator<Item = &'a str>,
    ) -> SymbolIndex {
        let files = paths
            .into_iter()
            .filter_map(|path| FileEntries::of(engine, path, None))
            .collect();
        SymbolIndex {
            files,
            aliases: Vec::new(),
        }
    }

    /// The entries of definitions a package `__init__` binds, named by the
    /// package's dotted name and the bound name.
    fn reexports(&self, engine: &Engine) -> Vec<Entry> {
        // By file, not by definition: hashing every definition's names
        // made this most of a rebuild's time on a large project.
        let by_file: rustc_hash::FxHashMap<&str, &[Entry]> = self
            .files
            .iter()
            .filter_map(|f| Some((&*f.entries.first()?.file, f.entries.as_slice())))
            .collect();
        let mut aliases = Vec::new();
        for kept in &self.files {
            let Some(init) = kept.entries.first() else {
                continue;
            };
            if !init.file.ends_with("__init__.py") || kept.module.is_empty() {
                continue;
            }
            engine.check_cancelled();
            for imported in engine.imported_names(&init.file) {
                let Some(target) = by_file
                    .get(imported.file.as_str())
                    .and_then(|entries| entries.iter().rfind(|e| e.qualname == imported.symbol))
                else {
                    continue;
                };
                let dotted = compact_str::format_compact!("{}.{}", kept.module, imported.name);
                if dotted == target.dotted {
                    continue;
                }
                aliases.push(Entry {
                    lower_dotted: Name::from(dotted.to_lowercase()),
                    dotted,
                    ..(*target).clone()
                });
            }
        }
        aliases
    }

    pub(crate) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().flat_map(|f| f.entries.iter())
    }

    /// Every entry `query` matches, with how and how closely; a
    /// qualified query also matches re-exported names (each definition
    /// once, by its best match).
    pub(crate) fn find(&self, query: &Query) -> Vec<((MatchKind, u8), &Entry)> {
        if query.lower.is_empty() {
            return Vec::new();
        }
        let mut found: Vec<((MatchKind, u8), &Entry)> = self
            .entries()
            .filter_map(|e| Some((e.matches(query)?, e)))
            .collect();
        // Looser readings only when the strict ones find nothing: they
        // cost a pass that most queries need not pay.
        if found.is_empty() {
            found = self
                .entries()
                .filter_map(|e| Some((e.matches_loosely(query)?, e)))
                .collect();
        }
        if query.qualified && query.path.is_none() {
            let mut seen: rustc_hash::FxHashSet<(&str, &str)> = found
                .iter()
                .map(|(_, e)| (&*e.file, e.qualname.as_str()))
                .collect();
            for alias in &self.aliases {
                if let Some(quality) = alias.matches(query)
                    && seen.insert((&*alias.file, alias.qualname.as_str()))
                {
                    found.push((quality, alias));
                }
            }
        }
        found
    }
}

/// One file's entries: the module, then its definitions (a name bound
/// twice is its last binding, as Python sees it).
fn file_entries(engine: &Engine, path: &str, module: &str) -> Option<Vec<Entry>> {
    let facts = engine.facts(path)?;
    let path: Arc<str> = Arc::from(path);
    let mut entries = vec![Entry::new(&path, module, "", Kind::Module, 1)];
    let mut seen = rustc_hash::FxHashSet::default();
    for definition in facts.definitions.iter().rev() {
        if !seen.insert(definition.qualname.as_str()) {
            continue;
        }
        let kind = match definition.kind {
            DefinitionKind::Class => Kind::Class,
            DefinitionKind::Function | DefinitionKind::AsyncFunction => Kind::Function,
            DefinitionKind::Method => Kind::Method,
            DefinitionKind::Variable => Kind::Variable,
        };
        let line = definition.start_line;
        entries.push(Entry::new(&path, module, &definition.qualname, kind, line));
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_snake_and_camel_case() {
        assert_eq!(words("retry_with_backoff"), ["retry", "with", "backoff"]);
        assert_eq!(words("retryWithBackoff"), ["retry", "with", "backoff"]);
        assert_eq!(words("HTTPServer"), ["http", "server"]);
        assert_eq!(words("get_user2Name"), ["get", "user2", "name"]);
    }

    #[test]
    fn word_forms_any_order_and_typos_in_any_part_match() {
        let entry = |module: &str, qualname: &str| {
            Entry::new(&Arc::from("f.py"), module, qualname, Kind::Function, 1)
        };
        let kind = |e: &Entry, q: &str| {
            let query = Query::new(q);
            e.matches(&query)
                .or_else(|| e.matches_loosely(&query))
                .map(|m| m.0)
        };
        let parse = entry("httpx._utils", "parse_header_links");
        assert_eq!(kind(&parse, "parse headers"), Some(MatchKind::WordParts));
        let wrap = entry("rich.text", "Text.wrap");
        assert_eq!(kind(&wrap, "wrap text"), Some(MatchKind::WordParts));
        assert_eq!(kind(&wrap, "text wrapping"), Some(MatchKind::WordParts));
        let print = entry("rich.console", "Console.print");
        assert_eq!(kind(&print, "Consle.print"), Some(MatchKind::Fuzzy));
        assert_eq!(kind(&print, "Console.prnt"), Some(MatchKind::Fuzzy));
        assert_eq!(kind(&print, "Conso.prnt"), None);
        assert_eq!(kind(&print, "table print"), None);
    }

    #[test]
    fn word_parts_match_in_order() {
        let name = words("get_active_user");
        assert!(in_order_prefixes(&words("get user"), &name));
        assert!(in_order_prefixes(&words("getAct"), &name));
        assert!(!in_order_prefixes(&words("user get"), &name));
    }
}
