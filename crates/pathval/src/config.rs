//! A pathval router's `[pathval]` configuration table, its errors, and its runtime control.

use serde::{Deserialize, Serialize};

use crate::attack::Attack;
use crate::plan::{NextTrusted, Role, Upstream};
use crate::routing::{Route, RouteError};
use aviary_scion::drkey::DrkeyError;

/// A router's `[pathval]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathvalConfig {
    pub role: Role,
    /// Untrusted routers only: what it does to the packets it forwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<Attack>,
    #[serde(rename = "route", default)]
    pub routes: Vec<Route>,
    /// Trusted routers: the trusted node behind each ingress (see [`crate::plan`]).
    #[serde(rename = "upstream", default, skip_serializing_if = "Vec::is_empty")]
    pub upstream: Vec<Upstream>,
    /// Trusted routers: the next trusted node per destination and egress.
    #[serde(rename = "next", default, skip_serializing_if = "Vec::is_empty")]
    pub next: Vec<NextTrusted>,
    /// Trusted routers: the file of Level-1 keys other ASes issued to this one (written by
    /// the AS's DRKey client; `aviary run` writes it from the secrets it made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level1_keys_file: Option<std::path::PathBuf>,
    /// Replay window of the Timestamp (§V-C).
    #[serde(default = "default_max_age")]
    pub max_age_s: u64,
    #[serde(default = "default_max_future")]
    pub max_future_s: u64,
}

fn default_max_age() -> u64 {
    10
}

fn default_max_future() -> u64 {
    2
}

/// Runtime control: `{"attack": "payload_alteration"}` or `{"attack": null}` (untrusted
/// routers only).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Control {
    pub(crate) attack: Option<Attack>,
}

/// Why a pathval processor cannot start; `field` is relative to the `[pathval]` table.
#[derive(Debug, thiserror::Error)]
pub enum PathvalConfigError {
    /// [`RouteError`]'s message names its field already.
    #[error("{0}")]
    Route(#[from] RouteError),
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    #[error("drkey: {0}")]
    Drkey(#[from] DrkeyError),
}

impl PathvalConfigError {
    pub fn field(&self) -> String {
        match self {
            PathvalConfigError::Route(e) => e.field(),
            PathvalConfigError::Field { field, .. } => field.clone(),
            PathvalConfigError::Drkey(_) => "(keys)".into(),
        }
    }
}

pub(crate) fn field_err(field: impl Into<String>, message: impl Into<String>) -> PathvalConfigError {
    PathvalConfigError::Field { field: field.into(), message: message.into() }
}
