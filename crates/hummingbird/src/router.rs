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
//! batch's A_K under the one SV and the per-packet FlyoverMACs four at a time (`crypto`; for a
//! packet alone one chain with the hop field's CMAC inside, `crypto_single`), and the
//! write-back and policing after the hop field verified (`admit`).
//!
//! Which valid flyovers get priority is decided by the [`RouterParams`] of a verdict profile
//! (`paper` or `scionproto`, see [`crate::profile`]). With duplicate suppression on, a valid,
//! fresh, active flyover whose identity was already seen within the freshness window is
//! forwarded best effort without charging its reservation.

use aviary_qos::{
    Admission, Claim, Context, ControlError, DropReason, DuplicateFilter, DuplicateFilterConfig,
    DuplicateFilterConfigError, InverseRateTable, PolicerConfigError, ReservationPolicer, Verdict,
};
use aviary_scion::aes::Aes128;
use aviary_scion::cpu::{Cpu, Detect};
use aviary_scion::forwarding::{HopAuth, HopExtension, HopWork, KeyGenerations, Staged, StagedForwarder};
use aviary_scion::mac::MAC_LEN;
use aviary_scion::wire::header::{path_type, ScionView};
use aviary_scion::{AsForwarding, HopMacKey};
use serde::{Deserialize, Serialize};
use std::mem::MaybeUninit;
use thiserror::Error;

use crate::admission::Windows;
use crate::auth_key_cache::{AuthKeyCache, AuthKeyCacheCounters};
use crate::crypto::SecretValue;
use crate::prepare::{prepare_hbird, prepare_hbird_raw, FlyoverFields, FlyoverWork};
pub use crate::profile::{PolicedLength, PolicingMode, Profile, RouterParams, StartBound};

/// False-positive rate of the duplicate filter at `duplicates_per_window` packets: a false
/// positive only demotes one legitimate packet to best effort.
pub const DUPLICATE_FALSE_POSITIVE_RATE: f64 = 1e-5;

/// Input of the duplicate filter's key, `AES_SV(DUP_KEY_BLOCK)`. An A_K input block ends in
/// 0x0000, this one does not, so the filter key is never some reservation's A_K.
const DUP_KEY_BLOCK: [u8; 16] = *b"hbird dup-filt\xff\xff";

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
    /// The SV and, during a rotation's overlap, the one it replaced.
    svs: KeyGenerations<SecretValue>,
    params: RouterParams,
    /// Policing array per ingress interface (0 = traffic from inside the AS).
    policers: Vec<(u16, ReservationPolicer)>,
    inv_table: InverseRateTable,
    /// Identities of the flyover packets admitted within the freshness window, if enabled.
    duplicates: Option<DuplicateFilter>,
    /// Expanded A_Ks under the current SV, for flyovers that arrive alone.
    auth_keys: AuthKeyCache,
    counters: FlyoverCounters,
}

