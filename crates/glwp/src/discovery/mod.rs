//! Discovery (the GLWP paper, §V-A and Alg. 1), sans-IO: the GLWP services of the ASes on a
//! path exchange one message that gathers every AS's hop values, authenticated from every AS
//! to every other, and returns to the source with each on-path AS's hop key sealed to it.
//!
//! - [`wire`]: the message (a checked view with one field table, and an owned representation).
//! - [`crypto`]: AID, the aggregate MACs, sealing.
//! - [`keys`]: the DRKey Level-1 keys between ASes.
//! - [`Source`]: builds the request (lines 1-7) and checks the response (lines 41-47).
//! - [`OnPathAs`]: the forward path (lines 8-23) and the return path (lines 24-40), with the
//!   rate limit per neighbour ([`rate`]) and the consistency checks of neighbours'
//!   announcements ([`ledger`]), and the blame of inconsistent neighbours ([`blame`]). It
//!   keeps no state per allocation.
//! - [`announcement`]: the matrix announcement of §V-C, which [`Neighbourhood`] sends and
//!   checks, with the AS's own [`crate::MatrixSchedule`].
//!
//! The caller moves the bytes: a message goes as one UDP payload between the ASes' GLWP
//! services, and the caller says which AS it came from and what time it is.

pub mod announcement;
pub mod blame;
pub mod crypto;
pub mod keys;
pub mod ledger;
mod on_path;
pub mod rate;
mod source;
mod verify;
pub mod wire;

use std::collections::BTreeMap;

use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::matrix::{AllocationMatrix, InterfaceId, LOCAL_INTERFACE};
use crate::router::{Freshness, GlwpDrop};
use crate::schedule::ScheduleError;
use announcement::AnnouncementError;
use wire::WireError;

pub use blame::{Blame, BlamePolicy, BlameReason};
pub use keys::{DiscoveryKeys, DrkeyKeys, PROTOCOL};
pub use ledger::{check_announceable, is_announcement, AnnouncementLimit, Neighbourhood, Promoted};
pub use on_path::{OnPathAs, Outcome};
pub use source::{RequestError, Source, SourceError};

aviary_qos::mechanism_drops! {
    /// Why a GLWP service drops a discovery message.
    pub enum DiscoveryDrop {
        Truncated => "truncated",
        UnknownKind => "unknown_kind",
        BadPathLength => "bad_path_length",
        LengthMismatch => "length_mismatch",
        BadHopPointer => "bad_hop_pointer",
        ReservedBits => "reserved_bits",
        WrongKind => "wrong_kind",
        NotOnPath => "not_on_path",
        WrongNeighbour => "wrong_neighbour",
        BadInterfaces => "bad_interfaces",
        RateLimited => "rate_limited",
        TimestampFuture => "timestamp_future",
        TimestampExpired => "timestamp_expired",
        BadAid => "bad_aid",
        NoKey => "no_key",
        BadAuthenticator => "bad_authenticator",
        OwnValuesChanged => "own_values_changed",
        ImpossibleHopValues => "impossible_hop_values",
        InconsistentNeighbour => "inconsistent_neighbour",
        NotAnnounced => "not_announced",
        TooManyRows => "too_many_rows",
        BadWindow => "bad_window",
        Replayed => "replayed",
        ContradictingAnnouncement => "contradicting_announcement",
        NeighbourHeldDown => "neighbour_held_down",
    }
}

impl From<WireError> for DiscoveryDrop {
    fn from(e: WireError) -> Self {
        match e {
            WireError::Truncated { .. } => DiscoveryDrop::Truncated,
            WireError::UnknownKind(_) => DiscoveryDrop::UnknownKind,
            WireError::PathLength(_) => DiscoveryDrop::BadPathLength,
            WireError::LengthMismatch { .. } => DiscoveryDrop::LengthMismatch,
            WireError::HopPointer { .. } => DiscoveryDrop::BadHopPointer,
            WireError::Reserved(_) => DiscoveryDrop::ReservedBits,
        }
    }
}

impl From<AnnouncementError> for DiscoveryDrop {
    fn from(e: AnnouncementError) -> Self {
        match e {
            AnnouncementError::Truncated { .. } => DiscoveryDrop::Truncated,
            AnnouncementError::UnknownKind(_) => DiscoveryDrop::UnknownKind,
            AnnouncementError::TooManyRows(_) => DiscoveryDrop::TooManyRows,
            AnnouncementError::LengthMismatch { .. } => DiscoveryDrop::LengthMismatch,
            AnnouncementError::Reserved => DiscoveryDrop::ReservedBits,
            AnnouncementError::Window { .. } => DiscoveryDrop::BadWindow,
        }
    }
}

