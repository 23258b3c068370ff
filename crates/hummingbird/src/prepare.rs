//! Stage 1 of router processing for path type 5: the generic hop checks of the forwarder
//! over the Hummingbird layout, and for a flyover the inputs of its A_K and FlyoverMAC.

use aviary_qos::DropReason;
use aviary_scion::forwarding::HopWork;
use aviary_scion::{AsForwarding, IsdAsn};

use crate::crypto::{flyover_block, ResInfo, MAX_MILLIS};
use crate::path::field;
use crate::path_view::HbirdPathView;

const MS: u64 = 1_000_000;

/// The reservation part of a flyover hop, between the stages.
#[derive(Clone, Copy, Debug)]
pub struct FlyoverWork {
    /// Input of FlyoverMAC = AES_{A_K}(...).
    pub mac_block: [u8; 16],
    /// Offset of the (Agg)MAC within the path (a path fits in the header's 1020 bytes).
    pub mac_off: u16,
    /// The reservation as the packet states it (interfaces in the direction of travel); the
    /// input of A_K = AES_SV(ResInfo) is made from it in stage 2.
    pub res: ResInfo,
    pub pkt_len: u16,
    /// The common header's PayloadLen (policed instead of `pkt_len` in some profiles).
    pub payload_len: u16,
    /// `BaseTimestamp | Millis<<22 | Counter`, the packet's identity for duplicate suppression
    /// together with the source address.
    pub packet_id: u64,
}

/// Parses a type-5 path at an AS and checks what needs no cryptography. Takes the header
/// fields it needs rather than the view, so that it stays inlinable into the forwarder.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn prepare_hbird(
    fwd: &AsForwarding,
    path: &[u8],
    src: IsdAsn,
    dst: IsdAsn,
    dst_bytes: [u8; 8],
    pkt_len: Option<u16>,
    payload_len: u16,
    ingress: u16,
) -> Result<(HopWork, Option<FlyoverWork>), DropReason> {
    let view = HbirdPathView::new_checked(path).map_err(DropReason::from)?;
    let mut work = fwd.prepare_hop(&view, src, dst, ingress)?;
    let Some(fly) = view.current_flyover() else {
        work.set_mac(work.mac());
        return Ok((work, None));
    };
    // The flyover's interface pair: the ingress of this hop field and the egress the
    // forwarder chose (at a crossover, that of the next segment's first hop field).
    let meta = view.meta();
    let pkt_len = pkt_len.ok_or(DropReason::PktLenOverflow)?;
    let res = ResInfo {
        ingress: work.hop_ingress(),
        egress: work.egress(),
        res_id: fly.res_id,
        bw: fly.bw,
        start: meta.base_ts.wrapping_sub(u32::from(fly.res_start_offset)),
        duration: fly.res_duration,
    };
    let flyover = FlyoverWork {
        mac_block: flyover_block(dst_bytes, pkt_len, fly.res_start_offset, meta.millis, meta.counter),
        mac_off: (view.current_hop_offset() + field::flyover::MAC.start) as u16,
        res,
        pkt_len,
        payload_len,
        packet_id: u64::from(meta.base_ts) << 32 | u64::from(meta.millis) << 22 | u64::from(meta.counter),
    };
    Ok((work, Some(flyover)))
}

impl FlyoverWork {
    /// BaseTimestamp + MillisTimestamp, ns (both are in `packet_id`).
    #[inline]
    pub fn sent_ns(&self) -> u64 {
        let (base_ts, millis) = (self.packet_id >> 32, (self.packet_id >> 22) & u64::from(MAX_MILLIS));
        (base_ts * 1000 + millis) * MS
    }
}
