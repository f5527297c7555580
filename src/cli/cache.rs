//! `xfile cache info|clean`: the warm-start cache of one root, without
//! indexing it.

use std::io::Write;
use std::path::Path;

use clap::Subcommand;

use super::Failure;
use crate::service::warm;

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
