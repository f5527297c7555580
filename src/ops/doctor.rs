//! `xfile doctor [--fix]`: checks what
//! stands between a project and a working xfile, says how to fix each
//! problem, and with `--fix` applies the fixes that touch only xfile's own
//! files (its log and cache directories, its entry in an editor's MCP
//! configuration), each before its check is run again.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::setup::{self, Editor};
use crate::service::jsonl::LOG_DIR;
use crate::workspace::config::{CONFIG_FILE, Config};

/// The warm-start cache's directory under the root.
const CACHE_DIR: &str = ".xfile_cache";
const INOTIFY_LIMIT: &str = "/proc/sys/fs/inotify/max_user_watches";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warning,
    Error,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: String,
    pub level: Level,
    pub detail: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Set when `--fix` repaired it: what was done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed: Option<String>,
    #[serde(skip)]
    repair: Option<Repair>,
}

/// A fix `--fix` may apply without asking: only xfile's own files.
#[derive(Debug)]
enum Repair {
    /// Move whatever is in the way of a directory of ours aside (a link
    /// is removed: its target is not touched), then create the directory.
    Directory(PathBuf),
    /// Remove the cache directory's symbolic link.
    Unlink(PathBuf),
    /// Rewrite the xfile entry of an editor's configuration.
    Editor(Editor),
    /// Write xfile's hook into Claude Code's settings.
    Hook,
}

fn check(name: impl Into<String>, level: Level, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        level,
        detail: detail.into(),
        fix: None,
        fixed: None,
        repair: None,
    }
}

impl Check {
    fn fix(mut self, fix: impl Into<String>, repair: Option<Repair>) -> Check {
        self.fix = Some(fix.into());
        self.repair = repair;
        self
    }
}

/// Every check on the project at `root`; with `fix`, repairs first where
/// it can and reports the state after.
pub fn run(root: &Path, fix: bool) -> Vec<Check> {
    let mut checks = checks(root);
    if fix {
        for c in &mut checks {
            if let Some(repair) = c.repair.take() {
                match apply(root, &repair) {
                    Ok(done) => c.fixed = Some(done),
                    Err(error) => c.fixed = Some(format!("could not fix: {error}")),
                }
            }
        }
        let fixed: Vec<Option<String>> = checks.iter_mut().map(|c| c.fixed.take()).collect();
        checks = self::checks(root);
        for (c, fixed) in checks.iter_mut().zip(fixed) {
            c.fixed = fixed;
        }
    }
    checks
}

fn checks(root: &Path) -> Vec<Check> {
    let mut checks = config(root);
    checks.push(logs(root));
    checks.push(inotify(root));
    checks.push(registry());
    checks.push(cache(root));
    checks.extend(Editor::ALL.iter().filter_map(|e| editor(root, *e)));
    checks.extend(hook(root));
    checks
}

/// Claude Code's hook, checked where Claude Code is set up (an xfile
/// entry in `.mcp.json`, or a settings file).
fn hook(root: &Path) -> Option<Check> {
    let name = format!("Claude Code hook ({})", setup::HOOKS_FILE);
    let redo = "xfile setup --editor claude-code --yes (--fix does)";
    let configured = matches!(setup::current_entry(root, Editor::ClaudeCode), Some(Ok(_)));
    let commands = match setup::current_hooks(root) {
        None if !configured => return None,
        None => Vec::new(),
        Some(Ok(commands)) => commands,
        Some(Err(setup::EntryError::Invalid(error))) => {
            return Some(
                check(name, Level::Error, format!("does not parse: {error}")).fix(
                    "repair the JSON by hand, then run `xfile setup --editor claude-code`",
                    None,
                ),
            );
        }
        Some(Err(setup::EntryError::Unreadable(why))) => {
            return Some(check(name, Level::Error, format!("not read: {why}")).fix(
                "replace it with a regular JSON file, then run `xfile setup --editor claude-code`",
                None,
            ));
        }
    };
    let detail = match hooks_state(&commands) {
        Ok(command) => {
            return Some(check(
                name,
                Level::Ok,
                format!("runs `{command}` after each Read and each edit"),
            ));
        }
        Err(why) => why,
    };
    Some(check(name, Level::Warning, detail).fix(redo, Some(Repair::Hook)))
}

