//! Sans-IO processing at each node of a path (the paper's Fig. 2): the source, a trusted
//! router and the destination. Each takes the whole SCION packet, the keys of the adjacent
//! trusted nodes, the time and (for routers) the injected random source, updates the packet in
//! place and returns a [`Verdict`]; malformed or unauthentic packets are dropped with a
//! counted [`PathvalDrop`].
//!
//! A router verifies the incoming packet before it decides whether to sample it. The paper's
//! Fig. 2 skips Verification when the router samples, which would discard an upstream proof
//! unchecked whenever two consecutive routers sample; verifying first makes every sample
//! cover the segment to the next trusted node, which Table V's coverage argument assumes.

use aviary_qos::{DropCounters, RandomSource};

use crate::crypto::{EndToEndKey, LinkKey, SamplingKey};
use crate::functions::{self, HeaderMut};
use crate::header::{locate, HeaderError, PathvalView, BLOCK_LEN};
use crate::scheme::Scheme;

aviary_qos::mechanism_drops! {
    /// Why a pathval node dropped a packet.
    pub enum PathvalDrop {
        BadScionHeader => "bad_scion_header",
        NoExtension => "no_hop_by_hop_extension",
        TruncatedExtension => "truncated_extension",
        NoOption => "no_pathval_option",
        BadOptionLength => "bad_pathval_option_length",
        HopCountOverflow => "hop_count_overflow",
        StaleTimestamp => "stale_timestamp",
        BadDataHash => "bad_data_hash",
        BadValidationProof => "bad_validation_proof",
        BadConcealment => "bad_concealment",
        OffStaticPath => "off_static_path",
        NotDestinationRouted => "not_destination_routed",
        NoRoute => "no_route",
        NoLiveNextHop => "no_live_next_hop",
        UnknownUpstream => "unknown_upstream",
        NoNextKey => "no_next_key",
    }
}

impl From<HeaderError> for PathvalDrop {
    fn from(e: HeaderError) -> Self {
        match e {
            HeaderError::BadScionHeader => PathvalDrop::BadScionHeader,
            HeaderError::NoExtension => PathvalDrop::NoExtension,
            HeaderError::TruncatedExtension => PathvalDrop::TruncatedExtension,
            HeaderError::NoOption => PathvalDrop::NoOption,
            HeaderError::BadOptionLength(_) | HeaderError::Truncated(_) => PathvalDrop::BadOptionLength,
        }
    }
}

/// What a node decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Send the updated packet on to the next trusted node; `sampled` says whether this node
    /// put its own proof in it (for statistics: nothing on the wire says so).
    Forward {
        sampled: bool,
    },
    /// The destination accepts the packet.
    Deliver,
    Drop(PathvalDrop),
}

/// Replay window of the Timestamp (§V-C): a packet is fresh if created at most `max_age_s`
/// before the node's clock and at most `max_future_s` after it (clock skew).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Freshness {
    pub max_age_s: u64,
    pub max_future_s: u64,
}

impl Freshness {
    pub(crate) fn check(self, timestamp: u32, now_s: u64) -> Result<(), PathvalDrop> {
        let ts = u64::from(timestamp);
        if ts > now_s.saturating_add(self.max_future_s) || now_s > ts.saturating_add(self.max_age_s) {
            return Err(PathvalDrop::StaleTimestamp);
        }
        Ok(())
    }
}

/// What a node counts: its drops per reason, and how many packets it sampled and whose
/// upstream proof it verified.
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub drops: DropCounters,
    pub sampled: u64,
    pub proofs_verified: u64,
}

impl NodeStats {
    pub(crate) fn drop(&mut self, d: PathvalDrop) -> Verdict {
        self.drops.count(d.reason());
        Verdict::Drop(d)
    }
}

/// The header and payload of a packet, after locating them.
fn split(pkt: &mut [u8]) -> Result<(HeaderMut<'_>, &[u8]), PathvalDrop> {
    let at = locate(pkt)?;
    let (head, payload) = pkt.split_at_mut(at.payload.start);
    let hdr = PathvalView::new_checked(&mut head[at.header])?;
    Ok((hdr, &payload[..at.payload.len()]))
}

/// The source of a session: SrcInitialization, then Construction for the first trusted
/// router (the source is node 1, which samples with probability 1).
#[derive(Clone, Debug)]
pub struct Source {
    pub session_id: [u8; BLOCK_LEN],
    pub k0n: EndToEndKey,
}

impl Source {
    /// Fills in the pathval header of `pkt` (which carries one, e.g. from
    /// [`crate::header::emit_extension`]) for a packet created at `timestamp` (Unix s).
    pub fn send(&self, pkt: &mut [u8], timestamp: u32, k_next: &LinkKey) -> Result<(), PathvalDrop> {
        self.send_as(Scheme::Pathval, pkt, timestamp, k_next).map(|_| ())
    }

