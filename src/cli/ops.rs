//! The operations commands: `analyze-metrics`, `doctor`, `setup` and
//! `dashboard`, dispatched from `cli.rs` before any index is built.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::Failure;
use crate::ops::setup::{self, Editor};
use crate::ops::{analyze, doctor, session};
use crate::workspace;

#[derive(Subcommand)]
pub(super) enum OpsCommand {
    /// Aggregate session metrics (mean, median, p95), flag outlier
    /// sessions and suggest configuration values; FILES default to the
    /// root's .cross_file_context_logs/session_metrics.jsonl.
    AnalyzeMetrics { files: Vec<PathBuf> },
    /// Check the configuration, log directory, inotify limit, registry,
    /// cache and editor MCP configurations; print a fix for each problem.
    Doctor {
        /// Apply the safe fixes (xfile's own files only) without asking.
        #[arg(long)]
        fix: bool,
    },
    /// Write or update xfile's MCP server entry in an editor's project
    /// configuration (default: the editors already configured, else
    /// Claude Code's .mcp.json).
    Setup {
        #[arg(long, value_enum)]
        editor: Option<Editor>,
        /// Change the file without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Serve the read-only dashboard, /metrics and /health for the root
    /// (default 127.0.0.1:3456, or the next free port up to 3465).
    Dashboard {
        #[arg(long, value_name = "ADDR", value_parser = crate::http::address)]
        http: Option<SocketAddr>,
    },
}

pub(super) fn run(command: OpsCommand, root: &Path, json: bool) -> Result<(), Failure> {
    match command {
        OpsCommand::AnalyzeMetrics { files } => analyze_metrics(root, files, json),
        OpsCommand::Doctor { fix } => {
            let root = workspace::canonical_root(root)?;
            let checks = doctor::run(&root, fix);
            let mut out = std::io::stdout().lock();
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&checks)?)?;
            } else {
                let color =
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
                write!(out, "{}", doctor::render(&checks, color))?;
            }
            match checks.iter().any(|c| c.level == doctor::Level::Error) {
                true => Err(Failure {
                    message: "doctor found errors (see the fixes above)".to_string(),
                    status: 1,
                }),
                false => Ok(()),
            }
        }
        OpsCommand::Setup { editor, yes } => {
            let root = workspace::canonical_root(root)?;
            run_setup(&root, editor, yes)
        }
        OpsCommand::Dashboard { http } => {
            let root = workspace::canonical_root(root)?;
            crate::http::dashboard(root, http).map_err(|e| Failure {
                message: format!("dashboard stopped: {e}"),
                status: 1,
            })
        }
    }
}

fn analyze_metrics(root: &Path, files: Vec<PathBuf>, json: bool) -> Result<(), Failure> {
    let files = match files.is_empty() {
        true => vec![session::log_path(root)],
        false => files,
    };
    let mut records = Vec::new();
    for file in &files {
        if !file.is_file() {
            return Err(Failure {
                message: format!(
                    "{}: no such file; session metrics are written when an MCP session ends",
                    file.display()
                ),
                status: 2,
            });
        }
        records.extend(session::read(file));
    }
    let analysis = analyze::analyze(&records);
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&analysis)?)?;
    } else {
        write!(out, "{}", analyze::render(&analysis))?;
    }
    Ok(())
}

fn run_setup(root: &Path, editor: Option<Editor>, yes: bool) -> Result<(), Failure> {
    let editors = match editor {
        Some(editor) => vec![editor],
        None => {
            let configured: Vec<Editor> = Editor::ALL
                .into_iter()
                .filter(|e| root.join(e.file()).exists())
                .collect();
            match configured.is_empty() {
                true => vec![Editor::ClaudeCode],
                false => configured,
            }
        }
    };
    let command = setup::this_binary();
    let mut out = std::io::stdout().lock();
    for editor in editors {
        let path = root.join(editor.file());
        let question = match editor {
            Editor::ClaudeCode => format!(
                "Write the xfile entry to {} and its hook to {}?",
                path.display(),
                root.join(setup::HOOKS_FILE).display()
            ),
            _ => format!("Write the xfile entry to {}?", path.display()),
        };
        if !yes && !confirm(&question)? {
            writeln!(out, "{}: left as it is", path.display())?;
            continue;
        }
        let outcome = setup::apply(root, editor, &command).map_err(|e| Failure {
            message: e.to_string(),
            status: 2,
        })?;
        report(&mut out, outcome, "xfile entry")?;
        // Claude Code also runs xfile's hook after each Read, in the
        // settings beside its MCP configuration.
        if editor == Editor::ClaudeCode {
            let outcome = setup::apply_hook(root, &command).map_err(|e| Failure {
                message: e.to_string(),
                status: 2,
            })?;
            report(&mut out, outcome, "xfile hook")?;
        }
        writeln!(out, "Next: {}", editor.next_step())?;
    }
    Ok(())
}

/// One line on what `setup` did to a file.
fn report(out: &mut impl Write, outcome: setup::Outcome, what: &str) -> Result<(), Failure> {
    match (outcome.changed, outcome.backup) {
        (false, _) => writeln!(out, "{}: already set up", outcome.path.display())?,
        (true, Some(backup)) => writeln!(
            out,
            "{}: {what} written (the previous file is {})",
            outcome.path.display(),
            backup.display()
        )?,
        (true, None) => writeln!(out, "{}: created with the {what}", outcome.path.display())?,
    }
    Ok(())
}

/// Asks on the terminal; without one, `--yes` is needed.
fn confirm(question: &str) -> Result<bool, Failure> {
    if !std::io::stdin().is_terminal() {
        return Err(Failure {
            message: "not a terminal: pass --yes to write the configuration".to_string(),
            status: 2,
        });
    }
    eprint!("{question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
