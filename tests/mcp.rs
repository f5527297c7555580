//! The MCP server over real stdio, spoken as raw JSON-RPC.

use crate::common;

use common::mcp_client::Client;
use serde_json::{Value, json};

/// Every `type` in a schema is one type name: no `["integer", "null"]`
/// arrays, which strict clients (the Inspector's `--strict`) reject, and no
/// references to definitions elsewhere in the document.
fn assert_portable(schema: &Value, tool: &str) {
    match schema {
        Value::Object(map) => {
            if let Some(kind) = map.get("type") {
                assert!(kind.is_string(), "{tool}: type array in {schema}");
            }
            assert!(!map.contains_key("$ref"), "{tool}: reference in {schema}");
            map.values().for_each(|v| assert_portable(v, tool));
        }
        Value::Array(items) => items.iter().for_each(|v| assert_portable(v, tool)),
        _ => {}
    }
}

#[test]
fn lists_the_default_tools_compactly_with_portable_schemas_and_annotations() {
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
    // The operations tools and the group `more` are left out of the list
    // by default.
    assert_eq!(
        names,
        [
            "get_callees",
            "get_callers",
            "get_dependencies",
            "get_dependents",
            "get_warnings",
            "read_with_context",
            "search_with_context"
        ]
    );
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert!(tool["inputSchema"]["type"] == "object", "{tool}");
        assert!(tool["description"].as_str().unwrap().len() > 40, "{tool}");
        assert!(!tool["title"].as_str().unwrap().is_empty(), "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        // Meaningful only for tools that write (MCP schema): left out.
        assert!(
            tool["annotations"].get("idempotentHint").is_none(),
            "{tool}"
        );
        assert_portable(tool, tool["name"].as_str().unwrap());
        // No internal spec ids in what agents read.
        let description = tool["description"].as_str().unwrap();
        assert!(
            !description.contains('§') && !description.contains("FR-"),
            "{tool}"
        );
    }
    let listed = serde_json::to_string(&tools["result"]).unwrap();
    let tokens = xfile::service::context::count_tokens(&listed);
    assert!(tokens <= 1000, "tools/list takes {tokens} tokens");

    // The relation catalogue is a resource, generated from the rules.
    let resources = client.request("resources/list", json!({}));
    assert_eq!(
        resources["result"]["resources"][0]["uri"],
        "xfile://relations"
    );
    let catalogue = client.request("resources/read", json!({"uri": "xfile://relations"}));
    let text = catalogue["result"]["contents"][0]["text"].as_str().unwrap();
    for signature in [
        "DependsOn(file, dependency)",
        "Calls(file, site, target, name)",
    ] {
        assert!(text.contains(signature), "{text}");
    }
}

#[test]
fn enabled_and_excluded_tools_change_the_list() {
    let sample = common::copy_sample();
    std::fs::write(
        sample.path().join(".cross_file_context_links.yml"),
        "enabled_tools: [get_cache_statistics, more]\nexcluded_tools: [explain, get_callees]\n",
    )
    .unwrap();
    let mut client = Client::start(sample.path());
    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"get_cache_statistics"), "{names:?}");
    // The group `more` lists its tools, but not what is excluded.
    for listed in [
        "get_relationship_graph",
        "get_file_outline",
        "query_relation",
    ] {
        assert!(names.contains(&listed), "{listed}: {names:?}");
    }
    assert!(!names.contains(&"explain") && !names.contains(&"get_callees"));
    assert!(!names.contains(&"explain_recomputation"), "{names:?}");
    let (is_error, _) = client.call("get_cache_statistics", json!({}));
    assert!(!is_error);
    // An unlisted tool still answers by name; an excluded one does not.
    let (is_error, text) = client.call("explain_recomputation", json!({}));
    assert!(!is_error, "{text}");
    let response = client.request(
        "tools/call",
        json!({"name": "explain", "arguments": {"fact": "DependsOn(_, _)"}}),
    );
    assert!(response.get("error").is_some() || response["result"]["isError"] == json!(true));
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
    std::fs::write(
        sample.path().join(".cross_file_context_links.yml"),
        "enabled_tools: [all]\n",
    )
    .unwrap();
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
    // Hot spots computed in the background may cache pieces at any time,
    // but their lookups are not counted: the counts are what reads were
    // served, so the second read's share of them is exact.
    let first = cache_counts(&mut client);
    assert!(first.0 + first.1 > 5, "{first:?}");
    let (_, again) = client.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert_eq!(again, text);
    let second = cache_counts(&mut client);
    assert_eq!(
        second.1, first.1,
        "the second read missed: {first:?} -> {second:?}"
    );
    assert!(second.0 - first.0 > 5, "{first:?} -> {second:?}");
    let (_, stats) = client.call("get_cache_statistics", json!({}));
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["size_limit_bytes"], 50 * 1024);
}

