//! Router classification (the Z-Lane paper, §4.5): every packet a Z-Lane border router
//! forwards goes to one of five egress queues.
//!
//! | class | what                                                                          |
//! |-------|-------------------------------------------------------------------------------|
//! | R     | reservation traffic (Hummingbird flyovers within their reservation)           |
//! | N     | control traffic from or to a neighbouring AS (key bootstrapping, BFD)         |
//! | G     | EPIC traffic with the gateway's QoS flag, within its origin's guarantee       |
//! | A     | other authenticated EPIC traffic, and G's overuse                             |
//! | U     | unauthenticated SCION traffic and SCMP                                        |
//!
//! The origin of a packet is its source AS if that AS is in the router's ISD, its source ISD
//! otherwise ([`Origin::of`]); each origin with a guarantee has a token bucket per egress link
//! ([`Guarantees`]). Traffic beyond the guarantee is never dropped for it: it goes to A, so an
//! origin sends at least at its guaranteed rate, and more when there is room. The egress
//! scheduler's bounds are [`table`].

pub mod config;
pub mod guarantees;
pub mod table;

use aviary_qos::Admission;
use aviary_scion::IsdAsn;

pub use config::{
    GuaranteeConfigError, GuaranteePlan, GuaranteedRate, Origin, RateConfig, ZlaneConfig, DEFAULT_BURST_BYTES,
};
pub use guarantees::Guarantees;

/// Z-Lane's five egress queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RouterClass {
    Reservation,
    Neighbor,
    Guaranteed,
    Authenticated,
    Unauthenticated,
}

impl RouterClass {
    pub const ALL: [RouterClass; 5] = [
        RouterClass::Reservation,
        RouterClass::Neighbor,
        RouterClass::Guaranteed,
        RouterClass::Authenticated,
        RouterClass::Unauthenticated,
    ];

    /// The queue's name in the paper and in the default class table.
    pub const fn name(self) -> &'static str {
        match self {
            RouterClass::Reservation => "R",
            RouterClass::Neighbor => "N",
            RouterClass::Guaranteed => "G",
            RouterClass::Authenticated => "A",
            RouterClass::Unauthenticated => "U",
        }
    }

    /// The admission a processor forwards a packet of this class with.
    pub const fn admission(self) -> Admission {
        match self {
            RouterClass::Reservation => Admission::RESERVED,
            RouterClass::Neighbor => Admission::NEIGHBOR,
            RouterClass::Guaranteed => Admission::GUARANTEED,
            RouterClass::Authenticated => Admission::AUTHENTICATED,
            RouterClass::Unauthenticated => Admission::UNAUTHENTICATED,
        }
    }

    /// The class of a standard admission's label (`reserved`, ..., `unauthenticated`); a label
    /// of any other admission is unauthenticated.
    pub fn of_label(label: &str) -> Self {
        Admission::STANDARD
            .iter()
            .find(|(_, l)| *l == label)
            .and_then(|(a, _)| Self::ALL.into_iter().find(|c| c.admission() == *a))
            .unwrap_or(RouterClass::Unauthenticated)
    }
}

/// What the router's protocol processing established about a packet it forwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verified {
    /// A valid reservation within its reserved rate.
    Reservation,
    /// Control traffic from or to a neighbouring AS.
    Neighbor,
    /// EPIC whose validation field this AS checked: the source `src` is authentic; `qos` is
    /// the gateway's QoS flag, which only verifies in the gateway's form (keyed with the
    /// source AS's Level-1 key, which no host has).
    Epic { src: IsdAsn, qos: bool },
    /// Anything whose source this AS did not authenticate: standard SCION, SCMP, EPIC at an
    /// AS that does not validate it.
    Unauthenticated,
}

impl Guarantees {
    /// The class of a packet of `len` bytes leaving on `egress` (capacity `capacity_bps` now):
    /// G only for authorized EPIC within its origin's guarantee, which it is charged to.
    pub fn classify(
        &mut self,
        packet: Verified,
        egress: u16,
        capacity_bps: u64,
        len: usize,
        now_ns: u64,
    ) -> RouterClass {
        match packet {
            Verified::Reservation => RouterClass::Reservation,
            Verified::Neighbor => RouterClass::Neighbor,
            Verified::Epic { src, qos: true } if self.admit(src, egress, capacity_bps, len, now_ns) => {
                RouterClass::Guaranteed
            }
            Verified::Epic { .. } => RouterClass::Authenticated,
            Verified::Unauthenticated => RouterClass::Unauthenticated,
        }
    }
}
