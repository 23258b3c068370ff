//! The operator's guaranteed rates (the Z-Lane paper, §4.6), as written in a router's
//! `[zlane]` table, and their validation.
//!
//! ```toml
//! [zlane]
//! ases = ["1-ff00:0:110", "1-ff00:0:111", "1-ff00:0:112"]   # ASes of the router's ISD
//! isds = [2, 3]                                             # every other ISD
//! burst_bytes = 15000
//! drkey_protocol = 42
//! [zlane.rates]                                             # optional; the rest share equally
//! "1-ff00:0:111" = "40%"     # of μ_G, the guaranteed class's bound on the egress link
//! "2" = 3000000              # bit/s
//! ```
//!
//! The universe of origins is what `ases` and `isds` list (the runner fills them from the
//! topology: every AS of the router's ISD, the router's own included, and every other ISD).
//! Every listed origin gets a guarantee: its explicit rate, or an equal split of what the
//! explicit shares leave of μ_G. With no `rates` at all, every AS of the ISD and every other
//! ISD gets `μ_G / (ASes + ISDs)`: the paper's default configuration. An origin that is not
//! listed has no guarantee, so its QoS-marked traffic is authenticated best effort.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use aviary_qos::{ControlError, Rate, RateBound, ShareError};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The burst every guarantee's bucket holds unless configured: ten full-size packets.
pub const DEFAULT_BURST_BYTES: u16 = 15_000;

/// A source of guaranteed traffic at a router: an AS of the router's ISD, or another ISD.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    As(IsdAsn),
    Isd(u16),
}

impl Origin {
    /// What a packet from `src` is rate-limited as at a router of ISD `own_isd`: its AS inside
    /// the ISD, its ISD outside it.
    pub fn of(src: IsdAsn, own_isd: u16) -> Self {
        if src.isd() == own_isd {
            Origin::As(src)
        } else {
            Origin::Isd(src.isd())
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::As(ia) => write!(f, "{ia}"),
            Origin::Isd(isd) => write!(f, "{isd}"),
        }
    }
}

impl FromStr for Origin {
    type Err = String;

    /// An ISD-AS (`1-ff00:0:110`) or an ISD number (`2`).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.contains('-') {
            s.parse().map(Origin::As).map_err(|e| format!("{e}"))
        } else {
            s.parse().map(Origin::Isd).map_err(|_| format!("`{s}` is neither an ISD-AS nor an ISD number"))
        }
    }
}

/// A guaranteed rate: absolute, or a share of μ_G on the egress link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuaranteedRate {
    Bps(u64),
    /// Parts per million of μ_G.
    OfGuaranteedClass(u32),
}

impl GuaranteedRate {
    /// The bucket rate on a link whose guaranteed class gets `mu_g_bps`: rounded down to the
    /// bucket's 100 kbit/s units (a guarantee is never more than configured), at most the
    /// bucket's 6.5535 Gbit/s.
    pub fn resolve(self, mu_g_bps: u64) -> Rate {
        let bps = match self {
            GuaranteedRate::Bps(b) => b,
            GuaranteedRate::OfGuaranteedClass(p) => RateBound::Ppm(p).resolve(mu_g_bps),
        };
        Rate::from_bps(bps).unwrap_or(Rate::MAX)
    }
}

/// A rate as written: bit/s (`3000000`) or a share of μ_G (`"12.5%"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RateConfig {
    Bps(u64),
    Share(String),
}

/// The `[zlane]` table of a router.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZlaneConfig {
    /// The ASes of the router's ISD that get a guarantee.
    #[serde(default)]
    pub ases: Vec<IsdAsn>,
    /// The other ISDs that get a guarantee.
    #[serde(default)]
    pub isds: Vec<u16>,
    /// Explicit rates by origin (`"1-ff00:0:111"` or `"2"`); the rest share equally.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rates: BTreeMap<String, RateConfig>,
    /// The burst of every guarantee's token bucket (one value for all: the 8-byte bucket).
    #[serde(default = "default_burst")]
    pub burst_bytes: u16,
    /// The DRKey protocol number the ASes' EPIC keys are derived for.
    pub drkey_protocol: u16,
}

fn default_burst() -> u16 {
    DEFAULT_BURST_BYTES
}

/// A `[zlane]` table that cannot be used; [`GuaranteeConfigError::field`] names the field.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GuaranteeConfigError {
    #[error("ases[{index}]: {ia} is not in the router's ISD {own_isd}")]
    ForeignAs { index: usize, ia: IsdAsn, own_isd: u16 },
    #[error("ases[{index}]: {ia} is listed twice")]
    DuplicateAs { index: usize, ia: IsdAsn },
    #[error("isds[{index}]: ISD {isd} is the router's own; its ASes are listed in `ases`")]
    OwnIsd { index: usize, isd: u16 },
    #[error("isds[{index}]: ISD {isd} is listed twice")]
    DuplicateIsd { index: usize, isd: u16 },
    #[error("rates.{key}: {reason}")]
    BadOrigin { key: String, reason: String },
    #[error("rates.{key}: not listed in `ases` or `isds`")]
    UnlistedOrigin { key: String },
    #[error("rates.{key}: {source}")]
    BadShare { key: String, source: ShareError },
    #[error("rates.{key}: {bps} bit/s is above the token bucket's maximum of {max} bit/s", max = Rate::MAX.bps())]
    RateTooHigh { key: String, bps: u64 },
    #[error("rates: the shares add up to more than 100% of the guaranteed class")]
    SharesExceedGuaranteedClass,
    #[error("burst_bytes: must be positive")]
    ZeroBurst,
}

