//! Stage 1 of router processing for path type 5: the generic hop checks of the forwarder
//! over the Hummingbird layout, and for a flyover where its reservation is. Stages 2 and 4 read
//! the reservation and the packet's timestamps from the packet itself ([`FlyoverWork::fields`]):
//! the record between the stages holds offsets and lengths, not copies.

use aviary_qos::DropReason;
use aviary_scion::forwarding::{CheckedHeader, HopWork, Staged};
use aviary_scion::wire::header::field as header;
use aviary_scion::wire::header::{path_type, ScionView};
use aviary_scion::AsForwarding;

use aviary_scion::raw;

use crate::crypto::{flyover_block, ResInfo};
use crate::path::{field, high_res_ts, Flyover, MetaHdr, FLYOVER_LEN, META_LEN};
use crate::path_view::HbirdPathView;
use crate::profile::PolicedLength;

/// The flyover part of a hop between the stages: the two lengths of the common header it is
/// policed or authenticated by. Where its hop field is, the hop's [`HopWork`] says: the hop
/// layout of path type 5 is the path itself ([`HopWork::hop_offset`]; kept here as well, a
/// batched flyover ran 4 instructions more; callgrind, 2026-11-29).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlyoverWork {
    pkt_len: u16,
    /// The common header's PayloadLen (policed instead of `pkt_len` in some profiles).
    payload_len: u16,
}

/// What a flyover packet says of its reservation and of itself, read from its path.
#[derive(Clone, Copy, Debug)]
pub struct FlyoverFields {
    pub meta: MetaHdr,
    pub flyover: Flyover,
}

/// Parses the type-5 path of the packet `pkt` at an AS and checks what needs no cryptography.
/// The header's fields are read from the view where they are used, not before the path's
/// checks: kept live through them, they were spilled (callgrind, 2026-11-26, with the forwarder
/// reading the ISD-ASes only for the empty path: -3 instructions a flyover packet).
#[inline]
pub fn prepare_hbird(
    fwd: &AsForwarding,
    pkt: &ScionView<&[u8]>,
    ingress: u16,
) -> Result<(HopWork, Option<FlyoverWork>), DropReason> {
    let view = HbirdPathView::new_checked(pkt.path()).map_err(DropReason::from)?;
    let mut work = fwd.prepare_hop(&view, pkt.src_ia(), pkt.dst_ia(), ingress)?;
    if !view.current_is_flyover() {
        work.set_mac(work.mac());
        return Ok((work, None));
    }
    let pkt_len = pkt.pkt_len_u16().ok_or(DropReason::PktLenOverflow)?;
    let flyover = FlyoverWork { pkt_len, payload_len: pkt.payload_len() };
    Ok((work, Some(flyover)))
}

/// [`prepare_hbird`] after the common header's checks in one pass over the packet's raw
/// words: the same record if every check passes, `None` if any fails (the views' route then
/// names the reason). The header's checks are merged ([`CheckedHeader`]) and the record is
/// built where the forwarder writes it, with no `Result` of a drop reason on the way.
#[inline(always)]
pub fn prepare_hbird_raw(fwd: &AsForwarding, pkt: &[u8], ingress: u16) -> Option<Staged<FlyoverWork>> {
    let header = CheckedHeader::new(pkt, path_type::HUMMINGBIRD, META_LEN)?;
    let view = HbirdPathView::new_checked(header.path()).ok()?;
    let (dst, src) = header.dst_src();
    let mut hop = fwd.prepare_hop(&view, src, dst, ingress).ok()?;
    let ext = if view.current_is_flyover() {
        // PktLenOverflow in the views' route.
        let pkt_len = u16::try_from(pkt.len()).ok()?;
        Some(FlyoverWork { pkt_len, payload_len: header.payload_len() })
    } else {
        hop.set_mac(hop.mac());
        None
    };
    // Below 1020 (HdrLen counts 4-byte units in one byte); the hop layout is the path itself
    // (`HopExtension::hop_layout_offset` is 0 for path type 5).
    Some(Staged { path_start: header.path_start() as u16, layout_offset: 0, hop, ext })
}

