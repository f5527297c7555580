//! Session metrics: a record per MCP session, written when
//! the client disconnects or the server is stopped, and `analyze-metrics`
//! over records.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::mcp_client::Client;
use serde_json::{Value, json};

fn records(root: &Path) -> Vec<Value> {
    let log = root.join(".cross_file_context_logs/session_metrics.jsonl");
    std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A session on the sample: three reads (one file twice), an edit the
/// watcher applies, then the client goes away.
fn session(root: &Path) -> Client {
    let mut client = Client::start(root);
    for file in ["app/bot.py", "app/bot.py", "app/admin.py"] {
        let (error, text) = client.call("read_with_context", json!({"file_path": file}));
        assert!(!error, "{text}");
    }
    let storage = root.join("app/storage.py");
    let mut text = std::fs::read_to_string(&storage).unwrap();
    text.push_str("\n\ndef flush_all(storage):\n    return storage\n");
    std::fs::write(&storage, text).unwrap();
    // The watcher applies an edit within milliseconds; leave it time.
    std::thread::sleep(Duration::from_secs(2));
    client
}

#[test]
fn a_record_with_every_fr46_figure_is_written_on_disconnect() {
    let sample = common::copy_sample();
    let mut client = session(sample.path());
    assert!(client.disconnect().success());
    let records = records(sample.path());
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    for key in [
        "session_id",
        "session_start",
        "session_end",
        "session_duration_seconds",
    ] {
        assert!(!r[key].is_null(), "{key} in {r}");
    }
    // The session began with the server, before the two seconds waited.
    assert!(r["session_duration_seconds"].as_f64() >= Some(2.0), "{r}");
    assert!(r["session_end"].as_f64() >= r["session_start"].as_f64());
    // Cache: bot.py's second read reuses the snippets of the first.
    let cache = &r["cache_stats"];
    for key in [
        "expiry_time_seconds",
        "size_limit_kb",
        "misses",
        "miss_rate",
        "evictions_lru",
        "evictions_expiry",
    ] {
        assert!(cache[key].is_number(), "{key} in {cache}");
    }
    assert!(cache["hits"].as_u64() > Some(0), "{cache}");
    assert!(cache["hit_rate"].as_f64() > Some(0.0), "{cache}");
    assert!(cache["peak_size_bytes"].as_u64() > Some(0), "{cache}");
    // Injections: three reads with context, token spread and thresholds.
    let injections = &r["injection_stats"];
    assert_eq!(injections["total_injections"], 3, "{injections}");
    assert_eq!(injections["token_limit"], 550);
    let tokens = &injections["token_distribution"];
    assert_eq!(tokens["count"], 3);
    assert!(tokens["min"].as_f64() > Some(0.0), "{tokens}");
    assert!(tokens["min"].as_f64() <= tokens["median"].as_f64());
    assert!(tokens["median"].as_f64() <= tokens["p95"].as_f64());
    assert!(tokens["p95"].as_f64() <= tokens["max"].as_f64());
    for key in [
        "tokens_exceeding_300",
        "tokens_exceeding_500",
        "tokens_exceeding_700",
    ] {
        assert!(injections[key].is_u64(), "{key}");
    }
    assert!(
        injections["injections_by_type"]["import"].as_u64() >= Some(1),
        "{injections}"
    );
    // The graph.
    let graph = &r["graph_stats"];
    assert!(graph["total_files"].as_u64() >= Some(8), "{graph}");
    assert!(graph["total_relationships"].as_u64() > Some(0));
    assert!(
        graph["circular_dependency_count"].as_u64() >= Some(1),
        "{graph}"
    );
    let connected = graph["most_connected_files"].as_array().unwrap();
    assert!(!connected.is_empty() && connected.len() <= 10);
    assert!(connected[0]["count"].as_u64() > Some(0));
    // Functions of the edited file, with how many files use them.
    let usage = &r["function_usage"];
    let edited = usage["edited_functions"].as_array().unwrap();
    assert!(
        edited.iter().any(|f| f["file"] == "app/storage.py"
            && f["function"] == "flush_all"
            && f["dependent_files"] == 0),
        "{usage}"
    );
    let counted: u64 = usage["histogram"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(counted as usize, edited.len());
    // bot.py was read again once.
    assert_eq!(r["reread_patterns"], json!({"app/bot.py": 1}));
    let performance = &r["performance"];
    assert_eq!(performance["injection_latencies_ms"]["count"], 3);
    assert!(
        performance["parsing_times_ms"]["count"].as_u64() >= Some(1),
        "{performance}"
    );
    assert!(performance["total_indexing_time_seconds"].as_f64() > Some(0.0));
    let warnings = &r["warning_stats"];
    assert!(
        warnings["warning_counts"]["circular_import"].as_u64() >= Some(1),
        "{warnings}"
    );
    assert!(
        !warnings["files_with_warnings"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // No code in the metrics, only figures, paths and names.
    let text = r.to_string();
    for code in ["def ", "class ", "import ", "return "] {
        assert!(!text.contains(code), "`{code}` in {text}");
    }
}

#[test]
fn paths_and_names_are_anonymized_when_configured() {
    let sample = common::copy_sample();
    std::fs::write(
        sample.path().join(".cross_file_context_links.yml"),
        "metrics_anonymize_paths: true\n",
    )
    .unwrap();
    let mut client = session(sample.path());
    assert!(client.disconnect().success());
    let r = &records(sample.path())[0];
    let text = r.to_string();
    for name in ["app/", "flush_all", "bot.py"] {
        assert!(!text.contains(name), "`{name}` in {text}");
    }
    // Still aggregatable: the one re-read file keeps a stand-in name.
    assert_eq!(r["reread_patterns"].as_object().unwrap().len(), 1);
}

#[test]
fn a_server_stopped_with_sigterm_writes_its_record() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let (error, _) = client.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!error);
    let pid = i32::try_from(client.pid()).unwrap();
    // SAFETY: kill(2) on our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(client.wait().success());
    let r = &records(sample.path())[0];
    assert_eq!(r["injection_stats"]["total_injections"], 1);
}

#[test]
fn analyze_metrics_aggregates_flags_outliers_and_suggests() {
    let fixture = common::fixture("session_metrics").join("sessions.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["analyze-metrics", "--json"])
        .arg(&fixture)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let analysis: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(analysis["sessions"], 6);
    // p95 of the sessions' token p95s: the nearest rank of six is the sixth.
    let tokens = &analysis["figures"]["injection_tokens_p95"];
    assert_eq!(tokens["median"], 300.0);
    assert_eq!(tokens["p95"], 900.0);
    assert!(
        (tokens["mean"].as_f64().unwrap() - 425.0).abs() < 1e-9,
        "{tokens}"
    );
    let outliers = analysis["outliers"].as_array().unwrap();
    assert!(
        outliers
            .iter()
            .any(|o| o["session_id"] == "s6" && o["figure"] == "injection_tokens_p95"),
        "{outliers:?}"
    );
    assert!(
        !outliers.iter().any(|o| o["session_id"] == "s1"),
        "{outliers:?}"
    );
    let suggestions = analysis["suggestions"].as_array().unwrap();
    let limit = suggestions
        .iter()
        .find(|s| s["key"] == "context_token_limit")
        .unwrap_or_else(|| panic!("{suggestions:?}"));
    assert_eq!(limit["current"], 550);
    assert_eq!(limit["suggested"], 900);
    // Every session evicted: the cache limit should grow.
    assert!(
        suggestions
            .iter()
            .any(|s| s["key"] == "cache_size_limit_kb")
    );
    // And the text form says the same.
    let text = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .arg("analyze-metrics")
        .arg(&fixture)
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("6 sessions"), "{text}");
    assert!(
        text.contains("outlier: session s6 injection_tokens_p95 = 900.00"),
        "{text}"
    );
    assert!(
        text.contains("suggest context_token_limit: 900 (now 550)"),
        "{text}"
    );
}

#[test]
fn analyze_metrics_without_a_log_says_where_records_come_from() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["analyze-metrics", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("session metrics are written when an MCP session ends"),
        "{stderr}"
    );
}

#[test]
fn no_record_is_written_through_a_linked_log_directory() {
    let sample = common::copy_sample();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(
        elsewhere.path(),
        sample.path().join(".cross_file_context_logs"),
    )
    .unwrap();
    let mut client = Client::start(sample.path());
    let (error, _) = client.call("get_dependencies", json!({"file_path": "app/bot.py"}));
    assert!(!error);
    assert!(client.disconnect().success());
    assert!(!elsewhere.path().join("session_metrics.jsonl").exists());
}
