//! The gateway's rates (the Z-Lane paper, §4.6), as written in its `[zlane_gateway]` table,
//! and their validation.
//!
//! ```toml
//! [zlane_gateway]
//! guarantee_bps = 2000000     # what the AS's hosts may send as guaranteed traffic in total
//! burst_bytes = 15000
//! over_rate = "unflagged"     # or "drop"
//! drkey_protocol = 42
//! suppress_duplicates = true  # the default
//! [[zlane_gateway.hosts]]
//! prefix = "10.0.0.1"         # one host
//! rate_bps = 500000
//! [[zlane_gateway.hosts]]
//! prefix = "10.0.1.0/24"      # a group of hosts sharing one rate
//! ```
//!
//! Every entry is one rate group with one token bucket: a single address is one host, a
//! prefix a group of hosts (the paper's "groups of end hosts and AS services"). An entry
//! without `rate_bps` gets an equal split of what the explicit rates leave of the guarantee;
//! with no explicit rates at all, every entry gets `guarantee / entries`. A host covered by no
//! entry has no rate: all of its traffic is over-rate. A host in several prefixes belongs to
//! the longest.

use std::collections::HashSet;

use aviary_qos::Rate;
pub use aviary_scion::Prefix;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The burst of every group's bucket unless configured: ten full-size packets.
pub const DEFAULT_BURST_BYTES: u16 = 15_000;

/// What the gateway does with a packet beyond its host's rate (§4.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverRatePolicy {
    /// Forward it without the QoS flag: authenticated best effort (class A at routers).
    #[default]
    Unflagged,
    /// Drop it.
    Drop,
}

/// One `[[zlane_gateway.hosts]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRateConfig {
    /// An address or `addr/len`.
    pub prefix: String,
    /// The group's rate; default: an equal split of what explicit rates leave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_bps: Option<u64>,
}

/// The `[zlane_gateway]` table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// The guaranteed rate the AS hands out to its hosts in total.
    pub guarantee_bps: u64,
    /// The burst of every group's bucket.
    #[serde(default = "default_burst")]
    pub burst_bytes: u16,
    #[serde(default)]
    pub over_rate: OverRatePolicy,
    /// The DRKey protocol of the ASes' EPIC keys (the routers' `zlane.drkey_protocol`).
    pub drkey_protocol: u16,
    /// Drop replays of verified packets before they are charged to their host (a Bloom
    /// filter over the 4 s freshness span, as the routers'). Off, a replay inside the AS
    /// drains its host's rate, though routers still drop it.
    #[serde(default = "default_true")]
    pub suppress_duplicates: bool,
    #[serde(default)]
    pub hosts: Vec<HostRateConfig>,
}

fn default_true() -> bool {
    true
}

fn default_burst() -> u16 {
    DEFAULT_BURST_BYTES
}

/// A `[zlane_gateway]` table that cannot be used; [`GatewayConfigError::field`] names the field.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GatewayConfigError {
    #[error("hosts[{index}].prefix: {reason}")]
    BadPrefix { index: usize, reason: String },
    #[error("hosts[{index}].prefix: {prefix} is listed twice")]
    DuplicatePrefix { index: usize, prefix: Prefix },
    #[error("hosts[{index}].rate_bps: {bps} bit/s is above the bucket's maximum of {max} bit/s", max = Rate::MAX.bps())]
    RateTooHigh { index: usize, bps: u64 },
    #[error("hosts: explicit rates add up to {sum} bit/s, more than guarantee_bps = {guarantee}")]
    Oversubscribed { sum: u64, guarantee: u64 },
    #[error("burst_bytes: must be positive")]
    ZeroBurst,
}

impl GatewayConfigError {
    /// The configuration field at fault, e.g. `hosts[1].rate_bps`.
    pub fn field(&self) -> String {
        match self {
            Self::BadPrefix { index, .. } | Self::DuplicatePrefix { index, .. } => format!("hosts[{index}].prefix"),
            Self::RateTooHigh { index, .. } => format!("hosts[{index}].rate_bps"),
            Self::Oversubscribed { .. } => "hosts".into(),
            Self::ZeroBurst => "burst_bytes".into(),
        }
    }
}

/// The rate groups of a valid configuration, in configuration order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RatePlan {
    pub groups: Vec<(Prefix, Rate)>,
}

impl GatewayConfig {
    /// Checks the table and resolves every group's rate.
    pub fn plan(&self) -> Result<RatePlan, GatewayConfigError> {
        if self.burst_bytes == 0 {
            return Err(GatewayConfigError::ZeroBurst);
        }
        let mut prefixes: Vec<Prefix> = Vec::with_capacity(self.hosts.len());
        // A set, not a scan of `prefixes`: an AS may list tens of thousands of hosts.
        let mut seen = HashSet::with_capacity(self.hosts.len());
        for (index, h) in self.hosts.iter().enumerate() {
            let p: Prefix = h.prefix.parse().map_err(|reason| GatewayConfigError::BadPrefix { index, reason })?;
            if !seen.insert(p) {
                return Err(GatewayConfigError::DuplicatePrefix { index, prefix: p });
            }
            if let Some(bps) = h.rate_bps.filter(|b| Rate::from_bps(*b).is_err()) {
                return Err(GatewayConfigError::RateTooHigh { index, bps });
            }
            prefixes.push(p);
        }
        let explicit: u64 = self.hosts.iter().filter_map(|h| h.rate_bps).sum();
        if explicit > self.guarantee_bps {
            return Err(GatewayConfigError::Oversubscribed { sum: explicit, guarantee: self.guarantee_bps });
        }
        let implicit = self.hosts.iter().filter(|h| h.rate_bps.is_none()).count() as u64;
        let share = (self.guarantee_bps - explicit).checked_div(implicit).unwrap_or(0);
        let groups = prefixes
            .into_iter()
            .zip(&self.hosts)
            // Rounded down to the bucket's units; an equal share above the bucket's maximum
            // is held to it.
            .map(|(p, h)| (p, Rate::from_bps(h.rate_bps.unwrap_or(share)).unwrap_or(Rate::MAX)))
            .collect();
        Ok(RatePlan { groups })
    }
}