/// Parameters a router cannot run with.
#[derive(Debug, Error, PartialEq)]
pub enum RouterConfigError {
    #[error(transparent)]
    Policer(#[from] PolicerConfigError),
    #[error("duplicate suppression: {0}")]
    Duplicates(#[from] DuplicateFilterConfigError),
}

/// What admitting flyovers needs of a batch's ingress and arrival time, worked out once a
/// batch ([`HopExtension::admit_context`]).
#[derive(Clone, Copy, Debug)]
pub struct AdmitContext {
    ingress: u16,
    /// Where the ingress's policing array is in [`Flyovers`]'s, if it has one.
    policer: Option<usize>,
    /// The freshness and activity bounds at the batch's time, and that time.
    windows: Windows,
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
    /// Seen before within the freshness window (duplicate suppression): best effort, not charged.
    pub duplicate: u64,
}

impl Router {
    pub fn new(fwd: AsForwarding, sv: SecretValue, params: RouterParams) -> Result<Self, RouterConfigError> {
        let mut ingress: Vec<u16> = fwd.interfaces.iter().collect();
        ingress.push(0);
        let policers = ingress
            .into_iter()
            .map(|i| {
                let p =
                    ReservationPolicer::with_burst_floor(params.max_res_id, params.burst_ns, params.max_packet_len)?;
                Ok((i, p))
            })
            .collect::<Result<_, PolicerConfigError>>()?;
        let duplicates = if params.duplicate_suppression {
            let config = DuplicateFilterConfig {
                // A replay that passes the freshness check arrives within this of the original.
                window_ns: params.freshness_window_ns(),
                expected_per_window: params.duplicates_per_window,
                false_positive_rate: DUPLICATE_FALSE_POSITIVE_RATE,
            };
            // Keyed from the AS secret: unknown to senders, so they cannot craft colliding
            // identities, and no fixed key in the code. A rotation keeps this key with the
            // filter's state: the identities seen stay seen.
            let mut key = [DUP_KEY_BLOCK];
            sv.auth_keys_in_place(Detect, &mut key);
            Some(DuplicateFilter::new(config, key[0])?)
        } else {
            None
        };
        let codec = params.codec;
        let ext = Flyovers {
            svs: KeyGenerations::new(sv),
            params,
            policers,
            inv_table: InverseRateTable::new(|c| codec.decode_bps(c)),
            duplicates,
            auth_keys: AuthKeyCache::new(),
            counters: FlyoverCounters::default(),
        };
        Ok(Self { inner: StagedForwarder::new(fwd, ext) })
    }

    pub fn params(&self) -> &RouterParams {
        &self.inner.ext.params
    }
    /// The mechanism's part of the forwarder, for tests that run its stages one at a time.
    pub fn flyovers(&self) -> &Flyovers {
        &self.inner.ext
    }

    pub fn forwarding(&self) -> &AsForwarding {
        &self.inner.fwd
    }
    pub fn counters(&self) -> &FlyoverCounters {
        &self.inner.ext.counters
    }
    /// What the cache of A_Ks for packets that arrive alone did.
    pub fn auth_key_cache_counters(&self) -> AuthKeyCacheCounters {
        self.inner.ext.auth_keys.counters()
    }
    /// The burst allowance can change at runtime; policing state is kept.
    pub fn set_burst_ns(&mut self, burst_ns: u64) {
        let ext = &mut self.inner.ext;
        ext.params.burst_ns = burst_ns;
        for (_, p) in &mut ext.policers {
            p.set_burst_ns(burst_ns);
        }
    }

    /// The AS master secret is now `secret`: new hop-field key and SV; the ones they replace
    /// verify until `previous_until_ns`. Policing and duplicate state are kept; the cached
    /// A_Ks, derived from the SV replaced, are forgotten.
    pub fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        self.inner.fwd.rotate(HopMacKey::from_master_secret(secret), previous_until_ns);
        self.inner.ext.svs.rotate(SecretValue::from_master_secret(secret), previous_until_ns);
        self.inner.ext.auth_keys.clear();
    }

    /// Packets that only a previous key (hop-field key or SV) verified.
    pub fn previous_key_packets(&self) -> u64 {
        self.inner.previous_key_packets
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
    type Admit = AdmitContext;

    fn admit_context(&self, ingress: u16, now_ns: u64) -> AdmitContext {
        AdmitContext {
            ingress,
            policer: self.policer(ingress).map(|(k, _)| k),
            windows: Windows::at(&self.params, now_ns),
        }
    }

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
        prepare_hbird(fwd, view, ingress)
    }

    const RAW_PATH_TYPE: Option<u8> = Some(path_type::HUMMINGBIRD);

    #[inline(always)]
    fn prepare_raw(&self, fwd: &AsForwarding, pkt: &[u8], ingress: u16) -> Option<Staged<FlyoverWork>> {
        prepare_hbird_raw(fwd, pkt, ingress)
    }

    /// A_K = AES_SV(ResInfo) for every flyover under the one SV; then FlyoverMAC =
    /// AES_{A_K}(...), key schedules interleaved; the candidate hop-field MAC is
    /// AggMAC ⊕ FlyoverMAC. While the inputs are read from the packets, the policing slot of
    /// every flyover is asked for: with many reservations it is rarely in the cache, and the
    /// AES work of the batch hides the wait. The batch shares its ingress, so its policer is
    /// found once.
    // Forced: apart, a single standard packet paid the saved registers of the flyovers' AES
    // for its early return (callgrind, 2026-11-26: 499.9 instead of 511 instructions a
    // single standard packet; a single flyover 1005 instead of 995). Measured when packets
    // alone still came through here; they now take `crypto_single`.
    #[inline(always)]
    fn crypto<const N: usize>(
        &mut self,
        cpu: impl Cpu,
        pkts: &[&mut [u8]],
        batch: &mut [Option<Staged<FlyoverWork>>],
        ingress: u16,
    ) {
        // No A_K expanded for a packet alone is this batch's to cache (nor, in a rotation's
        // overlap, that of a packet alone verified again here and under the previous SV).
        self.auth_keys.forget_expanded();
        if batch.iter().flatten().all(|w| w.ext.is_none()) {
            return;
        }
        let policer = self.policer(ingress).map(|(_, p)| p);
        flyover_candidates::<N, _>(cpu, self.svs.current(), pkts, batch, policer);
    }

    /// One flyover alone: its chain A_K → FlyoverMAC → candidate is its latency, so the hop
    /// field's CMAC is computed inside it. In construction direction (and at a segment's first
    /// hop) the CMAC's input is known from the packet, and its rounds run beside A_K's.
    /// Against it, SCION chains the SegID of the input with the hop field's MAC before
    /// verifying it, and for a flyover that MAC is the candidate: the CMAC follows the
    /// FlyoverMAC, its input completed in vector registers (`MacInput::feed`) rather than
    /// through the record and stage 3's block. Where the reservation's A_K is cached
    /// ([`AuthKeyCache`]) the chain starts at the FlyoverMAC; where not, A_K is kept aside for
    /// stage 4 to cache if the packet verifies.
    #[inline(always)]
    fn crypto_single(
        &mut self,
        cpu: impl Cpu,
        pkts: &[&mut [u8]],
        batch: &mut [Option<Staged<FlyoverWork>>],
        ingress: u16,
        key: &HopMacKey,
    ) -> Option<[u8; 16]> {
        // A hop without a flyover (or a standard packet) leaves its CMAC to stage 3.
        let (Some(Some(w)), Some(pkt)) = (batch.first_mut(), pkts.first()) else { return None };
        let Some(f) = &w.ext else { return None };
        let input = w.hop.mac_input(cpu, w.layout(pkt));
        let (res_id, ak_block, mac_block) = f.input_blocks(pkt, usize::from(w.path_start), &w.hop);
        if let Some((_, p)) = self.policer(ingress) {
            p.prefetch(res_id);
        }
        // The candidate AggMAC ⊕ FlyoverMAC enters the input where the SegID is chained with it.
        let agg = w.hop.mac();
        let mut mix = [0u8; 16];
        mix[..MAC_LEN].copy_from_slice(&agg);
        let reservation = (w.hop.hop_ingress(), res_id);
        let feed = input.feed.as_ref().map(|feed| (feed, &mix));
        let sv = self.svs.current();
        let (fly_mac, cmac) =
            self.auth_keys.chain(cpu, sv, reservation, &ak_block, &mac_block, key.cipher(), &input.block, feed);
        w.hop.set_mac(candidate(&agg, &fly_mac));
        Some(cmac)
    }

    fn in_overlap(&self, now_ns: u64) -> bool {
        self.svs.previous_at(now_ns).is_some()
    }

    fn crypto_previous(&mut self, pkt: &[u8], staged: &mut Staged<FlyoverWork>, now_ns: u64) -> bool {
        let Some(sv) = self.svs.previous_at(now_ns).filter(|_| staged.ext.is_some()) else {
            return false;
        };
        let mut one = [Some(*staged)];
        flyover_candidates::<1, _>(Detect, sv, &[pkt], &mut one, None);
        if let Some(done) = one[0] {
            *staged = done;
        }
        true
    }

    // Forced, with `charge`: inlined into stage 4's loop, the batch's admission context stays in
    // registers and no registers are saved a packet. Forcing `admit` alone left `charge` a call
    // (+19 instructions a batched flyover); both forced, a batched flyover ran 787.4 → 764.7
    // and one alone 822 → 790 (callgrind, 2026-11-29).
    #[inline(always)]
    fn admit(
        &mut self,
        path: &mut [u8],
        staged: &Staged<FlyoverWork>,
        f: &FlyoverWork,
        _auth: &HopAuth,
        at: &AdmitContext,
    ) -> Result<Admission, DropReason> {
        // The reservation and timestamps read first: their one bounds check covers the MAC's
        // too, and a packet alone's write-back stores the last value of its AES chain (−6
        // instructions a batched flyover, −3 a single one; callgrind, 2026-11-26).
        let fields = FlyoverWork::fields(path, &staged.hop);
        // The plain hop-field MAC replaces the AggMAC, so the path can be reversed.
        path[FlyoverWork::mac_offset(&staged.hop)..][..MAC_LEN].copy_from_slice(&staged.hop.mac());
        // Verified: if this packet came alone and missed, its A_K is cached.
        self.auth_keys.insert_expanded();
        Ok(self.charge(f, &fields, &staged.hop, at))
    }
}

/// Stage 2 under `sv`: A_K of every flyover of the batch, its FlyoverMAC, and the candidate
/// hop-field MAC `AggMAC ⊕ FlyoverMAC` set on its hop; `policer`'s slots of the batch's
/// reservations are prefetched on the way. A function of its own, called once a batch: inlined
/// into the stages, its loops shared their registers and spilled (−7 instructions a batched
/// flyover apart; callgrind, 2026-11-29). Its AES is called, not inlined: a batch's blocks go
/// to the AES-NI or VAES code in a few calls.
#[inline(never)]
fn flyover_candidates<const N: usize, P: AsRef<[u8]>>(
    cpu: impl Cpu,
    sv: &SecretValue,
    pkts: &[P],
    batch: &mut [Option<Staged<FlyoverWork>>],
    policer: Option<&ReservationPolicer>,
) {
    let n = batch.len().min(pkts.len()).min(N);
    let (batch, pkts) = (&mut batch[..n], &pkts[..n]);
    // The flyovers' packet indices and AES inputs, packed: only the first `nf` are written
    // and read, so none is zeroed first.
    let mut fly_idx = [const { MaybeUninit::<u8>::uninit() }; N];
    let mut keys = [const { MaybeUninit::<[u8; 16]>::uninit() }; N];
    let mut fly_macs = [const { MaybeUninit::<[u8; 16]>::uninit() }; N];
    const { assert!(N <= 256, "a batch's packet indices must fit a byte") };
    // The flyovers' indices first, without a branch; then their inputs, in a loop that skips
    // nothing (one loop skipping the other packets ran 16 instructions a flyover more to find
    // the next one; callgrind, 2026-11-29).
    let mut nf = 0;
    for (i, w) in batch.iter().enumerate() {
        debug_assert!(nf <= i && i < N);
        // SAFETY: `nf <= i < n <= N`, the array's length.
        unsafe { fly_idx.get_unchecked_mut(nf) }.write(i as u8);
        nf += usize::from(w.as_ref().is_some_and(|w| w.ext.is_some()));
    }
    for k in 0..nf {
        // SAFETY: `k < nf`, so entry `k` was written above, with the index `i < n` of a record
        // that is `Some` and has a flyover part; `pkts` has `n` packets.
        let (w, f, pkt) = unsafe {
            let i = usize::from(fly_idx.get_unchecked(k).assume_init());
            let w = batch.get_unchecked(i).as_ref().unwrap_unchecked();
            (w, w.ext.as_ref().unwrap_unchecked(), pkts.get_unchecked(i))
        };
        let (res_id, ak_block, mac_block) = f.input_blocks(pkt.as_ref(), usize::from(w.path_start), &w.hop);
        if let Some(p) = policer {
            p.prefetch(res_id);
        }
        // SAFETY: `k < nf <= N`, the arrays' length.
        unsafe {
            keys.get_unchecked_mut(k).write(ak_block);
            fly_macs.get_unchecked_mut(k).write(mac_block);
        }
    }
    if nf == 0 {
        return;
    }
    // SAFETY: the first `nf <= N` entries were written above; `MaybeUninit<T>` has the layout of `T`.
    let (fly_idx, keys, fly_macs) = unsafe {
        (
            &*(fly_idx.get_unchecked(..nf) as *const [MaybeUninit<u8>] as *const [u8]),
            &mut *(keys.get_unchecked_mut(..nf) as *mut [MaybeUninit<[u8; 16]>] as *mut [[u8; 16]]),
            &mut *(fly_macs.get_unchecked_mut(..nf) as *mut [MaybeUninit<[u8; 16]>] as *mut [[u8; 16]]),
        )
    };
    sv.auth_keys_in_place(cpu, keys);
    Aes128::encrypt_fresh_keys_on(cpu, keys, fly_macs);
    for (&i, fly_mac) in fly_idx.iter().zip(&*fly_macs) {
        debug_assert!(batch.get(usize::from(i)).is_some_and(|w| w.is_some()));
        // SAFETY: the gather listed only indices below `n` (`batch`'s length) of records it read.
        let w = unsafe { batch.get_unchecked_mut(usize::from(i)).as_mut().unwrap_unchecked() };
        w.hop.xor_mac(fly_mac[..MAC_LEN].try_into().expect("a block holds a MAC"));
    }
}

/// The candidate hop-field MAC `AggMAC ⊕ FlyoverMAC` (the FlyoverMAC the first bytes of its
/// block), as one XOR of words: byte by byte, a flyover packet ran 14 instructions more in a
/// batch and 36 more alone (callgrind, 2026-11-26).
#[inline(always)]
fn candidate(agg: &[u8; MAC_LEN], fly_block: &[u8; 16]) -> [u8; MAC_LEN] {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..MAC_LEN].copy_from_slice(&b[..MAC_LEN]);
        u64::from_ne_bytes(w)
    };
    let cand = (word(agg) ^ word(fly_block)).to_ne_bytes();
    cand[..MAC_LEN].try_into().expect("a word holds a MAC")
}