    /// [`Self::send`] under any [`Scheme`]; returns whether the source put a proof in the
    /// packet.
    pub fn send_as(
        &self,
        scheme: Scheme,
        pkt: &mut [u8],
        timestamp: u32,
        k_next: &LinkKey,
    ) -> Result<bool, PathvalDrop> {
        let (mut hdr, payload) = split(pkt)?;
        functions::src_initialization(&mut hdr, payload, &self.session_id, timestamp, &self.k0n);
        scheme.source_proof(&mut hdr, k_next)
    }
}

/// A trusted router on the path.
#[derive(Clone, Debug)]
pub struct Router {
    pub sampling: SamplingKey,
    pub freshness: Freshness,
    pub stats: NodeStats,
}

impl Router {
    pub fn new(sampling: SamplingKey, freshness: Freshness) -> Self {
        Self { sampling, freshness, stats: NodeStats::default() }
    }

    /// Processes a packet that arrived from the trusted node sharing `k_prev` and leaves
    /// toward the one sharing `k_next` (the egress was chosen by routing before).
    pub fn process(
        &mut self,
        pkt: &mut [u8],
        k_prev: &LinkKey,
        k_next: &LinkKey,
        now_s: u64,
        random: &mut dyn RandomSource,
    ) -> Verdict {
        self.process_as(Scheme::Pathval, pkt, (k_prev, k_next), now_s, random)
    }

    /// [`Self::process`] under any [`Scheme`]; `keys` are `(k_prev, k_next)`.
    pub fn process_as(
        &mut self,
        scheme: Scheme,
        pkt: &mut [u8],
        keys: (&LinkKey, &LinkKey),
        now_s: u64,
        random: &mut dyn RandomSource,
    ) -> Verdict {
        match self.try_process(scheme, pkt, keys, now_s, random) {
            Ok(sampled) => {
                self.stats.sampled += u64::from(sampled);
                Verdict::Forward { sampled }
            }
            Err(d) => self.stats.drop(d),
        }
    }

    fn try_process(
        &mut self,
        scheme: Scheme,
        pkt: &mut [u8],
        keys: (&LinkKey, &LinkKey),
        now_s: u64,
        random: &mut dyn RandomSource,
    ) -> Result<bool, PathvalDrop> {
        let (mut hdr, payload) = split(pkt)?;
        // Checked before anything changes, so a dropped packet is left as it came.
        if hdr.hop_count() == u8::MAX {
            return Err(PathvalDrop::HopCountOverflow);
        }
        self.freshness.check(hdr.timestamp(), now_s)?;
        let routed = scheme.route(&mut hdr, payload, keys, &self.sampling, random)?;
        self.stats.proofs_verified += u64::from(routed.verified);
        Ok(routed.sampled)
    }
}

/// The destination of a session: Verification of the last trusted router's proof, then
/// DstVerification of the source's Concealment.
#[derive(Clone, Debug)]
pub struct Destination {
    pub k0n: EndToEndKey,
    pub freshness: Freshness,
    pub stats: NodeStats,
}

impl Destination {
    pub fn new(k0n: EndToEndKey, freshness: Freshness) -> Self {
        Self { k0n, freshness, stats: NodeStats::default() }
    }

    pub fn receive(&mut self, pkt: &mut [u8], k_prev: &LinkKey, now_s: u64) -> Verdict {
        self.receive_as(Scheme::Pathval, pkt, k_prev, now_s)
    }

    /// [`Self::receive`] under any [`Scheme`].
    pub fn receive_as(&mut self, scheme: Scheme, pkt: &mut [u8], k_prev: &LinkKey, now_s: u64) -> Verdict {
        match self.try_receive(scheme, pkt, k_prev, now_s) {
            Ok(()) => Verdict::Deliver,
            Err(d) => self.stats.drop(d),
        }
    }

    fn try_receive(&mut self, scheme: Scheme, pkt: &mut [u8], k_prev: &LinkKey, now_s: u64) -> Result<(), PathvalDrop> {
        let (hdr, payload) = split(pkt)?;
        self.freshness.check(hdr.timestamp(), now_s)?;
        if scheme.accept(&hdr, payload, k_prev, &self.k0n)? {
            self.stats.proofs_verified += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_line_up_with_reasons() {
        assert_eq!(PathvalDrop::ALL.len(), PathvalDrop::LABELS.len());
        assert!(PathvalDrop::ALL.len() <= DropCounters::OWN);
        for (i, d) in PathvalDrop::ALL.iter().enumerate() {
            assert_eq!(*d as usize, i);
            assert_eq!(d.reason(), aviary_qos::DropReason::Mechanism(i as u8));
        }
        assert_eq!(PathvalDrop::BadConcealment.label(), "bad_concealment");
    }

    #[test]
    fn freshness_window() {
        let f = Freshness { max_age_s: 10, max_future_s: 2 };
        assert!(f.check(100, 110).is_ok() && f.check(100, 98).is_ok());
        assert_eq!(f.check(100, 111), Err(PathvalDrop::StaleTimestamp));
        assert_eq!(f.check(100, 97), Err(PathvalDrop::StaleTimestamp));
    }
}
