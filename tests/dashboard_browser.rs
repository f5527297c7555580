//! The dashboard in a real headless browser (Chromium from the
//! distribution's packages, installed here with apt-get when missing):
//! the overview shows the fixture's counts, the graph draws a node per
//! package, the console stays silent, and a screenshot is kept under
//! target/.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::http::Server;

const BROWSERS: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

fn on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// The browser, installed from the distribution's packages if missing.
fn browser() -> PathBuf {
    if let Some(found) = BROWSERS.iter().find_map(|b| on_path(b)) {
        return found;
    }
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let installed = apt(&["update", "-qq"]) && apt(&["install", "-y", "-qq", "chromium"]);
    assert!(
        installed,
        "no Chromium and `apt-get install chromium` failed: install the distribution's chromium package (as root) and run again"
    );
    on_path("chromium").expect("chromium on PATH after installing it")
}

/// Loads `url` headless, lets the page's scripts run, and returns the DOM
/// it ended with (stdout) and the browser's log (stderr).
fn load(url: &str, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let Output {
        stdout,
        stderr,
        status,
    } = Command::new(browser())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,900",
            "--virtual-time-budget=4000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert!(status.success(), "{stderr}");
    (String::from_utf8_lossy(&stdout).into_owned(), stderr)
}

/// Console messages the page produced: errors, warnings or logs alike.
fn console(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

#[test]
fn the_dashboard_renders_counts_and_the_package_graph_in_chromium() {
    let project = common::copy_sample();
    let root = project.path().to_str().unwrap();
    let server = Server::start(&["dashboard", "--root", root, "--http", "127.0.0.1:0"], &[]);
    let (status, _) = server.wait_for("/api/overview", |s, _| s == 200);
    assert_eq!(status, 200);
    let base = format!("http://{}/", server.addr);

    let (dom, log) = load(&base, &["--dump-dom"]);
    let card = |label: &str, value: &str| {
        format!("<div class=\"muted\">{label}</div><div class=\"v\">{value}</div>")
    };
    for (label, value) in [
        ("files", "9"),
        ("relationships", "37"),
        ("parse errors", "0"),
        ("warnings", "3"),
        ("import cycles", "1"),
    ] {
        assert!(
            dom.contains(&card(label, value)),
            "{label} = {value} not shown:\n{dom}"
        );
    }
    assert!(
        !dom.contains("class=\"err\""),
        "the page reported an error:\n{dom}"
    );
    assert!(console(&log).is_empty(), "console: {:?}", console(&log));

    let (graph, log) = load(&format!("{base}#graph"), &["--dump-dom"]);
    for package in ["app", "app/utils"] {
        assert!(
            graph.contains(&format!(
                "<g class=\"node\" data-id=\"{package}\" data-kind=\"package\""
            )),
            "no node for {package}:\n{graph}"
        );
    }
    assert!(graph.contains("<circle"), "{graph}");
    assert!(console(&log).is_empty(), "console: {:?}", console(&log));

    // The Warnings tab lists every warning when no filter
    // is chosen (it asked with empty filters and showed "0 matching").
    let (warnings, log) = load(&format!("{base}#warnings"), &["--dump-dom"]);
    assert!(warnings.contains("3 matching"), "{warnings}");
    assert!(warnings.contains("app/models.py:"), "{warnings}");
    assert!(console(&log).is_empty(), "console: {:?}", console(&log));

    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-graph.png");
    load(
        &format!("{base}#graph"),
        &[&format!("--screenshot={}", shot.display())],
    );
    let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10_000, "{} is {size} bytes", shot.display());
}
