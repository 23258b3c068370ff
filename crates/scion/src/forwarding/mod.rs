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

mod checked_header;
mod drops;
mod extension;
mod prepare;
mod raw;
pub mod reply;
pub mod rotation;
pub mod staged;

pub use checked_header::CheckedHeader;
pub use prepare::HopLayout;
pub use rotation::KeyGenerations;
pub use staged::{HopAuth, HopExtension, Staged, StagedForwarder, Standard, StandardForwarder, MAX_BATCH};

use aviary_aes::cpu::{Cpu, Detect};
use aviary_qos::{DropReason, Verdict};

use crate::mac::{input, mac_eq, macs_match, HopMacKey, MAC_LEN};
use crate::wire::path::{chain_seg_id, field, hop_expiry_ns, InfoField};
use crate::IsdAsn;
use raw::{HopWord, InfoWord};

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
    /// been issued on either side of the rotation. `layout` is the hop layout `w` was prepared
    /// from.
    pub(crate) fn macs_across_rotation(&self, w: &HopWork, layout: &[u8], now_ns: u64) -> HopAuth {
        let pick = |block: [u8; 16], carried: &[u8; MAC_LEN]| {
            let cmac = self.mac_keys.current().cmac_block(&block);
            match self.mac_keys.previous_at(now_ns) {
                Some(previous) if !mac_eq(&cmac[..MAC_LEN], carried) => previous.cmac_block(&block),
                _ => cmac,
            }
        };
        let (b1, b2) = w.mac_blocks(Detect, layout);
        let layout = w.proven(layout);
        HopAuth {
            current: pick(b1, &w.mac),
            // SAFETY: `layout` is proven for `w`, whose offsets it holds.
            next: b2.zip(w.next()).map(|(b, n)| pick(b, &unsafe { mac_at(layout, n.hop_off) })),
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

    #[inline]
    pub fn check_egress(&self, egress: u16) -> Result<(), DropReason> {
        if self.interfaces.contains(egress) {
            Ok(())
        } else {
            Err(DropReason::UnknownEgress)
        }
    }

    /// Verifies the hop field(s) of a prepared packet given their computed MACs, and
    /// updates SegID and CurrINF/CurrHF in place. `layout` is the hop layout `w` was prepared
    /// from, its bytes as they were then. `Ok(None)`: deliver locally; `Ok(Some(egress))`:
    /// forward.
    // Inlined into the batch loop (forced: LLVM kept it apart when asked with `#[inline]`):
    // called, it saved and restored six registers and returned its `Result` through memory
    // for every packet (callgrind, 2026-11-26: -24 instructions a standard packet).
    #[inline(always)]
    pub(crate) fn finish(
        &self,
        layout: &mut [u8],
        w: &HopWork,
        mac: [u8; MAC_LEN],
        next_mac: Option<[u8; MAC_LEN]>,
        now_ns: u64,
    ) -> Result<Option<u16>, DropReason> {
        w.proven(layout);
        // SAFETY: just checked.
        unsafe { self.finish_proven(layout, w, mac, next_mac, now_ns) }
    }

    /// [`Self::finish`] for a layout already checked to hold every field of `w`: the batch's
    /// stage 3 checked it for the same record and packet (checked again, ≈ 5 instructions a
    /// packet; callgrind, 2026-11-26).
    ///
    /// # Safety
    /// `layout.len() >= w.end`, what [`HopWork::proven`] checks.
    #[inline(always)]
    pub(crate) unsafe fn finish_proven(
        &self,
        layout: &mut [u8],
        w: &HopWork,
        mac: [u8; MAC_LEN],
        next_mac: Option<[u8; MAC_LEN]>,
        now_ns: u64,
    ) -> Result<Option<u16>, DropReason> {
        debug_assert!(layout.len() >= usize::from(w.end));
        // SAFETY: `layout` holds every field `w` points at (the caller's promise).
        let (info, hop) = unsafe { (info_at(layout, w.info_off), hop_at(layout, w.hop_off)) };
        check_hop(info.timestamp(), hop.exp_time(), &w.mac, &mac, now_ns)?;
        if w.deliver {
            // SAFETY: as above.
            unsafe { put_seg_id(layout, w.info_off, w.seg_id) };
            return Ok(None);
        }
        // The hop field whose MAC the SegID is chained with after verification, and its
        // info field: at a crossover the next segment's.
        let (info_off, seg_id, cons_dir, chained_mac) = match (w.next(), next_mac) {
            (Some(n), Some(m)) => {
                // SAFETY: as above.
                let (ninfo, nhop, nmac) =
                    unsafe { (info_at(layout, n.info_off), hop_at(layout, n.hop_off), mac_at(layout, n.hop_off)) };
                check_hop(ninfo.timestamp(), nhop.exp_time(), &nmac, &m, now_ns)?;
                (n.info_off, ninfo.seg_id(), ninfo.cons_dir(), nmac)
            }
            (Some(_), None) => return Err(DropReason::BadMac),
            // ConsDir from the info word read above: the record need not carry it.
            (None, _) => (w.info_off, w.seg_id, info.cons_dir(), w.mac),
        };
        self.check_egress(w.egress)?;
        if w.at_end {
            return Err(DropReason::PathIndexOutOfRange);
        }
        // Every check passed before the first write: a refused packet is left as it came, so
        // that it can be verified again from its own SegID under a previous key.
        let seg_id = if cons_dir && !w.peering { chain_seg_id(seg_id, &chained_mac) } else { seg_id };
        // SAFETY: as above; the meta word opens the layout, before its info fields.
        unsafe {
            put_seg_id(layout, w.info_off, w.seg_id);
            put_seg_id(layout, info_off, seg_id);
            raw::put(layout, field::meta::WORD.start, w.advanced_meta);
        }
        Ok(Some(w.egress))
    }
}

/// Expiry and MAC of one hop field: `carried` is the MAC to verify (the one on the wire or a
/// flyover's candidate), `computed` the one the AS key gives.
#[inline]
fn check_hop(
    timestamp: u32,
    exp_time: u8,
    carried: &[u8; MAC_LEN],
    computed: &[u8; MAC_LEN],
    now_ns: u64,
) -> Result<(), DropReason> {
    if now_ns > hop_expiry_ns(timestamp, exp_time) {
        return Err(DropReason::ExpiredHop);
    }
    if !macs_match(carried, computed) {
        return Err(DropReason::BadMac);
    }
    Ok(())
}

// The fields at a [`HopWork`]'s offsets. Safety, for all four: `layout` passed
// [`HopWork::proven`] for the work `off` comes from.

#[inline(always)]
unsafe fn info_at(layout: &[u8], off: u16) -> InfoWord {
    // SAFETY: an info field at `off` ends before `HopWork::end`, which `layout` reaches.
    InfoWord(unsafe { raw::be_u64(layout, usize::from(off)) })
}

#[inline(always)]
unsafe fn hop_at(layout: &[u8], off: u16) -> HopWord {
    // SAFETY: a hop field at `off` ends before `HopWork::end`, which `layout` reaches.
    HopWord(unsafe { raw::be_u64(layout, usize::from(off)) })
}

#[inline(always)]
unsafe fn mac_at(layout: &[u8], off: u16) -> [u8; MAC_LEN] {
    // SAFETY: as `hop_at`; the MAC is within the hop field.
    unsafe { raw::bytes(layout, usize::from(off) + field::hop::MAC.start) }
}

#[inline(always)]
unsafe fn put_seg_id(layout: &mut [u8], off: u16, seg_id: u16) {
    // SAFETY: as `info_at`; SegID is within the info field.
    unsafe { raw::put(layout, usize::from(off) + field::info::SEG_ID.start, seg_id.to_be_bytes()) }
}

/// The MAC input block of a hop field under `seg_id` and its info field's timestamp: one byte
/// shuffle where `cpu` has AES-NI (and so SSSE3 and SSE4.1).
#[inline(always)]
fn mac_block(cpu: impl Cpu, seg_id: u16, info: InfoWord, hop: HopWord) -> [u8; 16] {
    #[cfg(target_arch = "x86_64")]
    if let Some(ni) = cpu.aes_ni() {
        return raw::shuffled::mac_block(ni, seg_id, info, hop);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = cpu;
    mac_block_by_fields(seg_id, info, hop)
}

/// [`mac_block`] field by field, without a byte shuffle.
#[inline(always)]
fn mac_block_by_fields(seg_id: u16, info: InfoWord, hop: HopWord) -> [u8; 16] {
    let at = |end: usize| 8 * (16 - end) as u32;
    let b = u128::from(seg_id) << at(input::SEG_ID.end)
        | u128::from(info.timestamp()) << at(input::TIMESTAMP.end)
        | u128::from(hop.mac_input_part()) << at(input::HOP_PART.end);
    b.to_be_bytes()
}

/// Where the MAC to verify enters the MAC input when the SegID is chained with it (SegID ⊕ the
/// MAC's first two bytes, [`chain_seg_id`]): byte `i` of the block takes byte `SEG_ID_FEED[i]`
/// of the MAC, none where the top bit is set (a PSHUFB control).
const SEG_ID_FEED: [u8; 16] = {
    let mut feed = [0x80; 16];
    let mut i = 0;
    while input::SEG_ID.start + i < input::SEG_ID.end {
        feed[input::SEG_ID.start + i] = i as u8;
        i += 1;
    }
    feed
};

/// The current hop field's MAC input before [`HopWork::set_mac`] ([`HopWork::mac_input`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacInput {
    /// The input as the record stands: the final one unless `feed` is given.
    pub block: [u8; 16],
    /// Given while the SegID waits to be chained with the MAC to verify (against construction
    /// direction): after `set_mac(m)` the input is `block` with byte `i` XORed with byte
    /// `feed[i]` of `m`, none where `feed[i]`'s top bit is set (a PSHUFB control).
    pub feed: Option<[u8; 16]>,
}

/// The second hop field an AS verifies at a segment crossover: where it and its info field
/// are in the hop layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHop {
    info_off: u16,
    hop_off: u16,
}

