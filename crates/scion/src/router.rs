//! Border-router processing of standard SCION paths, for one AS as a whole (its ingress
//! and egress border routers in one step), sans-IO: bytes, ingress interface and time in,
//! an updated packet and a [`Verdict`] out.
//!
//! The checks follow the scionproto border router: hop-field expiry, ingress interface,
//! source/destination ISD-AS at the path's ends, SegID update against construction
//! direction before the MAC check (except for the first hop of a segment), MAC, segment
//! crossover with a second verified hop field, egress interface, SegID update in
//! construction direction, CurrHF advance.

use aviary_qos::{DropReason, Verdict};

use crate::header::{path_type, ScionView};
use crate::mac::{mac_eq, HopMacKey};
use crate::path::{
    chain_seg_id, hop_expiry_ns, num_info_fields, segment_of, HopField, InfoField, MetaHdr, HOP_LEN, INFO_LEN,
    MAX_HOPS, META_LEN,
};
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
        (0..=u16::MAX).filter(|i| self.contains(*i))
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
    pub mac_key: HopMacKey,
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
        Self { local_ia, mac_key, interfaces: interfaces.into_iter().filter(|i| *i != 0).collect() }
    }

    /// Processes one packet that arrived on `ingress` (0: from inside the AS) at `now_ns`.
    /// Path types other than empty and standard are dropped as unsupported.
    pub fn process(&self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let mut view = match ScionView::new_checked(pkt) {
            Ok(v) => v,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let (src, dst) = (view.src_ia(), view.dst_ia());
        match view.path_type() {
            path_type::EMPTY => self.process_empty(src, dst, ingress),
            path_type::SCION => self.process_standard(view.path_mut(), src, dst, ingress, now_ns),
            _ => Verdict::Drop(DropReason::UnsupportedPathType),
        }
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

    /// Verifies a hop field's expiry and MAC under `seg_id` (no SegID update).
    #[inline]
    pub fn verify_hop(&self, hop: &HopField, info: &InfoField, seg_id: u16, now_ns: u64) -> Result<(), DropReason> {
        if now_ns > hop_expiry_ns(info.timestamp, hop.exp_time) {
            return Err(DropReason::ExpiredHop);
        }
        let mac = hop.compute_mac(&self.mac_key, seg_id, info.timestamp);
        if !mac_eq(&hop.mac, &mac) {
            return Err(DropReason::BadMac);
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

    /// Processes the standard path bytes of a packet in place.
    pub fn process_standard(&self, path: &mut [u8], src: IsdAsn, dst: IsdAsn, ingress: u16, now_ns: u64) -> Verdict {
        match self.standard_inner(path, src, dst, ingress, now_ns) {
            Ok(v) => v,
            Err(r) => Verdict::Drop(r),
        }
    }

    fn standard_inner(
        &self,
        path: &mut [u8],
        src: IsdAsn,
        dst: IsdAsn,
        ingress: u16,
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if path.len() < META_LEN {
            return Err(DropReason::MalformedPath);
        }
        let mut meta = MetaHdr::decode(path[..4].try_into().unwrap());
        let ninf = num_info_fields(meta.seg_len).map_err(DropReason::from)?;
        let nhf: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
        if ninf == 0 || nhf > MAX_HOPS || path.len() != META_LEN + INFO_LEN * ninf + HOP_LEN * nhf {
            return Err(DropReason::MalformedPath);
        }
        let (mut ci, mut ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
        if ch >= nhf || ci >= ninf || segment_of(meta.seg_len, ch) != ci {
            return Err(DropReason::PathIndexOutOfRange);
        }
        let hop_base = META_LEN + INFO_LEN * ninf;
        let info_at = |i: usize| META_LEN + INFO_LEN * i;

        let mut info = InfoField::parse(&path[info_at(ci)..]);
        let mut hop = HopField::parse(&path[hop_base + HOP_LEN * ch..]);
        let s0 = usize::from(meta.seg_len[0]);
        let peering = is_peering(&info, meta.seg_len, ch + 1 == s0, ch == s0)?;
        let (hop_in, _) = hop.travel_interfaces(info.cons_dir);
        if ingress != 0 && ingress != hop_in {
            return Err(DropReason::BadIngress);
        }
        self.check_src_dst(src, dst, ingress, PathEnds { first_hop: ch == 0, last_hop: ch == nhf - 1 })?;

        if !info.cons_dir && ingress != 0 && !peering {
            info.seg_id = chain_seg_id(info.seg_id, &hop.mac);
        }
        self.verify_hop(&hop, &info, info.seg_id, now_ns)?;
        if dst == self.local_ia {
            write_seg_id(path, info_at(ci), info.seg_id);
            return Ok(Verdict::Deliver);
        }
        if ch + 1 < nhf && segment_of(meta.seg_len, ch + 1) != ci && !peering {
            // Segment crossover: the next hop field, in the next segment, is this AS's too.
            write_seg_id(path, info_at(ci), info.seg_id);
            ci += 1;
            ch += 1;
            info = InfoField::parse(&path[info_at(ci)..]);
            hop = HopField::parse(&path[hop_base + HOP_LEN * ch..]);
            self.verify_hop(&hop, &info, info.seg_id, now_ns)?;
        }
        let (_, egress) = hop.travel_interfaces(info.cons_dir);
        self.check_egress(egress)?;
        if ch + 1 >= nhf {
            return Err(DropReason::PathIndexOutOfRange);
        }
        if info.cons_dir && !peering {
            info.seg_id = chain_seg_id(info.seg_id, &hop.mac);
        }
        write_seg_id(path, info_at(ci), info.seg_id);
        ch += 1;
        meta.curr_hf = ch as u8;
        meta.curr_inf = segment_of(meta.seg_len, ch) as u8;
        path[..4].copy_from_slice(&meta.encode());
        Ok(Verdict::best_effort(egress))
    }
}

#[inline]
fn write_seg_id(path: &mut [u8], info_off: usize, seg_id: u16) {
    path[info_off + 2..info_off + 4].copy_from_slice(&seg_id.to_be_bytes());
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
