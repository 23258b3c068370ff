//! The record of the AS master secret's last rotation, beside `master_secret_file`, which
//! every process of the AS that derives DRKey keys reads at its start:
//!
//! - `<master_secret_file>.previous`: the secret the rotation replaced (hex, mode 0600);
//! - `<master_secret_file>.rotated_at`: when (Unix seconds, mode 0600 like its neighbour).
//!
//! The router that takes the rotation (`PUT /v1/keys`) writes both before the new secret
//! and removes them once neither its overlap nor DRKey needs the previous secret any more.
//! From them [`load`] builds the [`RotatingSecret`] that picks each DRKey epoch's master
//! secret, so the control service, the routers, the GLWP service and the Z-Lane gateway all
//! derive the same keys for an epoch, before and after the rotation.

use std::path::{Path, PathBuf};

use aviary_scion::drkey::{EpochSchedule, RotatingSecret};

use crate::config::read_secret;
use crate::files;
use crate::topology::ConfigError;

/// Where the secret a rotation replaced is kept.
pub fn previous_secret_file(master_secret_file: &Path) -> PathBuf {
    beside(master_secret_file, ".previous")
}

/// Where the instant of the rotation is kept.
pub fn rotated_at_file(master_secret_file: &Path) -> PathBuf {
    beside(master_secret_file, ".rotated_at")
}

fn beside(master_secret_file: &Path, suffix: &str) -> PathBuf {
    let mut name = master_secret_file.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// Writes the record of a rotation at `rotated_at_s` that replaced `previous`.
pub fn keep(master_secret_file: &Path, previous: &[u8], rotated_at_s: u64) -> std::io::Result<()> {
    files::write_secret(&previous_secret_file(master_secret_file), format!("{}\n", hex::encode(previous)).as_bytes())?;
    files::write_secret(&rotated_at_file(master_secret_file), format!("{rotated_at_s}\n").as_bytes())
}

/// Removes the record (what is not there is not an error).
pub fn forget(master_secret_file: &Path) -> std::io::Result<()> {
    for f in [rotated_at_file(master_secret_file), previous_secret_file(master_secret_file)] {
        match std::fs::remove_file(&f) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// The instant recorded for a rotation from `previous` to `next` if another process of the
/// AS (a router sharing the secret files) took that very rotation already: the AS's
/// processes must all use one instant.
pub fn recorded_instant(master_secret_file: &Path, previous: &[u8], next: &[u8]) -> Option<u64> {
    let read_hex = |p: &Path| std::fs::read_to_string(p).ok().and_then(|t| hex::decode(t.trim()).ok());
    let same = read_hex(master_secret_file).as_deref() == Some(next)
        && read_hex(&previous_secret_file(master_secret_file)).as_deref() == Some(previous);
    same.then(|| std::fs::read_to_string(rotated_at_file(master_secret_file)).ok()?.trim().parse().ok()).flatten()
}

/// Until when (Unix ns) the previous secret of a rotation at `rotated_at_s` is needed by the
/// DRKey keys of the AS's epochs `schedule` (every process of the AS states the same).
pub fn drkey_needs_previous_until_ns(rotated_at_s: u64, schedule: EpochSchedule) -> u64 {
    RotatingSecret::previous_needed_until_s(rotated_at_s, schedule).saturating_mul(1_000_000_000)
}

/// The AS master secret of `master_secret_file` (the config `config`'s `field`) with the
/// record of its last rotation, if there is one. A record whose previous secret cannot be
/// read is an error naming both files.
pub fn load(config: &Path, field: &str, master_secret_file: &Path) -> Result<RotatingSecret, ConfigError> {
    let current = read_secret(config, field, master_secret_file)?;
    let at_file = rotated_at_file(master_secret_file);
    let bad = |why: String| ConfigError::new(config.display(), field, format!("{}: {why}", at_file.display()));
    let rotated_at_s = match std::fs::read_to_string(&at_file) {
        Ok(text) => Some(text.trim().parse::<u64>().map_err(|e| bad(format!("not Unix seconds: {e}")))?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(bad(e.to_string())),
    };
    let secret = match rotated_at_s {
        Some(at) => {
            let previous_file = previous_secret_file(master_secret_file);
            let field = format!("{field} (previous secret {}, rotated at {at})", previous_file.display());
            let previous = read_secret(config, &field, &previous_file)?;
            RotatingSecret::rotated(&current, &previous, at)
        }
        None => RotatingSecret::new(&current),
    };
    secret.map_err(|e| ConfigError::new(config.display(), field, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_record_loads_forgotten_it_does_not_and_a_broken_one_names_its_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = aviary_scratch::ScratchDir::new("secret-rotation");
        let master = dir.join("master.key");
        let cfg = dir.join("control.toml");
        std::fs::write(&master, hex::encode([2u8; 16])).unwrap();
        assert_eq!(load(&cfg, "master_secret_file", &master).unwrap().rotated_at_s(), None);

        keep(&master, &[1; 16], 1234).unwrap();
        for f in [previous_secret_file(&master), rotated_at_file(&master)] {
            assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let s = load(&cfg, "master_secret_file", &master).unwrap();
        assert_eq!((s.current(), s.rotated_at_s()), (&[2u8; 16][..], Some(1234)));
        assert_eq!(recorded_instant(&master, &[1; 16], &[2; 16]), Some(1234));
        assert_eq!(recorded_instant(&master, &[3; 16], &[2; 16]), None);

        std::fs::remove_file(previous_secret_file(&master)).unwrap();
        let e = load(&cfg, "master_secret_file", &master).unwrap_err().to_string();
        assert!(e.contains("control.toml") && e.contains("master.key.previous"), "{e}");
        std::fs::write(rotated_at_file(&master), "soon").unwrap();
        let e = load(&cfg, "master_secret_file", &master).unwrap_err().to_string();
        assert!(e.contains("master.key.rotated_at") && e.contains("Unix seconds"), "{e}");

        forget(&master).unwrap();
        forget(&master).unwrap();
        assert_eq!(load(&cfg, "master_secret_file", &master).unwrap().rotated_at_s(), None);
    }
}
