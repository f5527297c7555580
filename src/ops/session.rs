//! Session metrics: when an MCP session ends, one
//! JSONL record per served project in
//! `.cross_file_context_logs/session_metrics.jsonl`. Records hold numbers,
//! paths and definition names only, never code; with
//! `metrics_anonymize_paths: true` paths and names are replaced by stable
//! hashes, so sessions still aggregate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::metrics::SessionLog;
use super::stats::Distribution;
use crate::python::facts::DefinitionKind;
use crate::service::Service;
use crate::service::jsonl;

pub const LOG_FILE: &str = "session_metrics.jsonl";

/// Token thresholds the injections are counted against.
const THRESHOLDS: [usize; 3] = [300, 500, 700];
/// Most-connected files and files with most warnings listed.
const TOP: usize = 10;
/// Edited functions listed one by one; the histogram counts them all.
const EDITED_LISTED: usize = 200;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionRecord {
    pub session_id: String,
    pub project: String,
    pub session_start: f64,
    pub session_end: f64,
    pub session_duration_seconds: f64,
    pub config: ConfigUsed,
    pub cache_stats: CacheStats,
    pub injection_stats: InjectionStats,
    pub graph_stats: GraphStats,
    pub function_usage: FunctionUsage,
    /// Files read more than once, with how many times they were read again.
    pub reread_patterns: BTreeMap<String, u32>,
    pub performance: Performance,
    pub warning_stats: WarningStats,
    /// Calls of each git tool (`git_log`, `git_blame`, `git_diff`,
    /// `impact`) the session made.
    pub git_usage: BTreeMap<String, u32>,
}

