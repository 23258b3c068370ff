//! EPIC source authentication (the Z-Lane paper, App. B): the packet timestamp, hop
//! validation fields and their checks at routers and destinations.
//!
//! - [`timestamp`]: EpicTS and the freshness rule (SCION's constants).
//! - [`hvf`]: the MAC input and EPIC-HP's PHVF/LHVF (path type 3, byte-compatible with SCION).
//! - [`per_as`]: Z-Lane's validation field for every hop field, keyed with DRKey host keys,
//!   and the destination validation field.
//! - [`router`]: both path types as an extension of the staged forwarder.
//! - [`duplicates`]: suppression of replays by (source, timestamp).
//!
//! The wire formats are in [`crate::wire::epic`] and [`crate::wire::epic_per_as`]; the layout
//! and its rationale in `docs/epic.md`.

pub mod duplicates;
pub mod hvf;
pub mod per_as;
pub mod router;
pub mod timestamp;

pub use duplicates::EpicDuplicates;
pub use router::{Epic, EpicForwarder};