/// The one command run after every matcher xfile writes, or what is wrong.
fn hooks_state(hooks: &[(String, String)]) -> Result<String, String> {
    let mut command = None;
    for matcher in setup::HOOK_MATCHERS {
        let what = match matcher {
            "Read" => "Reads come without their cross-file context",
            _ => "edits come without what they may break",
        };
        let found: Vec<&String> = hooks
            .iter()
            .filter(|(m, _)| m == matcher)
            .map(|(_, c)| c)
            .collect();
        match found.as_slice() {
            [] => return Err(format!("no xfile hook for `{matcher}`: {what}")),
            [one] => {
                let program = one.trim_end().trim_end_matches(" hook").trim();
                if !runnable(program.trim_matches('\'')) {
                    return Err(format!("the command `{one}` does not run an executable"));
                }
                command = Some(one.to_string());
            }
            more => {
                return Err(format!(
                    "{} xfile hooks for `{matcher}`: each answer is given twice",
                    more.len()
                ));
            }
        }
    }
    command.ok_or_else(|| "no xfile hook".to_string())
}

fn config(root: &Path) -> Vec<Check> {
    if std::fs::symlink_metadata(root.join(CONFIG_FILE)).is_err() {
        return vec![check(
            "configuration",
            Level::Ok,
            format!("no {CONFIG_FILE}: defaults"),
        )];
    }
    let (_, notices) = Config::load(root);
    if notices.is_empty() {
        return vec![check(
            "configuration",
            Level::Ok,
            format!("{CONFIG_FILE} is valid"),
        )];
    }
    notices
        .into_iter()
        .map(|notice| {
            check("configuration", Level::Warning, notice).fix(
                format!("edit {CONFIG_FILE}: until then the default is used for this key"),
                None,
            )
        })
        .collect()
}

fn logs(root: &Path) -> Check {
    match super::logs::writable(root) {
        Ok(()) => check("log directory", Level::Ok, format!("{LOG_DIR} is writable")),
        Err(problem) => check("log directory", Level::Error, problem).fix(
            format!("move {LOG_DIR} aside and create it as a directory (--fix does)"),
            Some(Repair::Directory(root.join(LOG_DIR))),
        ),
    }
}

/// Directories the watcher would watch: the tree's, as discovery walks it
/// (`.gitignore` and the usual exclusions respected).
fn directory_count(root: &Path) -> usize {
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_dir()))
        .count()
}

fn inotify(root: &Path) -> Check {
    let name = "inotify watch limit";
    let Some(limit) = std::fs::read_to_string(INOTIFY_LIMIT)
        .ok()
        .and_then(|text| text.trim().parse::<usize>().ok())
    else {
        return check(name, Level::Ok, "no inotify limit on this system");
    };
    let dirs = directory_count(root);
    let raise = format!(
        "raise it: sudo sysctl fs.inotify.max_user_watches={} (and in /etc/sysctl.d/ to keep it); meanwhile xfile polls",
        (dirs * 4).max(524_288)
    );
    let detail = format!("{limit} watches for this user; the project has {dirs} directories");
    if dirs >= limit {
        check(name, Level::Error, detail).fix(raise, None)
    } else if dirs * 2 >= limit {
        // Editors and other watchers share the same limit.
        check(name, Level::Warning, detail + ", over half the limit").fix(raise, None)
    } else {
        check(name, Level::Ok, detail)
    }
}

