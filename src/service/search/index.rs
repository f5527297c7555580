//! The symbol index: every definition of the project (modules, classes,
//! functions, methods, module-level names) with its qualified names, and
//! matching a query against it: exact, qualified, prefix, word parts of
//! snake_case and camelCase names, substring, and one or two typos.

use crate::engine::Engine;
use crate::python::DefinitionKind;

/// One definition of the project.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub file: String,
    /// `User.save`; empty for a module.
    pub qualname: String,
    /// The last part of the qualified name (the module's own name for a module).
    pub name: String,
    /// `app.models.User.save`.
    pub dotted: String,
    pub kind: Kind,
    pub line: u32,
    /// Lower-case forms and words, computed once for matching.
    lower_name: String,
    lower_dotted: String,
    words: Vec<String>,
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
    pub fn as_str(self) -> &'static str {
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
    Qualified,
    Prefix,
    WordParts,
    Substring,
    Fuzzy,
}

/// The entries of every file, each file's kept with the revision and
/// module name it was built from, so the next state's index rebuilds only
/// the files that changed (or whose module name did).
pub(crate) struct SymbolIndex {
    files: Vec<FileEntries>,
}

struct FileEntries {
    revision: Option<u64>,
    module: String,
    entries: std::sync::Arc<Vec<Entry>>,
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
    fn new(file: &str, module: &str, qualname: &str, kind: Kind, line: u32) -> Entry {
        let name = match qualname.rsplit_once('.') {
            Some((_, last)) => last,
            None if qualname.is_empty() => module.rsplit('.').next().unwrap_or(module),
            None => qualname,
        }
        .to_string();
        let dotted = match (module.is_empty(), qualname.is_empty()) {
            (_, true) => module.to_string(),
            (true, false) => qualname.to_string(),
            (false, false) => format!("{module}.{qualname}"),
        };
        Entry {
            file: file.to_string(),
            qualname: qualname.to_string(),
            lower_name: name.to_lowercase(),
            lower_dotted: dotted.to_lowercase(),
            words: words(&name),
            name,
            dotted,
            kind,
            line,
        }
    }

    /// `path::Qualified.name`, or the path for a module.
    pub fn id(&self) -> String {
        if self.qualname.is_empty() {
            self.file.clone()
        } else {
            format!("{}::{}", self.file, self.qualname)
        }
    }

    /// How `query` matches this entry, if it does.
    fn matches(&self, query: &Query) -> Option<MatchKind> {
        if let Some((path, qualname)) = &query.path {
            let found = self.file == *path && self.qualname == *qualname;
            return found.then_some(MatchKind::Qualified);
        }
        if query.qualified {
            let q = &query.lower;
            let suffix = self.lower_dotted.ends_with(q.as_str())
                && (self.lower_dotted.len() == q.len()
                    || self.lower_dotted.as_bytes()[self.lower_dotted.len() - q.len() - 1] == b'.');
            let qualname = self.qualname.eq_ignore_ascii_case(&query.text);
            return (suffix || qualname).then_some(MatchKind::Qualified);
        }
        if self.name == query.text {
            return Some(MatchKind::Exact);
        }
        if self.lower_name == query.lower {
            return Some(MatchKind::Exact);
        }
        if self.lower_name.starts_with(&query.lower) {
            return Some(MatchKind::Prefix);
        }
        if query.words.len() > 1 && in_order_prefixes(&query.words, &self.words) {
            return Some(MatchKind::WordParts);
        }
        if query.lower.len() >= 3 && self.lower_name.contains(&query.lower) {
            return Some(MatchKind::Substring);
        }
        let typos = match query.lower.chars().count() {
            0..=3 => 0,
            4..=7 => 1,
            _ => 2,
        };
        let close = typos > 0
            && self.lower_name.len().abs_diff(query.lower.len()) <= typos
            && strsim::osa_distance(&self.lower_name, &query.lower) <= typos;
        close.then_some(MatchKind::Fuzzy)
    }
}

/// Whether every query word starts a name word, in order (`get user`
/// matches `get_active_user`).
fn in_order_prefixes(query: &[String], name: &[String]) -> bool {
    let mut rest = name.iter();
    query
        .iter()
        .all(|q| rest.by_ref().any(|word| word.starts_with(q.as_str())))
}

pub(crate) struct Query {
    /// `path::Qualified.name`: that definition only.
    path: Option<(String, String)>,
    text: String,
    lower: String,
    words: Vec<String>,
    qualified: bool,
}

impl Query {
    pub fn new(text: &str) -> Query {
        let path = text
            .trim()
            .split_once("::")
            .map(|(path, qualname)| (path.to_string(), qualname.to_string()));
        let text = text.trim().replace("::", ".");
        let qualified = text.contains('.');
        Query {
            path,
            lower: text.to_lowercase(),
            words: words(&text),
            qualified,
            text,
        }
    }
}

impl SymbolIndex {
    /// The index of `engine`'s state, reusing `previous`'s entries of the
    /// files whose revision and module name are unchanged.
    pub fn build(engine: &Engine, previous: Option<&SymbolIndex>) -> SymbolIndex {
        let mut reusable: rustc_hash::FxHashMap<&str, &FileEntries> = previous
            .map(|index| {
                index
                    .files
                    .iter()
                    .filter_map(|f| Some((f.entries.first()?.file.as_str(), f)))
                    .collect()
            })
            .unwrap_or_default();
        let files = engine
            .paths()
            .filter_map(|path| {
                let revision = engine.revision(path);
                let module = engine.module_name(path);
                if let Some(kept) = reusable.remove(path)
                    && kept.revision == revision
                    && kept.module == module
                {
                    return Some(FileEntries {
                        revision,
                        module,
                        entries: kept.entries.clone(),
                    });
                }
                let entries = file_entries(engine, path, &module)?;
                Some(FileEntries {
                    revision,
                    module,
                    entries: std::sync::Arc::new(entries),
                })
            })
            .collect();
        SymbolIndex { files }
    }

    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().flat_map(|f| f.entries.iter())
    }

    /// Every entry `query` matches, with how.
    pub fn find(&self, query: &Query) -> Vec<(MatchKind, &Entry)> {
        if query.lower.is_empty() {
            return Vec::new();
        }
        self.entries()
            .filter_map(|e| Some((e.matches(query)?, e)))
            .collect()
    }
}

/// One file's entries: the module, then its definitions (a name bound
/// twice is its last binding, as Python sees it).
fn file_entries(engine: &Engine, path: &str, module: &str) -> Option<Vec<Entry>> {
    let facts = engine.facts(path)?;
    let mut entries = vec![Entry::new(path, module, "", Kind::Module, 1)];
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
        entries.push(Entry::new(path, module, &definition.qualname, kind, line));
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
    fn word_parts_match_in_order() {
        let name = words("get_active_user");
        assert!(in_order_prefixes(&words("get user"), &name));
        assert!(in_order_prefixes(&words("getAct"), &name));
        assert!(!in_order_prefixes(&words("user get"), &name));
    }
}
