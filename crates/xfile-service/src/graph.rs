//! `get_relationship_graph`, bounded like every answer: a summary by
//! default (counts, the most connected files, cycles), and the export's
//! lists one page at a time. A path prefix applies to every part.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Service;
use super::model::{ConnectedFile, FileEntry, Relationship, Warning};
use super::paging::{CursorError, Page, page};

/// Cycles and connected files named in a summary.
const SUMMARY_CYCLES: usize = 5;
const SUMMARY_FILES: usize = 10;

// Which part of the graph to answer with (a plain comment: a doc comment
// would repeat in every tool list).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum Detail {
    #[default]
    Summary,
    Files,
    Relationships,
    Warnings,
    Cycles,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    pub files: usize,
    pub test_files: usize,
    pub files_with_parse_errors: usize,
    pub relationships: BTreeMap<&'static str, usize>,
    pub warnings: BTreeMap<&'static str, usize>,
    pub import_cycles: usize,
    /// The first import cycles, each from a file back to it.
    pub some_cycles: Vec<Vec<String>>,
    pub most_connected_files: Vec<ConnectedFile>,
    /// How to get the lists.
    pub more: &'static str,
}

/// What `get_relationship_graph` answers with.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum GraphAnswer {
    Summary(Summary),
    Files(Page<FileEntry>),
    Relationships(Page<Relationship>),
    Warnings(Page<Warning>),
    Cycles(Page<Vec<String>>),
}

/// The graph's `detail` part, for files under `prefix` (all when absent).
pub fn answer(
    service: &Service,
    prefix: Option<&str>,
    detail: Detail,
    limit: usize,
    cursor: Option<&str>,
) -> Result<GraphAnswer, CursorError> {
    let under = |path: &str| prefix.is_none_or(|p| path.starts_with(p));
    // Each part is built only when asked for: never the whole export.
    let under_prefix = |mut relationships: Vec<Relationship>| {
        relationships.retain(|r| under(&r.source_file));
        relationships
    };
    let files = |relationships: &[Relationship]| {
        let mut files = service.file_entries(relationships);
        files.retain(|f| under(&f.relative_path));
        files
    };
    let warnings = || -> Vec<Warning> {
        let all = service.all_warnings();
        all.active().filter(|w| under(&w.file)).cloned().collect()
    };
    let cycles = || -> Vec<Vec<String>> {
        let mut cycles = service.cycles();
        cycles.retain(|cycle| cycle.iter().any(|f| under(f)));
        cycles
            .into_iter()
            .map(super::warnings::shown_cycle)
            .collect()
    };
    let budget = service.answer_token_limit();
    Ok(match detail {
        Detail::Summary => {
            // File counts for the prefix need every relationship: a file
            // under it counts the relationships that target it too.
            let all = service.relationships();
            let files = files(&all);
            let (relationships, warnings, cycles) = (under_prefix(all), warnings(), cycles());
            let mut by_type: BTreeMap<&'static str, usize> = BTreeMap::new();
            for r in &relationships {
                *by_type.entry(r.relationship_type.as_str()).or_default() += 1;
            }
            let mut warning_types: BTreeMap<&'static str, usize> = BTreeMap::new();
            for w in &warnings {
                *warning_types.entry(w.warning_type.as_str()).or_default() += 1;
            }
            let most_connected: Vec<ConnectedFile> = service
                .engine()
                .most_depended_on(usize::MAX)
                .into_iter()
                .filter(|(file, _)| under(file))
                .take(SUMMARY_FILES)
                .map(|(file, dependency_count)| ConnectedFile {
                    file,
                    dependency_count,
                })
                .collect();
            GraphAnswer::Summary(Summary {
                path_prefix: prefix.map(str::to_string),
                files: files.len(),
                test_files: files.iter().filter(|f| f.test_module).count(),
                files_with_parse_errors: files.iter().filter(|f| f.parse_error.is_some()).count(),
                relationships: by_type,
                warnings: warning_types,
                import_cycles: cycles.len(),
                some_cycles: cycles.into_iter().take(SUMMARY_CYCLES).collect(),
                most_connected_files: most_connected,
                more: "Pass detail: files, relationships, warnings or cycles for those lists, a page at a time (limit, cursor); path_prefix narrows every part.",
            })
        }
        Detail::Files => {
            let all = service.relationships();
            GraphAnswer::Files(page(files(&all), cursor, limit, budget)?)
        }
        Detail::Relationships => {
            let relationships = under_prefix(service.relationships());
            GraphAnswer::Relationships(page(relationships, cursor, limit, budget)?)
        }
        Detail::Warnings => GraphAnswer::Warnings(page(warnings(), cursor, limit, budget)?),
        Detail::Cycles => GraphAnswer::Cycles(page(cycles(), cursor, limit, budget)?),
    })
}
