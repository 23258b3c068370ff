//! Border-router processing of one AS (seed 000, Alg. 1-4), sans-IO: the packet bytes,
//! the ingress interface and the time go in; the packet is updated in place and a
//! [`Verdict`] comes out. Standard SCION (type 1) packets take the same pipeline.
//!
//! For a flyover hop: recompute A_K from the packet's reservation fields, the FlyoverMAC,
//! and the candidate hop-field MAC `AggMAC ⊕ FlyoverMAC`; the hop field is then verified
//! exactly like a standard one against that candidate (a forged reservation field yields
//! a wrong candidate, so the packet is dropped). A valid flyover gets priority only when
//! the packet is fresh, the reservation is active and the policer admits it; otherwise it
//! is forwarded best effort. The plain hop-field MAC is written back over the AggMAC.

use aviary_qos::{Class, DropCounters, DropReason, InverseRateTable, ReservationPolicer, Verdict};
use aviary_scion::header::{path_type, ScionView};
use aviary_scion::path::{chain_seg_id, num_info_fields, segment_of, HOP_LEN, INFO_LEN};
use aviary_scion::router::{is_peering, PathEnds};
use aviary_scion::{AsForwarding, HopField, InfoField};
use serde::{Deserialize, Serialize};

use crate::bw::BwCodec;
use crate::crypto::{flyover_block, AuthKey, ResInfo, SecretValue};
use crate::path::{Flyover, MetaHdr, FLYOVER_BIT, FLYOVER_LINES, HOP_LINES, META_LEN};

const NS: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// How the policer computes a packet's transmission time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicingMode {
    /// `PktLen / BW`, one division per packet (Alg. 1 as written).
    #[default]
    Division,
    /// A 1024-entry table of inverse bandwidths, no division.
    Table,
}

/// Data-plane parameters of a Hummingbird AS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouterParams {
    /// δ, the maximum clock skew.
    pub max_skew_ns: u64,
    /// Δ, the maximum packet age.
    pub max_age_ns: u64,
    /// BurstTime of Alg. 1.
    pub burst_ns: u64,
    /// Largest ResID policed per ingress interface (the array has max_res_id + 1 slots).
    pub max_res_id: u32,
    pub codec: BwCodec,
    pub policing: PolicingMode,
}

impl Default for RouterParams {
    fn default() -> Self {
        Self {
            max_skew_ns: 500 * MS,
            max_age_ns: NS,
            burst_ns: 50 * MS,
            max_res_id: 100_000,
            codec: BwCodec::Paper,
            policing: PolicingMode::Division,
        }
    }
}

/// A Hummingbird-capable border router of one AS (all its interfaces).
#[derive(Clone, Debug)]
pub struct Router {
    fwd: AsForwarding,
    sv: SecretValue,
    params: RouterParams,
    /// Policing array per ingress interface (0 = traffic from inside the AS).
    policers: Vec<(u16, ReservationPolicer)>,
    inv_table: InverseRateTable,
    drops: DropCounters,
}

/// What the flyover part of a hop decided before the hop field itself is verified.
#[derive(Clone, Copy)]
struct FlyoverCheck {
    /// Fresh and active: eligible for priority if the policer agrees.
    eligible: bool,
    pkt_len: u16,
    res_id: u32,
    bw: u16,
}

impl Router {
    pub fn new(
        fwd: AsForwarding,
        sv: SecretValue,
        params: RouterParams,
    ) -> Result<Self, aviary_qos::PolicerConfigError> {
        let mut ingress: Vec<u16> = fwd.interfaces.iter().collect();
        ingress.push(0);
        let policers = ingress
            .into_iter()
            .map(|i| Ok((i, ReservationPolicer::new(params.max_res_id, params.burst_ns)?)))
            .collect::<Result<_, _>>()?;
        let codec = params.codec;
        Ok(Self {
            fwd,
            sv,
            params,
            policers,
            inv_table: InverseRateTable::new(|c| codec.decode_bps(c)),
            drops: DropCounters::default(),
        })
    }

    pub fn params(&self) -> &RouterParams {
        &self.params
    }
    pub fn forwarding(&self) -> &AsForwarding {
        &self.fwd
    }
    pub fn drops(&self) -> &DropCounters {
        &self.drops
    }
    /// The burst allowance can change at runtime; policing state is kept.
    pub fn set_burst_ns(&mut self, burst_ns: u64) {
        self.params.burst_ns = burst_ns;
        for (_, p) in &mut self.policers {
            p.set_burst_ns(burst_ns);
        }
    }