/// The snippet cache's (hits, misses).
fn cache_counts(client: &mut Client) -> (u64, u64) {
    let (is_error, stats) = client.call("get_cache_statistics", json!({}));
    assert!(!is_error, "{stats}");
    let stats: Value = serde_json::from_str(&stats).unwrap();
    let count = |key: &str| {
        stats[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {stats}"))
    };
    (count("hits"), count("misses"))
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
        json!({"file_path": "app/utils/retry.py", "symbol": "retry_with_backoff", "format": "json"}),
    );
    assert!(!is_error, "{text}");
    let dependents: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(dependents["items"].as_array().unwrap().len(), 3);
    assert_eq!(dependents["total"], 3);
}

/// At least 15 hostile paths, symlink escapes among them. None may
/// return content; each is an error with the rule it broke.
#[cfg(unix)]
/// Arguments that do not fit the schema are tool errors of
/// the documented shape, and no error echoes a huge input back whole.
#[test]
fn argument_errors_have_the_tool_error_shape_and_echo_little() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    for arguments in [
        json!({"file_path": 5}),
        json!({}),
        json!({"file_path": ["a"]}),
    ] {
        let (error, text) = client.call("get_dependencies", arguments.clone());
        assert!(error, "{arguments}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(body["code"], "invalid_parameter", "{text}");
        assert!(
            body["suggestion"].as_str().unwrap().contains("inputSchema"),
            "{text}"
        );
    }
    // A path longer than any file system allows is refused at once.
    let huge = "a/".repeat(500_000) + "x.py";
    for tool in ["read_with_context", "get_dependencies", "get_file_outline"] {
        let (error, text) = client.call(tool, json!({"file_path": huge}));
        assert!(error, "{tool}");
        assert!(text.len() < 2_000, "{tool} echoes {} bytes", text.len());
        let body: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool}: {e}: {text}"));
        assert_eq!(body["code"], "invalid_parameter", "{text}");
    }
    // A long path that could exist is looked for, and quoted only in part.
    let long = "b".repeat(3_000) + ".py";
    let (error, text) = client.call("get_dependencies", json!({"file_path": long}));
    assert!(error);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["code"], "file_not_found", "{text}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("more characters)"),
        "{text}"
    );
    assert!(text.len() < 1_500, "{} bytes", text.len());
    // The server is still there.
    let (error, _) = client.call("get_dependencies", json!({"file_path": "app/bot.py"}));
    assert!(!error);
}

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
    let (is_error, text) = client.call("get_warnings", json!({"limit": 1, "format": "json"}));
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

/// A hub that imports and calls 80 modules: lists longer than one page of
/// a small answer budget.
fn hub_project(answer_token_limit: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut hub = String::new();
    for i in 0..80 {
        std::fs::write(
            dir.path().join(format!("mod_{i}.py")),
            format!("def helper_{i}(value):\n    return value + {i}\n"),
        )
        .unwrap();
        hub.push_str(&format!("from mod_{i} import helper_{i}\n"));
    }
    for i in 0..80 {
        hub.push_str(&format!("RESULT_{i} = helper_{i}({i})\n"));
    }
    std::fs::write(dir.path().join("hub.py"), hub).unwrap();
    std::fs::write(
        dir.path().join(".cross_file_context_links.yml"),
        format!("answer_token_limit: {answer_token_limit}\n"),
    )
    .unwrap();
    dir
}

/// The pages of a list tool, cursor after cursor, as (text, next cursor).
fn pages(client: &mut Client, tool: &str, args: Value) -> Vec<String> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = args.clone();
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let (is_error, text) = client.call(tool, args);
        assert!(!is_error, "{text}");
        cursor = text
            .rsplit_once("pass cursor \"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(next, _)| next.to_string());
        let done = cursor.is_none();
        pages.push(text);
        if done {
            return pages;
        }
    }
}

