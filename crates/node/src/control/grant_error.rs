//! Why the control service refuses an operator's reservation request: the HTTP status of the
//! answer and a stable label for `aviary_control_reservations_refused_total{reason}`.

use crate::resid_store::AdmissionError;

/// A refused grant.
#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error("operator token missing or wrong")]
    Unauthorised,
    #[error("bad request body: {0}")]
    BadRequest(String),
    #[error("{0}")]
    UnknownInterface(String),
    #[error("ingress and egress must differ")]
    SameInterface,
    #[error("duration: must be at least 1 s")]
    ZeroDuration,
    #[error("bandwidth_bps: {0} is more than the codec can express")]
    BandwidthTooLarge(u64),
    #[error("the requested interval is over")]
    IntervalOver,
    /// The ResID allocator refused (every ResID of the ingress is taken).
    #[error("{0}")]
    NoResId(String),
    /// Admission control refused: an interface has too little reservable bandwidth left.
    #[error(transparent)]
    NoBandwidth(AdmissionError),
    /// The ResID store cannot be read or written.
    #[error("{0}")]
    Store(String),
}

impl GrantError {
    /// The HTTP status: whose fault it was.
    pub fn status(&self) -> u16 {
        match self {
            GrantError::Unauthorised => 401,
            GrantError::NoResId(_) | GrantError::NoBandwidth(_) => 409,
            GrantError::Store(_) => 500,
            _ => 400,
        }
    }

    /// The `reason` label of the refusal.
    pub const fn label(&self) -> &'static str {
        match self {
            GrantError::Unauthorised => "unauthorised",
            GrantError::BadRequest(_) => "bad_request",
            GrantError::UnknownInterface(_) => "unknown_interface",
            GrantError::SameInterface => "same_interface",
            GrantError::ZeroDuration => "zero_duration",
            GrantError::BandwidthTooLarge(_) => "bandwidth_too_large",
            GrantError::IntervalOver => "interval_over",
            GrantError::NoResId(_) => "no_resid",
            GrantError::NoBandwidth(_) => "no_bandwidth",
            GrantError::Store(_) => "resid_store",
        }
    }
}