impl NextHop {
    /// No crossover. Offset 0 is the meta header's, never a hop field's: the record needs no
    /// `Option` (and no tag to store) for the crossover's offsets.
    const NONE: Self = Self { info_off: 0, hop_off: 0 };
}

/// What an AS verifies for one packet, whatever the path type, once the checks that need
/// no cryptography have passed: where the current hop field (and at a crossover the next
/// one) and their info fields are in the hop layout, and the few values derived from them
/// that the later stages need; then what to write back. Only [`AsForwarding::prepare_hop`]
/// makes one, from a checked view: its offsets are proven for the layout it was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopWork {
    /// Offset of the current info field in the hop layout (within its first 28 bytes).
    info_off: u16,
    /// Offset of the current hop field in the hop layout (a path ends before byte 1020).
    hop_off: u16,
    /// Where the last field the offsets point at ends: a layout at least this long holds them
    /// all.
    end: u16,
    /// The current info field's SegID as the MAC is computed under.
    seg_id: u16,
    /// The MAC to verify the current hop field with: the one on the wire, or a flyover's
    /// candidate `AggMAC ⊕ FlyoverMAC`.
    mac: [u8; MAC_LEN],
    /// The hop field's ingress interface in the direction of travel.
    hop_ingress: u16,
    egress: u16,
    /// At a crossover, the next segment's first hop field; else [`NextHop::NONE`] (read
    /// through [`Self::next`]).
    next: NextHop,
    /// Against construction direction the SegID is chained before verification (not at
    /// the first hop field of a segment and not for peering hops).
    chain_before: bool,
    peering: bool,
    deliver: bool,
    /// Whether advancing would run past the last hop field.
    at_end: bool,
    /// The first 4 bytes of the path (indices and segment lengths) after advancing.
    advanced_meta: [u8; 4],
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

    /// Sets the hop field's MAC to verify (for a flyover: the candidate `AggMAC ⊕
    /// FlyoverMAC`) and chains the SegID with it where the direction requires it before
    /// verification.
    #[inline]
    pub fn set_mac(&mut self, mac: [u8; MAC_LEN]) {
        self.mac = mac;
        if self.chain_before {
            self.seg_id = chain_seg_id(self.seg_id, &mac);
            self.chain_before = false;
        }
    }

    /// XORs `x` into the MAC to verify and chains the SegID with the result as [`Self::set_mac`]
    /// does: a flyover's AggMAC, as on the wire, becomes its candidate `AggMAC ⊕ FlyoverMAC`.
    /// In place: through [`Self::mac`] and [`Self::set_mac`] (the candidate as a word of its
    /// own, stored byte by byte and read back for the SegID), a batched flyover ran 731.1
    /// instructions where it runs 720.2 (callgrind, 2026-11-29).
    #[inline]
    pub fn xor_mac(&mut self, x: &[u8; MAC_LEN]) {
        // As a 4-byte and a 2-byte word (byte by byte, the last two were XORed apart).
        let (m, x) = (&mut self.mac, x);
        let lo = u32::from_ne_bytes([m[0], m[1], m[2], m[3]]) ^ u32::from_ne_bytes([x[0], x[1], x[2], x[3]]);
        let hi = u16::from_ne_bytes([m[4], m[5]]) ^ u16::from_ne_bytes([x[4], x[5]]);
        m[..4].copy_from_slice(&lo.to_ne_bytes());
        m[4..].copy_from_slice(&hi.to_ne_bytes());
        if self.chain_before {
            self.seg_id = chain_seg_id(self.seg_id, &self.mac);
            self.chain_before = false;
        }
    }

    /// The MAC to verify the current hop field with (as on the wire until [`Self::set_mac`]).
    #[inline]
    pub fn mac(&self) -> [u8; MAC_LEN] {
        self.mac
    }

    /// Whether the MAC input of the current hop field still waits for [`Self::set_mac`]: its
    /// SegID is chained with the MAC to verify.
    #[inline]
    pub fn mac_input_pending(&self) -> bool {
        self.chain_before
    }

    /// Offset of the current hop field in the hop layout.
    #[inline]
    pub fn hop_offset(&self) -> usize {
        usize::from(self.hop_off)
    }

    /// The current hop field's ingress interface in the direction of travel.
    #[inline]
    pub fn hop_ingress(&self) -> u16 {
        self.hop_ingress
    }

    /// The egress interface (at a crossover, that of the next segment's first hop field).
    #[inline]
    pub fn egress(&self) -> u16 {
        self.egress
    }

    /// Whether this AS verifies a second hop field: the next segment's first, at a crossover.
    #[inline]
    pub fn at_crossover(&self) -> bool {
        self.next.hop_off != NextHop::NONE.hop_off
    }

    /// The next segment's first hop field, at a crossover.
    #[inline(always)]
    fn next(&self) -> Option<NextHop> {
        self.at_crossover().then_some(self.next)
    }

    /// MAC input blocks of the current hop field and of the crossover's next one, read from
    /// `layout`, the hop layout this work was prepared from. Forced inline: the stages that
    /// call it are compiled for AES-NI, and only there does the byte shuffle of [`mac_block`]
    /// inline (called, a single standard packet ran 35 instructions more; callgrind, 2026-11-26).
    #[inline(always)]
    pub(crate) fn mac_blocks(&self, cpu: impl Cpu, layout: &[u8]) -> ([u8; 16], Option<[u8; 16]>) {
        let layout = self.proven(layout);
        // SAFETY: `layout` is proven for this work, whose offsets these are.
        let b1 = unsafe { mac_block(cpu, self.seg_id, info_at(layout, self.info_off), hop_at(layout, self.hop_off)) };
        let b2 = match self.next() {
            Some(n) => {
                // SAFETY: as above.
                let info = unsafe { info_at(layout, n.info_off) };
                Some(mac_block(cpu, info.seg_id(), info, unsafe { hop_at(layout, n.hop_off) }))
            }
            None => None,
        };
        (b1, b2)
    }

    /// The current hop field's MAC input as the record stands (before stage 2 of a mechanism
    /// that sets the MAC to verify), and how [`Self::set_mac`] changes it: for a mechanism
    /// that computes the hop field's CMAC beside its own cryptography
    /// ([`super::HopExtension::crypto_single`]). `layout` is the hop layout this work was
    /// prepared from.
    #[inline]
    pub fn mac_input(&self, cpu: impl Cpu, layout: &[u8]) -> MacInput {
        let layout = self.proven(layout);
        // SAFETY: `layout` is proven for this work, whose offsets these are.
        let block =
            unsafe { mac_block(cpu, self.seg_id, info_at(layout, self.info_off), hop_at(layout, self.hop_off)) };
        MacInput { block, feed: self.chain_before.then_some(SEG_ID_FEED) }
    }

    /// `layout`, checked once to reach every field this work points at, so that the reads
    /// at its offsets need no further check. A layout shorter than the one the work was
    /// prepared from is a mix-up of packets in the code, not a malformed packet.
    #[inline(always)]
    fn proven<'a>(&self, layout: &'a [u8]) -> &'a [u8] {
        assert!(layout.len() >= usize::from(self.end), "hop work applied to a shorter layout");
        layout
    }
}