impl GuaranteeConfigError {
    /// The field of `[zlane]` at fault, e.g. `rates.2` or `ases[1]`.
    pub fn field(&self) -> String {
        match self {
            Self::ForeignAs { index, .. } | Self::DuplicateAs { index, .. } => format!("ases[{index}]"),
            Self::OwnIsd { index, .. } | Self::DuplicateIsd { index, .. } => format!("isds[{index}]"),
            Self::BadOrigin { key, .. }
            | Self::UnlistedOrigin { key }
            | Self::BadShare { key, .. }
            | Self::RateTooHigh { key, .. } => format!("rates.{key}"),
            Self::SharesExceedGuaranteedClass => "rates".into(),
            Self::ZeroBurst => "burst_bytes".into(),
        }
    }
}

/// Every origin with a guarantee and its rate, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuaranteePlan {
    pub own_isd: u16,
    pub burst_bytes: u16,
    /// In a stable order: the ASes as listed, then the ISDs as listed.
    pub origins: Vec<(Origin, GuaranteedRate)>,
}

/// The fields of [`ZlaneConfig`] an operator may change at run time; absent ones stay.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GuaranteeChange {
    ases: Option<Vec<IsdAsn>>,
    isds: Option<Vec<u16>>,
    rates: Option<BTreeMap<String, RateConfig>>,
    burst_bytes: Option<u16>,
}

impl ZlaneConfig {
    /// This table with a runtime change applied: a JSON object with any of `ases`, `isds`,
    /// `rates` and `burst_bytes` (not yet checked: see [`ZlaneConfig::plan`]).
    pub fn changed(&self, request: &serde_json::Value) -> Result<Self, ControlError> {
        let change: GuaranteeChange =
            serde_json::from_value(request.clone()).map_err(|e| ControlError::from_json(&e))?;
        let mut next = self.clone();
        next.ases = change.ases.unwrap_or(next.ases);
        next.isds = change.isds.unwrap_or(next.isds);
        next.rates = change.rates.unwrap_or(next.rates);
        next.burst_bytes = change.burst_bytes.unwrap_or(next.burst_bytes);
        Ok(next)
    }

    /// The guarantees at a router of ISD `own_isd`: explicit rates as written, the other
    /// listed origins an equal split of what the explicit shares leave of μ_G.
    pub fn plan(&self, own_isd: u16) -> Result<GuaranteePlan, GuaranteeConfigError> {
        if self.burst_bytes == 0 {
            return Err(GuaranteeConfigError::ZeroBurst);
        }
        let mut listed = Vec::with_capacity(self.ases.len() + self.isds.len());
        let mut seen = BTreeSet::new();
        for (index, &ia) in self.ases.iter().enumerate() {
            if ia.isd() != own_isd {
                return Err(GuaranteeConfigError::ForeignAs { index, ia, own_isd });
            }
            if !seen.insert(Origin::As(ia)) {
                return Err(GuaranteeConfigError::DuplicateAs { index, ia });
            }
            listed.push(Origin::As(ia));
        }
        for (index, &isd) in self.isds.iter().enumerate() {
            if isd == own_isd {
                return Err(GuaranteeConfigError::OwnIsd { index, isd });
            }
            if !seen.insert(Origin::Isd(isd)) {
                return Err(GuaranteeConfigError::DuplicateIsd { index, isd });
            }
            listed.push(Origin::Isd(isd));
        }
        let mut explicit = BTreeMap::new();
        let mut shares = 0u64;
        for (key, rate) in &self.rates {
            let origin: Origin =
                key.parse().map_err(|reason| GuaranteeConfigError::BadOrigin { key: key.clone(), reason })?;
            if !seen.contains(&origin) {
                return Err(GuaranteeConfigError::UnlistedOrigin { key: key.clone() });
            }
            let rate = match rate {
                RateConfig::Bps(bps) if *bps > Rate::MAX.bps() => {
                    return Err(GuaranteeConfigError::RateTooHigh { key: key.clone(), bps: *bps })
                }
                RateConfig::Bps(bps) => GuaranteedRate::Bps(*bps),
                RateConfig::Share(s) => {
                    let ppm = RateBound::parse_share(s)
                        .map_err(|source| GuaranteeConfigError::BadShare { key: key.clone(), source })?;
                    shares += u64::from(ppm);
                    GuaranteedRate::OfGuaranteedClass(ppm)
                }
            };
            explicit.insert(origin, rate);
        }
        if shares > u64::from(RateBound::PPM) {
            return Err(GuaranteeConfigError::SharesExceedGuaranteedClass);
        }
        let rest = listed.len() - explicit.len();
        let left = u64::from(RateBound::PPM) - shares;
        let each = u32::try_from(left.checked_div(rest as u64).unwrap_or(0)).unwrap_or(RateBound::PPM);
        let origins = listed
            .into_iter()
            .map(|o| (o, explicit.get(&o).copied().unwrap_or(GuaranteedRate::OfGuaranteedClass(each))))
            .collect();
        Ok(GuaranteePlan { own_isd, burst_bytes: self.burst_bytes, origins })
    }
}

#[cfg(test)]
mod tests;
