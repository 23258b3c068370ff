//! Data-plane parts shared by aviary's mechanisms.
//!
//! A router hosts mechanisms through the [`Processor`] seam: each returns a [`Verdict`] per
//! packet, forwarding with an [`Admission`] or dropping with a [`DropReason`]. The router's
//! [`Classifier`] maps admissions to the classes of each egress link's [`ClassTable`], and the
//! link's [`EgressScheduler`] serves them (rate, delay, per-class queue and rate bounds, a policy).
//! Reservation traffic is policed by a [`ReservationPolicer`] (the Hummingbird paper, Alg. 1):
//! one 8-byte timestamp per reservation.
//!
//! Two sans-IO primitives serve per-source monitoring:
//! - [`TokenBucketBank`]: rate limits for many keys (source ASes, ISDs, hosts) in 8 bytes per
//!   bucket, with one shared burst (the Z-Lane paper, Appendix D). Its 32-bit ns timestamp
//!   wraps every [`STAMP_WINDOW_NS`]; it is never more generous than an exact bucket.
//! - [`DuplicateFilter`]: duplicate suppression of replayed packets keyed by (source, packet
//!   timestamp) as GLWP and EPIC use it: two rotating split-block Bloom filters (one cache
//!   line per key and generation) under a secret AES-CMAC key, memory fixed by a
//!   [`DuplicateFilterConfig`].

mod class;
mod duplicates;
mod huge_array;
mod policer;
mod prefetch;
mod processor;
mod scheduler;
mod token_bucket;
mod verdict;

pub use class::{
    Admission, ClassError, ClassId, ClassSpec, ClassTable, Classifier, LinkPolicy, QueueDiscipline, RateBound,
    ShareError,
};
pub use duplicates::{DuplicateFilter, DuplicateFilterConfig, DuplicateFilterConfigError, KeyHash};
pub use huge_array::HugeArray;
pub use policer::{InverseRateTable, PolicerConfigError, ReservationPolicer};
pub use prefetch::prefetch;
pub use processor::{drop_label, Claim, Context, ControlError, LinkState, Processor, RandomSource, SeededRandom};
pub use scheduler::{ClassStats, EgressScheduler, LinkParams, SchedulerStats};
pub use token_bucket::{Rate, RateError, TokenBucket, TokenBucketBank, RATE_UNIT_BPS, STAMP_WINDOW_NS};
pub use verdict::{DropCounters, DropReason, Verdict};
