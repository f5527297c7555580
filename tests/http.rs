//! The HTTP side: `/metrics` in Prometheus text format, `/health` with a
//! status code per state, and the dashboard's page and JSON, served by
//! `xfile serve --http` beside MCP and by `xfile dashboard`.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::Duration;

use common::http::{Server, get, get_with};
use serde_json::{Value, json};

/// One JSON-RPC exchange over the server's stdio.
fn rpc(
    server: &mut Server,
    lines: &mut impl BufRead,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let stdin = server.child.stdin.as_mut().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    )
    .unwrap();
    if method == "initialize" {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
    }
    loop {
        let mut line = String::new();
        assert!(lines.read_line(&mut line).unwrap() > 0);
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == json!(id) {
            return message;
        }
    }
}

/// `xfile serve --root ROOT` with its HTTP side, past the handshake; its
/// stdout as lines.
fn serve_initialized(root: &str) -> (Server, BufReader<std::process::ChildStdout>) {
    let mut server = Server::start(&["serve", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let mut lines = BufReader::new(server.child.stdout.take().unwrap());
    rpc(
        &mut server,
        &mut lines,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    (server, lines)
}

/// `/metrics`, parsed.
fn scrape(addr: &str) -> prometheus_parse::Scrape {
    let (_, text) = get(addr, "/metrics");
    prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap()
}

fn sample(metric: &prometheus_parse::Scrape, name: &str, label: Option<(&str, &str)>) -> f64 {
    metric
        .samples
        .iter()
        .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => *v,
            prometheus_parse::Value::Histogram(buckets) => buckets.last().map_or(0.0, |b| b.count),
            other => panic!("{name}: {other:?}"),
        })
        .unwrap_or_else(|| panic!("no {name} {label:?} in {:?}", metric.samples))
}

#[test]
fn serve_http_exposes_prometheus_metrics_of_the_mcp_tools_and_the_watcher() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let (mut server, mut lines) = serve_initialized(root);
    let (status, body) = server.wait_for("/health", |s, _| s == 200);
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "healthy");
    assert_eq!(
        health["checks"],
        json!({"index": true, "watcher": true, "logs": true})
    );
    assert!(health["uptime_seconds"].as_f64() > Some(0.0));
    for (id, file) in [(2, "app/bot.py"), (3, "app/bot.py"), (4, "app/missing.py")] {
        rpc(
            &mut server,
            &mut lines,
            id,
            "tools/call",
            json!({"name": "read_with_context", "arguments": {"file_path": file}}),
        );
    }
    let storage = project.path().join("app/storage.py");
    let text = std::fs::read_to_string(&storage).unwrap() + "\nLIMIT = 3\n";
    std::fs::write(&storage, text).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (status, text) = get(&server.addr, "/metrics");
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let tool = Some(("tool", "read_with_context"));
    assert_eq!(
        sample(&scrape, "xfile_tool_request_duration_seconds_count", tool),
        3.0
    );
    assert!(sample(&scrape, "xfile_tool_request_duration_seconds_sum", tool) > 0.0);
    assert_eq!(
        sample(
            &scrape,
            "xfile_errors_total",
            Some(("type", "file_not_found"))
        ),
        1.0
    );
    let project_name = project.path().file_name().unwrap().to_str().unwrap();
    let this = Some(("project", project_name));
    assert_eq!(sample(&scrape, "xfile_index_files", this), 9.0);
    assert!(sample(&scrape, "xfile_index_relationships", this) > 0.0);
    assert!(sample(&scrape, "xfile_cache_hits", this) >= 1.0, "{text}");
    assert!(sample(&scrape, "xfile_cache_misses", this) >= 1.0);
    assert!(sample(&scrape, "xfile_cache_size_bytes", this) > 0.0);
    sample(&scrape, "xfile_cache_evictions", this);
    assert!(
        sample(&scrape, "xfile_watcher_events_total", None) >= 1.0,
        "{text}"
    );
    assert!(sample(&scrape, "xfile_update_duration_seconds_count", None) >= 1.0);
    // Every histogram's buckets are cumulative and end in +Inf.
    assert!(
        text.contains(
            "xfile_tool_request_duration_seconds_bucket{le=\"+Inf\",tool=\"read_with_context\"} 3"
        ),
        "{text}"
    );
}

