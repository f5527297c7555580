//! The fuzzing harness: seeded hostile Python trees
//! indexed and served in process, and seeded hostile MCP traffic sent to
//! `xfile serve`. CI runs a bounded number of cases; a longer run:
//!
//! ```sh
//! XFILE_FUZZ_SEED=7 XFILE_FUZZ_TREES=5000 XFILE_FUZZ_MESSAGES=20000 \
//!     cargo test --release --test integration fuzz:: -- --nocapture
//! ```
//!
//! A failure names its seed and case, and keeps the tree that failed
//! under `target/fuzz-failures/`.

#![cfg(unix)]

use crate::common;
#[path = "common/hostile_mcp.rs"]
mod hostile_mcp;
#[path = "common/hostile_python.rs"]
mod hostile_python;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::raw_mcp::Raw;
use hostile_mcp::{Target, Traffic, requests_owed};
use serde_json::{Value, json};
use xfile::service::Service;

/// Written outside every tree; links point at it. It must never be served.
const OUTSIDE_SECRET: &str = "OUTSIDE_SECRET_VALUE = 'fuzz-outside-4242'\n";

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Everything the service answers about a tree, as text: must not panic,
/// must not show the outside file.
fn serve_everything(root: &Path) -> Result<String, String> {
    let service = Service::open(root).map_err(|e| format!("open failed: {e}"))?;
    let mut out = serde_json::to_string(&service.export()).map_err(|e| e.to_string())?;
    let files: Vec<String> = service
        .export()
        .files
        .iter()
        .map(|f| f.relative_path.clone())
        .collect();
    for file in &files {
        out.push_str(&format!("{:?}", service.dependencies(file)));
        out.push_str(&format!("{:?}", service.dependents(file)));
        out.push_str(&service.read_with_context(file).unwrap_or_default());
        out.push_str(&format!("{:?}", service.outline(file)));
    }
    out.push_str(&format!("{:?}", service.warnings(None)));
    out.push_str(&format!("{:?}", service.query("Calls(_, _, _, _)")));
    Ok(out)
}

fn keep_failure(root: &Path, seed: u64, case: u64) -> PathBuf {
    let kept = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/fuzz-failures")
        .join(format!("seed{seed}-case{case}"));
    let _ = std::fs::create_dir_all(&kept);
    let _ = std::process::Command::new("cp")
        .args(["-a", "--no-dereference"])
        .arg(format!("{}/.", root.display()))
        .arg(&kept)
        .status();
    kept
}

#[test]
fn hostile_python_trees_index_and_serve_without_panic_hang_or_leak() {
    let seed = setting("XFILE_FUZZ_SEED", 19);
    let cases = setting("XFILE_FUZZ_TREES", 40);
    let corpus = hostile_python::corpus();
    assert!(
        corpus.len() > 50,
        "the corpus is the repository's Python files"
    );
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.py");
    std::fs::write(&secret, OUTSIDE_SECRET).unwrap();
    let mut rng = fastrand::Rng::with_seed(seed);
    for case in 0..cases {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        std::fs::create_dir(&root).unwrap();
        hostile_python::tree(&mut rng, &corpus, &root, &secret);
        let served_root = root.clone();
        let outcome = common::bounded(Duration::from_secs(120), move || {
            serve_everything(&served_root)
        })
        .and_then(|served| served);
        let failure = match outcome {
            Ok(served) if served.contains("fuzz-outside-4242") => {
                Some("served the outside file".to_string())
            }
            Ok(_) => None,
            Err(error) => Some(error),
        };
        if let Some(failure) = failure {
            let kept = keep_failure(&root, seed, case);
            panic!(
                "seed {seed} case {case}: {failure}; tree kept in {}",
                kept.display()
            );
        }
    }
    eprintln!("hostile trees: {cases} cases, seed {seed}, 0 failures");
}

