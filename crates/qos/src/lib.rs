//! Data-plane parts shared by aviary's mechanisms.
//!
//! Every router processor returns a [`Verdict`]; drops carry a [`DropReason`] that the
//! daemon counts in a [`DropCounters`]. Reservation traffic is policed by a
//! [`ReservationPolicer`] (seed 000, Alg. 1): one 8-byte timestamp per reservation. Each
//! egress link is emulated by an [`EgressScheduler`]: rate, delay, strict priority, bounded queues.

mod class;
mod policer;
mod processor;
mod scheduler;
mod verdict;

pub use class::{
    Admission, ClassError, ClassId, ClassSpec, ClassTable, Classifier, LinkPolicy, QueueDiscipline, RateBound,
};
pub use policer::{InverseRateTable, PolicerConfigError, ReservationPolicer, INV_SHIFT};
pub use processor::Processor;
pub use scheduler::{ClassStats, EgressScheduler, LinkParams, SchedulerStats};
pub use verdict::{Class, DropCounters, DropReason, Verdict};