#[test]
fn health_is_degraded_when_logs_cannot_be_written() {
    let project = common::copy_sample();
    std::fs::write(
        project.path().join(".cross_file_context_logs"),
        "in the way",
    )
    .unwrap();
    let root = project.path().to_str().unwrap();
    let server = Server::start(&["dashboard", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let (status, body) = server.wait_for("/health", |s, _| s == 429);
    assert_eq!(status, 429, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "degraded");
    assert_eq!(
        health["checks"],
        json!({"index": true, "watcher": true, "logs": false})
    );
    assert!(
        health["problems"][0]
            .as_str()
            .unwrap()
            .contains("not a directory"),
        "{health}"
    );
}

#[test]
fn health_is_unhealthy_without_an_index() {
    let home = tempfile::tempdir().unwrap();
    let project = common::copy_sample();
    let xfile = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(args)
            .env("XFILE_HOME", home.path())
            .output()
            .unwrap()
    };
    let path = project.path().to_str().unwrap();
    assert!(
        xfile(&["project", "add", path, "--name", "gone"])
            .status
            .success()
    );
    std::fs::remove_dir_all(project.path()).unwrap();
    let home_env = home.path().to_str().unwrap();
    let server = Server::start(
        &["serve", "--projects", "gone", "--http", "127.0.0.1:0"],
        &[("XFILE_HOME", home_env)],
    );
    let (status, body) = server.wait_for("/health", |_, b| b.contains("indexing failed"));
    assert_eq!(status, 503, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "unhealthy");
    assert_eq!(health["checks"]["index"], false);
}

#[test]
fn the_dashboard_serves_its_page_and_read_only_json() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let server = Server::start(&["dashboard", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let (status, overview) = server.wait_for("/api/overview", |s, _| s == 200);
    assert_eq!(status, 200, "{overview}");
    let overview: Value = serde_json::from_str(&overview).unwrap();
    assert_eq!(overview["files"], 9);
    assert_eq!(
        overview["relationships"],
        json!({"function_call": 19, "import": 17, "inheritance": 1})
    );
    assert_eq!(overview["parse_errors"], 0);
    assert_eq!(
        overview["warnings"],
        json!({"circular_import": 2, "decorator": 1})
    );
    // The page: embedded, no asset from elsewhere.
    let (status, page) = get(&server.addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<svg id=\"gsvg\""));
    for outside in ["src=\"http", "href=\"http", "src=\"//", "@import", "cdn"] {
        assert!(!page.contains(outside), "{outside}");
    }
    // Packages as nodes, imports between them as edges.
    let (_, graph) = get(&server.addr, "/api/graph");
    let graph: Value = serde_json::from_str(&graph).unwrap();
    let ids: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["app", "app/utils"]);
    assert_eq!(
        graph["edges"],
        json!([{"source": "app", "target": "app/utils", "imports": 1, "in_cycle": false}])
    );
    // Inside `app`, its files: bot.py and admin.py import each other.
    let (_, inside) = get(&server.addr, "/api/graph?package=app");
    let inside: Value = serde_json::from_str(&inside).unwrap();
    let cyclic: Vec<&str> = inside["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["in_cycle"] == true)
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert!(
        cyclic.contains(&"app/bot.py") && cyclic.contains(&"app/admin.py"),
        "{inside}"
    );
    assert!(
        inside["edges"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["in_cycle"] == true)
    );
    // Warnings, filtered by type and by file.
    let (_, warnings) = get(&server.addr, "/api/warnings?type=circular_import");
    let warnings: Value = serde_json::from_str(&warnings).unwrap();
    assert_eq!(warnings["matching"], 2);
    assert!(
        warnings["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["type"] == "circular_import")
    );
    assert_eq!(warnings["by_type"]["decorator"], 1);
    let (_, by_file) = get(&server.addr, "/api/warnings?file=app/admin");
    let by_file: Value = serde_json::from_str(&by_file).unwrap();
    assert!(
        by_file["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["file"] == "app/admin.py"),
        "{by_file}"
    );
    // No session has ended on this root yet.
    let (status, sessions) = get(&server.addr, "/api/sessions");
    assert_eq!(status, 200);
    let sessions: Value = serde_json::from_str(&sessions).unwrap();
    assert_eq!(sessions["sessions"], json!([]));
    assert_eq!(sessions["total"], 0);
    assert_eq!(sessions["next_offset"], Value::Null);
    // An unknown project is a 404, never another project's data.
    assert_eq!(get(&server.addr, "/api/overview?project=other").0, 404);
}

/// A project of `n` modules, each importing and calling the previous few.
fn generated_project(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..n {
        let mut text = String::new();
        for j in i.saturating_sub(5)..i {
            text.push_str(&format!("from m{j} import f{j}\n"));
        }
        text.push_str(&format!("\n\ndef f{i}():\n"));
        for j in i.saturating_sub(5)..i {
            text.push_str(&format!("    f{j}()\n"));
        }
        text.push_str("    return 1\n");
        std::fs::write(dir.path().join(format!("m{i}.py")), text).unwrap();
    }
    dir
}

// A flood of pipelined whole-project requests runs a few at
// a time (the rest wait), as the gauges on /metrics show while it lasts.
#[test]
fn a_flood_of_graph_requests_runs_two_at_a_time_f8() {
    const FLOOD: u64 = 40;
    let project = generated_project(300);
    let root = project.path().to_str().unwrap();
    let (mut server, mut lines) = serve_initialized(root);
    let graph = json!({"name": "get_relationship_graph", "arguments": {}});
    rpc(&mut server, &mut lines, 2, "tools/call", graph.clone());
    let stdin = server.child.stdin.as_mut().unwrap();
    for id in 0..FLOOD {
        let request =
            json!({"jsonrpc": "2.0", "id": 100 + id, "method": "tools/call", "params": graph});
        writeln!(stdin, "{request}").unwrap();
    }
    stdin.flush().unwrap();
    let (done, replies) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut answered = 0;
        for line in lines.lines() {
            let Ok(line) = line else { break };
            if serde_json::from_str::<Value>(&line).is_ok_and(|m| m["result"].is_object()) {
                answered += 1;
                if answered == FLOOD {
                    break;
                }
            }
        }
        let _ = done.send(answered);
    });
    let (mut most_running, mut most_waiting) = (0.0f64, 0.0f64);
    let answered = loop {
        let scrape = scrape(&server.addr);
        most_running = most_running.max(sample(&scrape, "xfile_heavy_requests_running", None));
        most_waiting = most_waiting.max(sample(&scrape, "xfile_heavy_requests_waiting", None));
        if let Ok(answered) = replies.recv_timeout(Duration::from_millis(5)) {
            break answered;
        }
    };
    assert_eq!(answered, FLOOD);
    assert!(
        most_running <= 2.0,
        "{most_running} heavy requests ran at once"
    );
    assert!(
        most_waiting >= 1.0,
        "the flood never queued (waiting peaked at {most_waiting})"
    );
    let scrape = scrape(&server.addr);
    assert_eq!(sample(&scrape, "xfile_heavy_requests_running", None), 0.0);
    assert_eq!(sample(&scrape, "xfile_heavy_requests_waiting", None), 0.0);
}

/// Every path the HTTP side answers, and one it does not.
const ENDPOINTS: [&str; 9] = [
    "/",
    "/metrics",
    "/health",
    "/api/projects",
    "/api/overview",
    "/api/graph",
    "/api/warnings",
    "/api/sessions",
    "/nowhere",
];

// Regression: `curl -H 'Host: rebind.attacker.example:3456'
// http://127.0.0.1:3456/api/warnings` answered 200 with project data, so a
// web page whose name rebinds to 127.0.0.1 could read it. A foreign Host
// or Origin gets 403 and a one-line reason, on every endpoint.
#[test]
fn http_rejects_foreign_host_dns_rebinding() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let (server, _stdout) = serve_initialized(root);
    let (status, body) = server.wait_for("/api/overview", |s, _| s == 200);
    assert_eq!(status, 200, "{body}");
    let port = server.addr.rsplit(':').next().unwrap();
    let foreign_host = format!("rebind.attacker.example:{port}");
    let foreign_origin = format!("http://rebind.attacker.example:{port}");
    let own_origin = format!("http://{}", server.addr);
    let refused: [&[(&str, &str)]; 4] = [
        &[("Host", &foreign_host)],
        &[("Host", "rebind.attacker.example")],
        &[("Host", &server.addr), ("Origin", &foreign_origin)],
        &[],
    ];
    let project_name = project.path().file_name().unwrap().to_str().unwrap();
    for path in ENDPOINTS {
        for headers in refused {
            let (status, body) = get_with(&server.addr, path, headers);
            assert_eq!(status, 403, "{path} {headers:?}: {body}");
            assert!(
                body.starts_with("forbidden: ") && body.len() < 200,
                "{path}: {body}"
            );
            for data in ["app/", project_name, "xfile_", "\"files\"", "<html"] {
                assert!(
                    !body.contains(data),
                    "{path} {headers:?} answered {data}: {body}"
                );
            }
        }
        // This machine's names, and a same-origin request, are answered.
        for host in [
            "localhost",
            &format!("127.0.0.1:{port}"),
            &format!("[::1]:{port}"),
        ] {
            let (status, body) = get_with(&server.addr, path, &[("Host", host)]);
            assert_ne!(status, 403, "{path} Host {host}: {body}");
        }
        let (status, _) = get_with(
            &server.addr,
            path,
            &[("Host", &server.addr), ("Origin", &own_origin)],
        );
        assert_ne!(status, 403, "{path} same origin");
    }
}