#[test]
fn hostile_mcp_traffic_gets_exactly_one_reply_per_request() {
    let seed = setting("XFILE_FUZZ_SEED", 19);
    let messages = setting("XFILE_FUZZ_MESSAGES", 400);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project");
    let mut server = Raw::start(&root);
    let mut probe = Raw::start(&root);
    probe.initialize(json!(0));
    let tools = probe.send_and_reply(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    drop(probe);
    let target = Target {
        tools: tools["result"]["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default(),
        files: vec!["app.py".into(), "models/user.py".into(), "nope.py".into()],
    };
    assert!(target.tools.len() > 5);
    let mut traffic = Traffic::new(seed, &target);
    // Owed: replies each id must get; cancelled: ids a cancel named.
    let mut owed: HashMap<String, usize> = HashMap::new();
    let mut cancelled: Vec<String> = Vec::new();
    let mut written: Vec<String> = Vec::new();
    let mut send = |server: &mut Raw, chunk: &[u8], owed: &mut HashMap<String, usize>| {
        server.write(chunk);
        for line in chunk.split(|&b| b == b'\n') {
            for id in requests_owed(line) {
                *owed.entry(id.to_string()).or_default() += 1;
            }
            if let Ok(value) = serde_json::from_slice::<Value>(line)
                && value["method"] == "notifications/cancelled"
            {
                cancelled.push(value["params"]["requestId"].to_string());
            }
        }
        written.push(String::from_utf8_lossy(chunk).into_owned());
    };
    // Some traffic before the handshake, then the handshake, then the rest.
    for _ in 0..messages / 20 {
        let chunk = traffic.next_chunk();
        send(&mut server, &chunk, &mut owed);
    }
    let init = server.initialize(json!("fuzz-init"));
    assert_eq!(init["result"]["serverInfo"]["name"], "xfile", "{init}");
    for _ in 0..messages {
        let chunk = traffic.next_chunk();
        send(&mut server, &chunk, &mut owed);
    }
    let sentinel =
        server.send_and_reply(json!({"jsonrpc": "2.0", "id": "fuzz-sentinel", "method": "ping"}));
    assert_eq!(
        sentinel["result"],
        json!({}),
        "seed {seed}: the server stopped answering"
    );
    // Replies come while heavy requests finish; then nothing more.
    let mut got: HashMap<String, usize> = HashMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let complete = |got: &HashMap<String, usize>| {
        owed.iter()
            .filter(|(id, _)| !cancelled.contains(id))
            .all(|(id, n)| got.get(id).copied().unwrap_or(0) >= *n)
    };
    while !complete(&got) && std::time::Instant::now() < deadline {
        for reply in server.drain(Duration::from_millis(500)) {
            check_reply(&reply, seed);
            if let Some(id) = reply.get("id") {
                *got.entry(id.to_string()).or_default() += 1;
            }
        }
    }
    for reply in server.drain(Duration::from_secs(1)) {
        check_reply(&reply, seed);
        if let Some(id) = reply.get("id") {
            *got.entry(id.to_string()).or_default() += 1;
        }
    }
    got.remove("\"fuzz-init\"");
    // A request that does not parse still gets a reply when its id is
    // readable: at most one per line that names the id.
    let naming = |id: &str| {
        let key = format!("\"id\":{id}");
        written
            .iter()
            .flat_map(|chunk| chunk.split('\n'))
            .filter(|line| line.contains(&key))
            .count()
    };
    for (id, replies) in &got {
        let least = if cancelled.contains(id) {
            0
        } else {
            owed.get(id).copied().unwrap_or(0)
        };
        let most = naming(id).max(owed.get(id).copied().unwrap_or(0));
        if !(least..=most).contains(replies) {
            panic!(
                "seed {seed}: id {id}: {replies} replies, expected {least}..={most}; lines: {:#?}",
                naming_lines(&written, id)
            );
        }
    }
    for (id, n) in &owed {
        let replies = got.get(id).copied().unwrap_or(0);
        if !cancelled.contains(id) && replies < *n {
            panic!(
                "seed {seed}: id {id}: {replies} replies to {n} requests; lines: {:#?}",
                naming_lines(&written, id)
            );
        }
    }
    let answered: usize = got.values().sum();
    assert!(
        answered <= written.len() + 2,
        "seed {seed}: {answered} replies to {} chunks",
        written.len()
    );
    assert!(server.alive(), "seed {seed}: the server exited");
    eprintln!(
        "hostile traffic: {} chunks, {} requests owed a reply, seed {seed}, 0 failures",
        written.len(),
        owed.values().sum::<usize>()
    );
}

/// The lines written that mention `id`, for a failure's message.
fn naming_lines(written: &[String], id: &str) -> Vec<String> {
    let stem: String = id.chars().take(12).collect();
    written
        .iter()
        .flat_map(|chunk| chunk.split('\n'))
        .filter(|line| line.contains(&stem))
        .map(|line| line.chars().take(300).collect())
        .collect()
}

/// A reply is a JSON-RPC response or error, and short: nothing of a long
/// input is echoed.
fn check_reply(reply: &Value, seed: u64) {
    assert_eq!(reply["jsonrpc"], "2.0", "seed {seed}: {reply}");
    let text = reply.to_string();
    if reply.get("error").is_some() {
        assert!(
            text.len() < 20_000,
            "seed {seed}: an error of {} bytes",
            text.len()
        );
    } else {
        assert!(reply.get("result").is_some(), "seed {seed}: {text:.300}");
    }
}
