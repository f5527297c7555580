//! Several projects served together: a library (`corelib`, src
//! layout), an app that uses it (`webapp`), a plugin that registers an
//! entry point and a signal receiver (`plugin`), and `corelib_fork`, a
//! second provider of the top-level package `corelib` for the fail-safe.
//! Every test works on a copy of the fixtures with its own registry.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::mcp_client::Client;
use serde_json::{Value, json};

struct Setup {
    projects: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Setup {
    /// The fixtures copied, the first three registered and in collection
    /// `eco`; `corelib_fork` registered in no collection.
    fn new() -> Setup {
        let setup = Setup {
            projects: common::copy_fixture("federation"),
            home: tempfile::tempdir().unwrap(),
        };
        for project in ["corelib", "webapp", "plugin", "corelib_fork"] {
            let path = setup.path(project);
            setup.xfile(&["project", "add", path.to_str().unwrap()]);
        }
        setup.xfile(&[
            "collection",
            "create",
            "eco",
            "--projects",
            "corelib,webapp,plugin",
        ]);
        setup
    }

    fn path(&self, project: &str) -> PathBuf {
        self.projects.path().join(project)
    }

    fn xfile(&self, args: &[&str]) -> String {
        let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(args)
            .env("XFILE_HOME", self.home.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    }

    fn serve(&self, args: &[&str]) -> Client {
        let home = self.home.path().to_str().unwrap().to_string();
        Client::serve(args, &[("XFILE_HOME", &home)])
    }
}

fn call_json(client: &mut Client, tool: &str, arguments: Value) -> Value {
    let (error, text) = client.call(tool, arguments);
    assert!(!error, "{tool}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{tool}: {e}: {text}"))
}

fn error_code(client: &mut Client, tool: &str, arguments: Value) -> String {
    let (error, text) = client.call(tool, arguments);
    assert!(error, "{tool} should fail: {text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    body["code"].as_str().unwrap().to_string()
}

#[test]
fn cross_refs_lists_references_into_another_project_exactly() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let answer = call_json(&mut client, "cross_refs", json!({"symbol_name": "User"}));
    assert_eq!(
        answer,
        json!({
            "symbol": "User",
            "total": 4,
            "cross_refs": [
                {"from_project": "plugin", "to_project": "corelib", "references": [
                    {"file": "audit/main.py", "line": 3, "kind": "import",
                     "context": "from corelib import User", "target": "src/corelib/models.py::User"},
                    {"file": "audit/main.py", "line": 13, "kind": "function_call",
                     "context": "return User(\"audit\")", "target": "src/corelib/models.py::User"}
                ]},
                {"from_project": "webapp", "to_project": "corelib", "references": [
                    {"file": "webapp/views.py", "line": 2, "kind": "import",
                     "context": "from corelib.models import User, make_user",
                     "target": "src/corelib/models.py::User"},
                    {"file": "webapp/views.py", "line": 6, "kind": "inheritance",
                     "context": "class AdminUser(User):", "target": "src/corelib/models.py::User"}
                ]}
            ]
        })
    );
    // A dotted name narrows to that definition; a name nobody defines
    // across projects has none.
    let dotted = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "models.make_user"}),
    );
    assert_eq!(dotted["total"], 2, "{dotted}");
    let none = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "AdminUser"}),
    );
    assert_eq!(none["total"], 0, "{none}");
    // The limit cuts and says so.
    let cut = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "User", "limit": 1}),
    );
    assert_eq!(
        cut["cross_refs"][0]["references"].as_array().unwrap().len(),
        1
    );
    assert!(
        cut["truncated"].as_str().unwrap().starts_with("1 of 4"),
        "{cut}"
    );
}

#[test]
fn string_keyed_links_cross_projects() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    // The plugin's receiver of corelib's signal, beside its import.
    let signal = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "user_saved"}),
    );
    assert_eq!(
        signal["cross_refs"],
        json!([{"from_project": "plugin", "to_project": "corelib", "references": [
            {"file": "audit/main.py", "line": 4, "kind": "import",
             "context": "from corelib.signals import user_saved",
             "target": "src/corelib/signals.py::user_saved"},
            {"file": "audit/main.py", "line": 7, "kind": "signal_receiver",
             "context": "@receiver(user_saved)", "target": "src/corelib/signals.py::user_saved"}
        ]}])
    );
    // The plugin's entry point in the group the app loads.
    let group = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "webapp.plugins"}),
    );
    assert_eq!(
        group["cross_refs"],
        json!([{"from_project": "plugin", "to_project": "webapp", "references": [
            {"file": "pyproject.toml", "line": 6, "kind": "entry_point",
             "context": "audit = \"audit.main:register\"", "target": "webapp/plugins.py:5"}
        ]}])
    );
}

