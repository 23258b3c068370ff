//! Stage 1 of router processing for path type 5: parse the Hummingbird path and run
//! every check that needs no cryptography, producing the hop-field work shared with the
//! standard path and, for a flyover, the inputs of its A_K and FlyoverMAC.

use aviary_qos::DropReason;
use aviary_scion::forwarding::{is_peering, HopWork, NextHop, PathEnds};
use aviary_scion::wire::path::segment_of;
use aviary_scion::{AsForwarding, IsdAsn};

use crate::crypto::{flyover_block, ResInfo};
use crate::path::HOP_LINES;
use crate::path_view::HbirdPathView;

const MS: u64 = 1_000_000;

/// The reservation part of a flyover hop, between the stages.
#[derive(Clone, Copy, Debug)]
pub struct FlyoverWork {
    /// Input of A_K = AES_SV(ResInfo).
    pub res_block: [u8; 16],
    /// Input of FlyoverMAC = AES_{A_K}(...).
    pub mac_block: [u8; 16],
    /// Offset of the (Agg)MAC within the path.
    pub mac_off: usize,
    /// The reservation as the packet states it (interfaces in the direction of travel).
    pub res: ResInfo,
    /// BaseTimestamp + MillisTimestamp, ns.
    pub sent_ns: u64,
    pub pkt_len: u16,
}

/// Parses a type-5 path at an AS and checks what needs no cryptography.
pub fn prepare_hbird(
    fwd: &AsForwarding,
    path: &[u8],
    src: IsdAsn,
    dst: IsdAsn,
    dst_bytes: [u8; 8],
    pkt_len: Option<u16>,
    ingress: u16,
) -> Result<(HopWork, Option<FlyoverWork>), DropReason> {
    let view = HbirdPathView::new_checked(path).map_err(DropReason::from)?;
    let mut meta = view.meta();
    let (ninf, lines) = (view.num_info_fields(), view.lines());
    let (ci, ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
    let seg_end = |s: usize| view.segment_end(s);
    let info_at = |i: usize| view.info_offset(i);
    let hop_lines = view.lines_at(ch);
    let info = view.info(ci);
    let current = view.hop(ch).ok_or(DropReason::MalformedPath)?;
    let hop = current.hop;
    let peering = is_peering(&info, meta.seg_len, ch + hop_lines == seg_end(0), ch == seg_end(0))?;
    let (hop_in, mut egress) = hop.travel_interfaces(info.cons_dir);
    if ingress != 0 && ingress != hop_in {
        return Err(DropReason::BadIngress);
    }
    fwd.check_src_dst(src, dst, ingress, PathEnds { first_hop: ch == 0, last_hop: ch + hop_lines == lines })?;
    let deliver = dst == fwd.local_ia;

    // At a crossover the next segment's first hop field is this AS's too: its egress closes
    // the flyover's interface pair (A.5) and it is verified as well.
    let mut next = None;
    let mut last = (ch, hop_lines);
    if !deliver && ch + hop_lines == seg_end(ci) && ci + 1 < ninf && !peering {
        let line = ch + hop_lines;
        let nhop = match view.hop(line) {
            Some(h) if h.flyover.is_none() && line + HOP_LINES <= seg_end(ci + 1) => h.hop,
            _ => return Err(DropReason::MalformedPath),
        };
        let ninfo = view.info(ci + 1);
        egress = nhop.travel_interfaces(ninfo.cons_dir).1;
        next = Some(NextHop { info_off: info_at(ci + 1), info: ninfo, hop: nhop });
        last = (line, HOP_LINES);
    }
    let advanced = last.0 + last.1;
    meta.curr_hf = advanced.min(255) as u8;
    meta.curr_inf = segment_of(meta.seg_len, advanced) as u8;

    let flyover = if let Some(fly) = current.flyover {
        let pkt_len = pkt_len.ok_or(DropReason::PktLenOverflow)?;
        let res = ResInfo {
            ingress: hop_in,
            egress,
            res_id: fly.res_id,
            bw: fly.bw,
            start: meta.base_ts.wrapping_sub(u32::from(fly.res_start_offset)),
            duration: fly.res_duration,
        };
        Some(FlyoverWork {
            res_block: res.block(),
            mac_block: flyover_block(dst_bytes, pkt_len, fly.res_start_offset, meta.millis, meta.counter),
            mac_off: view.hop_offset(ch) + 6,
            res,
            sent_ns: (u64::from(meta.base_ts) * 1000 + u64::from(meta.millis)) * MS,
            pkt_len,
        })
    } else {
        None
    };
    let mut work = HopWork {
        info_off: info_at(ci),
        info,
        hop,
        chain_before: HopWork::chains_before_verifying(&info, ingress, peering),
        peering,
        deliver,
        next,
        egress,
        // CurrHF has 8 bits: a hop field beyond line 255 cannot be pointed at.
        at_end: advanced >= lines || advanced > 255,
        advanced_meta: meta.encode_word0(),
    };
    if flyover.is_none() {
        work.set_mac(hop.mac);
    }
    Ok((work, flyover))
}