#[cfg(test)]
mod mac_block_tests {
    use proptest::prelude::*;

    use super::*;
    use crate::mac::mac_input;
    use crate::wire::path::{HOP_LEN, INFO_LEN};
    use aviary_aes::cpu::Portable;

    proptest! {
        /// The block [`mac_block`] builds (by a byte shuffle where the target has one) is
        /// SCION's MAC input of the fields, whatever the bytes of the info and hop fields and
        /// the SegID the record carries.
        #[test]
        fn mac_block_is_the_mac_input_of_the_fields(info in any::<[u8; 8]>(), hop in any::<[u8; 8]>(), seg_id: u16) {
            let (info, hop) = (InfoWord(u64::from_be_bytes(info)), HopWord(u64::from_be_bytes(hop)));
            let expected = mac_input(seg_id, info.timestamp(), hop.exp_time(), hop.cons_ingress(), hop.cons_egress());
            prop_assert_eq!(mac_block(Detect, seg_id, info, hop), expected);
            prop_assert_eq!(mac_block(Portable, seg_id, info, hop), expected);
            prop_assert_eq!(mac_block_by_fields(seg_id, info, hop), expected);
        }

        /// [`HopWork::mac_input`] before [`HopWork::set_mac`], its feed applied to the MAC
        /// set, is the MAC input stage 3 reads after it, whether or not the SegID waits to be
        /// chained.
        #[test]
        fn mac_input_with_its_feed_is_the_input_after_set_mac(
            layout: [u8; field::meta::WORD.end + INFO_LEN + HOP_LEN],
            seg_id: u16,
            wire: [u8; MAC_LEN],
            set: [u8; MAC_LEN],
            chain_before: bool,
        ) {
            // The meta word, one info field and the current hop field after it.
            let info_off = field::meta::WORD.end;
            let hop_off = info_off + INFO_LEN;
            let mut w = HopWork {
                info_off: info_off as u16,
                hop_off: hop_off as u16,
                end: (hop_off + HOP_LEN) as u16,
                seg_id,
                mac: wire,
                hop_ingress: 1,
                egress: 2,
                next: NextHop::NONE,
                chain_before,
                peering: false,
                deliver: false,
                at_end: false,
                advanced_meta: [0; 4],
            };
            let input = w.mac_input(Detect, &layout);
            prop_assert_eq!(input.feed.is_some(), chain_before);
            let mut fed = input.block;
            for (b, &f) in fed.iter_mut().zip(&input.feed.unwrap_or([0x80; 16])) {
                if f & 0x80 == 0 {
                    *b ^= set[usize::from(f)];
                }
            }
            let mut xored = w;
            w.set_mac(set);
            prop_assert_eq!(fed, w.mac_blocks(Detect, &layout).0);
            // The MAC XORed in place is the MAC set to the XOR, its SegID chained the same.
            let x: [u8; MAC_LEN] = std::array::from_fn(|i| wire[i] ^ set[i]);
            xored.xor_mac(&x);
            prop_assert_eq!(xored, w);
        }
    }
}
