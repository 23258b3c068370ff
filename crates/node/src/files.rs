//! Writing files whole, and writing files that hold secrets.
//!
//! Every file written here goes to a temporary file beside it, is synced, renamed into place
//! and the rename synced, so a reader, or a process restarted after a crash or power loss,
//! finds the old file or the new one, never half of one.
//!
//! Secrets (ledger account keys, AS keys, CA keys, master secrets and the `.previous` one
//! kept over a key rotation, operator tokens, reservation files with their A_K, the AS
//! service's state) are written only through [`write_secret`]: the file is created with mode
//! 0600, so it is never readable by others, not even between its creation and a later chmod.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Mode of every secret file: read and write for its owner only.
pub const SECRET_MODE: u32 = 0o600;
/// Mode of files anyone on the machine may read.
pub const PUBLIC_MODE: u32 = 0o644;

/// Replaces `path` with `bytes`, atomically, as a secret file (mode 0600).
pub fn write_secret(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomically(path, bytes, SECRET_MODE)
}

/// Makes an existing secret file readable by its owner only: one kept from a run directory
/// that an earlier version wrote with the default mode.
pub fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SECRET_MODE))
}

/// Replaces `path` with `bytes`, atomically; a new file gets `mode`.
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = temporary(path);
    // A temporary file left by a crash keeps its own mode if opened again: start afresh, so
    // that the file renamed into place is the one created here with `mode`.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut f = OpenOptions::new().write(true).create_new(true).mode(mode).open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn secrets_are_0600_even_over_a_stale_temporary_or_a_public_file() {
        let dir = aviary_scratch::ScratchDir::new("files");
        let f = dir.join("master.key");
        // A world-readable leftover of a crash, and an old world-readable secret.
        std::fs::write(temporary(&f), "stale").unwrap();
        std::fs::set_permissions(temporary(&f), std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_secret(&f, b"new").unwrap();
        assert_eq!((std::fs::read(&f).unwrap(), mode(&f)), (b"new".to_vec(), 0o600));
        assert!(!temporary(&f).exists());
        write_atomically(&dir.join("report.json"), b"{}", PUBLIC_MODE).unwrap();
        assert_eq!(mode(&dir.join("report.json")), 0o644);
        restrict(&dir.join("report.json")).unwrap();
        assert_eq!(mode(&dir.join("report.json")), 0o600);
    }
}
