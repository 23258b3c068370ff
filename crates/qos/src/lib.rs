//! Data-plane parts shared by aviary's mechanisms.
//!
//! Every router processor returns a [`Verdict`]; drops carry a [`DropReason`] that the
//! daemon counts in a [`DropCounters`]. Reservation traffic is policed by a
//! [`ReservationPolicer`] (seed 000, Alg. 1): one 8-byte timestamp per reservation.

mod policer;
mod verdict;

pub use policer::{InverseRateTable, PolicerConfigError, ReservationPolicer, INV_SHIFT};
pub use verdict::{Class, DropCounters, DropReason, Verdict};