/// GET `/health` on a fresh connection: `None` when the connection is
/// refused, reset or closed without an answer.
fn try_health(addr: &str) -> Option<u16> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    write!(stream, "GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).ok()?;
    let response = String::from_utf8_lossy(&response);
    response.split_whitespace().nth(1)?.parse().ok()
}

/// Asks `/health` until it is answered 200 (the server may still be
/// closing connections), for a minute at most.
fn health_answers(addr: &str) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if try_health(addr) == Some(200) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// A connection that sends half a request and then nothing.
fn half_sent(addr: &str) -> std::net::TcpStream {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    // A server at its connection cap may have refused this one already:
    // writing to it then fails, and the caller sees it closed.
    let _ = write!(stream, "GET /api/warnings HTTP/1.1\r\nHost: {addr}\r\n");
    let _ = stream.flush();
    stream
}

/// Reads until the server closes `stream`: true if it did (end of stream
/// or reset) within a minute, false if it kept it open.
fn closed_by_server(stream: &mut std::net::TcpStream) -> (bool, String) {
    use std::io::Read;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut got = Vec::new();
    let closed = match stream.read_to_end(&mut got) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    (closed, String::from_utf8_lossy(&got).into_owned())
}

// Regression: half-sent requests were never closed; under
// `ulimit -n 1024`, 1,100 idle connections starved the server. Connections
// over the cap are refused at once, a silent client is disconnected after
// the idle timeout, and the server answers again once they are gone.
// (The limits are set small through the environment; every wait is for a
// state, each with a one-minute guard against a hang.)
#[test]
fn http_times_out_half_sent_requests_and_caps_connections() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let dashboard = ["dashboard", "--root", root, "--http", "127.0.0.1:0"];

    // The cap: four silent clients (never timed out here) hold every
    // connection, so a fifth is refused, not served; once they hang up,
    // requests are answered again.
    let capped = Server::start(
        &dashboard,
        &[
            ("XFILE_HTTP_MAX_CONNECTIONS", "4"),
            ("XFILE_HTTP_IDLE_TIMEOUT_MS", "600000"),
        ],
    );
    assert!(health_answers(&capped.addr));
    let silent: Vec<_> = (0..4).map(|_| half_sent(&capped.addr)).collect();
    let mut fifth = std::net::TcpStream::connect(&capped.addr).unwrap();
    let _ = write!(
        fifth,
        "GET /health HTTP/1.0\r\nHost: {}\r\n\r\n",
        capped.addr
    );
    let (closed, answer) = closed_by_server(&mut fifth);
    assert!(closed, "the fifth connection was kept open");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 503"),
        "the fifth connection was served: {answer}"
    );
    drop(silent);
    assert!(
        health_answers(&capped.addr),
        "no answer after the clients left"
    );

    // The timeout: more silent clients than the cap, each disconnected by
    // the server (refused, or after 300 ms of silence); then it answers.
    let timed = Server::start(
        &dashboard,
        &[
            ("XFILE_HTTP_MAX_CONNECTIONS", "4"),
            ("XFILE_HTTP_IDLE_TIMEOUT_MS", "300"),
        ],
    );
    assert!(health_answers(&timed.addr));
    let mut silent: Vec<_> = (0..10).map(|_| half_sent(&timed.addr)).collect();
    for (n, stream) in silent.iter_mut().enumerate() {
        let (closed, _) = closed_by_server(stream);
        assert!(closed, "silent connection {n} was never closed");
    }
    assert!(health_answers(&timed.addr), "no answer after the timeouts");
}

