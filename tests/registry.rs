//! The registry of projects and collections (federation),
//! through the API and through the `xfile` binary, on real directories in
//! temporary places: `XFILE_HOME` always points into a temporary directory,
//! so the user's own registry is never touched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xfile::registry::{Registry, RegistryError};

/// Three small projects on disk (a library, an app that uses it, a plugin
/// of the app) and a registry directory, all in one temporary directory.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = [
            (
                "corelib/corelib/__init__.py",
                "def helper():\n    return 1\n",
            ),
            ("corelib/pyproject.toml", "[project]\nname = \"corelib\"\n"),
            ("webapp/app.py", "from corelib import helper\n\nhelper()\n"),
            ("webapp/pyproject.toml", "[project]\nname = \"webapp\"\n"),
            (
                "plugin/plugin.py",
                "import app\n\ndef on_ready():\n    pass\n",
            ),
        ];
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        World { dir }
    }

    fn project(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn registry(&self) -> Registry {
        Registry::open_at(&self.home()).expect("the registry opens")
    }

    fn database(&self) -> PathBuf {
        self.home().join("registry.sqlite3")
    }

    /// Runs `xfile ARGS` with this world's registry, from a directory that
    /// is no project, and returns (status, stdout, stderr).
    fn xfile(&self, args: &[&str]) -> (i32, String, String) {
        let cwd = self.dir.path().join("elsewhere");
        std::fs::create_dir_all(&cwd).expect("mkdir");
        let output: Output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(args)
            .env("XFILE_HOME", self.home())
            .current_dir(cwd)
            .output()
            .expect("xfile runs");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            !stderr.contains("panicked"),
            "xfile {args:?} panicked: {stderr}"
        );
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr,
        )
    }

    fn xfile_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (status, stdout, stderr) = self.xfile(&all);
        assert_eq!(status, 0, "xfile {args:?}: {stderr}");
        serde_json::from_str(&stdout).expect("JSON output")
    }
}

fn canonical(path: &Path) -> String {
    path.canonicalize()
        .expect("canonical")
        .to_str()
        .expect("UTF-8")
        .to_string()
}

fn names(registry: &Registry) -> Vec<String> {
    let projects = registry.projects().expect("projects");
    projects.into_iter().map(|p| p.name).collect()
}