/// Counted outcomes of a GLWP service's discovery processing.
#[derive(Clone, Debug, Default)]
pub struct DiscoveryStats {
    drops: [u64; DiscoveryDrop::ALL.len()],
    pub forwarded: u64,
    pub responded: u64,
    pub refused: u64,
    pub finished: u64,
}

impl DiscoveryStats {
    pub fn count(&mut self, drop: DiscoveryDrop) {
        self.drops[drop as usize] += 1;
    }
    pub fn drops(&self, drop: DiscoveryDrop) -> u64 {
        self.drops[drop as usize]
    }
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
    /// `(label, count)` of every reason, zeros included.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        DiscoveryDrop::LABELS.iter().copied().zip(self.drops.iter().copied())
    }
}

/// The protocol parameters every AS must share (Alg. 1): the freshness window (lifetime L and
/// clock skew ε), the validity ΔT of an allocation and the threshold τ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscoveryParams {
    pub freshness: Freshness,
    /// ΔT, s: `ts_exp = ⌊ts_pkt / 1 s⌋ + ΔT` (Alg. 1 line 27).
    pub validity_s: u32,
    /// τ, bit/s: the least preliminary guarantee worth going on for (line 20).
    pub min_guarantee_bps: u64,
}

impl DiscoveryParams {
    fn check_fresh(&self, ts_pkt: u64, now_ns: u64) -> Result<(), DiscoveryDrop> {
        self.freshness.check_packet(ts_pkt, now_ns).map_err(|e| match e {
            GlwpDrop::TimestampFuture => DiscoveryDrop::TimestampFuture,
            _ => DiscoveryDrop::TimestampExpired,
        })
    }

    fn ts_exp(&self, ts_pkt: u64) -> u32 {
        u32::try_from(ts_pkt / 1_000_000_000).unwrap_or(u32::MAX).saturating_add(self.validity_s)
    }
}

/// β as the transmission header and the hop keys carry it: kbit/s, rounded down, at most
/// `u32::MAX` (so never more than GMA allocated).
pub fn beta_kbps(guarantee_bps: u64) -> u32 {
    u32::try_from(guarantee_bps / 1000).unwrap_or(u32::MAX)
}

/// What one AS's GLWP service knows of itself.
#[derive(Clone)]
pub struct AsConfig {
    pub ia: IsdAsn,
    /// `K_k`, the secret only this AS knows; hop keys are MACs under it.
    pub secret: [u8; 16],
    /// The matrix it joins with; changes go through [`Neighbourhood::change_matrix`].
    pub matrix: AllocationMatrix,
    /// The neighbour AS at the far end of each of this AS's interfaces.
    pub neighbours: BTreeMap<InterfaceId, IsdAsn>,
    pub params: DiscoveryParams,
    /// How often each neighbour may announce its matrix.
    pub announcement_limit: AnnouncementLimit,
}

impl std::fmt::Debug for AsConfig {
    // Without the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsConfig")
            .field("ia", &self.ia)
            .field("matrix", &self.matrix)
            .field("neighbours", &self.neighbours)
            .field("params", &self.params)
            .field("announcement_limit", &self.announcement_limit)
            .finish_non_exhaustive()
    }
}

/// Why an [`AsConfig`] cannot run.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("neighbours: interface 0 is the local interface, not a link to {0}")]
    NeighbourAtLocalInterface(IsdAsn),
    #[error("rate_limit.burst_bytes: {burst} bytes admit no message of the longest path ({needed} bytes)")]
    BurstBelowMessage { burst: u16, needed: usize },
    #[error("matrix: {0}")]
    Unannounceable(ScheduleError),
}

impl AsConfig {
    /// The AS's schedule (starting with its matrix) and an empty record of its neighbours.
    pub fn neighbourhood(&self) -> Neighbourhood {
        Neighbourhood::new(self.matrix.clone(), self.neighbours.clone(), self.params, self.announcement_limit)
    }

