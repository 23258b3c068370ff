//! Path segments as beaconing builds them, and their combination into a forwarding path.
//!
//! Each AS on a segment appends its hop field, MAC'd with its own key under the SegID
//! accumulated so far (β_i); β_{i+1} = β_i ⊕ MAC_i[0..2]. A segment is used in
//! construction direction (C = 1, SegID starts at β_0) or against it (C = 0, hop fields
//! reversed; the SegID starts at β_{n-1}, the value the first traversed hop was MAC'd
//! under, because routers update the SegID before verifying except at a segment's first
//! traversed hop).

use crate::mac::HopMacKey;
use crate::wire::path::{chain_seg_id, HopField, InfoField, PathError, StandardPath};

/// A path segment in construction order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// β_0, the SegID the segment's initiator chose.
    pub seg_id: u16,
    /// Beacon timestamp (Unix seconds).
    pub timestamp: u32,
    pub hops: Vec<HopField>,
}

impl Segment {
    pub fn new(seg_id: u16, timestamp: u32) -> Self {
        Self { seg_id, timestamp, hops: Vec::new() }
    }

    /// The SegID under which hop `i` (construction order) is MAC'd.
    pub fn beta(&self, i: usize) -> u16 {
        self.hops[..i].iter().fold(self.seg_id, |b, h| chain_seg_id(b, &h.mac))
    }

    /// Appends the hop field of the next AS, MAC'd with that AS's key. Only the AS that
    /// owns `key` can do this: no process needs another AS's secret.
    pub fn push_hop(&mut self, key: &HopMacKey, exp_time: u8, cons_ingress: u16, cons_egress: u16) -> &HopField {
        let beta = self.beta(self.hops.len());
        let mut hop = HopField { exp_time, cons_ingress, cons_egress, ..Default::default() };
        hop.mac = hop.compute_mac(key, beta, self.timestamp);
        self.hops.push(hop);
        self.hops.last().unwrap()
    }

    /// The info field and hop fields in travel order for the given direction.
    pub fn traversal(&self, cons_dir: bool) -> (InfoField, Vec<HopField>) {
        self.traversal_from(cons_dir, 0)
    }

    /// As [`Self::traversal`], leaving out the hop fields before construction index `from`
    /// (a shortcut: the path turns at that AS instead of going up to the core). In
    /// construction direction the SegID starts at β_from; against it the path still starts
    /// at the last hop field, under β_{n-1}, and ends at `from`.
    pub fn traversal_from(&self, cons_dir: bool, from: usize) -> (InfoField, Vec<HopField>) {
        let mut hops = self.hops.get(from..).unwrap_or_default().to_vec();
        let seg_id = if cons_dir {
            self.beta(from.min(self.hops.len()))
        } else {
            hops.reverse();
            self.beta(self.hops.len().saturating_sub(1))
        };
        (InfoField { peering: false, cons_dir, seg_id, timestamp: self.timestamp }, hops)
    }
}

/// Combines up to three segments, each with its direction of use, into a standard path
/// that starts at its first hop.
pub fn combine(segments: &[(&Segment, bool)]) -> Result<StandardPath, PathError> {
    let whole: Vec<_> = segments.iter().map(|(s, d)| (*s, *d, 0)).collect();
    combine_from(&whole)
}

/// As [`combine`], each segment used from a construction index on (see
/// [`Segment::traversal_from`]): an up and a down segment that share a non-core AS make a
/// shortcut path that turns there.
pub fn combine_from(segments: &[(&Segment, bool, usize)]) -> Result<StandardPath, PathError> {
    if segments.is_empty() || segments.len() > 3 {
        return Err(PathError::BadSegLens([0; 3]));
    }
    let mut path = StandardPath::default();
    for (i, (seg, cons_dir, from)) in segments.iter().enumerate() {
        let (info, hops) = seg.traversal_from(*cons_dir, *from);
        path.seg_len[i] = u8::try_from(hops.len()).map_err(|_| PathError::TooManyHops(hops.len()))?;
        path.info.push(info);
        path.hops.extend(hops);
    }
    path.validate()?;
    Ok(path)
}