impl FlyoverWork {
    /// The meta header and reservation of `path`, the path the flyover's `hop` was prepared
    /// from. Stage 4 reads them after the path was updated: neither the timestamps nor the
    /// reservation fields are among what is written.
    #[inline]
    pub fn fields(path: &[u8], hop: &HopWork) -> FlyoverFields {
        // One compare for both slicings (the meta header, shorter, opens the path).
        const { assert!(META_LEN <= FLYOVER_LEN) };
        let fly = hop.hop_offset();
        assert!(path.len() >= fly + FLYOVER_LEN, "flyover work applied to a shorter path");
        let meta = path[..META_LEN].try_into().expect("stage 1 found the meta header");
        let fly = path[fly..][..FLYOVER_LEN].try_into().expect("stage 1 found the flyover");
        FlyoverFields { meta: MetaHdr::from_bytes(meta), flyover: Flyover::from_hop_bytes(fly) }
    }

    /// Where the (Agg)MAC of the flyover hop field of `hop` is in the path.
    #[inline]
    pub fn mac_offset(hop: &HopWork) -> usize {
        hop.hop_offset() + field::flyover::MAC.start
    }

    /// The length Alg. 1 polices: the packet's or its payload's.
    #[inline]
    pub fn policed_len(&self, which: PolicedLength) -> u16 {
        match which {
            PolicedLength::Packet => self.pkt_len,
            PolicedLength::Payload => self.payload_len,
        }
    }

    /// Stage 2's inputs from `pkt`, the packet this work was prepared from (its path at
    /// `path_start`, its hop `hop`): the ResID, the input block of A_K = AES_SV(ResInfo) (the
    /// [`ResInfo`] of [`FlyoverFields::res`]) and that of FlyoverMAC = AES_{A_K}(...). Read under
    /// one bounds check, not through [`Self::fields`] and the address header's slice (four
    /// checks; callgrind, 2026-11-26: -7 instructions a flyover packet in a batch, -2 a single
    /// one).
    #[inline]
    pub fn input_blocks(&self, pkt: &[u8], path_start: usize, hop: &HopWork) -> (u32, [u8; 16], [u8; 16]) {
        let fly = path_start + hop.hop_offset();
        // The flyover hop field ends after the meta header (which is shorter and opens the path)
        // and, for a path stage 1 found, after the address header: one compare for every read.
        const { assert!(META_LEN <= FLYOVER_LEN) };
        let reach = (fly + FLYOVER_LEN).max(header::DST_IA.end);
        assert!(pkt.len() >= reach, "flyover work applied to a shorter packet");
        // SAFETY: `pkt` reaches `reach` (asserted), so `path_start + META_LEN <= fly +
        // FLYOVER_LEN <= reach`, and the destination ISD-AS ends at DST_IA.end <= reach.
        let (meta, flyover, dst_ia) = unsafe {
            (
                raw::bytes::<META_LEN>(pkt, path_start),
                raw::bytes::<FLYOVER_LEN>(pkt, fly),
                raw::bytes::<8>(pkt, header::DST_IA.start),
            )
        };
        let f = FlyoverFields { meta: MetaHdr::from_bytes(&meta), flyover: Flyover::from_hop_bytes(&flyover) };
        let mac_block = flyover_block(dst_ia, self.pkt_len, f.flyover.res_start_offset, f.meta.millis, f.meta.counter);
        (f.flyover.res_id, f.res(hop).block(), mac_block)
    }
}

impl FlyoverFields {
    /// The reservation as the packet states it, on the interface pair the forwarder found
    /// (in the direction of travel; at a crossover the egress of the next segment).
    #[inline]
    pub fn res(&self, hop: &HopWork) -> ResInfo {
        ResInfo {
            ingress: hop.hop_ingress(),
            egress: hop.egress(),
            res_id: self.flyover.res_id,
            bw: self.flyover.bw,
            start: self.meta.base_ts.wrapping_sub(u32::from(self.flyover.res_start_offset)),
            duration: self.flyover.res_duration,
        }
    }

    /// `BaseTimestamp | Millis<<22 | Counter`, the packet's identity for duplicate suppression
    /// together with the source address.
    #[inline]
    pub fn packet_id(&self) -> u64 {
        u64::from(self.meta.base_ts) << 32 | u64::from(high_res_ts(self.meta.millis, self.meta.counter))
    }
}
