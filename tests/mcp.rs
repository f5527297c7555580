//! The MCP server over real stdio, spoken as raw JSON-RPC (DESIGN §4).

mod common;

use common::mcp_client::Client;
use serde_json::{Value, json};

#[test]
fn lists_the_tools_with_schemas() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let tools = client.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "explain",
            "explain_recomputation",
            "get_cache_statistics",
            "get_callees",
            "get_callers",
            "get_dependencies",
            "get_dependents",
            "get_recent_injections",
            "get_relationship_graph",
            "get_warnings",
            "query_relation",
            "read_with_context"
        ]
    );
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert!(tool["inputSchema"]["type"] == "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 40);
    }
    // Both pattern tools list every relation with its argument names,
    // generated from the rules.
    for name in ["query_relation", "explain"] {
        let tool = tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        let description = tool["description"].as_str().unwrap();
        for signature in [
            "DependsOn(file, dependency)",
            "Calls(file, site, target, name)",
        ] {
            assert!(description.contains(signature), "{name}: {description}");
        }
    }
}

#[test]
fn explain_answers_with_the_derivation_or_a_tool_error() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let (is_error, text) = client.call(
        "explain",
        json!({"fact": "Inherits(\"app/admin.py\", _, _, _)"}),
    );
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with(
            "Inherits(app/admin.py, 4:15, app/bot.py, EchoBot)\n  [rule rules/relationships.dl:"
        ),
        "{text}"
    );
    assert!(
        text.contains("[base app/admin.py:4:15] class AdminBot(EchoBot):"),
        "{text}"
    );
    let (is_error, text) = client.call("explain", json!({"fact": "Nope(_)", "json": true}));
    assert!(is_error);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], "invalid_parameter");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Imports(file, site, module)")
    );
}

#[test]
fn read_with_context_injects_used_signatures_fr8() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let (is_error, text) = client.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!is_error, "{text}");
    assert!(text.starts_with("[Cross-File Context]"));
    // Each definition at the full tier names its lines; a class is a
    // skeleton with the members the file uses first (User.save, called on
    // an instance), then its other public members.
    assert!(text.contains(
        "def retry_with_backoff(fn, attempts=3, base_delay=0.5)  # app/utils/retry.py:7-15\n"
    ));
    assert!(
        text.contains(
            "class User(Base)  # app/models.py:15-21\n    \"\"\"A chat user.\"\"\"\n    def save(self, storage: \"Storage\")  # app/models.py:20\n"
        ),
        "{text}"
    );
    assert!(text.contains("class Storage  # app/storage.py:6-16\n"));
    // The star import (`from app.models import *`) expands to the names
    // the file uses: Message is one of them.
    assert!(text.contains("class Message(Base)  # app/models.py:24-27\n"));
    // The file's own import lines are not repeated.
    assert!(!text.contains("imports from"), "{text}");
    assert!(text.contains("[File Content]\nimport requests\n"));

    // A second read serves every piece from the working memory cache.
    let (_, again) = client.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert_eq!(again, text);
    let (is_error, stats) = client.call("get_cache_statistics", json!({}));
    assert!(!is_error, "{stats}");
    let stats: Value = serde_json::from_str(&stats).unwrap();
    let misses = stats["misses"].as_u64().unwrap();
    assert!(misses > 5, "{stats}");
    assert_eq!(stats["hits"].as_u64(), Some(misses), "{stats}");
    assert_eq!(stats["size_limit_bytes"], 50 * 1024);
}

#[test]
fn bad_requests_are_tool_errors_with_codes_and_the_server_keeps_answering() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let cases = [
        (
            "read_with_context",
            json!({"file_path": "missing.py"}),
            "file_not_found",
        ),
        (
            "read_with_context",
            json!({"file_path": "../../../../../../../../etc/hostname"}),
            "outside_root",
        ),
        (
            "read_with_context",
            json!({"file_path": "/etc/passwd"}),
            "outside_root",
        ),
        (
            "get_dependencies",
            json!({"file_path": "app/\u{0}bot.py"}),
            "invalid_parameter",
        ),
        (
            "query_relation",
            json!({"pattern": "Nope(_)"}),
            "invalid_parameter",
        ),
    ];
    for (tool, arguments, code) in cases {
        let (is_error, text) = client.call(tool, arguments.clone());
        assert!(is_error, "{tool} {arguments}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], code, "{tool} {arguments}: {text}");
        assert!(!body["suggestion"].as_str().unwrap().is_empty());
        assert!(!text.contains("root:"), "no file content leaks: {text}");
    }
    // Missing arguments are a protocol-level error, not a crash.
    let response = client.request(
        "tools/call",
        json!({"name": "get_dependents", "arguments": {}}),
    );
    assert!(response.get("error").is_some() || response["result"]["isError"] == json!(true));
    let (is_error, text) = client.call(
        "get_dependents",
        json!({"file_path": "app/utils/retry.py", "symbol": "retry_with_backoff"}),
    );
    assert!(!is_error, "{text}");
    let dependents: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dependents.as_array().unwrap().len(), 3);
}