#[test]
fn projects_and_collections_through_the_api() {
    let world = World::new();
    let mut registry = world.registry();
    assert!(registry.projects().expect("projects").is_empty());

    let core = registry
        .add_project(&world.project("corelib"), None)
        .expect("add corelib");
    assert_eq!(core.name, "corelib", "the default name is the directory's");
    assert_eq!(core.path, canonical(&world.project("corelib")));
    // A relative path with `..` is stored canonical.
    let app_path = world.project("corelib").join("..").join("webapp");
    let app = registry
        .add_project(&app_path, Some("app"))
        .expect("add webapp");
    assert_eq!(app.path, canonical(&world.project("webapp")));
    registry
        .add_project(&world.project("plugin"), None)
        .expect("add plugin");
    assert_eq!(names(&registry), ["app", "corelib", "plugin"]);
    assert_eq!(registry.project("app").expect("by name"), app);
    let by_path = registry.project(&app.path).expect("by path");
    assert_eq!(by_path, app);

    // A project in two collections.
    let stack = registry
        .create_collection("stack", &["corelib", "app"])
        .expect("create stack");
    assert_eq!(stack.projects, ["app", "corelib"]);
    registry
        .create_collection("plugins", &["plugin"])
        .expect("create plugins");
    let plugins = registry
        .add_to_collection("plugins", "app")
        .expect("add app to plugins");
    assert_eq!(plugins.projects, ["app", "plugin"]);
    let listed = registry.collections().expect("collections");
    let summary: Vec<(&str, Vec<&str>)> = listed
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.projects.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("plugins", vec!["app", "plugin"]),
            ("stack", vec!["app", "corelib"])
        ]
    );
    let members = registry.members("stack").expect("members");
    assert_eq!(members, [app.clone(), core.clone()]);

    // Taking a project out of one collection leaves the other alone.
    let stack = registry
        .remove_from_collection("stack", "app")
        .expect("remove app from stack");
    assert_eq!(stack.projects, ["corelib"]);
    assert_eq!(
        registry.collection("plugins").expect("plugins").projects,
        ["app", "plugin"]
    );

    // Deleting a collection never deletes its projects.
    let deleted = registry.delete_collection("plugins").expect("delete");
    assert_eq!(deleted.projects, ["app", "plugin"]);
    assert_eq!(names(&registry), ["app", "corelib", "plugin"]);
    let gone = registry.collection("plugins").expect_err("deleted");
    assert_eq!(gone.code(), "collection_not_found");

    // Removing a project drops its memberships, and only its own.
    registry.add_to_collection("stack", "app").expect("add app");
    let removed = registry.remove_project("corelib").expect("remove corelib");
    assert_eq!(removed, core);
    assert_eq!(
        registry.collection("stack").expect("stack").projects,
        ["app"]
    );
    assert_eq!(names(&registry), ["app", "plugin"]);
    assert!(
        world
            .project("corelib")
            .join("corelib/__init__.py")
            .is_file()
    );
    // By path as well as by name.
    registry
        .remove_project(world.project("plugin").to_str().expect("UTF-8"))
        .expect("remove by path");
    assert_eq!(names(&registry), ["app"]);
    // A project whose directory is gone can still be removed by its path.
    std::fs::remove_dir_all(world.project("webapp")).expect("delete webapp");
    registry
        .remove_project(&app.path)
        .expect("remove a deleted directory");
    assert!(names(&registry).is_empty());
}

#[test]
fn duplicates_and_unknown_names_are_clear_errors() {
    let world = World::new();
    let mut registry = world.registry();
    registry
        .add_project(&world.project("corelib"), None)
        .expect("add");
    let code = |e: RegistryError| (e.code(), e.to_string());

    let (c, message) = code(
        registry
            .add_project(&world.project("corelib"), Some("other"))
            .expect_err("same path"),
    );
    assert_eq!(c, "already_exists");
    assert!(
        message.contains("already registered as project \"corelib\""),
        "{message}"
    );
    let (c, message) = code(
        registry
            .add_project(&world.project("webapp"), Some("corelib"))
            .expect_err("same name"),
    );
    assert_eq!(c, "already_exists");
    assert!(message.contains("--name"), "{message}");
    let missing = world.project("nowhere");
    assert_eq!(
        registry
            .add_project(&missing, None)
            .expect_err("missing")
            .code(),
        "not_a_directory"
    );
    let file = world.project("webapp/app.py");
    assert_eq!(
        registry
            .add_project(&file, None)
            .expect_err("a file")
            .code(),
        "not_a_directory"
    );
    for bad in ["a,b", "", " padded", "-opt", "a/b"] {
        let error = registry
            .add_project(&world.project("webapp"), Some(bad))
            .expect_err(bad);
        assert_eq!(error.code(), "invalid_parameter", "{bad:?}");
    }

    // An unknown member creates nothing.
    let error = registry
        .create_collection("stack", &["corelib", "nope"])
        .expect_err("unknown member");
    assert_eq!(error.code(), "project_not_found");
    assert!(registry.collections().expect("collections").is_empty());

    registry
        .create_collection("stack", &["corelib"])
        .expect("create");
    assert_eq!(
        registry
            .create_collection("stack", &[])
            .expect_err("twice")
            .code(),
        "already_exists"
    );
    assert_eq!(
        registry
            .add_to_collection("stack", "corelib")
            .expect_err("member")
            .code(),
        "already_exists"
    );
    assert_eq!(
        registry
            .add_to_collection("nope", "corelib")
            .expect_err("no collection")
            .code(),
        "collection_not_found"
    );
    registry
        .add_project(&world.project("webapp"), None)
        .expect("add webapp");
    assert_eq!(
        registry
            .remove_from_collection("stack", "webapp")
            .expect_err("not in")
            .code(),
        "not_a_member"
    );
    assert_eq!(
        registry.remove_project("nope").expect_err("unknown").code(),
        "project_not_found"
    );
}

