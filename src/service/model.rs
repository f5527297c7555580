//! The JSON shapes of DESIGN §4: relationships, the graph export and the
//! index summary. These are the boundary types every adapter serializes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::workspace::Notice;

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
    pub warnings: Vec<Notice>,
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
    pub relationships: BTreeMap<&'static str, usize>,
    pub import_cycles: usize,
    pub notices: Vec<Notice>,
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