// Regression: every unknown tool name became a label set on
// /metrics (3,000 names grew it from 3.9 KB to 4.8 MB, and memory grew
// without --http too). Tool labels come only from the server's own tools;
// every other name is counted under `tool="unknown"`.
#[test]
fn metrics_count_unknown_tool_names_under_one_label() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let (mut server, mut lines) = serve_initialized(root);
    let listed = rpc(&mut server, &mut lines, 2, "tools/list", json!({}));
    let mut known: Vec<String> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    known.push("unknown".to_string());
    rpc(
        &mut server,
        &mut lines,
        3,
        "tools/call",
        json!({"name": "read_with_context", "arguments": {"file_path": "app/bot.py"}}),
    );
    let (_, before) = get(&server.addr, "/metrics");
    const NAMES: u64 = 200;
    for n in 0..NAMES {
        let name = format!("no_such_tool_{n}_{}", "x".repeat(200));
        let reply = rpc(
            &mut server,
            &mut lines,
            100 + n,
            "tools/call",
            json!({"name": name, "arguments": {}}),
        );
        assert!(
            reply["result"].is_null() || reply["result"]["isError"] == true,
            "{reply}"
        );
    }
    let (status, text) = get(&server.addr, "/metrics");
    assert_eq!(status, 200);
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    for s in &scrape.samples {
        if let Some(tool) = s.labels.get("tool") {
            assert!(known.iter().any(|k| k == tool), "a label for {tool}");
        }
    }
    assert_eq!(
        sample(
            &scrape,
            "xfile_tool_request_duration_seconds_count",
            Some(("tool", "unknown"))
        ),
        NAMES as f64
    );
    // One series more than before, whatever the number of names.
    assert!(
        text.len() < before.len() + 4_000,
        "/metrics grew from {} to {} bytes",
        before.len(),
        text.len()
    );
}

