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

pub(crate) struct SymbolIndex {
    pub entries: Vec<Entry>,
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
    pub fn build(engine: &Engine) -> SymbolIndex {
        let mut entries = Vec::new();
        for path in engine.paths() {
            let Some(facts) = engine.facts(path) else {
                continue;
            };
            let module = engine.module_name(path);
            entries.push(Entry::new(path, &module, "", Kind::Module, 1));
            // A name bound twice is the last binding, as Python sees it.
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
                entries.push(Entry::new(path, &module, &definition.qualname, kind, line));
            }
        }
        SymbolIndex { entries }
    }

    /// Every entry `query` matches, with how.
    pub fn find(&self, query: &Query) -> Vec<(MatchKind, &Entry)> {
        if query.lower.is_empty() {
            return Vec::new();
        }
        self.entries
            .iter()
            .filter_map(|e| Some((e.matches(query)?, e)))
            .collect()
    }
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