#[test]
fn collection_map_counts_edges_and_symbols() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let map = call_json(&mut client, "collection_map", json!({}));
    let path = |p: &str| setup.path(p).canonicalize().unwrap().display().to_string();
    assert_eq!(
        map,
        json!({
            "projects": {
                "corelib": {"path": path("corelib"), "symbol_count": 8},
                "plugin": {"path": path("plugin"), "symbol_count": 2},
                "webapp": {"path": path("webapp"), "symbol_count": 4}
            },
            "edges": [
                {"from": "plugin", "to": "corelib", "cross_refs": 4,
                 "symbols": ["User", "user_saved"]},
                {"from": "plugin", "to": "webapp", "cross_refs": 1,
                 "symbols": ["webapp.plugins"]},
                {"from": "webapp", "to": "corelib", "cross_refs": 6,
                 "symbols": ["User", "corelib.util", "make_user", "slugify"]}
            ]
        })
    );
    // A named collection gives the same map, and says which.
    let named = call_json(&mut client, "collection_map", json!({"collection": "eco"}));
    assert_eq!(named["collection"], "eco");
    assert_eq!(named["edges"], map["edges"]);
}

#[test]
fn relationships_across_projects_carry_both_projects() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let (_, deps) = client.call(
        "get_dependencies",
        json!({"file_path": "webapp:webapp/views.py"}),
    );
    assert!(deps.starts_with("## webapp\n"), "{deps}");
    assert!(
        deps.contains("function_call  make_user  -> corelib:src/corelib/models.py:11"),
        "{deps}"
    );
    // Third-party code stays third-party.
    assert!(deps.contains("-> <third-party:requests>"), "{deps}");
    let (_, dependents) = client.call(
        "get_dependents",
        json!({"file_path": "corelib:src/corelib/models.py", "symbol": "make_user"}),
    );
    assert_eq!(
        dependents
            .lines()
            .filter(|l| l.starts_with("webapp:"))
            .count(),
        2,
        "{dependents}"
    );
    // Without the project prefix the one project holding the file answers.
    let (_, plain) = client.call(
        "get_dependents",
        json!({"file_path": "src/corelib/models.py"}),
    );
    assert!(plain.contains("plugin:audit/main.py:13"), "{plain}");
    assert!(!plain.contains("## webapp"), "{plain}");
}

#[test]
fn callers_in_other_projects_are_direct_callers() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let (error, callers) =
        client.call("get_callers", json!({"symbol": "corelib.models.make_user"}));
    assert!(!error, "{callers}");
    assert!(
        callers.contains("\nwebapp:webapp/views.py\n  create: 11:0"),
        "{callers}"
    );
    // Callees stay within the project.
    let (_, callees) = client.call("get_callees", json!({"symbol": "webapp.views.create"}));
    assert!(!callees.contains("corelib:"), "{callees}");
}

#[test]
fn two_providers_of_a_package_link_to_neither() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--projects", "corelib,corelib_fork,webapp"]);
    let answer = call_json(&mut client, "cross_refs", json!({"symbol_name": "User"}));
    assert_eq!(answer["total"], 0, "{answer}");
    assert_eq!(
        answer["notes"],
        json!([
            "corelib is provided by corelib and corelib_fork: references to it link to none of them"
        ])
    );
    let (_, deps) = client.call(
        "get_dependencies",
        json!({"file_path": "webapp:webapp/views.py"}),
    );
    assert!(
        deps.contains("make_user  -> <third-party:corelib.models>"),
        "{deps}"
    );
    let (_, dependents) = client.call(
        "get_dependents",
        json!({"file_path": "corelib:src/corelib/models.py"}),
    );
    assert!(!dependents.contains("webapp:"), "{dependents}");
    assert!(
        dependents.contains("corelib_fork"),
        "the note names both: {dependents}"
    );
}