/// §3.12.2: at least 15 hostile paths, symlink escapes among them. None may
/// return content; each is an error with the rule it broke.
#[cfg(unix)]
#[test]
fn path_attacks_are_rejected_without_leaking_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::create_dir_all(root.join("secrets")).unwrap();
    std::fs::write(root.join("app/main.py"), "import os\n").unwrap();
    std::fs::write(root.join(".env"), "API_KEY=hunter2\n").unwrap();
    std::fs::write(root.join("secrets/id_rsa"), "PRIVATE KEY hunter2\n").unwrap();
    std::fs::write(root.join("server.pem"), "CERT hunter2\n").unwrap();
    std::fs::write(root.join("notes.txt"), "hunter2\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("stolen.py"), "SECRET = 'hunter2'\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("stolen.py"), root.join("app/escape.py"))
        .unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("passwd.py")).unwrap();

    let mut client = Client::start(root);
    let attacks = [
        ("../../../../etc/passwd", "outside_root"),
        ("/etc/passwd", "outside_root"),
        ("/proc/self/environ", "outside_root"),
        ("app/../../../../etc/passwd", "outside_root"),
        ("app/escape.py", "outside_root"),
        ("linkdir/stolen.py", "outside_root"),
        ("passwd.py", "outside_root"),
        (".env", "sensitive_file"),
        ("secrets/id_rsa", "sensitive_file"),
        ("server.pem", "sensitive_file"),
        ("notes.txt", "not_python"),
        ("app/main.py\u{0}../../etc/passwd", "invalid_parameter"),
        ("", "file_not_found"),
        ("app", "file_not_found"),
        ("%2e%2e/%2e%2e/etc/passwd", "file_not_found"),
        ("~/.ssh/id_rsa", "file_not_found"),
        ("..\\..\\etc\\passwd", "file_not_found"),
    ];
    for (path, code) in attacks {
        for tool in ["read_with_context", "get_dependencies", "get_dependents"] {
            let (is_error, text) = client.call(tool, json!({"file_path": path}));
            assert!(is_error, "{tool} {path:?} answered: {text}");
            let body: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(body["code"], code, "{tool} {path:?}: {text}");
            for secret in ["hunter2", "root:x", "PATH="] {
                assert!(!text.contains(secret), "{tool} {path:?} leaked: {text}");
            }
        }
    }
    // Still serving normally afterwards.
    let (is_error, text) = client.call("read_with_context", json!({"file_path": "app/main.py"}));
    assert!(!is_error && text.ends_with("import os\n"), "{text}");
}

/// Pages of `detail` from get_relationship_graph, cursor after cursor.
fn all_pages(client: &mut Client, detail: &str, limit: usize) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"detail": detail, "limit": limit});
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let (is_error, text) = client.call("get_relationship_graph", args);
        assert!(!is_error, "{text}");
        let page: Value = serde_json::from_str(&text).unwrap();
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return items,
        }
    }
}

#[test]
fn the_graph_is_a_summary_by_default_and_its_lists_page_to_the_whole() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let (is_error, text) = client.call("get_relationship_graph", json!({}));
    assert!(!is_error, "{text}");
    let summary: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["files"], 9, "{summary}");
    assert!(summary["relationships"]["import"].as_u64().unwrap() > 0);
    assert_eq!(summary["import_cycles"], 1);
    assert!(summary.get("items").is_none());
    assert!(xfile::service::context::count_tokens(&text) < 2000);

    // Paging to the end gives exactly the export's list, in order.
    let service = xfile::service::Service::open(sample.path()).unwrap();
    let export = serde_json::to_value(service.export()).unwrap();
    assert_eq!(
        Value::Array(all_pages(&mut client, "relationships", 7)),
        export["relationships"]
    );
    assert_eq!(
        Value::Array(all_pages(&mut client, "files", 3)),
        export["files"]
    );

    // The prefix narrows every part.
    let (_, text) = client.call(
        "get_relationship_graph",
        json!({"path_prefix": "app/utils/"}),
    );
    let narrowed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(narrowed["import_cycles"], 0, "{narrowed}");
    assert!(narrowed["files"].as_u64().unwrap() < 9);
    let connected = narrowed["most_connected_files"].as_array().unwrap();
    assert!(!connected.is_empty(), "{narrowed}");
    assert!(
        connected
            .iter()
            .all(|f| f["file"].as_str().unwrap().starts_with("app/utils/"))
    );

    let (is_error, text) = client.call(
        "get_relationship_graph",
        json!({"detail": "relationships", "cursor": "nope"}),
    );
    assert!(is_error);
    assert!(text.contains("invalid_parameter"), "{text}");
}

#[test]
fn warnings_answer_counts_by_type_then_one_page() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let (is_error, text) = client.call("get_warnings", json!({"limit": 1}));
    assert!(!is_error, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let total: u64 = answer["by_type"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(answer["warnings"]["total"].as_u64(), Some(total));
    assert_eq!(answer["warnings"]["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        answer["warnings"]["next_cursor"].is_string(),
        total > 1,
        "{answer}"
    );
}
