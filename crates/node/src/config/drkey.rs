//! The DRKey tables of the configs: the control service's `[drkey]` (its Level-1 service and
//! the AS's epochs), the `[drkey_epochs]` every other process of the AS that derives keys must
//! state alike, and the file of Level-1 keys other ASes issued to this one.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use aviary_scion::drkey::{Level1Key, KEY_LEN};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use super::ConfigError;
use crate::topology::read_toml;

/// The AS's DRKey epochs as a process that derives the AS's DRKey keys from its master
/// secret states them: the `[drkey_epochs]` table of the router and the Z-Lane gateway, with
/// the fields (and defaults) of the control service's `[drkey]`. Every such process of an AS
/// must state the same epochs as its DRKey service, or it derives keys nobody was given;
/// `aviary run` writes one `[as.drkey]` of the topology into all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DrkeyEpochs {
    /// Length of the AS's epochs, aligned to multiples of it since the Unix epoch.
    pub epoch_duration_s: u32,
    /// How long into an epoch the previous epoch's keys are still accepted.
    pub grace_s: u32,
}

impl Default for DrkeyEpochs {
    /// SCION's: one-day epochs, 5 s grace.
    fn default() -> Self {
        Self { epoch_duration_s: default_epoch_duration(), grace_s: default_grace() }
    }
}

impl DrkeyEpochs {
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The schedule, or an error naming `file` and the field of `table` at fault.
    pub fn schedule(&self, file: &str, table: &str) -> Result<aviary_scion::drkey::EpochSchedule, ConfigError> {
        if self.epoch_duration_s == 0 {
            return Err(ConfigError::new(file, format!("{table}.epoch_duration_s"), "must be positive"));
        }
        aviary_scion::drkey::EpochSchedule::new(self.epoch_duration_s, self.grace_s)
            .map_err(|e| ConfigError::new(file, format!("{table}.grace_s"), e.to_string()))
    }
}

/// An ISD root certificate the DRKey service trusts: it certifies the control services of
/// the ASes of that ISD (and only those: a peer's certificate must chain to the root of
/// the ISD that the peer's ISD-AS names).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRoot {
    pub isd: u16,
    /// PEM file of the root certificate.
    pub cert_file: PathBuf,
}

/// The `[drkey]` table of the control service: the Level-1 service for other ASes' control
/// services (TLS, client certificates required) and the epochs of this AS's keys.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrkeyConfig {
    /// Socket of the Level-1 service (TLS).
    pub listen: SocketAddr,
    /// PEM file: this control service's certificate (first) and any intermediates.
    pub cert_file: PathBuf,
    /// PEM file (PKCS#8): the certificate's private key.
    pub key_file: PathBuf,
    /// The ISD roots whose control services may fetch Level-1 keys (and whose control
    /// services this one fetches from).
    pub trust_roots: Vec<TrustRoot>,
    /// Length of this AS's DRKey epochs, aligned to multiples of it since the Unix epoch
    /// (SCION's default: one day).
    #[serde(default = "default_epoch_duration")]
    pub epoch_duration_s: u32,
    /// How long into an epoch the previous epoch's keys are still served and accepted.
    #[serde(default = "default_grace")]
    pub grace_s: u32,
}

fn default_epoch_duration() -> u32 {
    aviary_scion::drkey::EpochSchedule::DEFAULT_DURATION_S
}

fn default_grace() -> u32 {
    aviary_scion::drkey::EpochSchedule::GRACE_PERIOD_S
}

impl DrkeyConfig {
    /// The AS's epochs as the control service states them.
    pub fn epochs(&self) -> DrkeyEpochs {
        DrkeyEpochs { epoch_duration_s: self.epoch_duration_s, grace_s: self.grace_s }
    }

    /// The epoch schedule of the config; an error names the offending field.
    pub fn schedule(&self, file: &str) -> Result<aviary_scion::drkey::EpochSchedule, ConfigError> {
        self.epochs().schedule(file, "drkey")
    }
}

/// The Level-1 keys other ASes issued to this one, as a file (`[pathval] level1_keys_file`):
/// `[[key]]` entries with the issuer, the DRKey epoch and the key in hex.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level1KeysFile {
    #[serde(rename = "key", default)]
    pub keys: Vec<Level1KeyEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level1KeyEntry {
    pub issuer: IsdAsn,
    pub epoch_begin: u32,
    pub epoch_end: u32,
    /// The key, 16 bytes in hex.
    pub key: String,
}

impl Level1KeysFile {
    /// The keys valid at `now_s`; an error names the file and the entry that cannot be read.
    pub fn load_at(path: &Path, now_s: u64) -> Result<Vec<(IsdAsn, Level1Key)>, ConfigError> {
        let f: Self = read_toml(path)?;
        let mut out = Vec::new();
        for (i, k) in f.keys.iter().enumerate() {
            let bytes: [u8; KEY_LEN] = hex::decode(k.key.trim())
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| ConfigError::new(path.display(), format!("key[{i}].key"), "not 16 bytes in hex"))?;
            if (u64::from(k.epoch_begin)..u64::from(k.epoch_end)).contains(&now_s) {
                out.push((k.issuer, Level1Key::from_bytes(bytes)));
            }
        }
        Ok(out)
    }
}
