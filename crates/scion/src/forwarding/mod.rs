//! Border-router processing of standard SCION paths, for one AS as a whole (its ingress
//! and egress border routers in one step), sans-IO: bytes, ingress interface and time in,
//! an updated packet and a verdict out. The checks and updates are here; the batched stages
//! that run them, and that mechanisms extend, are in [`staged`].
//!
//! The checks follow the scionproto border router: hop-field expiry, ingress interface,
//! source/destination ISD-AS at the path's ends, SegID update against construction
//! direction before the MAC check (except for the first hop of a segment), MAC, segment
//! crossover with a second verified hop field, egress interface, SegID update in
//! construction direction, CurrHF advance.

mod drops;
mod prepare;
pub mod reply;
pub mod rotation;
pub mod staged;

pub use prepare::HopLayout;
pub use rotation::KeyGenerations;
pub use staged::{HopAuth, HopExtension, Staged, StagedForwarder, Standard, StandardForwarder, MAX_BATCH};

use aviary_qos::{DropReason, Verdict};

use crate::mac::{mac_eq, mac_input, HopMacKey, MAC_LEN};
use crate::wire::path::{chain_seg_id, field, hop_expiry_ns, set_seg_id, HopField, InfoField};
use crate::wire::path_view::StandardPathView;
use crate::IsdAsn;

/// A set of interface ids (one bit per possible id, 8 KiB).
#[derive(Clone)]
pub struct InterfaceSet(Box<[u64; 1024]>);

impl Default for InterfaceSet {
    fn default() -> Self {
        Self(Box::new([0; 1024]))
    }
}

impl std::fmt::Debug for InterfaceSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl InterfaceSet {
    pub fn insert(&mut self, id: u16) {
        self.0[usize::from(id >> 6)] |= 1 << (id & 63);
    }
    pub fn remove(&mut self, id: u16) {
        self.0[usize::from(id >> 6)] &= !(1 << (id & 63));
    }
    #[inline]
    pub fn contains(&self, id: u16) -> bool {
        self.0[usize::from(id >> 6)] & (1 << (id & 63)) != 0
    }
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .flat_map(|(i, w)| (0..64u16).filter(move |b| w & (1 << b) != 0).map(move |b| (i as u16) << 6 | b))
    }
}

impl FromIterator<u16> for InterfaceSet {
    fn from_iter<I: IntoIterator<Item = u16>>(iter: I) -> Self {
        let mut s = Self::default();
        for i in iter {
            s.insert(i);
        }
        s
    }
}

/// What a router needs to forward standard SCION traffic of its AS.
#[derive(Clone, Debug)]
pub struct AsForwarding {
    pub local_ia: IsdAsn,
    /// The hop-field key and, during a rotation's overlap, the one it replaced.
    pub mac_keys: KeyGenerations<HopMacKey>,
    /// The AS's inter-domain interfaces; 0 (internal) is never among them.
    pub interfaces: InterfaceSet,
}

/// Where a processed packet stands with respect to the ends of its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathEnds {
    pub first_hop: bool,
    pub last_hop: bool,
}

impl AsForwarding {
    pub fn new(local_ia: IsdAsn, mac_key: HopMacKey, interfaces: impl IntoIterator<Item = u16>) -> Self {
        Self {
            local_ia,
            mac_keys: KeyGenerations::new(mac_key),
            interfaces: interfaces.into_iter().filter(|i| *i != 0).collect(),
        }
    }

    /// `mac_key` becomes the hop-field key; hop fields under the current one keep verifying
    /// until `previous_until_ns`.
    pub fn rotate(&mut self, mac_key: HopMacKey, previous_until_ns: u64) {
        self.mac_keys.rotate(mac_key, previous_until_ns);
    }

