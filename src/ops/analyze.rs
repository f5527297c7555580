//! `xfile analyze-metrics`: aggregates session records
//! (mean, median, p95 per figure), flags the sessions whose figures lie
//! outside Tukey's fences, and suggests configuration values from what the
//! sessions observed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::session::SessionRecord;
use super::stats::{Distribution, percentile};

/// Below this many sessions, no session is called an outlier.
const OUTLIER_MIN_SESSIONS: usize = 4;

#[derive(Debug, Serialize)]
pub struct Analysis {
    pub sessions: usize,
    /// Per figure, its spread across sessions.
    pub figures: BTreeMap<&'static str, Distribution>,
    pub outliers: Vec<Outlier>,
    pub suggestions: Vec<Suggestion>,
}

#[derive(Debug, Serialize)]
pub struct Outlier {
    pub session_id: String,
    pub figure: &'static str,
    pub value: f64,
    /// The range the other sessions make normal (Tukey's fences).
    pub normal: [f64; 2],
}

#[derive(Debug, Serialize)]
pub struct Suggestion {
    pub key: &'static str,
    pub current: u64,
    pub suggested: u64,
    pub reason: String,
}

/// A figure compared across sessions: its name, and how to read it off a record.
type Figure = (&'static str, fn(&SessionRecord) -> f64);

const FIGURES: [Figure; 10] = [
    ("session_duration_seconds", |r| r.session_duration_seconds),
    ("injections", |r| r.injection_stats.total_injections as f64),
    ("injection_tokens_p95", |r| {
        r.injection_stats.token_distribution.p95
    }),
    ("injection_tokens_max", |r| {
        r.injection_stats.token_distribution.max
    }),
    ("injection_latency_ms_p95", |r| {
        r.performance.injection_latencies_ms.p95
    }),
    ("parse_ms_p95", |r| r.performance.parsing_times_ms.p95),
    ("cache_hit_rate", |r| r.cache_stats.hit_rate),
    ("cache_peak_size_bytes", |r| {
        r.cache_stats.peak_size_bytes as f64
    }),
    ("reread_files", |r| r.reread_patterns.len() as f64),
    ("warnings", |r| {
        r.warning_stats.warning_counts.values().sum::<usize>() as f64
    }),
];

pub fn analyze(records: &[SessionRecord]) -> Analysis {
    let mut figures = BTreeMap::new();
    let mut outliers = Vec::new();
    for (name, read) in FIGURES {
        let values: Vec<f64> = records.iter().map(read).collect();
        figures.insert(name, Distribution::of(&values));
        if records.len() < OUTLIER_MIN_SESSIONS {
            continue;
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let (q1, q3) = (percentile(&sorted, 25.0), percentile(&sorted, 75.0));
        let spread = 1.5 * (q3 - q1);
        let normal = [q1 - spread, q3 + spread];
        for (record, value) in records.iter().zip(values) {
            if value < normal[0] || value > normal[1] {
                outliers.push(Outlier {
                    session_id: record.session_id.clone(),
                    figure: name,
                    value,
                    normal,
                });
            }
        }
    }
    Analysis {
        sessions: records.len(),
        figures,
        outliers,
        suggestions: suggestions(records),
    }
}

/// Rounds up to a multiple of `step`.
fn round_up(value: f64, step: u64) -> u64 {
    (value.max(0.0) / step as f64).ceil() as u64 * step
}

/// Configuration values the sessions argue for, where they differ from the
/// configured ones. The newest session's configuration is taken as
/// the current one.
fn suggestions(records: &[SessionRecord]) -> Vec<Suggestion> {
    let Some(latest) = records.last() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let p95_of = |values: Vec<f64>| Distribution::of(&values).p95;
    let injected: Vec<&SessionRecord> = records
        .iter()
        .filter(|r| r.injection_stats.total_injections > 0)
        .collect();
    if !injected.is_empty() {
        let tokens = p95_of(
            injected
                .iter()
                .map(|r| r.injection_stats.token_distribution.p95)
                .collect(),
        );
        let current = latest.config.token_injection_limit;
        let suggested = round_up(tokens, 50).max(50);
        // The limit cuts context off when the p95 injection reaches it;
        // it is slack when the p95 stays far below.
        if tokens >= current as f64 * 0.95 || (suggested as f64) < current as f64 * 0.5 {
            out.push(Suggestion {
                key: "context_token_limit",
                current,
                suggested: suggested.max(current / 2),
                reason: format!(
                    "95% of sessions' injections stay within {tokens:.0} tokens (p95 of each session's p95)"
                ),
            });
        }
    }
    let evicting: Vec<&SessionRecord> = records
        .iter()
        .filter(|r| r.cache_stats.evictions_lru > 0)
        .collect();
    if evicting.len() * 4 >= records.len() && !evicting.is_empty() {
        let peak = p95_of(
            records
                .iter()
                .map(|r| r.cache_stats.peak_size_bytes as f64)
                .collect(),
        );
        let current = latest.config.cache_size_limit_kb;
        out.push(Suggestion {
            key: "cache_size_limit_kb",
            current,
            suggested: round_up(peak * 2.0 / 1024.0, 10).max(current * 2),
            reason: format!(
                "{} of {} sessions evicted snippets for room (peak size p95 {:.0} KB)",
                evicting.len(),
                records.len(),
                peak / 1024.0
            ),
        });
    }
    let uses: Vec<f64> = records
        .iter()
        .flat_map(|r| &r.function_usage.edited_functions)
        .map(|f| f.dependent_files as f64)
        .collect();
    if uses.len() >= 10 {
        let current = latest.config.function_usage_warning_threshold;
        let suggested = round_up(Distribution::of(&uses).p95, 1).max(2);
        if suggested != current {
            out.push(Suggestion {
                key: "function_usage_warning_threshold",
                current,
                suggested,
                reason: format!(
                    "5% of the {} edited functions are used by more than {suggested} files: warn for those",
                    uses.len()
                ),
            });
        }
    }
    out
}

/// The analysis as text for the terminal.
pub fn render(analysis: &Analysis) -> String {
    let mut out = format!("{} sessions\n\n", analysis.sessions);
    out.push_str(&format!(
        "{:<28} {:>12} {:>12} {:>12}\n",
        "figure", "mean", "median", "p95"
    ));
    for (name, d) in &analysis.figures {
        out.push_str(&format!(
            "{name:<28} {:>12.2} {:>12.2} {:>12.2}\n",
            d.mean, d.median, d.p95
        ));
    }
    out.push('\n');
    if analysis.outliers.is_empty() {
        out.push_str("No outliers.\n");
    }
    for o in &analysis.outliers {
        out.push_str(&format!(
            "outlier: session {} {} = {:.2} (normal {:.2} to {:.2})\n",
            o.session_id, o.figure, o.value, o.normal[0], o.normal[1]
        ));
    }
    if analysis.suggestions.is_empty() {
        out.push_str("No configuration changes suggested.\n");
    }
    for s in &analysis.suggestions {
        out.push_str(&format!(
            "suggest {}: {} (now {}): {}\n",
            s.key, s.suggested, s.current, s.reason
        ));
    }
    out
}
