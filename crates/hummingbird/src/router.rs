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
//!
//! Packets are processed in batches, in stages: parse and check without cryptography
//! (`prepare`), then each AES step for all packets of the batch together (A_K under the
//! one SV, the per-packet A_K schedules and FlyoverMACs four at a time, the hop-field MACs
//! under the one AS key), then verify, police and write back. A single packet is a batch
//! of one.

use aviary_qos::{Class, DropCounters, DropReason, InverseRateTable, ReservationPolicer, Verdict};
use aviary_scion::aes::Aes128;
use aviary_scion::header::{path_type, ScionView};
use aviary_scion::router::HopWork;
use aviary_scion::{AsForwarding, IsdAsn};
use serde::{Deserialize, Serialize};

use crate::bw::BwCodec;
use crate::crypto::SecretValue;
use crate::prepare::{prepare_hbird, FlyoverWork};

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

/// Packets processed together (stack-allocated state per packet).
pub const MAX_BATCH: usize = 32;

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

/// A packet between the stages of the pipeline.
#[derive(Clone, Copy)]
struct Work {
    path_start: usize,
    hop: HopWork,
    flyover: Option<FlyoverWork>,
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
        let mut v = [Verdict::Deliver];
        self.process_chunk::<1>(&mut [pkt], ingress, now_ns, &mut v);
        v[0]
    }

    /// Processes packets that arrived on the same interface at the same time; drops are
    /// counted. `verdicts[i]` is the verdict of `pkts[i]`.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        for (p, v) in pkts.chunks_mut(MAX_BATCH).zip(verdicts.chunks_mut(MAX_BATCH)) {
            self.process_chunk::<MAX_BATCH>(p, ingress, now_ns, v);
        }
    }

    /// The pipeline for up to `N` packets (state on the stack, sized for `N`).
    fn process_chunk<const N: usize>(
        &mut self,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        let n = pkts.len().min(verdicts.len()).min(N);
        let mut work: [Option<Work>; N] = [None; N];

        // Stage 1: parse and check everything that needs no cryptography.
        for i in 0..n {
            match self.prepare(pkts[i], ingress) {
                Ok(w) => work[i] = Some(w),
                Err(v) => verdicts[i] = v,
            }
        }

        // Stage 2: A_K = AES_SV(ResInfo) for every flyover, under the one SV.
        let mut fly_idx = [0usize; N];
        let mut keys = [[0u8; 16]; N];
        let mut nf = 0;
        for (i, w) in work[..n].iter().enumerate() {
            if let Some(f) = w.as_ref().and_then(|w| w.flyover.as_ref()) {
                fly_idx[nf] = i;
                keys[nf] = f.res_block;
                nf += 1;
            }
        }
        self.sv.auth_keys_in_place(&mut keys[..nf]);

        // Stage 3: FlyoverMAC = AES_{A_K}(...), key schedules interleaved; the candidate
        // hop-field MAC is AggMAC ⊕ FlyoverMAC.
        let mut fly_macs = [[0u8; 16]; N];
        for k in 0..nf {
            fly_macs[k] = work[fly_idx[k]].as_ref().and_then(|w| w.flyover.as_ref()).map(|f| f.mac_block).unwrap();
        }
        Aes128::encrypt_fresh_keys(&keys[..nf], &mut fly_macs[..nf]);
        for k in 0..nf {
            let w = work[fly_idx[k]].as_mut().unwrap();
            let mut cand = w.hop.hop.mac;
            for (c, f) in cand.iter_mut().zip(&fly_macs[k]) {
                *c ^= f;
            }
            w.hop.set_mac(cand);
        }

        // Stage 4: hop-field MACs (and crossover MACs) under the AS key.
        // One block per packet, plus one per crossover (at most one per packet): 2N.
        let mut blocks = [[[0u8; 16]; 2]; N];
        let mut owner = [[(0usize, false); 2]; N];
        let blocks = blocks.as_flattened_mut();
        let owner = owner.as_flattened_mut();
        let mut nb = 0;
        for (i, w) in work[..n].iter().enumerate() {
            if let Some(w) = w {
                let (b1, b2) = w.hop.mac_blocks();
                blocks[nb] = b1;
                owner[nb] = (i, false);
                nb += 1;
                if let Some(b2) = b2 {
                    blocks[nb] = b2;
                    owner[nb] = (i, true);
                    nb += 1;
                }
            }
        }
        self.fwd.mac_key.macs(&mut blocks[..nb]);
        let mut macs = [([0u8; 6], None); N];
        for (b, (i, second)) in blocks[..nb].iter().zip(&owner[..nb]) {
            let m: [u8; 6] = b[..6].try_into().unwrap();
            if *second {
                macs[*i].1 = Some(m);
            } else {
                macs[*i].0 = m;
            }
        }

        // Stage 5: verify, police, write back.
        for i in 0..n {
            let Some(w) = &work[i] else { continue };
            let (mac, next_mac) = macs[i];
            let pkt = &mut *pkts[i];
            let path = &mut pkt[w.path_start..];
            verdicts[i] = match self.fwd.finish(path, &w.hop, mac, next_mac, now_ns) {
                Err(r) => Verdict::Drop(r),
                Ok(egress) => {
                    if let Some(f) = &w.flyover {
                        // The plain hop-field MAC replaces the AggMAC, so the path can be reversed.
                        path[f.mac_off..f.mac_off + 6].copy_from_slice(&w.hop.hop.mac);
                    }
                    let class = self.charge(ingress, w.flyover.as_ref(), now_ns);
                    match egress {
                        Some(egress) => Verdict::Forward { egress, class },
                        None => Verdict::Deliver,
                    }
                }
            };
        }
        for v in &verdicts[..n] {
            if let Verdict::Drop(r) = v {
                self.drops.count(*r);
            }
        }
    }

    /// Stage 1 for one packet; `Err` is its final verdict (a drop, or local delivery on
    /// the empty path).
    fn prepare(&self, pkt: &[u8], ingress: u16) -> Result<Work, Verdict> {
        let view = ScionView::new_checked(pkt).map_err(|e| Verdict::Drop(e.into()))?;
        let (src, dst): (IsdAsn, IsdAsn) = (view.src_ia(), view.dst_ia());
        let path_start = view.path_range().start;
        match view.path_type() {
            path_type::HUMMINGBIRD => {
                let (hop, flyover) =
                    prepare_hbird(&self.fwd, view.path(), src, dst, view.dst_ia_bytes(), view.pkt_len_u16(), ingress)
                        .map_err(Verdict::Drop)?;
                Ok(Work { path_start, hop, flyover })
            }
            path_type::SCION => {
                let hop = self.fwd.prepare_standard(view.path(), src, dst, ingress).map_err(Verdict::Drop)?;
                Ok(Work { path_start, hop, flyover: None })
            }
            path_type::EMPTY => Err(self.fwd.process_empty(src, dst, ingress)),
            _ => Err(Verdict::Drop(DropReason::UnsupportedPathType)),
        }
    }

    /// Alg. 1 for a flyover that is fresh and active; everything else is best effort.
    /// Called only once every check has passed: a dropped packet costs nothing.
    fn charge(&mut self, ingress: u16, f: Option<&FlyoverWork>, now_ns: u64) -> Class {
        let fresh = f.filter(|f| {
            f.sent_ns <= now_ns.saturating_add(self.params.max_skew_ns)
                && now_ns <= f.sent_ns + self.params.max_age_ns + self.params.max_skew_ns
                && f.res.active_at(now_ns)
        });
        let Some(f) = fresh else {
            return Class::BestEffort;
        };
        let Some((_, p)) = self.policers.iter_mut().find(|(i, _)| *i == ingress) else {
            return Class::BestEffort;
        };
        let admitted = match self.params.policing {
            PolicingMode::Division => p.admit(f.res.res_id, f.pkt_len, self.params.codec.decode_bps(f.res.bw), now_ns),
            PolicingMode::Table => p.admit_table(f.res.res_id, f.pkt_len, f.res.bw, &self.inv_table, now_ns),
        };
        if admitted {
            Class::Priority
        } else {
            Class::BestEffort
        }
    }
}

impl aviary_qos::Processor for Router {
    fn path_types(&self) -> &'static [u8] {
        &[path_type::SCION, path_type::HUMMINGBIRD]
    }

    fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        Router::process_batch(self, pkts, ingress, now_ns, verdicts);
    }

    fn set_param(&mut self, name: &str, value: f64) -> Result<bool, String> {
        match name {
            "burst_ms" if (0.0..=10_000.0).contains(&value) => {
                self.set_burst_ns((value * 1e6) as u64);
                Ok(true)
            }
            "burst_ms" => Err("burst_ms must be between 0 and 10000".into()),
            _ => Ok(false),
        }
    }
}
