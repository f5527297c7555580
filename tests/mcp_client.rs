//! `xfile serve` driven by a real MCP client (rmcp's own client over its
//! child-process transport), so the protocol handshake, tool listing and
//! tool calls are checked against another implementation than ours.

use crate::common;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::process::Command;

/// A client of `xfile serve` on `root`, its session through a shared
/// service in `runtime`.
async fn connect(
    root: &std::path::Path,
    runtime: &common::runtime::Runtime,
) -> RunningService<RoleClient, ()> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xfile"));
    command.envs(runtime.env());
    command.arg("serve").arg("--root").arg(root);
    // Its log (stderr) stays out of the test output, as in common::mcp_client.
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("xfile serve starts");
    ().serve(transport)
        .await
        .expect("the MCP handshake succeeds")
}

/// The text of a successful tool answer.
fn text(result: &CallToolResult) -> String {
    assert_ne!(result.is_error, Some(true), "tool error: {result:?}");
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|t| t.text.clone()))
        .collect()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object");
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let result = client
        .call_tool(params)
        .await
        .expect("the call is answered");
    text(&result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_lists_the_tools_and_reads_with_context() {
    let sample = common::copy_sample();
    let runtime = common::runtime::Runtime::new();
    let client = connect(sample.path(), &runtime).await;

    let info = client.peer_info().expect("the server introduced itself");
    let server = info.server_info.as_ref().expect("the server names itself");
    assert_eq!(server.name, "xfile");

    let tools = client.list_all_tools().await.expect("tools/list");
    for name in ["read_with_context", "get_dependencies", "get_dependents"] {
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        let description = tool.description.as_deref().unwrap_or_default();
        assert!(!description.trim().is_empty(), "{name} has no description");
        assert_eq!(
            tool.input_schema.get("type"),
            Some(&json!("object")),
            "{name}"
        );
    }

    let graph = call(&client, "get_relationship_graph", json!({})).await;
    let graph: Value = serde_json::from_str(&graph).expect("the summary is JSON");
    assert_eq!(graph["files"], 9, "{graph}");

    let read = call(
        &client,
        "read_with_context",
        json!({"file_path": "app/bot.py"}),
    )
    .await;
    let source = std::fs::read_to_string(sample.path().join("app/bot.py")).expect("app/bot.py");
    assert!(read.contains(&source), "{read}");
    // bot.py imports retry_with_backoff; its definition is named by
    // path:line.
    assert!(read.contains("app/utils/retry.py:7"), "{read}");

    let mut client = client;
    client.close().await.expect("the client closes");
}

/// Over MCP, a module and its importer created an instant before the
/// question are in the answer, 100 times in a row, whatever the watcher
/// has seen by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_created_an_instant_before_a_call_are_in_its_answer() {
    let sample = common::copy_sample();
    let runtime = common::runtime::Runtime::new();
    let client = connect(sample.path(), &runtime).await;
    for round in 0..100 {
        let target = format!("app/made_{round}.py");
        let user = format!("app/uses_{round}.py");
        std::fs::write(sample.path().join(&target), "def made():\n    return 1\n").unwrap();
        std::fs::write(
            sample.path().join(&user),
            format!("from app.made_{round} import made\n\nmade()\n"),
        )
        .unwrap();
        let answer = call(&client, "get_dependents", json!({"file_path": target})).await;
        assert!(answer.contains(&user), "round {round}: {answer}");
    }
    let mut client = client;
    client.close().await.expect("the client closes");
}