    /// The MACs to verify a prepared packet with during a rotation's overlap: for each hop
    /// field on its own, the current key's MAC if the hop field carries it, else the previous
    /// key's. The two hop fields of a crossover come from different segments, which may have
    /// been issued on either side of the rotation.
    pub fn macs_across_rotation(&self, w: &HopWork, now_ns: u64) -> HopAuth {
        let pick = |block: [u8; 16], carried: &[u8; MAC_LEN]| {
            let cmac = self.mac_keys.current().cmac_block(&block);
            match self.mac_keys.previous_at(now_ns) {
                Some(previous) if !mac_eq(&cmac[..MAC_LEN], carried) => previous.cmac_block(&block),
                _ => cmac,
            }
        };
        let (b1, b2) = w.mac_blocks();
        HopAuth { current: pick(b1, &w.hop.mac), next: b2.zip(w.next).map(|(b, n)| pick(b, &n.hop.mac)) }
    }

    /// The empty path only carries traffic inside one AS.
    pub fn process_empty(&self, src: IsdAsn, dst: IsdAsn, ingress: u16) -> Verdict {
        if ingress == 0 && src == self.local_ia && dst == self.local_ia {
            Verdict::Deliver
        } else {
            Verdict::Drop(DropReason::EmptyPathNotLocal)
        }
    }

    /// Source and destination ISD-AS must match the position on the path: a packet from
    /// inside the AS at its first hop has a local source; a packet from a neighbour must not
    /// have a local source, and its destination is local exactly at the last hop.
    #[inline]
    pub fn check_src_dst(&self, src: IsdAsn, dst: IsdAsn, ingress: u16, ends: PathEnds) -> Result<(), DropReason> {
        let (src_local, dst_local) = (src == self.local_ia, dst == self.local_ia);
        if ingress == 0 {
            if ends.first_hop && !src_local {
                return Err(DropReason::BadSrcIa);
            }
            if dst_local {
                return Err(DropReason::BadDstIa);
            }
        } else {
            if src_local {
                return Err(DropReason::BadSrcIa);
            }
            if ends.last_hop != dst_local {
                return Err(DropReason::BadDstIa);
            }
        }
        Ok(())
    }

    #[inline]
    pub fn check_egress(&self, egress: u16) -> Result<(), DropReason> {
        if self.interfaces.contains(egress) {
            Ok(())
        } else {
            Err(DropReason::UnknownEgress)
        }
    }

    /// Parses a standard path and runs every check that needs no cryptography.
    pub fn prepare_standard(&self, path: &[u8], src: IsdAsn, dst: IsdAsn, ingress: u16) -> Result<HopWork, DropReason> {
        let view = StandardPathView::new_checked(path).map_err(DropReason::from)?;
        let mut work = self.prepare_hop(&view, src, dst, ingress)?;
        work.set_mac(work.hop.mac);
        Ok(work)
    }

    /// Verifies the hop field(s) of a prepared packet given their computed MACs, and
    /// updates SegID and CurrINF/CurrHF in place. `Ok(None)`: deliver locally;
    /// `Ok(Some(egress))`: forward.
    pub fn finish(
        &self,
        path: &mut [u8],
        w: &HopWork,
        mac: [u8; MAC_LEN],
        next_mac: Option<[u8; MAC_LEN]>,
        now_ns: u64,
    ) -> Result<Option<u16>, DropReason> {
        check_hop(&w.hop, &w.info, &mac, now_ns)?;
        if w.deliver {
            set_seg_id(path, usize::from(w.info_off), w.info.seg_id);
            return Ok(None);
        }
        let (info_off, mut info, hop) = match (&w.next, next_mac) {
            (Some(n), Some(m)) => {
                check_hop(&n.hop, &n.info, &m, now_ns)?;
                (n.info_off, n.info, n.hop)
            }
            (Some(_), None) => return Err(DropReason::BadMac),
            (None, _) => (w.info_off, w.info, w.hop),
        };
        self.check_egress(w.egress)?;
        if w.at_end {
            return Err(DropReason::PathIndexOutOfRange);
        }
        // Every check passed before the first write: a refused packet is left as it came, so
        // that it can be verified again from its own SegID under a previous key.
        set_seg_id(path, usize::from(w.info_off), w.info.seg_id);
        if info.cons_dir && !w.peering {
            info.seg_id = chain_seg_id(info.seg_id, &hop.mac);
        }
        set_seg_id(path, usize::from(info_off), info.seg_id);
        path[field::meta::WORD].copy_from_slice(&w.advanced_meta);
        Ok(Some(w.egress))
    }
}

