//! The JSON shapes xfile answers in: relationships, the graph export and the
//! index summary. These are the boundary types every adapter serializes.

use std::collections::BTreeMap;

use serde::Serialize;

use xfile_engine::datalog::Pattern;
use xfile_workspace::Notice;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationshipType {
    Import,
    FunctionCall,
    Inheritance,
}

impl RelationshipType {
    pub fn as_str(self) -> &'static str {
        match self {
            RelationshipType::Import => "import",
            RelationshipType::FunctionCall => "function_call",
            RelationshipType::Inheritance => "inheritance",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Relationship {
    pub source_file: String,
    pub target_file: String,
    pub relationship_type: RelationshipType,
    pub line_number: u32,
    pub column: u32,
    pub source_symbol: Option<String>,
    pub target_symbol: Option<String>,
    pub target_line: Option<u32>,
    pub metadata: Metadata,
}

/// Metadata of a relationship; import fields are absent on other types.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import_style: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditional: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wildcard: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defined_in: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Export {
    pub metadata: ExportMetadata,
    pub files: Vec<FileEntry>,
    pub relationships: Vec<Relationship>,
    /// Warnings left after suppression.
    pub warnings: Vec<Warning>,
    /// File-level indexing notices: skipped files, encoding fallbacks,
    /// configuration problems.
    pub notices: Vec<Notice>,
    pub graph_metadata: GraphMetadata,
    /// Every `@output` relation not rendered above, by name, its tuples
    /// rendered as `query` renders them: a new rules file shows up here.
    pub derived: BTreeMap<&'static str, DerivedRelation>,
}

/// The tuples of one derived relation in the export.
#[derive(Clone, Debug, Serialize)]
pub struct DerivedRelation {
    pub args: Vec<&'static str>,
    pub tuples: Vec<Vec<serde_json::Value>>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ExportMetadata {
    pub timestamp: String,
    pub version: &'static str,
    pub language: &'static str,
    pub project_root: String,
    pub total_files: usize,
    pub total_relationships: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct FileEntry {
    pub path: String,
    pub relative_path: String,
    pub last_modified: Option<String>,
    pub relationship_count: usize,
    pub parse_error: Option<ParseErrorEntry>,
    pub in_import_cycle: bool,
    /// Test module, by the default patterns or the pytest configuration.
    pub test_module: bool,
    /// Patterns in this file that static analysis cannot follow, so some of
    /// its relationships may be missing: none is guessed.
    pub untrackable_patterns: Vec<Pattern>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParseErrorEntry {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct GraphMetadata {
    /// One shortest cycle per strongly connected group, as `[a, b, a]`.
    pub circular_imports: Vec<Vec<String>>,
    pub most_connected_files: Vec<ConnectedFile>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConnectedFile {
    pub file: String,
    /// How many other project files depend on this one.
    pub dependency_count: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct IndexSummary {
    pub project_root: String,
    pub files: usize,
    pub parse_errors: usize,
    /// The first files with syntax errors, as `path:line: message`.
    pub parse_error_files: Vec<String>,
    pub relationships: BTreeMap<&'static str, usize>,
    pub import_cycles: usize,
    /// Warnings after suppression, by type.
    pub warnings: BTreeMap<&'static str, usize>,
    pub notices: Vec<Notice>,
    /// How the warm-start cache served this index (`.xfile_cache/`).
    pub cache: super::warm::Outcome,
    pub wall_time_ms: f64,
    pub phases: PhaseTimings,
}

/// Where the wall time of opening a project went.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseTimings {
    /// Walking the tree and reading files.
    pub discover_ms: f64,
    /// Creating inputs, parsing and extracting facts (all cores).
    pub parse_ms: f64,
    /// Resolving every file and running the Datalog program.
    pub analyze_ms: f64,
    pub total_ms: f64,
}

/// The tuples of one relation that match a query pattern.
#[derive(Clone, Debug, Serialize)]
pub struct QueryResult {
    pub relation: String,
    pub args: Vec<String>,
    pub tuples: Vec<Vec<serde_json::Value>>,
}

/// What one update did (the `explain_recomputation` answer): which files
/// changed, which salsa queries executed and which memoized results were
/// reused, whether the Datalog program re-ran, and where the time went.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UpdateReport {
    /// Sequence number of the update since the service started.
    pub update: u64,
    pub finished_at: String,
    /// What asked for it: `watcher`, `poll`, `read` (a freshness check) or `api`.
    pub trigger: String,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub removed: Vec<String>,
    /// How many files the update looked at whose content had not changed.
    pub unchanged: usize,
    /// The configuration or the pytest settings changed, so the project was
    /// indexed from scratch.
    pub reloaded: bool,
    /// An ignore file changed, so the whole tree was walked again.
    pub rescanned: bool,
    /// A sub-project marker or a file too large to index appeared or went,
    /// or the declared entry points changed: module search paths or
    /// project-level facts changed without an indexed file changing.
    pub layout_changed: bool,
    pub datalog_rerun: bool,
    pub queries: xfile_engine::Recomputation,
    pub durations: UpdateTimings,
}

impl UpdateReport {
    /// Whether the update changed the model (files, or the configuration).
    pub fn changed(&self) -> bool {
        self.reloaded
            || self.layout_changed
            || !(self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty())
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct UpdateTimings {
    /// Walking the changed paths and reading files.
    pub read_ms: f64,
    /// Writing inputs and parsing changed files.
    pub parse_ms: f64,
    /// Resolving and running the Datalog program where needed.
    pub analyze_ms: f64,
    pub total_ms: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Informational: the code is fine, the context may be incomplete.
    Info,
    /// Actionable: relationships are missing or may be wrong.
    Warning,
}

/// One warning as users see it (paths root-relative).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    #[serde(rename = "type")]
    pub warning_type: Pattern,
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub severity: Severity,
    /// The source line the pattern is on, trimmed.
    pub pattern: String,
    pub message: String,
    /// What static analysis cannot see and what that means for the context.
    pub explanation: String,
    /// What to do about it, where there is something to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guidance: Option<&'static str>,
}

/// Warnings, all or for one file, with what configuration suppressed and
/// the file-level notices.
#[derive(Clone, Debug, Serialize)]
pub struct WarningReport {
    pub warnings: Vec<Warning>,
    /// How many warnings configuration suppressed, by the most specific
    /// suppression that applied.
    pub suppressed: BTreeMap<&'static str, usize>,
    pub notices: Vec<Notice>,
}
