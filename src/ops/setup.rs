//! `xfile setup` (no API keys: xfile is local):
//! writes or updates the `xfile` MCP server entry in an editor's project
//! configuration, keeping every other entry, backing the file up first,
//! and never writing through a symbolic link.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::workspace::read::Refusal;

/// The name of the server entry.
pub const SERVER: &str = "xfile";

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Editor {
    ClaudeCode,
    Cursor,
    Vscode,
    Zed,
}

impl Editor {
    pub const ALL: [Editor; 4] = [
        Editor::ClaudeCode,
        Editor::Cursor,
        Editor::Vscode,
        Editor::Zed,
    ];

    /// The project's configuration file, root-relative.
    pub fn file(self) -> &'static str {
        match self {
            Editor::ClaudeCode => ".mcp.json",
            Editor::Cursor => ".cursor/mcp.json",
            Editor::Vscode => ".vscode/mcp.json",
            Editor::Zed => ".zed/settings.json",
        }
    }

    /// The key of the object that holds the servers by name.
    pub fn servers_key(self) -> &'static str {
        match self {
            Editor::ClaudeCode | Editor::Cursor => "mcpServers",
            Editor::Vscode => "servers",
            Editor::Zed => "context_servers",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Editor::ClaudeCode => "Claude Code",
            Editor::Cursor => "Cursor",
            Editor::Vscode => "VS Code",
            Editor::Zed => "Zed",
        }
    }

    /// The entry that starts `command` serving `root`, in the editor's schema.
    pub fn entry(self, command: &str, root: &Path) -> Value {
        let args = json!(["serve", "--root", root.to_string_lossy()]);
        match self {
            Editor::ClaudeCode | Editor::Cursor => json!({"command": command, "args": args}),
            Editor::Vscode => json!({"type": "stdio", "command": command, "args": args}),
            Editor::Zed => json!({"source": "custom", "command": command, "args": args, "env": {}}),
        }
    }

    /// What to do once the entry is written.
    pub fn next_step(self) -> &'static str {
        match self {
            Editor::ClaudeCode => {
                "Restart Claude Code in this project and approve the `xfile` server (`claude mcp list` shows it)."
            }
            Editor::Cursor => "Open Cursor Settings → MCP and enable `xfile`.",
            Editor::Vscode => "Run `MCP: List Servers` in VS Code and start `xfile`.",
            Editor::Zed => {
                "Reopen the project in Zed; the agent panel lists `xfile` under context servers."
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("{0}: is a symbolic link; xfile never writes through one")]
    Symlink(PathBuf),
    #[error(
        "{0}: is not a JSON object (comments are not kept either); add under `{1}` by hand: {2}"
    )]
    NotJson(PathBuf, &'static str, String),
    #[error(
        "{0}: not read: {1}; xfile reads and writes only a regular file there: remove or replace it, then run `xfile setup` again"
    )]
    Unreadable(PathBuf, Refusal),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// An editor's configuration file bigger than this is not read.
const EDITOR_FILE_BYTES: u64 = 1024 * 1024;

/// Why an editor's file gives no entry: it was not read, or is no JSON.
#[derive(Debug)]
pub enum EntryError {
    /// A FIFO, socket, device, symlink, or a file too big: not opened or
    /// not read (the reason).
    Unreadable(String),
    /// Not JSON (the parser's message).
    Invalid(String),
}

/// The editor's file under `root` as text, `None` if there is none; only
/// a regular file, without following a link, size-bounded, never waiting
/// on a FIFO.
fn read_editor_file(path: &Path) -> Result<Option<String>, Refusal> {
    crate::workspace::read::read_regular_text(path, EDITOR_FILE_BYTES)
}

/// What [`apply`] did.
#[derive(Debug)]
pub struct Outcome {
    pub path: PathBuf,
    /// False when the entry was already as it should be.
    pub changed: bool,
    /// Where the file was copied before it changed.
    pub backup: Option<PathBuf>,
}

fn refuse_symlink(path: &Path) -> Result<(), SetupError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(SetupError::Symlink(path.to_path_buf())),
        _ => Ok(()),
    }
}

