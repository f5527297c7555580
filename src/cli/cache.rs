//! `xfile cache info|clean`: the warm-start cache of one root, without
//! indexing it.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use super::{Command, Failure, print_relationships};
use crate::service::warm;
use crate::service::warm::answers::{Miss, Prebuilt};
use crate::workspace;

#[derive(Subcommand)]
pub(super) enum CacheCommand {
    /// Where the cache is, its size, how many files it holds and whether
    /// this xfile would use it.
    Info,
    /// Remove the cache (the next start indexes from scratch).
    Clean,
}

pub(super) fn run(command: &CacheCommand, root: &Path, json: bool) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match command {
        CacheCommand::Info => {
            let info = warm::info(root);
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&info)?)?;
            } else if !info.exists {
                writeln!(out, "{}: no cache", info.path)?;
            } else {
                let bytes = info.bytes.unwrap_or(0);
                let state = match (&info.files, &info.problem) {
                    (Some(files), _) => format!("{files} files, used by this xfile"),
                    (None, Some(problem)) => format!("not used: {problem}"),
                    (None, None) => "not used".to_string(),
                };
                writeln!(out, "{}: {} KiB, {state}", info.path, bytes.div_ceil(1024))?;
                let answers = &info.answers;
                match (&answers.files, &answers.problem) {
                    (Some(files), _) => writeln!(
                        out,
                        "answers: {files} files, current (deps and dependents answer without indexing)"
                    )?,
                    (None, Some(problem)) => writeln!(out, "answers: not used: {problem}")?,
                    (None, None) => writeln!(out, "answers: not used")?,
                }
            }
        }
        CacheCommand::Clean => {
            let removed = warm::clean(root)?;
            if json {
                writeln!(out, "{}", serde_json::json!({ "removed": removed }))?;
            } else if removed {
                writeln!(out, "removed {}", root.join(warm::DIR).display())?;
            } else {
                writeln!(out, "no cache to remove")?;
            }
        }
    }
    Ok(())
}

/// `deps` and `dependents` answered from the warm-start answers, when they
/// hold for the tree as it is (`warm::answers`); `false` when the command
/// must index (another command, no usable answers, or a FILE they do not
/// know, whose error the index gives).
pub(super) fn answered(command: &Command, root: &Path, json: bool) -> Result<bool, Failure> {
    let (file, symbol, dependents) = match command {
        Command::Deps { file } => (file, None, false),
        Command::Dependents { file, symbol } => (file, symbol.as_deref(), true),
        _ => return Ok(false),
    };
    let Ok(root) = workspace::canonical_root(root) else {
        return Ok(false);
    };
    let prebuilt = match Prebuilt::open(&root) {
        Ok(prebuilt) => prebuilt,
        Err(miss @ Miss::Damaged) => {
            eprintln!(
                "xfile: {}/{} was not used: {miss}; rebuilding it",
                warm::DIR,
                warm::answers::ANSWERS
            );
            return Ok(false);
        }
        Err(_) => return Ok(false),
    };
    let Ok(file) = workspace::resolve_cli_path(&root, &std::env::current_dir()?, file) else {
        return Ok(false);
    };
    let list = match (dependents, symbol) {
        (false, _) => prebuilt.dependencies(&file),
        (true, None) => prebuilt.dependents(&file),
        (true, Some(symbol)) => prebuilt.dependents(&file).map(|mut list| {
            crate::service::of_symbol(&mut list, symbol);
            list
        }),
    };
    if prebuilt.damaged() {
        eprintln!(
            "xfile: {}/{} was not used: a record does not check out; rebuilding it",
            warm::DIR,
            warm::answers::ANSWERS
        );
    }
    let Some(list) = list else {
        return Ok(false);
    };
    print_relationships(&mut std::io::stdout().lock(), &list, json)?;
    Ok(true)
}
