//! GLWP (the GLWP paper, "Secure and Scalable QoS for Critical Applications"): GMA allocations.
//!
//! Each AS's allocation matrix `M` ([`AllocationMatrix`]) gives its divergents and convergents
//! (Eq. 1); a path's hop values ([`HopValues`]) give its allocation `G(π)` (Eq. 2,
//! [`guarantee`]) and the preliminary guarantee of each prefix ([`prefix_guarantees`]), in
//! integer bits per second rounded so that allocations never add up to more than an entry of
//! any matrix (the proof is in [`allocation`]). [`Topology`] checks paths against links and
//! matrices, sums the load of a set of paths on each interface pair, and lists every loop-free
//! path with a bound on the work. [`header`] is the transmission header (Table I),
//! [`hop_key`](mod@hop_key) its hop keys and hop authenticators, [`packet`] the header carried as a SCION
//! path type, and [`router`] the validation at an on-path AS's border router (Alg. 2) with
//! its traffic [`monitor`] and duplicate suppression. [`discovery`] is Alg. 1: the messages
//! between the ASes' GLWP services that gather the hop values and return the hop keys.
//! [`schedule`] is an AS's matrix over time (§V-C: temporary values while it changes), which
//! [`discovery::Neighbourhood`] announces to the neighbours and checks theirs against.
//!
//! Pure logic: no I/O, no clocks.

pub mod allocation;
pub mod discovery;
mod enumerate;
pub mod header;
pub mod hop_key;
pub mod matrix;
pub mod monitor;
pub mod packet;
pub mod router;
pub mod schedule;
pub mod testbed;
pub mod topology;

pub use allocation::{guarantee, prefix_guarantees, HopValues, HopValuesError};
pub use enumerate::EnumerationError;
pub use header::{Header, HeaderError, HeaderRepr};
pub use hop_key::{hop_authenticator, hop_key, HopKeyInput};
pub use matrix::{AllocationMatrix, InterfaceId, MatrixEntry, MatrixError, LOCAL_INTERFACE};
pub use monitor::{AidMonitor, MonitorVerdict};
pub use packet::{locate, stamp, Located, PacketError, SourceAllocation, PATH_TYPE};
pub use router::{Freshness, GlwpDrop, Router, RouterStats};
pub use schedule::{ChangeWindow, MatrixSchedule, ScheduleError};
pub use topology::{Hop, Link, PairLoad, PathAllocation, PathError, Topology, TopologyError};