/// The entry `editor`'s file under `root` has for xfile, if there is a
/// file and it parses.
pub fn current_entry(root: &Path, editor: Editor) -> Option<Result<Value, EntryError>> {
    let path = root.join(editor.file());
    let text = match read_editor_file(&path) {
        Ok(text) => text?,
        Err(refusal) => return Some(Err(EntryError::Unreadable(refusal.to_string()))),
    };
    let parsed = match serde_json::from_str::<Value>(&text) {
        Ok(value) => value,
        Err(error) => return Some(Err(EntryError::Invalid(error.to_string()))),
    };
    parsed
        .get(editor.servers_key())
        .and_then(|servers| servers.get(SERVER))
        .cloned()
        .map(Ok)
}

/// Writes the `xfile` entry for `command` serving `root` into `editor`'s
/// file under `root`: unchanged if it is already there, else the other
/// contents kept, the old file backed up to `<file>.bak`.
pub fn apply(root: &Path, editor: Editor, command: &str) -> Result<Outcome, SetupError> {
    let entry = editor.entry(command, root);
    let by_hand = json!({ SERVER: entry.clone() }).to_string();
    rewrite(
        root,
        editor.file(),
        editor.servers_key(),
        by_hand,
        |document| {
            let servers = document
                .entry(editor.servers_key())
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(servers) = servers else {
                return None;
            };
            if servers.get(SERVER) == Some(&entry) {
                return Some(false);
            }
            servers.insert(SERVER.to_string(), entry);
            Some(true)
        },
    )
}

/// Claude Code's project settings, where its hooks are (root-relative).
pub const HOOKS_FILE: &str = ".claude/settings.json";
/// The event and the tools the xfile hook is run after: a Read, to add
/// the context of the lines read; an edit, to say what it may break.
const HOOK_EVENT: &str = "PostToolUse";
pub const HOOK_MATCHERS: [&str; 2] = ["Read", "Edit|MultiEdit|Write"];

/// The shell command that runs the hook with the binary `command`.
pub fn hook_command(command: &str) -> String {
    format!("{} hook", shell_quoted(command))
}

/// `word` as one word for the shell Claude Code runs hooks with.
fn shell_quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.to_string(),
        false => format!("'{}'", word.replace('\'', r"'\''")),
    }
}

/// Whether a hook command is xfile's (of this or any other binary): the
/// program is named `xfile` and its one argument is `hook`.
fn is_xfile_hook(command: &str) -> bool {
    let Some(program) = command.trim().strip_suffix(" hook") else {
        return false;
    };
    let program = program.trim().trim_matches('\'').trim_matches('"');
    Path::new(program).file_name().is_some_and(|n| n == SERVER)
}

/// The xfile hooks in Claude Code's settings under `root`, as (matcher,
/// command), for the matchers xfile writes; `None` when there is no
/// settings file.
pub fn current_hooks(root: &Path) -> Option<Result<Vec<(String, String)>, EntryError>> {
    let text = match read_editor_file(&root.join(HOOKS_FILE)) {
        Ok(text) => text?,
        Err(refusal) => return Some(Err(EntryError::Unreadable(refusal.to_string()))),
    };
    let parsed = match serde_json::from_str::<Value>(&text) {
        Ok(value) => value,
        Err(error) => return Some(Err(EntryError::Invalid(error.to_string()))),
    };
    let groups = parsed
        .pointer(&format!("/hooks/{HOOK_EVENT}"))
        .and_then(Value::as_array);
    let commands = groups
        .into_iter()
        .flatten()
        .filter_map(|group| {
            let matcher = group.get("matcher").and_then(Value::as_str)?;
            HOOK_MATCHERS
                .contains(&matcher)
                .then(|| Some((matcher, group.get("hooks")?.as_array()?)))?
        })
        .flat_map(|(matcher, hooks)| {
            hooks
                .iter()
                .filter_map(|hook| hook.get("command")?.as_str())
                .filter(|command| is_xfile_hook(command))
                .map(move |command| (matcher.to_string(), command.to_string()))
        })
        .collect();
    Some(Ok(commands))
}