    fn check(&self) -> Result<(), ConfigError> {
        if let Some(&ia) = self.neighbours.get(&LOCAL_INTERFACE) {
            return Err(ConfigError::NeighbourAtLocalInterface(ia));
        }
        check_announceable(&[&self.matrix], self.neighbours.keys().copied()).map_err(ConfigError::Unannounceable)
    }

    /// Lines 9-10 for the AS at position `k` of a path of `l` ASes with pair `(i, j)`: the
    /// local interface only at the ends, and the neighbours on both sides are this AS's.
    fn check_neighbours(
        &self,
        k: usize,
        l: usize,
        (i, j): (InterfaceId, InterfaceId),
        prev: Option<IsdAsn>,
        next: Option<IsdAsn>,
    ) -> Result<(), DiscoveryDrop> {
        let at_end = |iface: InterfaceId, end: bool| (iface == LOCAL_INTERFACE) == end;
        if !at_end(i, k == 0) || !at_end(j, k + 1 == l) {
            return Err(DiscoveryDrop::BadInterfaces);
        }
        for (iface, want) in [(i, prev), (j, next)] {
            if let Some(want) = want {
                if self.neighbours.get(&iface) != Some(&want) {
                    return Err(DiscoveryDrop::WrongNeighbour);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_line_up_with_reasons() {
        assert_eq!(DiscoveryDrop::ALL.len(), DiscoveryDrop::LABELS.len());
        let mut stats = DiscoveryStats::default();
        for (i, d) in DiscoveryDrop::ALL.iter().enumerate() {
            assert_eq!(*d as usize, i);
            stats.count(*d);
        }
        assert!(stats.iter().all(|(_, n)| n == 1));
        assert_eq!(stats.total_drops(), DiscoveryDrop::ALL.len() as u64);
    }

    #[test]
    fn the_secret_stays_out_of_debug_output() {
        let config = AsConfig {
            ia: IsdAsn::new(1, 1),
            secret: [0xab; 16],
            matrix: AllocationMatrix::default(),
            neighbours: BTreeMap::new(),
            params: DiscoveryParams {
                freshness: Freshness { lifetime_ns: 1, skew_ns: 1 },
                validity_s: 1,
                min_guarantee_bps: 0,
            },
            announcement_limit: AnnouncementLimit { burst: 1, refill_ns: 1 },
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("171") && !shown.contains("secret"), "{shown}");
    }

    #[test]
    fn a_matrix_an_announcement_cannot_list_is_refused_not_skipped() {
        use crate::matrix::MatrixEntry;
        let entries = |n: u16| (1..=n).map(|i| MatrixEntry { ingress: 0, egress: i, bps: 1 });
        let config = |n: u16| AsConfig {
            ia: IsdAsn::new(1, 1),
            secret: [0; 16],
            matrix: AllocationMatrix::new(entries(n)).unwrap(),
            neighbours: (1..=n).map(|i| (i, IsdAsn::new(1, u64::from(i) + 1))).collect(),
            params: DiscoveryParams {
                freshness: Freshness { lifetime_ns: 1, skew_ns: 1 },
                validity_s: 1,
                min_guarantee_bps: 0,
            },
            announcement_limit: AnnouncementLimit { burst: 1, refill_ns: 1 },
        };
        // Interfaces 0 … 64: 64 others for each link. One more is too many.
        assert_eq!(config(64).check(), Ok(()));
        assert_eq!(
            config(65).check(),
            Err(ConfigError::Unannounceable(ScheduleError::TooManyInterfaces { rows: 65, max: 64 }))
        );
        let mut nb = config(64).neighbourhood();
        let bigger =
            AllocationMatrix::new(entries(64).chain([MatrixEntry { ingress: 1, egress: 65, bps: 1 }])).unwrap();
        assert_eq!(nb.change_matrix(bigger, 0), Err(ScheduleError::TooManyInterfaces { rows: 65, max: 64 }));
        assert!(nb.schedule().window().is_none(), "nothing scheduled");
    }

    #[test]
    fn beta_and_expiry_round_down_and_saturate() {
        assert_eq!(beta_kbps(1_999), 1);
        assert_eq!(beta_kbps(u64::MAX), u32::MAX);
        let p = DiscoveryParams {
            freshness: Freshness { lifetime_ns: 1, skew_ns: 1 },
            validity_s: 100,
            min_guarantee_bps: 0,
        };
        assert_eq!(p.ts_exp(5_999_999_999), 105);
        assert_eq!(p.ts_exp(u64::MAX), u32::MAX);
    }
}