    /// Processes one packet; drops are counted.
    pub fn process(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let v = self.process_uncounted(pkt, ingress, now_ns);
        if let Verdict::Drop(r) = v {
            self.drops.count(r);
        }
        v
    }

    /// Processes packets that arrived on the same interface at the same time.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        for (p, v) in pkts.iter_mut().zip(verdicts.iter_mut()) {
            *v = self.process(p, ingress, now_ns);
        }
    }

    fn process_uncounted(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let mut view = match ScionView::new_checked(pkt) {
            Ok(v) => v,
            Err(e) => return Verdict::Drop(e.into()),
        };
        match view.path_type() {
            path_type::HUMMINGBIRD => {
                let (src, dst, dst_bytes) = (view.src_ia(), view.dst_ia(), view.dst_ia_bytes());
                let pkt_len = view.pkt_len_u16();
                match self.hbird(view.path_mut(), src, dst, dst_bytes, pkt_len, ingress, now_ns) {
                    Ok(v) => v,
                    Err(r) => Verdict::Drop(r),
                }
            }
            _ => self.fwd.process(view.into_inner(), ingress, now_ns),
        }
    }

    /// Alg. 3 up to the candidate hop-field MAC: returns it with the flyover's status.
    #[allow(clippy::too_many_arguments)]
    fn flyover(
        &self,
        fly: &Flyover,
        agg_mac: &[u8; 6],
        travel: (u16, u16),
        meta: &MetaHdr,
        dst_ia: [u8; 8],
        pkt_len: Option<u16>,
        now_ns: u64,
    ) -> Result<([u8; 6], FlyoverCheck), DropReason> {
        let pkt_len = pkt_len.ok_or(DropReason::PktLenOverflow)?;
        let res = ResInfo {
            ingress: travel.0,
            egress: travel.1,
            res_id: fly.res_id,
            bw: fly.bw,
            start: meta.base_ts.wrapping_sub(u32::from(fly.res_start_offset)),
            duration: fly.res_duration,
        };
        let ak = AuthKey::new(&self.sv.auth_key(&res));
        let fm = ak.flyover_mac(&flyover_block(dst_ia, pkt_len, fly.res_start_offset, meta.millis, meta.counter));
        let mut cand = *agg_mac;
        for (c, f) in cand.iter_mut().zip(fm) {
            *c ^= f;
        }
        let sent_ns = (u64::from(meta.base_ts) * 1000 + u64::from(meta.millis)) * MS;
        let fresh = sent_ns <= now_ns.saturating_add(self.params.max_skew_ns)
            && now_ns <= sent_ns + self.params.max_age_ns + self.params.max_skew_ns;
        let eligible = fresh && res.active_at(now_ns);
        Ok((cand, FlyoverCheck { eligible, pkt_len, res_id: fly.res_id, bw: fly.bw }))
    }

    /// Alg. 1 for an eligible flyover; everything else is best effort.
    fn charge(&mut self, ingress: u16, c: Option<&FlyoverCheck>, now_ns: u64) -> Class {
        let Some(c) = c.filter(|c| c.eligible) else {
            return Class::BestEffort;
        };
        let Some((_, p)) = self.policers.iter_mut().find(|(i, _)| *i == ingress) else {
            return Class::BestEffort;
        };
        let admitted = match self.params.policing {
            PolicingMode::Division => p.admit(c.res_id, c.pkt_len, self.params.codec.decode_bps(c.bw), now_ns),
            PolicingMode::Table => p.admit_table(c.res_id, c.pkt_len, c.bw, &self.inv_table, now_ns),
        };
        if admitted {
            Class::Priority
        } else {
            Class::BestEffort
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn hbird(
        &mut self,
        path: &mut [u8],
        src: aviary_scion::IsdAsn,
        dst: aviary_scion::IsdAsn,
        dst_bytes: [u8; 8],
        pkt_len: Option<u16>,
        ingress: u16,
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if path.len() < META_LEN {
            return Err(DropReason::MalformedPath);
        }
        let mut meta = MetaHdr::decode(path);
        let ninf = num_info_fields(meta.seg_len).map_err(|_| DropReason::MalformedPath)?;
        let lines: usize = meta.seg_len.iter().map(|l| usize::from(*l)).sum();
        if ninf == 0 || path.len() != META_LEN + INFO_LEN * ninf + 4 * lines {
            return Err(DropReason::MalformedPath);
        }
        let (mut ci, mut ch) = (usize::from(meta.curr_inf), usize::from(meta.curr_hf));
        if ch >= lines || ci >= ninf || segment_of(meta.seg_len, ch) != ci {
            return Err(DropReason::PathIndexOutOfRange);
        }
        let seg_end = |s: usize| meta.seg_len[..=s].iter().map(|l| usize::from(*l)).sum::<usize>();
        let hop_base = META_LEN + INFO_LEN * ninf;
        let info_at = |i: usize| META_LEN + INFO_LEN * i;
        let hop_at = |line: usize| hop_base + 4 * line;

        let mut info = InfoField::parse(&path[info_at(ci)..]);
        let flyover_bit = path[hop_at(ch)] & FLYOVER_BIT != 0;
        let hop_lines = if flyover_bit { FLYOVER_LINES } else { HOP_LINES };
        if ch + hop_lines > seg_end(ci) {
            return Err(DropReason::MalformedPath);
        }
        let mut hop = HopField::parse(&path[hop_at(ch)..]);
        let peering = is_peering(&info, meta.seg_len, ch + hop_lines == seg_end(0), ch == seg_end(0))?;
        let xover = ch + hop_lines == seg_end(ci) && ci + 1 < ninf && !peering;
        let (hop_in, mut egress) = hop.travel_interfaces(info.cons_dir);
        if ingress != 0 && ingress != hop_in {
            return Err(DropReason::BadIngress);
        }
        self.fwd.check_src_dst(
            src,
            dst,
            ingress,
            PathEnds { first_hop: ch == 0, last_hop: ch + hop_lines == lines },
        )?;

        // The next hop field, when this AS is a crossover: its egress closes the flyover's
        // interface pair (A.5) and it is verified too.
        let next = if xover {
            let next_line = ch + hop_lines;
            if next_line + HOP_LINES > seg_end(ci + 1) || path[hop_at(next_line)] & FLYOVER_BIT != 0 {
                return Err(DropReason::MalformedPath);
            }
            let ninfo = InfoField::parse(&path[info_at(ci + 1)..]);
            let nhop = HopField::parse(&path[hop_at(next_line)..]);
            egress = nhop.travel_interfaces(ninfo.cons_dir).1;
            Some((next_line, ninfo, nhop))
        } else {
            None
        };

        let mut flyover = None;
        if flyover_bit {
            let fly = Flyover::parse(&path[hop_at(ch) + HOP_LEN..]);
            let (cand, check) = self.flyover(&fly, &hop.mac, (hop_in, egress), &meta, dst_bytes, pkt_len, now_ns)?;
            hop.mac = cand;
            flyover = Some(check);
        }
        if !info.cons_dir && ingress != 0 && !peering {
            info.seg_id = chain_seg_id(info.seg_id, &hop.mac);
        }
        self.fwd.verify_hop(&hop, &info, info.seg_id, now_ns)?;
        if flyover.is_some() {
            // Write the plain hop-field MAC back so that the path can be reversed.
            path[hop_at(ch) + 6..hop_at(ch) + 12].copy_from_slice(&hop.mac);
        }
        if dst == self.fwd.local_ia {
            path[info_at(ci) + 2..info_at(ci) + 4].copy_from_slice(&info.seg_id.to_be_bytes());
            self.charge(ingress, flyover.as_ref(), now_ns);
            return Ok(Verdict::Deliver);
        }
        let mut step = hop_lines;
        if let Some((next_line, ninfo, nhop)) = next {
            path[info_at(ci) + 2..info_at(ci) + 4].copy_from_slice(&info.seg_id.to_be_bytes());
            self.fwd.verify_hop(&nhop, &ninfo, ninfo.seg_id, now_ns)?;
            ci += 1;
            ch = next_line;
            info = ninfo;
            hop = nhop;
            step = HOP_LINES;
        }
        self.fwd.check_egress(egress)?;
        if ch + step >= lines {
            return Err(DropReason::PathIndexOutOfRange);
        }
        // Charged only now that every check has passed: a dropped packet costs nothing.
        let class = self.charge(ingress, flyover.as_ref(), now_ns);
        if info.cons_dir && !peering {
            info.seg_id = chain_seg_id(info.seg_id, &hop.mac);
        }
        path[info_at(ci) + 2..info_at(ci) + 4].copy_from_slice(&info.seg_id.to_be_bytes());
        ch += step;
        meta.curr_hf = ch as u8;
        meta.curr_inf = segment_of(meta.seg_len, ch) as u8;
        path[..4].copy_from_slice(&meta.encode_word0());
        Ok(Verdict::Forward { egress, class })
    }
}