/// Writes the xfile hooks run after each Read and each edit into Claude
/// Code's project settings under `root`, with the same care as [`apply`]:
/// every other key and hook kept, older xfile hooks replaced, never two
/// for one matcher.
pub fn apply_hook(root: &Path, command: &str) -> Result<Outcome, SetupError> {
    let ours: Vec<Value> = HOOK_MATCHERS
        .iter()
        .map(|matcher| {
            json!({
                "matcher": matcher,
                "hooks": [{"type": "command", "command": hook_command(command)}],
            })
        })
        .collect();
    let by_hand = json!({ HOOK_EVENT: ours.clone() }).to_string();
    rewrite(root, HOOKS_FILE, "hooks", by_hand, |document| {
        let hooks = document
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()));
        let groups = hooks
            .as_object_mut()?
            .entry(HOOK_EVENT)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()?;
        let xfile_hooks = |group: &Value| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|hook| {
                    hook.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_xfile_hook)
                })
                .count()
        };
        let found: usize = groups.iter().map(xfile_hooks).sum();
        if found == ours.len() && ours.iter().all(|group| groups.contains(group)) {
            return Some(false);
        }
        // Older xfile hooks go; a group left with no hook goes with them.
        for group in groups.iter_mut() {
            if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                list.retain(|hook| {
                    !hook
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(is_xfile_hook)
                });
            }
        }
        groups.retain(|group| {
            group
                .get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|list| !list.is_empty())
        });
        groups.extend(ours);
        Some(true)
    })
}

/// Rewrites the JSON object in `file` under `root` with `edit`, which
/// says whether it changed anything, or `None` when the document's shape
/// leaves no place for the entry (then the user is told to add
/// `by_hand` under `key` themselves). The file is backed up to
/// `<file>.bak` first and replaced whole; links and special files are
/// refused.
fn rewrite(
    root: &Path,
    file: &str,
    key: &'static str,
    by_hand: String,
    edit: impl FnOnce(&mut Map<String, Value>) -> Option<bool>,
) -> Result<Outcome, SetupError> {
    let path = root.join(file);
    let io = |error| SetupError::Io(path.clone(), error);
    let dir = path.parent().unwrap_or(root);
    refuse_symlink(dir)?;
    refuse_symlink(&path)?;
    let old = read_editor_file(&path).map_err(|refusal| match refusal {
        Refusal::Io(error) => io(error),
        refusal => SetupError::Unreadable(path.clone(), refusal),
    })?;
    let by_hand = || SetupError::NotJson(path.clone(), key, by_hand.clone());
    let mut document = match &old {
        Some(text) if !text.trim().is_empty() => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            _ => return Err(by_hand()),
        },
        _ => Map::new(),
    };
    match edit(&mut document) {
        None => return Err(by_hand()),
        Some(false) => {
            return Ok(Outcome {
                path,
                changed: false,
                backup: None,
            });
        }
        Some(true) => {}
    }
    let mut text =
        serde_json::to_string_pretty(&Value::Object(document)).map_err(|e| io(e.into()))?;
    text.push('\n');
    std::fs::create_dir_all(dir).map_err(io)?;
    let backup = match old {
        Some(old) => {
            let backup = sibling(&path, ".bak");
            write_new(&backup, &old).map_err(io)?;
            Some(backup)
        }
        None => None,
    };
    // Written beside, then renamed over: the editor never reads half a file.
    let temporary = sibling(&path, ".xfile-tmp");
    write_new(&temporary, &text).map_err(io)?;
    std::fs::rename(&temporary, &path).map_err(io)?;
    Ok(Outcome {
        path,
        changed: true,
        backup,
    })
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes `text` to a new file at `path`, replacing a regular file there
/// but never following a link planted in its place.
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} is in the way", path.display()),
            ));
        }
        Err(_) => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(text.as_bytes())
}

/// The command editors should start: this very binary, by absolute path.
pub fn this_binary() -> String {
    std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| SERVER.to_string())
}
