//! Border-router processing of one AS (the Hummingbird paper, Alg. 1-4), sans-IO: the packet bytes,
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
//! Packets go through the generic staged forwarder of `aviary_scion::forwarding`; the
//! [`Flyovers`] extension adds only what is Hummingbird's: parsing path type 5 (`prepare`), the
//! batch's A_K under the one SV and the per-packet FlyoverMACs four at a time (`crypto`), and
//! the write-back and policing after the hop field verified (`admit`).

use aviary_qos::{Admission, Claim, Context, ControlError, DropReason, InverseRateTable, ReservationPolicer, Verdict};
use aviary_scion::aes::Aes128;
use aviary_scion::forwarding::{HopExtension, HopWork, Staged, StagedForwarder};
use aviary_scion::mac::MAC_LEN;
use aviary_scion::wire::header::{path_type, ScionView};
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
pub const MAX_BATCH: usize = aviary_scion::forwarding::MAX_BATCH;

/// A Hummingbird-capable border router of one AS (all its interfaces): the generic staged
/// forwarder with the flyover extension.
#[derive(Clone, Debug)]
pub struct Router {
    inner: StagedForwarder<Flyovers>,
}

/// Hummingbird's part of forwarding: flyover hop fields, their cryptography and policing.
#[derive(Clone, Debug)]
pub struct Flyovers {
    sv: SecretValue,
    params: RouterParams,
    /// Policing array per ingress interface (0 = traffic from inside the AS).
    policers: Vec<(u16, ReservationPolicer)>,
    inv_table: InverseRateTable,
    counters: FlyoverCounters,
}

/// What became of the valid flyover packets this router forwarded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlyoverCounters {
    /// Forwarded as reserved traffic.
    pub reserved: u64,
    /// Outside the freshness window (too old or from the future): best effort.
    pub stale: u64,
    /// Reservation not active at the time: best effort.
    pub inactive: u64,
    /// Beyond the reserved rate and burst: best effort.
    pub over_rate: u64,
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
        let ext = Flyovers {
            sv,
            params,
            policers,
            inv_table: InverseRateTable::new(|c| codec.decode_bps(c)),
            counters: FlyoverCounters::default(),
        };
        Ok(Self { inner: StagedForwarder::new(fwd, ext) })
    }

    pub fn params(&self) -> &RouterParams {
        &self.inner.ext.params
    }
    pub fn forwarding(&self) -> &AsForwarding {
        &self.inner.fwd
    }
    pub fn counters(&self) -> &FlyoverCounters {
        &self.inner.ext.counters
    }
    /// The burst allowance can change at runtime; policing state is kept.
    pub fn set_burst_ns(&mut self, burst_ns: u64) {
        let ext = &mut self.inner.ext;
        ext.params.burst_ns = burst_ns;
        for (_, p) in &mut ext.policers {
            p.set_burst_ns(burst_ns);
        }
    }

    /// Processes one packet (path type 0, 1 or 5).
    pub fn process(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        self.inner.process(pkt, ingress, now_ns)
    }

    /// Processes packets that arrived on the same interface at the same time;
    /// `verdicts[i]` is the verdict of `pkts[i]`.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        self.inner.process_batch(pkts, ingress, now_ns, verdicts);
    }
}

impl HopExtension for Flyovers {
    type Work = FlyoverWork;

    #[inline]
    fn prepare(
        &self,
        fwd: &AsForwarding,
        view: &ScionView<&[u8]>,
        ingress: u16,
    ) -> Result<(HopWork, Option<FlyoverWork>), DropReason> {
        if view.path_type() != path_type::HUMMINGBIRD {
            return Err(DropReason::UnsupportedPathType);
        }
        let (src, dst): (IsdAsn, IsdAsn) = (view.src_ia(), view.dst_ia());
        prepare_hbird(fwd, view.path(), src, dst, view.dst_ia_bytes(), view.pkt_len_u16(), ingress)
    }