fn registry() -> Check {
    let name = "registry";
    let path = match crate::registry::Registry::default_path() {
        Ok(path) => path,
        Err(error) => return check(name, Level::Warning, error.to_string()),
    };
    match std::fs::symlink_metadata(&path) {
        Err(_) => return check(name, Level::Ok, format!("{}: none yet", path.display())),
        // SQLite would open a FIFO and wait on it: only a file is opened.
        Ok(meta) if !meta.is_file() => {
            return damaged(
                &path,
                format!(
                    "it is {}, not opened",
                    crate::workspace::read::file_kind(&meta)
                ),
            );
        }
        Ok(_) => {}
    }
    let verdict = rusqlite::Connection::open_with_flags(
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|db| db.query_row("PRAGMA integrity_check", [], |row| row.get::<_, String>(0)));
    match verdict {
        Ok(ok) if ok == "ok" => check(name, Level::Ok, format!("{}: intact", path.display())),
        Ok(problem) => damaged(&path, problem),
        Err(error) => damaged(&path, error.to_string()),
    }
}

fn damaged(path: &Path, problem: String) -> Check {
    check(
        "registry",
        Level::Error,
        format!("{}: damaged: {problem}", path.display()),
    )
    .fix(
        format!(
            "move it away (mv {0} {0}.broken) and add the projects again with `xfile project add`",
            path.display()
        ),
        None,
    )
}

fn cache(root: &Path) -> Check {
    let name = "cache";
    let dir = root.join(CACHE_DIR);
    match std::fs::symlink_metadata(&dir) {
        Err(_) => check(name, Level::Ok, format!("no {CACHE_DIR}")),
        Ok(meta) if meta.file_type().is_symlink() => check(
            name,
            Level::Error,
            format!("{CACHE_DIR} is a symbolic link; xfile never writes through one"),
        )
        .fix(
            "remove the link (its target stays; --fix does)",
            Some(Repair::Unlink(dir)),
        ),
        Ok(meta) if !meta.is_dir() => check(
            name,
            Level::Error,
            format!("{CACHE_DIR} is not a directory"),
        )
        .fix(
            format!("move {CACHE_DIR} aside (--fix does)"),
            Some(Repair::Directory(dir)),
        ),
        Ok(_) => check(name, Level::Ok, format!("{CACHE_DIR} is a directory")),
    }
}

/// Whether `command` names an executable file, as a path or on `PATH`.
fn runnable(command: &str) -> bool {
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            }
            #[cfg(not(unix))]
            {
                m.is_file()
            }
        })
    };
    if command.contains(std::path::MAIN_SEPARATOR) {
        return executable(Path::new(command));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(command)))
    })
}

/// The root an entry serves: its `--root` argument, relative to the
/// project (editors start servers there) unless absolute.
fn served_root(root: &Path, entry: &serde_json::Value) -> Option<PathBuf> {
    let args: Vec<&str> = entry["args"]
        .as_array()?
        .iter()
        .filter_map(|a| a.as_str())
        .collect();
    let at = args.iter().position(|a| *a == "--root")?;
    let given = args.get(at + 1)?;
    let given = given.replace("${workspaceFolder}", &root.to_string_lossy());
    Some(root.join(given))
}

fn editor(root: &Path, editor: Editor) -> Option<Check> {
    let name = format!("{} ({})", editor.name(), editor.file());
    let entry = match setup::current_entry(root, editor)? {
        Ok(entry) => entry,
        Err(setup::EntryError::Invalid(error)) => {
            return Some(
                check(name, Level::Error, format!("does not parse: {error}"))
                    .fix("repair the JSON by hand, then run `xfile setup`", None),
            );
        }
        // Not xfile's to remove: a FIFO, device or link may be the user's.
        Err(setup::EntryError::Unreadable(why)) => {
            return Some(check(name, Level::Error, format!("not read: {why}")).fix(
                format!(
                    "replace it with a regular JSON file, then run `xfile setup --editor {}`",
                    cli_name(editor)
                ),
                None,
            ));
        }
    };
    let command = entry["command"].as_str().unwrap_or_default();
    let redo = format!(
        "xfile setup --editor {} --yes (--fix does)",
        cli_name(editor)
    );
    if !runnable(command) {
        return Some(
            check(
                name,
                Level::Error,
                format!("the command `{command}` is not an executable"),
            )
            .fix(redo, Some(Repair::Editor(editor))),
        );
    }
    let serves = served_root(root, &entry);
    let same = serves
        .as_ref()
        .and_then(|r| r.canonicalize().ok())
        .is_some_and(|r| root.canonicalize().is_ok_and(|root| root == r));
    if !same {
        let shown = serves.map_or("no --root".to_string(), |r| r.display().to_string());
        return Some(
            check(
                name,
                Level::Error,
                format!("serves {shown}, not this project"),
            )
            .fix(redo, Some(Repair::Editor(editor))),
        );
    }
    Some(check(name, Level::Ok, format!("runs {command}")))
}

