//! `xfile cache info|clean`: the warm-start cache of one root, without
//! indexing it.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use super::{Command, Failure, print_relationships};
use crate::service::warm::answers::{Miss, Prebuilt};
use crate::service::{blame_store, warm};
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
            let blames = blame_store::usage(root);
            if json {
                let mut value = serde_json::to_value(&info)?;
                if let (Some(object), Some(blames)) = (value.as_object_mut(), &blames) {
                    object.insert("blames".into(), serde_json::to_value(blames)?);
                }
                writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
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
            if !json && info.temporary.files > 0 {
                writeln!(out, "{}", temporary_text(&info.temporary))?;
            }
            if !json && let Some(blames) = &blames {
                writeln!(out, "{}", blames_text(root, blames))?;
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

/// The temporary files in a line: how many, their size, and how many no
/// writer will finish.
fn temporary_text(temporary: &warm::Leftovers) -> String {
    let mut text = format!(
        "temporary files: {}, {} KiB",
        temporary.files,
        temporary.bytes.div_ceil(1024)
    );
    if temporary.abandoned > 0 {
        text.push_str(&format!(
            "; {} left by writers that are gone (removed at the next start, or by `xfile cache clean`)",
            temporary.abandoned
        ));
    }
    let live = temporary.files - temporary.abandoned;
    if live > 0 {
        text.push_str(&format!("; {live} being written"));
    }
    text
}

/// The kept blames and the history index in a line: sizes, and whether
/// the index is for the repository's HEAD now.
fn blames_text(root: &Path, blames: &blame_store::Usage) -> String {
    let mut text = format!(
        "blames: {} files kept, {} KiB",
        blames.blames,
        blames.blame_bytes.div_ceil(1024)
    );
    match &blames.index {
        None => text.push_str("; no history index"),
        Some(index) => {
            let kb = index.bytes.div_ceil(1024);
            let head = crate::git::Repo::open(root)
                .ok()
                .and_then(|repo| repo.head_id())
                .map(|id| id.to_string());
            let state = match (&index.head, head) {
                (None, _) => "damaged, rebuilt by the next blame".to_string(),
                (Some(at), Some(now)) if *at == now => "current".to_string(),
                (Some(at), _) => format!(
                    "for {}, brought forward by the next blame",
                    at.get(..10).unwrap_or(at)
                ),
            };
            text.push_str(&format!(
                "; history index: {} commits, {kb} KiB, {state}",
                index.commits.unwrap_or(0)
            ));
        }
    }
    text
}

/// `deps` and `dependents` answered from the warm-start answers, when they
/// hold for the tree as it is (`warm::answers`); `false` when the command
/// must index (another command, no usable answers, or a FILE they do not
/// know or a `--symbol` it does not define, whose error the index gives,
/// as a fresh index would: the answers never stand in for an error).
pub(super) fn answered(command: &Command, root: &Path, json: bool) -> Result<bool, Failure> {
    let (file, symbol, dependents) = match command {
        Command::Deps { file, .. } => (file, None, false),
        Command::Dependents { file, symbol, .. } => (file, symbol.as_deref(), true),
        _ => return Ok(false),
    };
    let Ok(root) = workspace::canonical_root(root) else {
        return Ok(false);
    };
    warm::sweep_leftovers(&root);
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
    let Ok(file) = super::file_arg(&root, file) else {
        return Ok(false);
    };
    let list = match (dependents, symbol) {
        (false, _) => prebuilt.dependencies(&file),
        (true, None) => prebuilt.dependents(&file),
        (true, Some(symbol)) => prebuilt.dependents_of_symbol(&file, symbol),
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