/// Expiry and MAC of one hop field.
#[inline]
fn check_hop(hop: &HopField, info: &InfoField, mac: &[u8; MAC_LEN], now_ns: u64) -> Result<(), DropReason> {
    if now_ns > hop_expiry_ns(info.timestamp, hop.exp_time) {
        return Err(DropReason::ExpiredHop);
    }
    if !mac_eq(&hop.mac, mac) {
        return Err(DropReason::BadMac);
    }
    Ok(())
}

/// The second hop field an AS verifies at a segment crossover.
#[derive(Clone, Copy, Debug)]
pub struct NextHop {
    pub info_off: u16,
    pub info: InfoField,
    pub hop: HopField,
}

/// What an AS verifies for one packet, whatever the path type, once the checks that need
/// no cryptography have passed: the current hop field (with its plain or candidate MAC)
/// and, at a crossover, the next one; then what to write back.
#[derive(Clone, Copy, Debug)]
pub struct HopWork {
    /// Offset of the current info field in the hop layout (within its first 28 bytes).
    pub info_off: u16,
    /// The current info field, its SegID as the MAC is computed under.
    pub info: InfoField,
    pub hop: HopField,
    /// Against construction direction the SegID is chained before verification (not at
    /// the first hop field of a segment and not for peering hops).
    pub chain_before: bool,
    pub peering: bool,
    pub deliver: bool,
    pub next: Option<NextHop>,
    pub egress: u16,
    /// Whether advancing would run past the last hop field.
    pub at_end: bool,
    /// The first 4 bytes of the path (indices and segment lengths) after advancing.
    pub advanced_meta: [u8; 4],
}

impl HopWork {
    /// Against construction direction a router chains the SegID with the hop field's MAC
    /// before verifying it, except at the first hop field of a segment that it processes
    /// (a packet from inside the AS, or the new segment after a crossover) and for peering
    /// hop fields, whose MACs are not chained.
    #[inline]
    pub fn chains_before_verifying(info: &InfoField, ingress: u16, peering: bool) -> bool {
        !info.cons_dir && ingress != 0 && !peering
    }

    /// Sets the hop field's MAC (for a flyover: the candidate `AggMAC ⊕ FlyoverMAC`) and
    /// chains the SegID with it where the direction requires it before verification.
    #[inline]
    pub fn set_mac(&mut self, mac: [u8; MAC_LEN]) {
        self.hop.mac = mac;
        if self.chain_before {
            self.info.seg_id = chain_seg_id(self.info.seg_id, &mac);
            self.chain_before = false;
        }
    }

    /// MAC input blocks of the current hop field and of the crossover's next one.
    #[inline]
    pub fn mac_blocks(&self) -> ([u8; 16], Option<[u8; 16]>) {
        let h = &self.hop;
        let b1 = mac_input(self.info.seg_id, self.info.timestamp, h.exp_time, h.cons_ingress, h.cons_egress);
        let b2 = self
            .next
            .map(|n| mac_input(n.info.seg_id, n.info.timestamp, n.hop.exp_time, n.hop.cons_ingress, n.hop.cons_egress));
        (b1, b2)
    }
}

/// Whether the current hop field is one of the two peering hops of a peering path: the
/// last of segment 0 or the first of segment 1. A peering path has exactly two segments.
#[inline]
pub fn is_peering(
    info: &InfoField,
    seg_len: [u8; 3],
    last_of_seg0: bool,
    first_of_seg1: bool,
) -> Result<bool, DropReason> {
    if !info.peering {
        return Ok(false);
    }
    if seg_len[0] == 0 || seg_len[1] == 0 || seg_len[2] != 0 {
        return Err(DropReason::MalformedPath);
    }
    Ok(last_of_seg0 || first_of_seg1)
}