#[test]
fn sessions_see_only_their_scope() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    // A collection server cannot open a global session, nor one over a
    // project outside its collection.
    assert_eq!(
        error_code(&mut client, "create_session", json!({"scope": "global"})),
        "insufficient_scope"
    );
    assert_eq!(
        error_code(
            &mut client,
            "create_session",
            json!({"scope": "project", "ids": ["corelib_fork"]})
        ),
        "insufficient_scope"
    );
    assert_eq!(
        error_code(&mut client, "create_session", json!({"scope": "project"})),
        "invalid_parameter"
    );
    // A project session sees only its project: webapp's imports of
    // corelib stay third-party, and corelib's files are not there.
    let session = call_json(
        &mut client,
        "create_session",
        json!({"scope": "project", "ids": ["webapp"], "ttl": 600}),
    );
    assert_eq!(session["projects"], json!(["webapp"]));
    let id = session["session_id"].as_str().unwrap().to_string();
    let refs = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "User", "session_id": id}),
    );
    assert_eq!(refs["total"], 0, "{refs}");
    let (_, deps) = client.call(
        "get_dependencies",
        json!({"file_path": "webapp/views.py", "session_id": id}),
    );
    assert!(deps.contains("<third-party:corelib.models>"), "{deps}");
    assert!(deps.starts_with("## webapp\n"), "{deps}");
    assert_eq!(deps.matches("## ").count(), 1, "{deps}");
    assert_eq!(
        error_code(
            &mut client,
            "get_file_outline",
            json!({"file_path": "src/corelib/models.py", "session_id": id})
        ),
        "file_not_found"
    );
    // A session cannot widen itself.
    assert_eq!(
        error_code(
            &mut client,
            "create_session",
            json!({"scope": "collection", "ids": ["eco"], "session_id": id})
        ),
        "insufficient_scope"
    );
    // A collection session sees the collection.
    let eco = call_json(
        &mut client,
        "create_session",
        json!({"scope": "collection", "ids": ["eco"]}),
    );
    let eco_id = eco["session_id"].as_str().unwrap();
    let map = call_json(&mut client, "collection_map", json!({"session_id": eco_id}));
    assert_eq!(map["edges"].as_array().unwrap().len(), 3, "{map}");
    // Admin tools need a global scope; unknown and expired ids say so.
    assert_eq!(
        error_code(
            &mut client,
            "manage_registry",
            json!({"action": "project_list"})
        ),
        "insufficient_scope"
    );
    assert_eq!(
        error_code(
            &mut client,
            "cross_refs",
            json!({"symbol_name": "User", "session_id": "nope"})
        ),
        "session_not_found"
    );
    let short = call_json(
        &mut client,
        "create_session",
        json!({"scope": "project", "ids": ["webapp"], "ttl": 1}),
    );
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    assert_eq!(
        error_code(
            &mut client,
            "cross_refs",
            json!({"symbol_name": "User", "session_id": short["session_id"]})
        ),
        "session_expired"
    );
}

#[test]
fn a_global_server_manages_the_registry_and_it_survives_a_restart() {
    let setup = Setup::new();
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("tool.py"), "def run():\n    pass\n").unwrap();
    {
        let mut client = setup.serve(&["--global"]);
        let listed = call_json(
            &mut client,
            "manage_registry",
            json!({"action": "project_list"}),
        );
        assert_eq!(listed.as_array().unwrap().len(), 4);
        let added = call_json(
            &mut client,
            "manage_registry",
            json!({"action": "project_add", "path": extra.path(), "name": "tools"}),
        );
        assert_eq!(added["name"], "tools");
        call_json(
            &mut client,
            "manage_registry",
            json!({"action": "collection_add", "name": "eco", "projects": ["tools"]}),
        );
        // A project session of a global server is not global.
        let session = call_json(
            &mut client,
            "create_session",
            json!({"scope": "project", "ids": ["tools"]}),
        );
        assert_eq!(
            error_code(
                &mut client,
                "manage_registry",
                json!({"action": "project_list", "session_id": session["session_id"]})
            ),
            "insufficient_scope"
        );
        // A project added while serving is served at once.
        let (error, outline) =
            client.call("get_file_outline", json!({"file_path": "tools:tool.py"}));
        assert!(!error && outline.contains("run"), "{outline}");
    }
    // The registry outlives the server: the CLI and a new server see it.
    assert!(
        setup
            .xfile(&["collection", "list"])
            .contains("eco  corelib, plugin, tools, webapp")
    );
    let mut client = setup.serve(&["--global"]);
    let collections = call_json(
        &mut client,
        "manage_registry",
        json!({"action": "collection_list"}),
    );
    assert_eq!(
        collections[0]["projects"],
        json!(["corelib", "plugin", "tools", "webapp"])
    );
    let removed = call_json(
        &mut client,
        "manage_registry",
        json!({"action": "collection_delete", "name": "eco"}),
    );
    assert_eq!(removed["name"], "eco");
    // Deleting a collection keeps its projects.
    let listed = call_json(
        &mut client,
        "manage_registry",
        json!({"action": "project_list"}),
    );
    assert_eq!(listed.as_array().unwrap().len(), 5);
}

