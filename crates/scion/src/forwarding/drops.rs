//! Why a malformed packet is dropped: each wire-format error of `crate::wire` mapped to the
//! counted drop reason every mechanism shares. The wire formats know nothing of routers; this
//! is where parsing meets forwarding.

use aviary_qos::DropReason;

use crate::wire::header::HeaderError;
use crate::wire::path::PathError;

impl From<HeaderError> for DropReason {
    fn from(e: HeaderError) -> Self {
        match e {
            HeaderError::Truncated => DropReason::Truncated,
            HeaderError::BadVersion(_) => DropReason::BadVersion,
            HeaderError::LengthMismatch | HeaderError::PayloadTooLong(_) => DropReason::LengthMismatch,
            HeaderError::BadAddressType(_) => DropReason::BadAddressType,
            HeaderError::BadPathLength(_) => DropReason::MalformedPath,
        }
    }
}

impl From<PathError> for DropReason {
    fn from(e: PathError) -> Self {
        match e {
            PathError::IndexOutOfRange => DropReason::PathIndexOutOfRange,
            _ => DropReason::MalformedPath,
        }
    }
}