/// The editor as `setup --editor` spells it.
fn cli_name(editor: Editor) -> String {
    clap::ValueEnum::to_possible_value(&editor)
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

fn apply(root: &Path, repair: &Repair) -> Result<String, String> {
    match repair {
        Repair::Directory(dir) => {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                std::fs::remove_file(dir).map_err(|e| e.to_string())?;
            } else if std::fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
                let aside = aside(dir);
                std::fs::rename(dir, &aside).map_err(|e| e.to_string())?;
            }
            if std::fs::symlink_metadata(dir).is_err() {
                std::fs::create_dir(dir).map_err(|e| e.to_string())?;
            }
            make_writable(dir)?;
            Ok(format!("{} is a writable directory", dir.display()))
        }
        Repair::Unlink(link) => {
            std::fs::remove_file(link).map_err(|e| e.to_string())?;
            Ok(format!("removed the link {}", link.display()))
        }
        Repair::Hook => {
            let outcome =
                setup::apply_hook(root, &setup::this_binary()).map_err(|e| e.to_string())?;
            Ok(match outcome.backup {
                Some(backup) => format!("wrote the xfile hook (backup {})", backup.display()),
                None => "wrote the xfile hook".to_string(),
            })
        }
        Repair::Editor(editor) => {
            let outcome =
                setup::apply(root, *editor, &setup::this_binary()).map_err(|e| e.to_string())?;
            Ok(match outcome.backup {
                Some(backup) => format!("rewrote the xfile entry (backup {})", backup.display()),
                None => "rewrote the xfile entry".to_string(),
            })
        }
    }
}

/// A free name beside `path` to move it to.
fn aside(path: &Path) -> PathBuf {
    let mut n = 1;
    loop {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".moved-{n}"));
        let candidate = PathBuf::from(name);
        if std::fs::symlink_metadata(&candidate).is_err() {
            return candidate;
        }
        n += 1;
    }
}

#[cfg(unix)]
fn make_writable(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(dir).map_err(|e| e.to_string())?;
    let mode = meta.permissions().mode();
    if mode & 0o700 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn make_writable(_: &Path) -> Result<(), String> {
    Ok(())
}

/// The report, colored when `color` (a terminal without `NO_COLOR`).
pub fn render(checks: &[Check], color: bool) -> String {
    let paint = |code: &str, text: &str| match color {
        true => format!("\x1b[{code}m{text}\x1b[0m"),
        false => text.to_string(),
    };
    let mut out = String::new();
    for c in checks {
        let mark = match c.level {
            Level::Ok => paint("32", "✓"),
            Level::Warning => paint("33", "⚠"),
            Level::Error => paint("31", "✗"),
        };
        out.push_str(&format!("{mark} {}: {}\n", c.name, c.detail));
        if let Some(fixed) = &c.fixed {
            out.push_str(&format!("    fixed: {fixed}\n"));
        }
        if let (Some(fix), false) = (&c.fix, c.level == Level::Ok) {
            out.push_str(&format!("    fix: {fix}\n"));
        }
    }
    let count = |level| checks.iter().filter(|c| c.level == level).count();
    out.push_str(&format!(
        "{} ok, {} warnings, {} errors\n",
        count(Level::Ok),
        count(Level::Warning),
        count(Level::Error)
    ));
    out
}