    /// A_K = AES_SV(ResInfo) for every flyover under the one SV; then FlyoverMAC =
    /// AES_{A_K}(...), key schedules interleaved; the candidate hop-field MAC is
    /// AggMAC ⊕ FlyoverMAC.
    #[inline]
    fn crypto<const N: usize>(&mut self, batch: &mut [Option<Staged<FlyoverWork>>]) {
        let mut fly_idx = [0usize; N];
        let mut keys = [[0u8; 16]; N];
        let mut nf = 0;
        for (i, w) in batch.iter().enumerate().take(N) {
            if let Some(f) = w.as_ref().and_then(|w| w.ext.as_ref()) {
                fly_idx[nf] = i;
                keys[nf] = f.res_block;
                nf += 1;
            }
        }
        if nf == 0 {
            return;
        }
        let mut fly_macs = [[0u8; 16]; N];
        for k in 0..nf {
            fly_macs[k] = batch[fly_idx[k]].as_ref().and_then(|w| w.ext.as_ref()).map_or([0; 16], |f| f.mac_block);
        }
        self.sv.auth_keys_in_place(&mut keys[..nf]);
        Aes128::encrypt_fresh_keys(&keys[..nf], &mut fly_macs[..nf]);
        for k in 0..nf {
            let Some(w) = batch[fly_idx[k]].as_mut() else { continue };
            let mut cand = w.hop.hop.mac;
            for (c, f) in cand.iter_mut().zip(&fly_macs[k]) {
                *c ^= f;
            }
            w.hop.set_mac(cand);
        }
    }

    #[inline]
    fn admit(&mut self, path: &mut [u8], staged: &Staged<FlyoverWork>, ingress: u16, now_ns: u64) -> Admission {
        if let Some(f) = &staged.ext {
            // The plain hop-field MAC replaces the AggMAC, so the path can be reversed.
            path[f.mac_off..f.mac_off + MAC_LEN].copy_from_slice(&staged.hop.hop.mac);
        }
        self.charge(ingress, staged.ext.as_ref(), now_ns)
    }
}

impl Flyovers {
    /// Alg. 1 for a flyover that is fresh and active; everything else is unauthenticated best
    /// effort. Called only once every check has passed: a dropped packet costs nothing.
    #[inline]
    fn charge(&mut self, ingress: u16, f: Option<&FlyoverWork>, now_ns: u64) -> Admission {
        let Some(f) = f else {
            return Admission::UNAUTHENTICATED;
        };
        let fresh = f.sent_ns <= now_ns.saturating_add(self.params.max_skew_ns)
            && now_ns <= f.sent_ns + self.params.max_age_ns + self.params.max_skew_ns;
        if !fresh {
            self.counters.stale += 1;
            return Admission::UNAUTHENTICATED;
        }
        if !f.res.active_at(now_ns) {
            self.counters.inactive += 1;
            return Admission::UNAUTHENTICATED;
        }
        let Some((_, p)) = self.policers.iter_mut().find(|(i, _)| *i == ingress) else {
            return Admission::UNAUTHENTICATED;
        };
        let admitted = match self.params.policing {
            PolicingMode::Division => p.admit(f.res.res_id, f.pkt_len, self.params.codec.decode_bps(f.res.bw), now_ns),
            PolicingMode::Table => p.admit_table(f.res.res_id, f.pkt_len, f.res.bw, &self.inv_table, now_ns),
        };
        if admitted {
            self.counters.reserved += 1;
            Admission::RESERVED
        } else {
            self.counters.over_rate += 1;
            Admission::UNAUTHENTICATED
        }
    }
}

/// Runtime settings of the Hummingbird processor (`PUT /v1/mechanisms/hummingbird`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HummingbirdControl {
    /// BurstTime of Alg. 1 in ms (0 to 10 000); policing state is kept.
    pub burst_ms: Option<f64>,
}

impl aviary_qos::Processor for Router {
    fn name(&self) -> &'static str {
        "hummingbird"
    }

    /// Standard paths are the `scion` processor's; this one needs only its own path type.
    fn claims(&self) -> &'static [Claim] {
        &[Claim::PathType(path_type::HUMMINGBIRD)]
    }

    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
        Router::process_batch(self, pkts, ctx.ingress, ctx.now_ns, verdicts);
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        let c = self.counters();
        out("flyover_reserved_packets", c.reserved);
        out("flyover_stale_packets", c.stale);
        out("flyover_inactive_packets", c.inactive);
        out("flyover_over_rate_packets", c.over_rate);
    }

    fn control(&mut self, request: &serde_json::Value) -> Result<(), ControlError> {
        let c: HummingbirdControl = serde_json::from_value(request.clone()).map_err(|e| ControlError::from_json(&e))?;
        if let Some(ms) = c.burst_ms {
            if !(0.0..=10_000.0).contains(&ms) {
                return Err(ControlError::new("burst_ms", "must be between 0 and 10000"));
            }
            self.set_burst_ns((ms * 1e6) as u64);
        }
        Ok(())
    }

    fn settings(&self) -> serde_json::Value {
        serde_json::json!({ "burst_ms": self.params().burst_ns as f64 / 1e6 })
    }
}