impl Flyovers {
    /// The policing array of packets from `ingress`, and where it is among the router's.
    #[inline]
    fn policer(&self, ingress: u16) -> Option<(usize, &ReservationPolicer)> {
        let k = self.policers.iter().position(|(i, _)| *i == ingress)?;
        Some((k, &self.policers[k].1))
    }

    /// Alg. 1 for a flyover that is fresh and active; everything else is unauthenticated best
    /// effort. Called only once every check has passed: a dropped packet costs nothing.
    /// Forced inline into `admit` (see there).
    #[inline(always)]
    fn charge(&mut self, f: &FlyoverWork, fields: &FlyoverFields, hop: &HopWork, at: &AdmitContext) -> Admission {
        let params = &self.params;
        let res = fields.res(hop);
        if !at.windows.fresh(fields.meta.base_ts, fields.meta.millis) {
            self.counters.stale += 1;
            return Admission::UNAUTHENTICATED;
        }
        if !at.windows.active(res.start, res.duration) {
            self.counters.inactive += 1;
            return Admission::UNAUTHENTICATED;
        }
        if let Some(filter) = &mut self.duplicates {
            // Only fields the MACs authenticate: the reservation (ingress, ResID) and the
            // packet's BaseTimestamp | Millis | Counter. The source address is not
            // authenticated, so keying by it would let a replay with a rewritten source
            // address through, still spending the owner's budget.
            let mut key = [0u8; 14];
            key[0..2].copy_from_slice(&at.ingress.to_be_bytes());
            key[2..6].copy_from_slice(&res.res_id.to_be_bytes());
            key[6..14].copy_from_slice(&fields.packet_id().to_be_bytes());
            if !filter.check_and_insert(&key, at.windows.now_ns()) {
                self.counters.duplicate += 1;
                return Admission::UNAUTHENTICATED;
            }
        }
        let Some((_, p)) = at.policer.and_then(|k| self.policers.get_mut(k)) else {
            return Admission::UNAUTHENTICATED;
        };
        let len = f.policed_len(params.policed_length);
        let admitted = match params.policing {
            PolicingMode::Division => p.admit(res.res_id, len, params.codec.decode_bps(res.bw), at.windows.now_ns()),
            PolicingMode::Table => p.admit_table(res.res_id, len, res.bw, &self.inv_table, at.windows.now_ns()),
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
        out("flyover_duplicate_packets", c.duplicate);
        out("previous_key_packets", self.previous_key_packets());
        let cache = self.auth_key_cache_counters();
        out("auth_key_cache_hits", cache.hits);
        out("auth_key_cache_inserts", cache.inserts);
        out("auth_key_cache_mac_recalls", cache.mac_recalls);
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

    fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        Router::rotate_secret(self, secret, previous_until_ns);
    }
}
