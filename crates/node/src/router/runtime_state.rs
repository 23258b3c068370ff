//! What an operator changed on a running router through its management API, kept so that a
//! restarted router comes back as it was left: link capacities and delays and the mechanisms'
//! settings in `<config>.runtime.json` beside the config (written atomically after every
//! change, replayed at start), a new master secret in the config's `master_secret_file` itself
//! (mode 0600), where every process of the AS reads it.
//!
//! A key rotation also keeps the secret it replaced, for its overlap and for as long as DRKey
//! epochs derive from it: in `<master_secret_file>.previous` with the rotation's instant in
//! `<master_secret_file>.rotated_at` ([`crate::secret_rotation`]; mode 0600, like the secret
//! itself, and removed when neither needs them), with the deadlines in the runtime state. The
//! previous secret cannot be derived from the new one (independent secrets are the point of
//! rotating), so a router restarted meanwhile reads it back to verify what was issued under it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aviary_scion::drkey::EpochSchedule;
use serde::{Deserialize, Serialize};

use super::management::Command;
use crate::files;
use crate::topology::ConfigError;

/// A link's capacity and delay as last set at runtime.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
}

/// Every runtime change that outlives the process, merged: the latest value of each field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeState {
    #[serde(default)]
    pub links: BTreeMap<u16, LinkChange>,
    /// Per mechanism, its control requests merged field by field.
    #[serde(default)]
    pub mechanisms: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// The last key rotation while its overlap lasts (the previous secret is in
    /// [`crate::secret_rotation::previous_secret_file`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_rotation: Option<KeyRotation>,
}

/// A key rotation whose previous secret is still needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRotation {
    /// Until when (Unix ns) hop-field and flyover keys derived from the previous secret verify.
    pub previous_until_ns: u64,
    /// When the rotation was made (Unix s); absent in records of versions that did not keep
    /// DRKey epochs on the previous secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotated_at_s: Option<u64>,
}

impl KeyRotation {
    /// Until when (Unix ns) the previous secret is kept: the overlap, or longer while DRKey
    /// epochs of the AS's `schedule` derive from it.
    pub fn keep_until_ns(&self, schedule: EpochSchedule) -> u64 {
        let drkey =
            self.rotated_at_s.map_or(0, |at| crate::secret_rotation::drkey_needs_previous_until_ns(at, schedule));
        self.previous_until_ns.max(drkey)
    }
}

/// Where the runtime state of the router configured by `config` lives.
pub fn state_file(config: &Path) -> PathBuf {
    let mut name = config.file_name().unwrap_or_default().to_os_string();
    name.push(".runtime.json");
    config.with_file_name(name)
}

impl RuntimeState {
    /// The state in `path`, empty if there is none; a file that cannot be read is an error
    /// naming it (a router must not come up silently without the operator's changes).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                let field = e.to_string().split('`').nth(1).unwrap_or("(document)").to_owned();
                ConfigError::new(path.display(), field, e.to_string())
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(ConfigError::new(path.display(), "(file)", e.to_string())),
        }
    }

    /// The changes to replay at start, links first.
    pub fn commands(&self) -> Vec<Command> {
        let links =
            self.links.iter().map(|(&id, l)| Command::Link { id, capacity_bps: l.capacity_bps, delay_ms: l.delay_ms });
        let mechs = self
            .mechanisms
            .iter()
            .map(|(name, m)| Command::Mechanism { name: name.clone(), request: serde_json::Value::Object(m.clone()) });
        links.chain(mechs).collect()
    }

    /// Merges an applied change (a new master secret itself is kept elsewhere: [`write_secret`]).
    pub fn record(&mut self, cmd: &Command) {
        match cmd {
            Command::Link { id, capacity_bps, delay_ms } => {
                let l = self.links.entry(*id).or_default();
                l.capacity_bps = capacity_bps.or(l.capacity_bps);
                l.delay_ms = delay_ms.or(l.delay_ms);
            }
            Command::Mechanism { name, request } => {
                if let Some(fields) = request.as_object() {
                    self.mechanisms.entry(name.clone()).or_default().extend(fields.clone());
                }
            }
            Command::MasterSecret { previous_until_ns, rotated_at_s, .. } => {
                let rotated_at_s = Some(*rotated_at_s);
                self.key_rotation = Some(KeyRotation { previous_until_ns: *previous_until_ns, rotated_at_s });
            }
        }
    }

    /// Writes the state to `path` atomically (a crash leaves the old or the new file).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        files::write_atomically(path, format!("{text}\n").as_bytes(), files::PUBLIC_MODE)
    }
}

/// Replaces the secret file with `secret` (hex, mode 0600), atomically.
pub fn write_secret(path: &Path, secret: &[u8]) -> std::io::Result<()> {
    files::write_secret(path, format!("{}\n", hex::encode(secret)).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_merge_field_by_field_and_round_trip() {
        let mut s = RuntimeState::default();
        s.record(&Command::Link { id: 2, capacity_bps: Some(0), delay_ms: None });
        s.record(&Command::Link { id: 2, capacity_bps: None, delay_ms: Some(5.0) });
        s.record(&Command::Mechanism { name: "hummingbird".into(), request: serde_json::json!({"burst_ms": 20.0}) });
        s.record(&Command::MasterSecret { secret: vec![1; 16], previous_until_ns: 7, rotated_at_s: 3 });
        assert_eq!(s.links[&2], LinkChange { capacity_bps: Some(0), delay_ms: Some(5.0) });
        assert_eq!(s.key_rotation, Some(KeyRotation { previous_until_ns: 7, rotated_at_s: Some(3) }));
        // One-day DRKey epochs: the epoch of the rotation and the next one take the previous secret.
        assert_eq!(
            s.key_rotation.unwrap().keep_until_ns(EpochSchedule::SCION_DEFAULT),
            (2 * 86400 + 5) * 1_000_000_000
        );
        // The AS's epochs, not a day: three-day epochs keep the secret three times as long.
        let three_days = EpochSchedule::new(3 * 86400, 5).unwrap();
        assert_eq!(s.key_rotation.unwrap().keep_until_ns(three_days), (6 * 86400 + 5) * 1_000_000_000);
        let dir = aviary_scratch::ScratchDir::new("runtime");
        let path = state_file(&dir.join("router.toml"));
        assert_eq!(path, dir.join("router.toml.runtime.json"));
        assert_eq!(RuntimeState::load(&path).unwrap(), RuntimeState::default());
        s.save(&path).unwrap();
        let back = RuntimeState::load(&path).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.commands().len(), 2);
        std::fs::write(&path, r#"{"links": {"2": {"capacity": 1}}}"#).unwrap();
        let e = RuntimeState::load(&path).unwrap_err().to_string();
        assert!(e.contains("router.toml.runtime.json") && e.contains("capacity"), "{e}");
    }

    #[test]
    fn a_secret_is_written_private_and_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = aviary_scratch::ScratchDir::new("runtime-secret");
        let f = dir.join("master.key");
        write_secret(&f, &[0xab; 32]).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap().trim(), "ab".repeat(32));
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