/// The configured values the other figures are to be compared with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigUsed {
    pub cache_expiry_seconds: u64,
    pub cache_size_limit_kb: u64,
    pub token_injection_limit: u64,
    pub answer_token_limit: u64,
    pub function_usage_warning_threshold: u64,
    pub metrics_anonymize_paths: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheStats {
    pub expiry_time_seconds: u64,
    pub size_limit_kb: u64,
    pub hits: u64,
    pub misses: u64,
    pub hit_rate: f64,
    pub miss_rate: f64,
    pub peak_size_bytes: usize,
    pub evictions_lru: u64,
    /// Entries refreshed because they had expired or their file changed.
    pub evictions_expiry: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InjectionStats {
    pub token_limit: u64,
    pub total_injections: usize,
    /// Per relationship type, the injections it brought context to.
    pub injections_by_type: BTreeMap<String, usize>,
    pub token_distribution: Distribution,
    pub tokens_exceeding_300: usize,
    pub tokens_exceeding_500: usize,
    pub tokens_exceeding_700: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GraphStats {
    pub total_files: usize,
    pub total_relationships: usize,
    pub circular_dependency_count: usize,
    pub most_connected_files: Vec<FileCount>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileCount {
    pub file: String,
    pub count: usize,
}

/// For the functions defined in the files edited during the session: how
/// many other files use each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FunctionUsage {
    /// `0 files`, `1 file`, `2-3 files`, `4+ files` → functions.
    pub histogram: BTreeMap<String, usize>,
    pub edited_functions: Vec<EditedFunction>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EditedFunction {
    pub file: String,
    pub function: String,
    pub dependent_files: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Performance {
    /// Per update, the time spent parsing the files it re-read.
    pub parsing_times_ms: Distribution,
    pub injection_latencies_ms: Distribution,
    pub total_indexing_time_seconds: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WarningStats {
    pub warning_counts: BTreeMap<String, usize>,
    pub files_with_warnings: Vec<FileCount>,
}

fn unix_seconds(time: SystemTime) -> f64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A stable stand-in for a path or name (FNV-1a, so the same path gets the
/// same stand-in in every session and every build).
fn anonymized(text: &str) -> String {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("anon-{hash:016x}")
}

/// The record of a session of `name` (the served project's name) that did
/// `log`, ending now.
pub fn record(name: &str, service: &Service, log: &SessionLog) -> SessionRecord {
    let config = service.config();
    let anonymize = config.metrics_anonymize_paths;
    let shown = |text: &str| match anonymize {
        true => anonymized(text),
        false => text.to_string(),
    };
    let end = SystemTime::now();
    let cache = service.cache_statistics();
    let lookups = cache.hits + cache.misses;
    let hit_rate = if lookups == 0 {
        0.0
    } else {
        cache.hits as f64 / lookups as f64
    };
    let summary = service.summary();
    let exceeding = |limit: usize| {
        log.injection_tokens
            .iter()
            .filter(|t| **t > limit as f64)
            .count()
    };
    let [over_300, over_500, over_700] = THRESHOLDS.map(exceeding);
    let warnings = service.all_warnings();
    let mut by_file: BTreeMap<&str, usize> = BTreeMap::new();
    for w in warnings.active() {
        *by_file.entry(w.file.as_str()).or_default() += 1;
    }
    let mut files_with_warnings: Vec<FileCount> = by_file
        .into_iter()
        .map(|(file, count)| FileCount {
            file: shown(file),
            count,
        })
        .collect();
    files_with_warnings.sort_by(|a, b| b.count.cmp(&a.count).then(a.file.cmp(&b.file)));
    files_with_warnings.truncate(TOP);
    SessionRecord {
        session_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
        project: shown(name),
        session_start: unix_seconds(log.started),
        session_end: unix_seconds(end),
        session_duration_seconds: end
            .duration_since(log.started)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        config: ConfigUsed {
            cache_expiry_seconds: config.cache_expiry_minutes.saturating_mul(60),
            cache_size_limit_kb: config.cache_size_limit_kb,
            token_injection_limit: config.context_token_limit,
            answer_token_limit: config.answer_token_limit,
            function_usage_warning_threshold: config.function_usage_warning_threshold,
            metrics_anonymize_paths: anonymize,
        },
        cache_stats: CacheStats {
            expiry_time_seconds: config.cache_expiry_minutes.saturating_mul(60),
            size_limit_kb: config.cache_size_limit_kb,
            hits: cache.hits,
            misses: cache.misses,
            hit_rate,
            miss_rate: if lookups == 0 { 0.0 } else { 1.0 - hit_rate },
            peak_size_bytes: cache.peak_size_bytes,
            evictions_lru: cache.evictions,
            evictions_expiry: cache.staleness_refreshes,
        },
        injection_stats: InjectionStats {
            token_limit: config.context_token_limit,
            total_injections: log.injection_tokens.len(),
            injections_by_type: log.injections_by_type.clone(),
            token_distribution: Distribution::of(&log.injection_tokens),
            tokens_exceeding_300: over_300,
            tokens_exceeding_500: over_500,
            tokens_exceeding_700: over_700,
        },
        graph_stats: GraphStats {
            total_files: summary.files,
            total_relationships: summary.relationships.values().sum(),
            circular_dependency_count: summary.import_cycles,
            most_connected_files: service
                .engine()
                .most_depended_on(TOP)
                .into_iter()
                .map(|(file, count)| FileCount {
                    file: shown(&file),
                    count,
                })
                .collect(),
        },
        function_usage: function_usage(service, log, &shown),
        reread_patterns: log
            .reads
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(file, n)| (shown(file), n - 1))
            .collect(),
        performance: Performance {
            parsing_times_ms: Distribution::of(&log.parse_ms),
            injection_latencies_ms: Distribution::of(&log.injection_ms),
            total_indexing_time_seconds: summary.wall_time_ms / 1e3,
        },
        warning_stats: WarningStats {
            warning_counts: summary
                .warnings
                .iter()
                .map(|(kind, n)| (kind.to_string(), *n))
                .collect(),
            files_with_warnings,
        },
        git_usage: log.git_calls.clone(),
    }
}

/// The histogram bucket of a function other files use `n` of.
fn bucket(n: usize) -> &'static str {
    match n {
        0 => "0 files",
        1 => "1 file",
        2 | 3 => "2-3 files",
        _ => "4+ files",
    }
}

/// Every function and method defined in the files the session edited,
/// with how many other files use it.
fn function_usage(
    service: &Service,
    log: &SessionLog,
    shown: &dyn Fn(&str) -> String,
) -> FunctionUsage {
    let mut usage = FunctionUsage::default();
    for file in &log.edited {
        let Some(facts) = service.engine().facts(file) else {
            continue; // deleted since
        };
        for def in &facts.definitions {
            if !matches!(
                def.kind,
                DefinitionKind::Function | DefinitionKind::AsyncFunction | DefinitionKind::Method
            ) {
                continue;
            }
            let dependent_files = service.usage_count(file, &def.qualname);
            *usage
                .histogram
                .entry(bucket(dependent_files).to_string())
                .or_default() += 1;
            if usage.edited_functions.len() < EDITED_LISTED {
                usage.edited_functions.push(EditedFunction {
                    file: shown(file),
                    function: shown(&def.qualname),
                    dependent_files,
                });
            }
        }
    }
    usage
}

/// `<root>/.cross_file_context_logs/session_metrics.jsonl`.
pub fn log_path(root: &Path) -> PathBuf {
    jsonl::log_path(root, LOG_FILE)
}

/// Appends `record` to the project's session log, unless the log
/// directory is a link or not a directory (never written through).
pub fn append(root: &Path, record: &SessionRecord) -> std::io::Result<()> {
    super::logs::writable(root).map_err(std::io::Error::other)?;
    jsonl::append(&log_path(root), std::slice::from_ref(record))
}

/// Every session record in `path`, oldest first (lines that do not parse
/// are skipped).
pub fn read(path: &Path) -> Vec<SessionRecord> {
    jsonl::read(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymized_names_are_stable_and_distinct() {
        assert_eq!(anonymized("app/bot.py"), anonymized("app/bot.py"));
        assert_ne!(anonymized("app/bot.py"), anonymized("app/models.py"));
        assert!(!anonymized("app/bot.py").contains("bot"));
    }
}
