//! Where the registry lives: `$XFILE_HOME`, else `xfile/` in the user's
//! data directory (`$XDG_DATA_HOME`, usually `~/.local/share`), created
//! without writing through a symbolic link.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::error::RegistryError;

/// The file name of the database inside the registry directory.
pub(crate) const FILE_NAME: &str = "registry.sqlite3";

/// The registry directory the environment names; not created yet.
pub(crate) fn default_dir() -> Result<PathBuf, RegistryError> {
    match std::env::var_os("XFILE_HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home)),
        _ => dirs::data_dir()
            .map(|data| data.join("xfile"))
            .ok_or(RegistryError::NoDataDir),
    }
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Makes sure `dir` is a real directory, creating it (private to the user)
/// when missing, and returns its canonical path, so that nothing opened
/// below it goes through a link.
pub(crate) fn prepare_dir(dir: &Path) -> Result<PathBuf, RegistryError> {
    let failed = |source| RegistryError::Directory {
        path: dir.to_path_buf(),
        source,
    };
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(RegistryError::Symlink(dir.to_path_buf()));
        }
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(failed(ErrorKind::NotADirectory.into())),
        Err(error) if error.kind() == ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                if is_symlink(parent) {
                    return Err(RegistryError::Symlink(parent.to_path_buf()));
                }
                fs::create_dir_all(parent).map_err(failed)?;
            }
            let mut builder = fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(dir) {
                Ok(()) => {}
                // Another xfile created it meanwhile: check it again below.
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {}
                Err(error) => return Err(failed(error)),
            }
            if is_symlink(dir) {
                return Err(RegistryError::Symlink(dir.to_path_buf()));
            }
        }
        Err(error) => return Err(failed(error)),
    }
    let dir = dir.canonicalize().map_err(failed)?;
    // The database and the files SQLite keeps beside it in WAL mode.
    for suffix in ["", "-wal", "-shm"] {
        let file = dir.join(format!("{FILE_NAME}{suffix}"));
        if is_symlink(&file) {
            return Err(RegistryError::Symlink(file));
        }
    }
    Ok(dir)
}
