//! The git tools and `impact` over MCP stdio: which are listed
//! where, the tool-list budget inside a git work tree, answers in
//! markdown, and errors a client can act on.

use crate::common;

use common::git_repo::GitRepo;
use common::mcp_client::Client;
use serde_json::{Value, json};

/// The sample project, committed to a fresh repository.
fn sample_repo() -> GitRepo {
    let repo = GitRepo::init();
    let sample = common::copy_sample();
    for entry in walk(sample.path()) {
        let relative = entry.strip_prefix(sample.path()).unwrap();
        let text = std::fs::read_to_string(&entry).unwrap();
        repo.write(relative.to_str().unwrap(), &text);
    }
    repo.commit("Ann", 1, "Sample");
    repo
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn names(tools: &Value) -> Vec<String> {
    tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn list_tokens(tools: &Value) -> usize {
    xfile::service::context::count_tokens(&serde_json::to_string(&tools["result"]).unwrap())
}

#[test]
fn impact_is_listed_in_a_work_tree_within_the_tool_list_budget() {
    let repo = sample_repo();
    let mut client = Client::start(&repo.path());
    let tools = client.request("tools/list", json!({}));
    let listed = names(&tools);
    assert!(listed.contains(&"impact".to_string()), "{listed:?}");
    for git in ["git_log", "git_blame", "git_diff"] {
        assert!(!listed.contains(&git.to_string()), "{listed:?}");
    }
    let tokens = list_tokens(&tools);
    assert!(tokens <= 1500, "tools/list takes {tokens} tokens");
    // Unlisted, the git tools still answer by name.
    let (is_error, text) = client.call("git_log", json!({}));
    assert!(!is_error, "{text}");
    assert!(
        text.starts_with("## git log . (on branch main)\n\n- `"),
        "{text}"
    );
    assert!(text.contains(" Ann <ann@example.com>: Sample\n"), "{text}");
}

#[test]
fn the_git_group_lists_the_git_tools() {
    let repo = sample_repo();
    repo.write(".cross_file_context_links.yml", "enabled_tools: [git]\n");
    let mut client = Client::start(&repo.path());
    let tools = client.request("tools/list", json!({}));
    let listed = names(&tools);
    for tool in ["git_log", "git_blame", "git_diff", "impact"] {
        assert!(listed.contains(&tool.to_string()), "{listed:?}");
    }
    for tool in tools["result"]["tools"].as_array().unwrap() {
        let description = tool["description"].as_str().unwrap();
        assert!(!description.contains("FR-"), "{tool}");
    }
}

#[test]
fn outside_a_work_tree_impact_is_unlisted_and_git_tools_say_not_a_git_repository() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let listed = names(&client.request("tools/list", json!({})));
    assert!(!listed.contains(&"impact".to_string()), "{listed:?}");
    for (tool, args) in [
        ("git_log", json!({})),
        ("git_diff", json!({})),
        ("git_blame", json!({"file_path": "app/bot.py"})),
        ("impact", json!({})),
    ] {
        let (is_error, text) = client.call(tool, args);
        assert!(is_error, "{tool}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], "not_a_git_repository", "{tool}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with("Not a git repository"),
            "{tool}: {text}"
        );
    }
}

#[test]
fn diff_blame_and_impact_answer_in_markdown() {
    let repo = sample_repo();
    let models = repo.path().join("app/models.py");
    let text = std::fs::read_to_string(&models).unwrap();
    let changed = text.replacen(
        "        storage.put(self)\n",
        "        print(\"saving\")\n        storage.put(self)\n",
        1,
    );
    assert_ne!(text, changed, "the sample's User.save moved");
    std::fs::write(&models, changed).unwrap();
    let mut client = Client::start(&repo.path());
    let (is_error, diff) = client.call("git_diff", json!({}));
    assert!(!is_error, "{diff}");
    assert!(
        diff.starts_with(
            "## git diff HEAD -> working tree\n\n1 files changed, 1 insertions(+), 0 deletions(-)\n\n- modified app/models.py (+1 -0)\n\n### app/models.py\n```diff\n@@ "
        ),
        "{diff}"
    );
    assert!(diff.contains("\n+        print(\"saving\")\n"), "{diff}");
    assert!(diff.ends_with("```\n"), "{diff}");
    let (is_error, blame) = client.call(
        "git_blame",
        json!({"file_path": "app/models.py", "start_line": 1, "end_line": 2}),
    );
    assert!(!is_error, "{blame}");
    assert!(
        blame.starts_with("## git blame app/models.py:1-2 ("),
        "{blame}"
    );
    let (is_error, impact) = client.call("impact", json!({}));
    assert!(!is_error, "{impact}");
    assert!(
        impact.contains("### Changed\n- app/models.py::User.save (modified, "),
        "{impact}"
    );
    assert!(impact.contains("- app/bot.py::"), "{impact}");
}

#[test]
fn injected_revisions_and_outside_paths_are_tool_errors() {
    let repo = sample_repo();
    let mut client = Client::start(&repo.path());
    for (tool, args, code) in [
        (
            "git_diff",
            json!({"base": "--output=/tmp/x"}),
            "invalid_revision",
        ),
        ("git_diff", json!({"head": "-c"}), "invalid_revision"),
        ("impact", json!({"base": ";rm -rf ."}), "invalid_revision"),
        (
            "git_diff",
            json!({"base": "$(touch pwned)"}),
            "invalid_revision",
        ),
        ("git_log", json!({"path": "../.."}), "outside_root"),
        (
            "git_blame",
            json!({"file_path": "/etc/passwd"}),
            "outside_root",
        ),
    ] {
        let (is_error, text) = client.call(tool, args.clone());
        assert!(is_error, "{tool} {args}: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["code"], code, "{tool} {args}: {text}");
        assert!(!body["suggestion"].as_str().unwrap().is_empty());
    }
    assert!(!repo.path().join("pwned").exists());
}

#[test]
fn session_metrics_count_the_git_tool_calls() {
    let repo = sample_repo();
    let mut client = Client::start(&repo.path());
    for (tool, arguments) in [
        ("git_log", json!({})),
        ("git_log", json!({"path": "app"})),
        ("git_blame", json!({"file_path": "app/bot.py"})),
        ("git_diff", json!({})),
        ("impact", json!({})),
    ] {
        let (is_error, text) = client.call(tool, arguments);
        assert!(!is_error, "{tool}: {text}");
    }
    // A failed call is a call too.
    let (is_error, _) = client.call("git_blame", json!({"file_path": "app/none.py"}));
    assert!(is_error);
    assert!(client.disconnect().success());
    let log = repo
        .path()
        .join(".cross_file_context_logs/session_metrics.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let record: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(
        record["git_usage"],
        json!({"git_blame": 2, "git_diff": 1, "git_log": 2, "impact": 1}),
        "{record}"
    );
}
