//! Whether xfile can write its logs under a root: shared by `/health` and
//! `doctor`.

use std::path::Path;

use crate::service::jsonl::LOG_DIR;

/// `Ok` if `.cross_file_context_logs/` under `root` is a real directory
/// xfile may write to, or can be created; else what is wrong.
pub fn writable(root: &Path) -> Result<(), String> {
    let dir = root.join(LOG_DIR);
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(format!(
            "{LOG_DIR} is a symbolic link; xfile never writes through one"
        )),
        Ok(meta) if !meta.is_dir() => Err(format!("{LOG_DIR} is not a directory")),
        Ok(_) if !can_write(&dir) => Err(format!("{LOG_DIR} is not writable")),
        Ok(_) => Ok(()),
        Err(_) if !can_write(root) => {
            Err(format!("{LOG_DIR} is missing and the root is not writable"))
        }
        Err(_) => Ok(()),
    }
}

#[cfg(unix)]
fn can_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads a NUL-terminated path and nothing else.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(not(unix))]
fn can_write(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.permissions().readonly())
}