#[test]
fn a_project_deleted_while_served_gives_a_note_not_a_failure() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let before = call_json(&mut client, "collection_map", json!({}));
    assert_eq!(before["edges"].as_array().unwrap().len(), 3);
    // The server may still be writing its cache into the directory (it
    // never creates the directory itself), so removing it can meet a file
    // created meanwhile: try again.
    let plugin = setup.path("plugin");
    for _ in 0..50 {
        if std::fs::remove_dir_all(&plugin).is_ok() || !plugin.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!plugin.exists(), "plugin could not be removed");
    // Tools that ask every project still answer, with a note on plugin.
    let (error, warnings) = client.call("get_warnings", json!({}));
    assert!(!error, "{warnings}");
    assert!(
        warnings.contains("## corelib") && warnings.contains("## webapp"),
        "{warnings}"
    );
    assert!(
        warnings.contains("plugin: its directory")
            && warnings.contains("is gone (project_missing)"),
        "{warnings}"
    );
    let refs = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "make_user"}),
    );
    assert_eq!(refs["total"], 2, "{refs}");
    let (error, outline) = client.call(
        "get_file_outline",
        json!({"file_path": "webapp:webapp/views.py"}),
    );
    assert!(!error, "{outline}");
}

#[test]
fn a_server_of_one_root_lists_no_federation_tools() {
    let setup = Setup::new();
    let mut client = Client::start(Path::new(&setup.path("webapp")));
    let tools = client.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"cross_refs") && !names.contains(&"create_session"),
        "{names:?}"
    );
    assert!(
        !tools.to_string().contains("session_id"),
        "no session argument on one root"
    );
    assert_eq!(
        error_code(&mut client, "cross_refs", json!({"symbol_name": "User"})),
        "not_federated"
    );
}

#[test]
fn serving_an_unknown_collection_fails_with_guidance() {
    let setup = Setup::new();
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["serve", "--collection", "nope"])
        .env("XFILE_HOME", setup.home.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nope"), "{stderr}");
}

#[test]
fn an_edit_in_one_project_shows_in_cross_refs() {
    let setup = Setup::new();
    let mut client = setup.serve(&["--collection", "eco"]);
    let before = call_json(
        &mut client,
        "cross_refs",
        json!({"symbol_name": "make_user"}),
    );
    assert_eq!(before["total"], 2, "{before}");
    std::fs::write(
        setup.path("plugin").join("audit/extra.py"),
        "from corelib.models import make_user\n\n\ndef seed():\n    return make_user(\"seed\")\n",
    )
    .unwrap();
    // The watcher picks the new file up; poll for up to 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let after = call_json(
            &mut client,
            "cross_refs",
            json!({"symbol_name": "make_user"}),
        );
        if after["total"] == 4 {
            assert_eq!(after["cross_refs"][0]["from_project"], "plugin", "{after}");
            assert_eq!(
                after["cross_refs"][0]["references"][1]["line"], 5,
                "{after}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not seen: {after}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

// Regression: `manage_registry {action: project_add, path: "/"}`
// on a --global server registered `/`, which was then indexed and got a
// `/.xfile_cache/`. From a session a root must be a Python project, never
// `/` nor the home directory; nothing is registered or served.
#[test]
fn manage_registry_refuses_root_home_and_non_projects_global_widening() {
    let setup = Setup::new();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("setup.py"), "").unwrap();
    let bare = tempfile::tempdir().unwrap();
    std::fs::write(bare.path().join("notes.txt"), "no python here\n").unwrap();
    let cache_before = Path::new("/.xfile_cache").exists();
    let registry_home = setup.home.path().to_str().unwrap().to_string();
    let user_home = home.path().to_str().unwrap().to_string();
    let mut client = Client::serve(
        &["--global"],
        &[("XFILE_HOME", &registry_home), ("HOME", &user_home)],
    );
    let refused = |client: &mut Client, path: &Path| {
        let (error, text) = client.call(
            "manage_registry",
            json!({"action": "project_add", "path": path, "name": "wide"}),
        );
        assert!(error, "{path:?} was added: {text}");
        let body: Value = serde_json::from_str(&text).unwrap();
        (
            body["code"].as_str().unwrap().to_string(),
            body["message"].as_str().unwrap().to_string(),
        )
    };
    let (code, message) = refused(&mut client, Path::new("/"));
    assert_eq!(code, "root_too_wide", "{message}");
    let (code, message) = refused(&mut client, home.path());
    assert_eq!(code, "root_too_wide");
    assert!(message.contains("home directory"), "{message}");
    let (code, message) = refused(&mut client, bare.path());
    assert_eq!(code, "not_a_project");
    assert!(message.contains("pyproject.toml"), "{message}");
    let listed = call_json(
        &mut client,
        "manage_registry",
        json!({"action": "project_list"}),
    );
    assert_eq!(listed.as_array().unwrap().len(), 4, "{listed}");
    if !cache_before {
        assert!(!Path::new("/.xfile_cache").exists());
    }
}