#[test]
fn the_registry_survives_a_restart() {
    let world = World::new();
    {
        let mut registry = world.registry();
        registry
            .add_project(&world.project("corelib"), None)
            .expect("add");
        registry
            .add_project(&world.project("webapp"), None)
            .expect("add");
        registry
            .create_collection("stack", &["corelib", "webapp"])
            .expect("create");
    }
    let registry = world.registry();
    assert_eq!(names(&registry), ["corelib", "webapp"]);
    assert_eq!(
        registry.collection("stack").expect("stack").projects,
        ["corelib", "webapp"]
    );
    assert_eq!(
        registry.path(),
        world.database().canonicalize().expect("exists")
    );
}

#[test]
fn the_cli_manages_the_registry_without_a_project_root() {
    let world = World::new();
    let core = world.project("corelib");
    let app = world.project("webapp");
    let plugin = world.project("plugin");
    let path = |p: &Path| p.to_str().expect("UTF-8").to_string();

    let (status, stdout, _) = world.xfile(&["project", "list"]);
    assert_eq!(status, 0);
    assert!(stdout.starts_with("no projects registered"), "{stdout}");
    let (status, stdout, stderr) = world.xfile(&["project", "add", &path(&core)]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        stdout,
        format!("added project corelib at {}\n", canonical(&core))
    );
    let added = world.xfile_json(&["project", "add", &path(&app), "--name", "app"]);
    assert_eq!(added["name"], "app");
    assert_eq!(added["path"], canonical(&app));
    world.xfile_json(&["project", "add", &path(&plugin)]);

    // Another process sees what this one wrote.
    let listed = world.xfile_json(&["project", "list"]);
    let listed: Vec<&str> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(listed, ["app", "corelib", "plugin"]);

    let (status, stdout, _) =
        world.xfile(&["collection", "create", "stack", "--projects", "corelib,app"]);
    assert_eq!(status, 0);
    assert_eq!(stdout, "created collection stack: app, corelib\n");
    world.xfile_json(&["collection", "create", "plugins"]);
    let plugins = world.xfile_json(&["collection", "add", "plugins", "plugin"]);
    assert_eq!(plugins["projects"], serde_json::json!(["plugin"]));
    world.xfile_json(&["collection", "add", "plugins", "app"]);
    let (status, stdout, _) = world.xfile(&["collection", "list"]);
    assert_eq!(status, 0);
    assert_eq!(stdout, "plugins  app, plugin\nstack    app, corelib\n");

    let stack = world.xfile_json(&["collection", "remove", "stack", "app"]);
    assert_eq!(stack["projects"], serde_json::json!(["corelib"]));
    let (status, stdout, _) = world.xfile(&["collection", "delete", "plugins"]);
    assert_eq!(status, 0);
    assert!(stdout.contains("its projects stay registered"), "{stdout}");
    let (status, stdout, _) = world.xfile(&["project", "remove", "corelib"]);
    assert_eq!(status, 0);
    assert!(stdout.starts_with("removed project corelib"), "{stdout}");
    let collections = world.xfile_json(&["collection", "list"]);
    assert_eq!(
        collections,
        serde_json::json!([{
            "id": collections[0]["id"],
            "name": "stack",
            "created_at": collections[0]["created_at"],
            "projects": [],
        }])
    );
    let listed = world.xfile_json(&["project", "list"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(2));

    // User errors: status 2 and a message that says what to do.
    for (args, expected) in [
        (
            vec!["project", "add", &path(&app)],
            "already registered as project \"app\"",
        ),
        (vec!["project", "remove", "corelib"], "`xfile project list`"),
        (vec!["collection", "create", "stack"], "already exists"),
        (
            vec!["collection", "add", "nope", "app"],
            "`xfile collection list`",
        ),
        (
            vec!["collection", "remove", "stack", "app"],
            "is not in collection",
        ),
    ] {
        let (status, _, stderr) = world.xfile(&args);
        assert_eq!(status, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_corrupt_database_is_a_clear_error() {
    let world = World::new();
    std::fs::create_dir_all(world.home()).expect("mkdir");
    // Bytes that are no SQLite file: a fixed pseudo-random sequence.
    let mut state: u32 = 0x2545_f491;
    let junk: Vec<u8> = (0..8192)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        })
        .collect();
    std::fs::write(world.database(), &junk).expect("write junk");

    let error = Registry::open_at(&world.home()).err().expect("corrupt");
    assert_eq!(error.code(), "registry_corrupt");
    let (status, _, stderr) = world.xfile(&["project", "list"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("registry.sqlite3"), "{stderr}");
    assert!(stderr.contains("remove it to start over"), "{stderr}");
    assert_eq!(
        std::fs::read(world.database()).expect("read"),
        junk,
        "left as it was"
    );

    // Removing it starts over.
    std::fs::remove_file(world.database()).expect("remove");
    let (status, _, stderr) = world.xfile(&["project", "list"]);
    assert_eq!(status, 0, "{stderr}");
}

#[test]
fn another_programs_database_is_not_taken_over() {
    let world = World::new();
    std::fs::create_dir_all(world.home()).expect("mkdir");
    let other = rusqlite::Connection::open(world.database()).expect("open");
    other
        .execute_batch("CREATE TABLE notes (text TEXT)")
        .expect("create");
    drop(other);
    let error = Registry::open_at(&world.home()).err().expect("refused");
    assert_eq!(error.code(), "registry_corrupt");
}

#[test]
fn a_database_from_a_newer_xfile_is_refused() {
    let world = World::new();
    drop(world.registry());
    let conn = rusqlite::Connection::open(world.database()).expect("open");
    conn.pragma_update(None, "user_version", 99)
        .expect("set version");
    drop(conn);

    let error = Registry::open_at(&world.home()).err().expect("too new");
    assert_eq!(error.code(), "registry_too_new");
    let message = error.to_string();
    assert!(message.contains("schema version 99"), "{message}");
    let (status, _, stderr) = world.xfile(&["collection", "list"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("upgrade xfile"), "{stderr}");
}

#[test]
fn a_write_waits_for_another_writer_then_says_retry() {
    let world = World::new();
    let mut registry = world.registry();
    registry
        .add_project(&world.project("corelib"), None)
        .expect("add");

    // Another process in the middle of a write.
    let other = rusqlite::Connection::open(world.database()).expect("open");
    other.execute_batch("BEGIN IMMEDIATE").expect("lock");
    // Readers go on meanwhile (WAL).
    assert_eq!(names(&registry), ["corelib"]);
    let error = registry
        .add_project(&world.project("webapp"), None)
        .expect_err("locked");
    assert_eq!(error.code(), "registry_locked");
    assert!(error.to_string().contains("retry"), "{error}");

    other.execute_batch("ROLLBACK").expect("unlock");
    registry
        .add_project(&world.project("webapp"), None)
        .expect("add after the lock");
}

#[cfg(unix)]
#[test]
fn the_registry_is_never_written_through_a_symlink() {
    let world = World::new();
    let target = world.dir.path().join("target");
    std::fs::create_dir_all(&target).expect("mkdir");
    std::os::unix::fs::symlink(&target, world.home()).expect("symlink");

    let error = Registry::open_at(&world.home()).err().expect("refused");
    assert_eq!(error.code(), "symlink_refused");
    let (status, _, stderr) = world.xfile(&["project", "list"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(std::fs::read_dir(&target).expect("read").count(), 0);

    // A link in place of the database file itself.
    let real = world.dir.path().join("real-home");
    std::fs::create_dir_all(&real).expect("mkdir");
    let elsewhere = world.dir.path().join("elsewhere.sqlite3");
    std::os::unix::fs::symlink(&elsewhere, real.join("registry.sqlite3")).expect("symlink");
    let error = Registry::open_at(&real).err().expect("refused");
    assert_eq!(error.code(), "symlink_refused");
    assert!(!elsewhere.exists());
}

#[test]
fn a_missing_registry_directory_is_created() {
    let world = World::new();
    let deep = world.dir.path().join("a/b/xfile");
    let mut registry = Registry::open_at(&deep).expect("created");
    registry
        .add_project(&world.project("corelib"), None)
        .expect("add");
    assert!(deep.join("registry.sqlite3").is_file());
}

#[test]
fn processes_started_at_once_share_a_new_registry() {
    let world = World::new();
    let dirs: Vec<PathBuf> = (0..6)
        .map(|i| {
            let dir = world.project(&format!("p{i}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("setup.py"), "").expect("a project marker");
            dir
        })
        .collect();
    // All of them find no database and race to create and migrate it.
    let children: Vec<_> = dirs
        .iter()
        .map(|dir| {
            Command::new(env!("CARGO_BIN_EXE_xfile"))
                .args(["project", "add"])
                .arg(dir)
                .env("XFILE_HOME", world.home())
                .current_dir(world.dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
    }
    let registry = world.registry();
    assert_eq!(names(&registry), ["p0", "p1", "p2", "p3", "p4", "p5"]);
}

// Regression: `project_add` of `/` registered the whole file
// system (served, it was indexed and got a `/.xfile_cache/`). A project
// root must hold a Python project marker, and is never `/` nor the home
// directory; the CLI's `--force` lets in a directory without a marker.
#[test]
fn project_add_refuses_the_root_the_home_and_non_projects_global_widening() {
    use xfile::registry::Marker;

    let world = World::new();
    let mut registry = world.registry();
    let code = |e: RegistryError| (e.code(), e.to_string());
    let (c, message) = code(registry.add_project(Path::new("/"), None).expect_err("/"));
    assert_eq!(c, "root_too_wide");
    assert!(message.contains("file system's root"), "{message}");
    let (c, _) = code(
        registry
            .add_project_with(Path::new("/"), Some("all"), Marker::Optional)
            .expect_err("/ even forced"),
    );
    assert_eq!(c, "root_too_wide");

    let bare = world.project("notes");
    std::fs::create_dir_all(bare.join("drafts")).expect("mkdir");
    std::fs::write(bare.join("todo.txt"), "nothing python\n").expect("write");
    let (c, message) = code(registry.add_project(&bare, None).expect_err("no marker"));
    assert_eq!(c, "not_a_project");
    assert!(
        message.contains("--force") && message.contains("pyproject.toml"),
        "{message}"
    );
    // A package alone at the top is a project.
    let package = world.project("lib");
    std::fs::create_dir_all(package.join("lib")).expect("mkdir");
    std::fs::write(package.join("lib/__init__.py"), "").expect("write");
    registry
        .add_project(&package, None)
        .expect("a package is a marker");
    assert_eq!(names(&registry), ["lib"]);

    // The same through the binary; the home directory is refused too.
    let home = world.project("user");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::write(home.join("pyproject.toml"), "[project]\nname = \"x\"\n").expect("write");
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(args)
            .env("XFILE_HOME", world.home())
            .env("HOME", &home)
            .current_dir(world.dir.path())
            .output()
            .expect("xfile runs");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (status, stderr) = run(&["project", "add", "/"]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("never registers"), "{stderr}");
    let home_text = home.to_str().expect("UTF-8");
    let (status, stderr) = run(&["project", "add", "--force", home_text]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("your home directory"), "{stderr}");
    let bare_text = bare.to_str().expect("UTF-8");
    let (status, stderr) = run(&["project", "add", bare_text]);
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    let (status, stderr) = run(&["project", "add", "--force", bare_text]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(names(&world.registry()), ["lib", "notes"]);
}