/// Every answer stays within the answer budget, and
/// the pages of a long list are together exactly the whole list.
#[test]
fn long_answers_page_within_the_answer_budget() {
    let dir = hub_project(600);
    let service = xfile::service::Service::open(dir.path()).unwrap();
    let whole = service.dependencies("hub.py").unwrap();
    assert_eq!(whole.len(), 160);
    let mut client = Client::start(dir.path());

    // Text pages: every line of the whole list once, in order.
    let text_pages = pages(
        &mut client,
        "get_dependencies",
        json!({"file_path": "hub.py"}),
    );
    assert!(text_pages.len() > 2, "{text_pages:?}");
    let mut lines = Vec::new();
    for page in &text_pages {
        let tokens = xfile::service::context::count_tokens(page);
        assert!(tokens <= 600, "{tokens} tokens: {page}");
        lines.extend(
            page.lines()
                .filter(|l| l.starts_with("hub.py:"))
                .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")),
        );
    }
    let expected: Vec<String> = whole
        .iter()
        .map(|r| {
            format!(
                "hub.py:{} {} {}",
                r.line_number,
                r.relationship_type.as_str(),
                r.target_symbol.clone().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(lines, expected);
    assert!(
        text_pages
            .last()
            .unwrap()
            .contains("of 160 relationships (last page)")
    );

    // JSON pages: exactly the service's list.
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = json!({"file_path": "hub.py", "format": "json"});
        if let Some(cursor) = &cursor {
            args["cursor"] = json!(cursor);
        }
        let (_, text) = client.call("get_dependencies", args);
        assert!(xfile::service::context::count_tokens(&text) <= 600);
        let page: Value = serde_json::from_str(&text).unwrap();
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(Value::Array(items), serde_json::to_value(&whole).unwrap());

    // A read longer than the budget stops at a line and says where to go on.
    let (_, text) = client.call("read_with_context", json!({"file_path": "hub.py"}));
    assert!(
        xfile::service::context::count_tokens(&text) <= 600,
        "{text}"
    );
    let (_, rest) = text
        .split_once("the answer budget ends here, read on with start_line=")
        .unwrap_or_else(|| panic!("no continuation: {text}"));
    let next: u32 = rest.split(']').next().unwrap().parse().unwrap();
    assert!(text.contains(&format!("[File Content: lines 1-{} of 160;", next - 1)));
    let (_, more) = client.call(
        "read_with_context",
        json!({"file_path": "hub.py", "start_line": next}),
    );
    assert!(
        more.contains(&format!("[File Content: lines {next}-")),
        "{more}"
    );

    // Queries and call graphs keep to the budget too.
    for (tool, args) in [
        ("query_relation", json!({"pattern": "Calls(_, _, _, _)"})),
        (
            "get_callees",
            json!({"symbol": "hub.py::<module>", "limit": 1000}),
        ),
        ("explain", json!({"fact": "Imports(_, _, _)"})),
        ("get_warnings", json!({})),
    ] {
        let (is_error, text) = client.call(tool, args.clone());
        let tokens = xfile::service::context::count_tokens(&text);
        assert!(!is_error, "{tool} {args}: {text}");
        assert!(tokens <= 600, "{tool} {args}: {tokens} tokens");
    }
}

/// A single line longer than the whole answer budget (minified code) is cut
/// inside the line, and the read says so.
#[test]
fn a_line_longer_than_the_budget_is_cut_inside() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<String> = (0..20_000).map(|i| i.to_string()).collect();
    std::fs::write(
        dir.path().join("blob.py"),
        format!("DATA = [{}]\nOTHER = 1\n", values.join(", ")),
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".cross_file_context_links.yml"),
        "answer_token_limit: 600\n",
    )
    .unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    let text = service
        .read_with_options("blob.py", &xfile::service::ReadOptions::default())
        .unwrap();
    assert!(
        xfile::service::context::count_tokens(&text) <= 600,
        "{text}"
    );
    assert!(text.contains("[line 1 is cut after "), "{text}");
    assert!(text.contains("read on with start_line=2]"), "{text}");
}