// Regression: the dashboard asks `/api/warnings?type=&file=`
// and the empty `type` filtered everything ("0 matching"). An empty value
// is no filter.
#[test]
fn dashboard_warnings_with_empty_filters_list_every_warning() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let server = Server::start(&["dashboard", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let (status, body) = server.wait_for("/api/warnings", |s, _| s == 200);
    assert_eq!(status, 200, "{body}");
    let all: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(all["matching"], 3, "{all}");
    for query in [
        "?type=&file=",
        "?project=&type=&file=&limit=&offset=",
        "?type=%20&file=",
    ] {
        let (status, body) = get(&server.addr, &format!("/api/warnings{query}"));
        assert_eq!(status, 200, "{query}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["matching"], 3, "{query}: {answer}");
        assert_eq!(answer["warnings"].as_array().unwrap().len(), 3, "{query}");
    }
    // A filter that is given still filters.
    let (_, body) = get(&server.addr, "/api/warnings?type=decorator&file=");
    let decorators: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(decorators["matching"], 1, "{decorators}");
}

/// A project whose warnings are many and long: a cycle through 80 modules
/// with long names (each of its warnings names every module of the
/// cycle), 1,500 decorated functions, and 240 packages.
fn many_warnings_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let name = |i: usize| format!("cycle_module_with_a_rather_long_name_number_{i:03}");
    const CYCLE: usize = 80;
    for i in 0..CYCLE {
        let text = format!(
            "import {}\n\n\ndef f():\n    return 1\n",
            name((i + 1) % CYCLE)
        );
        std::fs::write(dir.path().join(format!("{}.py", name(i))), text).unwrap();
    }
    let mut decorated = String::from("def register(f):\n    return f\n\n");
    for i in 0..1_500 {
        decorated.push_str(&format!("\n@register\ndef g{i}():\n    return {i}\n"));
    }
    std::fs::write(dir.path().join("decorated.py"), decorated).unwrap();
    for i in 0..240 {
        let package = dir.path().join(format!("pkg{i:03}"));
        std::fs::create_dir(&package).unwrap();
        std::fs::write(package.join("__init__.py"), "from decorated import g1\n").unwrap();
    }
    dir
}

// Regression: with 5,000 warnings each `/api/warnings` answer was
// 32 MB, and 16 parallel GETs took the server to 5.9 GB. Every list of the
// JSON API pages: a default and a maximum `limit`, `offset`, and the answer
// says the `total` and where the next page starts (`next_offset`); long
// messages are cut, and no answer passes the size bound.
#[test]
fn http_api_answers_are_paged_and_bounded_memory_from_the_web() {
    const BOUND: usize = 2 << 20;
    let project = many_warnings_project();
    let root = project.path().to_str().unwrap();
    let server = Server::start(&["dashboard", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let (status, body) = server.wait_for("/api/warnings", |s, _| s == 200);
    assert_eq!(status, 200, "{body}");
    let first: Value = serde_json::from_str(&body).unwrap();
    let total = first["total"].as_u64().unwrap() as usize;
    assert!(total > 1_500, "{total} warnings");
    assert_eq!(first["matching"], total);
    assert_eq!(first["warnings"].as_array().unwrap().len(), 100);
    assert_eq!(
        (first["offset"].as_u64(), first["limit"].as_u64()),
        (Some(0), Some(100))
    );
    assert_eq!(first["next_offset"], 100);

    // Every page, at the largest limit: each warning once, each bounded.
    let mut seen = std::collections::BTreeSet::new();
    let mut offset = Some(0);
    let mut pages = 0;
    while let Some(at) = offset {
        let (status, body) = get(
            &server.addr,
            &format!("/api/warnings?limit=100000&offset={at}"),
        );
        assert_eq!(status, 200, "{body}");
        assert!(body.len() < BOUND, "a page of {} bytes", body.len());
        let page: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(page["limit"], 500, "the limit is capped");
        for w in page["warnings"].as_array().unwrap() {
            let message = w["message"].as_str().unwrap();
            assert!(message.chars().count() < 600, "{message}");
            let key = (
                w["file"].to_string(),
                w["line"].to_string(),
                w["column"].to_string(),
                w["type"].to_string(),
            );
            assert!(seen.insert(key), "listed twice: {w}");
        }
        offset = page["next_offset"].as_u64();
        pages += 1;
    }
    assert_eq!(seen.len(), total);
    assert_eq!(pages, total.div_ceil(500));
    // A cycle through 80 long names is named in a message cut short.
    let (_, body) = get(&server.addr, "/api/warnings?type=circular_import&limit=1");
    let cycles: Value = serde_json::from_str(&body).unwrap();
    assert!(cycles["matching"].as_u64() > Some(0), "{cycles}");
    let message = cycles["warnings"][0]["message"].as_str().unwrap();
    assert!(message.contains("more characters)"), "{message}");
    let (status, body) = get(&server.addr, "/api/warnings?limit=many");
    assert_eq!(status, 400);
    assert!(body.contains("limit must be a whole number"), "{body}");

    // The graph: the most connected packages first, a page at a time.
    let (_, body) = get(&server.addr, "/api/graph");
    assert!(body.len() < BOUND);
    let graph: Value = serde_json::from_str(&body).unwrap();
    let nodes = graph["total"].as_u64().unwrap();
    assert!(nodes > 240, "{nodes} nodes");
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 200);
    assert_eq!(graph["next_offset"], 200);
    let (_, body) = get(&server.addr, "/api/graph?offset=200");
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rest["nodes"].as_array().unwrap().len() as u64, nodes - 200);
    assert_eq!(rest["next_offset"], Value::Null);

    // The other lists page too.
    for path in ["/api/projects", "/api/sessions"] {
        let (status, body) = get(&server.addr, path);
        assert_eq!(status, 200, "{path}: {body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert!(
            answer["total"].is_u64() && answer.get("next_offset").is_some(),
            "{path}: {answer}"
        );
    }
}
