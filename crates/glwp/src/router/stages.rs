//! The stages a batch of packets goes through at a router, as Hummingbird's routers do:
//!
//! 1. **Check**, each packet on its own and without cryptography, in one pass over its headers:
//!    the SCION and GLWP headers, the interface pair, freshness and the allocation's expiry
//!    (Alg. 2 lines 9-12). A packet that fails gets its verdict and is counted here; one that
//!    passes leaves a compact [`Passed`] record (offsets and the few values later stages need)
//!    and writes its two MAC inputs straight into the batch's input arrays. The monitor's slots
//!    are prefetched.
//! 2. **MACs and hashes**, for the whole batch at once: every hop key under `K_k` (AES rounds
//!    of several packets interleaved, one expanded key), then every hop authenticator under
//!    its packet's hop key (key schedules and rounds of four packets interleaved); the
//!    duplicate-filter keys hashed side by side, and the filter's lines of every packet
//!    prefetched before the first is checked.
//! 3. **Admit**, the passed records in arrival order: compare the hop authenticator (one that
//!    fails gets both MACs again under the previous `K_k` during a rotation's overlap, from the
//!    MAC inputs stage 1 wrote), suppress duplicates, charge the monitor, advance the hop
//!    pointer at the offset stage 1 found. The state the stages share (duplicate filter,
//!    monitor) is only touched here, in order, so a batch's verdicts are those of its packets
//!    one by one.
//!
//! Per-batch state lives on the stack, sized for the batch: nothing is allocated. Counters are
//! summed per batch.

use arrayvec::ArrayVec;
use aviary_qos::{Admission, DropReason, KeyHash, Verdict};
use aviary_scion::cmac::{mac_two_blocks_fresh_keys, mac_two_blocks_fresh_keys_on, CmacKey};
#[cfg(target_arch = "x86_64")]
use aviary_scion::cpu::AesNi;
use aviary_scion::cpu::{Cpu, Portable};

use aviary_scion::wire::header::{field as scion, path_start_of, CommonFields, NO_PATH_START};
use aviary_scion::IsdAsn;

use super::{GlwpDrop, Router};
use crate::header::field::{self, after_path, HA_LEN};
use crate::header::{after_path, header_len, set_hop_pointer, split_pair};
use crate::matrix::LOCAL_INTERFACE;
use crate::monitor::MonitorVerdict;
use crate::packet::{path_len, PATH_TYPE};
use aviary_scion::raw::{byte, bytes};

/// Packets that go through the stages together.
pub const BATCH: usize = 32;

/// What stage 1 keeps of a packet that passed it: the values the monitor needs, where its
/// MACs are and what to compare them with, and where to advance its hop pointer.
#[derive(Clone, Copy)]
struct Passed {
    aid: u64,
    beta: u32,
    ts_exp: u32,
    /// The interface the packet leaves at if stage 3 admits it ([`LOCAL_INTERFACE`]: delivered
    /// here), kept instead of the verdict, which the record's stores wrote byte by byte and
    /// stage 3 read back (GLWP router at λ = 8, callgrind, 2026-11-26: 516.5 → 504.8
    /// instructions a packet in batches of 32, 555 → 542 one at a time).
    egress: u16,
    pkt_len: u16,
    /// Start of the GLWP header in the packet.
    header_at: u16,
    /// The packet's place in the batch.
    index: u8,
    /// Where its MACs are in the batch's MAC arrays, for a packet at on-path AS k (k = HP + 1
    /// ≤ λ); [`SOURCE_AS`] for a packet of this AS's own host leaving at `j_0` (the source AS
    /// holds no hop key of its own, and the hop pointer stays at 0).
    slot: u8,
    /// At on-path AS k: the hop pointer after this AS (k).
    next_hop_pointer: u8,
    /// At on-path AS k: the hop authenticator the packet carries for it, as [`carried_word`]
    /// reads it (HA_1, unused, for a packet of this AS's own host).
    carried: u32,
}

impl Passed {
    /// The verdict if stage 3 admits the packet.
    #[inline(always)]
    fn admitted(&self) -> Verdict {
        if self.egress == LOCAL_INTERFACE {
            Verdict::Deliver
        } else {
            Verdict::forward(self.egress, Admission::GUARANTEED)
        }
    }
}

/// [`Passed::slot`] of a packet of this AS's own host.
const SOURCE_AS: u8 = u8::MAX;

/// What stage 3 sees of a batch's MACs: the inputs (for a second try under the previous key)
/// and the hop authenticators under the current one, by slot.
struct Macs<'a> {
    hop_key_inputs: &'a [[u8; 28]],
    hop_authenticator_inputs: &'a [[u8; 18]],
    authenticators: &'a [[u8; 16]],
}

/// The MAC inputs of a batch, one slot per packet at an on-path AS, in arrival order.
struct MacInputs<const N: usize> {
    hop_key: [[u8; 28]; N],
    hop_authenticator: [[u8; 18]; N],
    /// Slots filled.
    len: usize,
}

impl Router {
    /// [`Self::run`], compiled for the CPU's features, chosen at run time: for AES-NI (with
    /// SSSE3, SSE4.1, PCLMULQDQ: [`aviary_scion::cpu`]), so that the MACs and the filter's
    /// hash, always inlined from their crates, are inlined here with their AES instructions,
    /// and where the CPU has AVX2 for that too: the same code, whose vector operations take
    /// VEX's three-operand forms instead of copying registers first (GLWP router at λ = 8,
    /// callgrind, 2026-11-26: 561 → 532 instructions a packet in batches of 32, 737 → 730 one
    /// at a time; AVX alone 536, AVX2 with BMI2 530 but 738 for one packet; the MACs and the
    /// hash built for AVX2 as well: 532 → 529.5, one packet 566 → 563; with BMI1 and BMI2 as
    /// well 526, but 577 for one packet). Without AES-NI, the portable build.
    #[inline(always)]
    pub(super) fn run_fastest<const N: usize>(
        &mut self,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves AES-NI and the rest of `AES_NI_FEATURES`; AVX2 (and so AVX)
            // is checked here.
            return unsafe {
                if std::arch::is_x86_feature_detected!("avx2") {
                    self.run_avx2::<N>(ni, pkts, ingress, now_ns, verdicts)
                } else {
                    self.run_aes_ni::<N>(ni, pkts, ingress, now_ns, verdicts)
                }
            };
        }
        self.run::<N>(Portable, pkts, ingress, now_ns, verdicts);
    }

    /// [`Self::run`] with AES-NI and AVX2 enabled.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2 and the features of [`aviary_scion::cpu::AES_NI_FEATURES`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1,avx,avx2")] // cpu::AES_NI_FEATURES, AVX2
    unsafe fn run_avx2<const N: usize>(
        &mut self,
        ni: AesNi,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        self.run::<N>(ni, pkts, ingress, now_ns, verdicts);
    }

    /// [`Self::run`] with AES-NI enabled.
    ///
    /// # Safety
    ///
    /// The CPU has the features of [`aviary_scion::cpu::AES_NI_FEATURES`].
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
    unsafe fn run_aes_ni<const N: usize>(
        &mut self,
        ni: AesNi,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        self.run::<N>(ni, pkts, ingress, now_ns, verdicts);
    }

    /// The three stages for up to `N` packets.
    #[inline(always)]
    fn run<const N: usize>(
        &mut self,
        cpu: impl Cpu,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        let n = pkts.len().min(verdicts.len()).min(N);
        let mut inputs = MacInputs { hop_key: [[0; 28]; N], hop_authenticator: [[0; 18]; N], len: 0 };
        let mut passed = ArrayVec::<Passed, N>::new();
        let mut duplicate_keys = [[0u8; 16]; N];
        for (index, (pkt, verdict)) in pkts[..n].iter().zip(verdicts.iter_mut()).enumerate() {
            match self.check(pkt, index, ingress, now_ns, &mut inputs, &mut duplicate_keys, passed.len()) {
                Ok(p) => {
                    if N > 1 {
                        self.monitor.prefetch(p.aid);
                    }
                    passed.push(p);
                }
                Err(reason) => {
                    self.stats.drops.count(reason);
                    *verdict = Verdict::Drop(reason);
                }
            }
        }
        let mut duplicate_hashes = [KeyHash::default(); N];
        let duplicate_keys = &duplicate_keys[..passed.len()];
        if let (1, [key]) = (N, duplicate_keys) {
            // One packet: the filter's one-key hash, inlined here, instead of the batch function's
            // call (GLWP router at λ = 8, callgrind, 2026-11-26: one packet 730 → 702 instructions;
            // the hash then stays in registers for the filter's bits).
            duplicate_hashes[0] = self.duplicates.hash_on(cpu, key);
        } else {
            self.duplicates.hash_many_on(cpu, duplicate_keys, &mut duplicate_hashes[..passed.len()]);
        }
        // For one packet too: its filter lines then arrive while the MACs are computed, where
        // they missed after them (7 instructions more, 542 → 549; GLWP router at λ = 8, one packet
        // at a time through a filter not yet in the cache, `glwp_router_loop`, Zen 4,
        // 2026-11-26: 174 → 126 ns a packet, medians of six alternated runs).
        duplicate_hashes[..passed.len()].iter().for_each(|h| self.duplicates.prefetch(*h));
        let macs = inputs.len;
        // One packet: `aviary_scion`'s CMAC of one message (`CmacKey::mac`, one key schedule for
        // the hop authenticator) inlined here, and so built for AVX2 with the stages, instead of
        // the batch functions called for one message each, which paid their loops and set-up
        // alone (GLWP router at λ = 8, callgrind, 2026-11-26: one packet 702 → 566 instructions;
        // batches unchanged at 532). The vectors and the batch-against-one-packet tests check it.
        let one = N == 1 && macs == 1;
        let mut hop_keys = [[0u8; 16]; N];
        if one {
            hop_keys[0] = self.secret.current().mac_on(cpu, &inputs.hop_key[0]);
        } else {
            self.secret.current().mac_two_blocks_many_on(cpu, &inputs.hop_key[..macs], &mut hop_keys[..macs]);
        }
        let mut authenticators = [[0u8; 16]; N];
        if one {
            authenticators[0] = CmacKey::new_on(cpu, &hop_keys[0]).mac_on(cpu, &inputs.hop_authenticator[0]);
        } else {
            mac_two_blocks_fresh_keys_on(
                cpu,
                &hop_keys[..macs],
                &inputs.hop_authenticator[..macs],
                &mut authenticators[..macs],
            );
        }
        let macs = Macs {
            hop_key_inputs: &inputs.hop_key,
            hop_authenticator_inputs: &inputs.hop_authenticator,
            authenticators: &authenticators,
        };
        let (mut forwarded, mut delivered) = (0, 0);
        for (p, h) in passed.iter().zip(&duplicate_hashes) {
            let index = usize::from(p.index);
            debug_assert!(index < n && n <= pkts.len() && n <= verdicts.len());
            // SAFETY: stage 1 recorded `index < n`, and `n` is at most both lengths.
            let pkt = unsafe { pkts.get_unchecked_mut(index) };
            let verdict = match self.admit(pkt, p, *h, &macs, now_ns) {
                Ok(v) => {
                    match v {
                        Verdict::Deliver => delivered += 1,
                        _ => forwarded += 1,
                    }
                    v
                }
                Err(reason) => {
                    self.stats.drops.count(reason);
                    Verdict::Drop(reason)
                }
            };
            // SAFETY: as above.
            unsafe { *verdicts.get_unchecked_mut(index) = verdict };
        }
        self.stats.forwarded += forwarded;
        self.stats.delivered += delivered;
    }

    /// Stage 1 of the packet at `index` of the batch (Alg. 2 lines 9-12): one pass over the raw
    /// bytes of its SCION common and address headers and its GLWP header, with the checks (and
    /// drop reasons, in the same order) of `ScionView::new_checked`, `Header::new_checked` and
    /// [`crate::packet::locate_header`] written as compares on the values read, and no typed
    /// view built. A packet at an on-path AS gets the next slot of `inputs`, a packet that passes
    /// slot `passed` of `duplicate_keys`, `passed` being the number of packets before it that
    /// passed (so a key's slot is its record's). The caller's promise, which the key's unchecked
    /// write relies on: `passed <= index < N` (an `ArrayVec`'s push cost ≈ 8 instructions per
    /// packet in its capacity check and panic path; its unchecked push, with its length kept
    /// apart from the records', 3 more than a plain array: GLWP router at λ = 8, callgrind,
    /// 2026-11-26: 504.8 → 501.6 instructions a packet in batches of 32, one packet 542 either
    /// way).
    // Two arguments for one array and its length, each a register in the loop (in a struct, 1 to
    // 2 instructions a packet more: 501.6 → 502.6 batched, 542 → 543 one at a time).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn check<const N: usize>(
        &self,
        pkt: &[u8],
        index: usize,
        ingress: u16,
        now_ns: u64,
        inputs: &mut MacInputs<N>,
        duplicate_keys: &mut [[u8; 16]; N],
        passed: usize,
    ) -> Result<Passed, DropReason> {
        let len = pkt.len();
        if len < scion::DST_HOST {
            return Err(DropReason::Truncated);
        }
        // SAFETY: `len >= DST_HOST`, and SRC_IA ends before it.
        let (CommonFields { version_tc, hdr_units: hdr_len, payload_len, path_type, addr_types }, src_ia) =
            unsafe { (CommonFields::read_unchecked(pkt), bytes::<8>(pkt, scion::SRC_IA.start)) };
        // What a valid header must meet, checked in fewer compares than the checks of
        // [`header_drop`], which name the reason of a packet that fails: their others follow from
        // these (`len >= at` from `hdr_len >= at` and the length, `path >= header_len(λ)` from
        // `path == path_len(λ)`, `HP <= λ` from `HP < λ`).
        // The path (the GLWP header and its padding) is `at..hdr_len`.
        // An unsupported address type's start lies past every header (`hdr_len < at`).
        let at = path_start_of(addr_types);
        let hdr_len = usize::from(hdr_len) * 4;
        if version_tc >> 4 != 0
            || hdr_len < at
            || hdr_len + usize::from(payload_len) != len
            || path_type != PATH_TYPE
            || hdr_len - at <= field::HOP_POINTER
        {
            return Err(header_drop(pkt));
        }
        // From here `at <= hdr_len == len - PayloadLen`.
        let path = hdr_len - at;
        // SAFETY: `at + HOP_POINTER < hdr_len <= len`, and LAMBDA < HOP_POINTER.
        let (lambda, hp) = unsafe { (byte(pkt, at + field::LAMBDA), byte(pkt, at + field::HOP_POINTER)) };
        if lambda == 0 || hp >= lambda || path != path_len(lambda) {
            return Err(header_drop(pkt));
        }
        // The whole header lies within the packet: `at + header_len(λ) <= at + path_len(λ) ==
        // hdr_len <= len`. Every read below is of a field of the header (π's pair k ≤ λ, HA_k
        // with 1 ≤ k ≤ λ).
        debug_assert!(at + header_len(lambda) <= len);
        // SAFETY: SRC lies within the header.
        let src = unsafe { bytes::<8>(pkt, at + field::SRC.start) };
        let Ok(pkt_len) = u16::try_from(len) else { return Err(header_drop(pkt)) };
        if src != src_ia {
            return Err(header_drop(pkt));
        }
        let after = at + after_path(lambda);
        // The fields after π are read where they are used (a load each), not once here: read
        // here, they were held across the interface checks, spilled to the stack and reloaded
        // (GLWP router at λ = 8, callgrind, 2026-11-26: 529.5 → 516.5 instructions a packet in
        // batches of 32, 563 → 555 one at a time).
        // SAFETY (all four): the fields after π lie within the header (they end at HA, before
        // its λ hop authenticators).
        let beta = || unsafe { bytes::<4>(pkt, after + after_path::BETA.start) };
        // SAFETY: as above.
        let aid = || unsafe { bytes::<8>(pkt, after + after_path::AID.start) };
        // SAFETY: as above.
        let ts_pkt = || unsafe { bytes::<8>(pkt, after + after_path::TS_PKT.start) };
        // SAFETY: as above.
        let ts_exp = || unsafe { bytes::<4>(pkt, after + after_path::TS_EXP.start) };
        let (slot, egress) = if ingress == LOCAL_INTERFACE && hp == 0 {
            if self.source_as != Some(IsdAsn::from_bytes(src)) {
                // A host of this AS sending under another AS's name, or a router that sends
                // no GLWP of its own: nothing here may leave as GLWP.
                return Err(DropReason::BadSrcIa);
            }
            // SAFETY: pair 0 of π lies within the header (0 ≤ λ).
            let (i_0, j_0) = split_pair(unsafe { bytes(pkt, at + field::pair(0).start) });
            if i_0 != LOCAL_INTERFACE || j_0 == LOCAL_INTERFACE {
                return Err(DropReason::MalformedPath);
            }
            (SOURCE_AS, j_0)
        } else {
            // This AS is on-path AS k = HP + 1 ≤ λ: pair k of π, hop authenticator k.
            let k = usize::from(hp) + 1;
            let pair_at = at + field::pair(k).start;
            // SAFETY: pair k ≤ λ of π lies within the header.
            let pair = unsafe { bytes::<{ field::PAIR_LEN }>(pkt, pair_at) };
            let (i_k, j_k) = split_pair(pair);
            if ingress != i_k {
                return Err(DropReason::BadIngress);
            }
            // Only the destination (k = λ) leaves at its local interface, and only it may.
            let deliver = j_k == LOCAL_INTERFACE;
            if deliver != (k == usize::from(lambda)) || i_k == LOCAL_INTERFACE {
                return Err(DropReason::MalformedPath);
            }
            // The next free slot, taken below once the packet has passed every check. The MAC
            // inputs are the header's bytes as they are (both are big-endian).
            let slot = inputs.len;
            let hop_key = &mut inputs.hop_key[slot];
            hop_key[0..8].copy_from_slice(&src);
            hop_key[8..16].copy_from_slice(&aid());
            hop_key[16..20].copy_from_slice(&beta());
            hop_key[20..24].copy_from_slice(&pair);
            hop_key[24..28].copy_from_slice(&ts_exp());
            let authenticator = &mut inputs.hop_authenticator[slot];
            authenticator[0..8].copy_from_slice(&src);
            authenticator[8..16].copy_from_slice(&ts_pkt());
            authenticator[16..18].copy_from_slice(&pkt_len.to_be_bytes());
            // Below N ≤ 32, so never SOURCE_AS.
            (slot as u8, j_k)
        };
        // A batch compares with bounds worked out once for all its packets (the compiler keeps
        // them out of its loop: 692 → 687 instructions per packet); for one packet alone they
        // cost more than they save (844 → 849), so it, and a packet outside the bounds, go
        // through the checks themselves, which name the reason.
        let (ts_pkt_ns, ts_exp_s) = (u64::from_be_bytes(ts_pkt()), u32::from_be_bytes(ts_exp()));
        if N == 1 || !self.freshness.window(now_ns).admits(ts_pkt_ns, ts_exp_s) {
            self.freshness.check_packet(ts_pkt_ns, now_ns).map_err(GlwpDrop::reason)?;
            self.freshness.check_allocation(ts_exp_s, now_ns).map_err(GlwpDrop::reason)?;
        }
        inputs.len += usize::from(slot != SOURCE_AS);
        // Read for a packet of this AS's own host too, which has no use for it (its HP is 0 <
        // λ, so HA_1 is there): one load instead of a branch and a copy through the stack.
        // SAFETY: HA_k, 1 ≤ k = HP + 1 ≤ λ, lies within the header, and so does the byte before
        // it (the last of ts_exp or of HA_{k−1}).
        let carried = unsafe { carried_word(pkt, after + after_path::HA + HA_LEN * usize::from(hp)) };
        // `(Src, ts_pkt)`, hashed for the duplicate filter with the rest of the batch.
        let mut duplicate_key = [0u8; 16];
        duplicate_key[..8].copy_from_slice(&src);
        duplicate_key[8..].copy_from_slice(&ts_pkt());
        debug_assert!(passed <= index && index < N);
        // SAFETY: at most one packet before this one passed, so `passed <= index`, and the
        // caller's `index < N` (run: `index < n <= N`; a test: 0 < 1).
        unsafe { *duplicate_keys.get_unchecked_mut(passed) = duplicate_key };
        Ok(Passed {
            aid: u64::from_be_bytes(aid()),
            beta: u32::from_be_bytes(beta()),
            ts_exp: u32::from_be_bytes(ts_exp()),
            egress,
            pkt_len,
            // Below 2¹⁰: the header starts within the SCION header.
            header_at: at as u16,
            // Below N ≤ 32.
            index: index as u8,
            slot,
            next_hop_pointer: hp + 1,
            carried,
        })
    }

    /// Stage 3 of one packet: lines 14-18, with duplicates suppressed (line 17) before the
    /// monitor charges the packet (line 16), so a replay is never charged to its source.
    #[inline(always)]
    fn admit(
        &mut self,
        pkt: &mut [u8],
        p: &Passed,
        duplicate_hash: KeyHash,
        macs: &Macs<'_>,
        now_ns: u64,
    ) -> Result<Verdict, DropReason> {
        if p.slot != SOURCE_AS {
            let slot = usize::from(p.slot);
            debug_assert!(slot < macs.authenticators.len());
            // SAFETY: stage 1 gave the packet a slot below the number of MAC inputs it wrote,
            // and a MAC was computed for each (the check was 2 instructions a packet).
            let authenticator = unsafe { macs.authenticators.get_unchecked(slot) };
            if !ha_matches(p.carried, authenticator) && !self.made_by_previous_key(macs, slot, p.carried, now_ns) {
                return Err(GlwpDrop::BadHopAuthenticator.reason());
            }
        }
        if !self.duplicates.check_and_insert_hashed(duplicate_hash, now_ns) {
            return Err(DropReason::Duplicate);
        }
        match self.monitor.charge(p.aid, p.beta, p.ts_exp, u32::from(p.pkt_len), now_ns) {
            MonitorVerdict::Within => {}
            MonitorVerdict::Overuse => return Err(GlwpDrop::Overuse.reason()),
            MonitorVerdict::Full => return Err(GlwpDrop::MonitorFull.reason()),
        }
        if p.slot != SOURCE_AS {
            // SAFETY: stage 1 proved the whole header at `header_at` within this packet
            // (`at + header_len(λ) ≤ len`), whose slice is the same one here.
            unsafe { set_hop_pointer(pkt, usize::from(p.header_at), p.next_hop_pointer) };
        }
        Ok(p.admitted())
    }

    /// Whether `carried` is the hop authenticator of slot `slot` of `macs` under the previous
    /// `K_k`, if one still verifies at `now_ns` (counted): the second try of a packet that
    /// failed under the current key, off the path that packets under the current key take.
    #[cold]
    #[inline(never)]
    fn made_by_previous_key(&mut self, macs: &Macs<'_>, slot: usize, carried: u32, now_ns: u64) -> bool {
        let Some(previous) = self.secret.previous_at(now_ns) else { return false };
        let mut hop_key = [[0u8; 16]];
        previous.mac_two_blocks_many(&macs.hop_key_inputs[slot..=slot], &mut hop_key);
        let mut authenticator = [[0u8; 16]];
        mac_two_blocks_fresh_keys(&hop_key, &macs.hop_authenticator_inputs[slot..=slot], &mut authenticator);
        let made = ha_matches(carried, &authenticator[0]);
        self.stats.previous_key_packets += u64::from(made);
        made
    }
}

/// Why stage 1 drops `pkt`, whose SCION or GLWP header failed one of its compares: the checks
/// of `ScionView::new_checked`, `Header::new_checked` and [`crate::packet::locate_header`], in
/// their order and with their drop reasons, on the raw bytes. Kept apart (and cold) so that stage
/// 1 makes only the compares a valid header needs.
#[cold]
#[inline(never)]
fn header_drop(pkt: &[u8]) -> DropReason {
    let len = pkt.len();
    if len < scion::DST_HOST {
        return DropReason::Truncated;
    }
    // SAFETY: `len >= DST_HOST`, and SRC_IA ends before it.
    let (CommonFields { version_tc, hdr_units: hdr_len, payload_len, path_type, addr_types }, src_ia) =
        unsafe { (CommonFields::read_unchecked(pkt), bytes::<8>(pkt, scion::SRC_IA.start)) };
    if version_tc >> 4 != 0 {
        return DropReason::BadVersion;
    }
    let at = path_start_of(addr_types);
    if at == usize::from(NO_PATH_START) {
        return DropReason::BadAddressType;
    }
    let hdr_len = usize::from(hdr_len) * 4;
    if hdr_len < at || len < at {
        return DropReason::Truncated;
    }
    if hdr_len + usize::from(payload_len) != len {
        return DropReason::LengthMismatch;
    }
    if path_type != PATH_TYPE {
        return DropReason::UnsupportedPathType;
    }
    // From here `at <= hdr_len <= len`.
    let path = hdr_len - at;
    if path <= field::HOP_POINTER {
        return DropReason::Truncated;
    }
    // SAFETY: `at + HOP_POINTER < hdr_len <= len`, and LAMBDA < HOP_POINTER.
    let (lambda, hp) = unsafe { (byte(pkt, at + field::LAMBDA), byte(pkt, at + field::HOP_POINTER)) };
    if lambda == 0 {
        return DropReason::MalformedPath;
    }
    if path < header_len(lambda) {
        return DropReason::Truncated;
    }
    if hp > lambda {
        return DropReason::PathIndexOutOfRange;
    }
    if path != path_len(lambda) {
        return DropReason::MalformedPath;
    }
    debug_assert!(at + header_len(lambda) <= len);
    // SAFETY: SRC lies within the header (`at + header_len(λ) <= hdr_len <= len`).
    let src = unsafe { bytes::<8>(pkt, at + field::SRC.start) };
    if src != src_ia {
        return DropReason::BadSrcIa;
    }
    if u16::try_from(len).is_err() {
        return DropReason::PktLenOverflow;
    }
    // HP == λ: stage 1 asks only about packets that failed one of its compares.
    debug_assert!(hp >= lambda);
    GlwpDrop::PathComplete.reason()
}

/// The hop authenticator at `at` of `pkt` as the little-endian word of its [`HA_LEN`] bytes
/// (the top byte zero): the four bytes that end with it, in one load, shifted down. Three bytes
/// took two loads into the record and four instructions more to compare with a MAC (GLWP
/// router at λ = 8, callgrind, 2026-11-26: 578 → 568 instructions a packet in batches of 32,
/// 745 → 741 one at a time, with the MAC slot read unchecked).
///
/// # Safety
///
/// `1 ≤ at` and `at + HA_LEN ≤ pkt.len()`.
#[inline(always)]
unsafe fn carried_word(pkt: &[u8], at: usize) -> u32 {
    const { assert!(HA_LEN == 3) };
    debug_assert!(at >= 1 && at + HA_LEN <= pkt.len());
    // SAFETY: `at − 1 + 4 = at + HA_LEN ≤ pkt.len()`, the caller's promise.
    u32::from_le_bytes(unsafe { bytes::<4>(pkt, at - 1) }) >> 8
}

/// Whether a carried hop authenticator ([`carried_word`]) is the first [`HA_LEN`] bytes of
/// the recomputed MAC, in constant time: one compare of two words.
#[inline(always)]
fn ha_matches(carried: u32, mac: &[u8; 16]) -> bool {
    let [a, b, c, _, ..] = *mac;
    u32::from_le_bytes([a, b, c, 0]) == carried
}

#[cfg(test)]
mod tests;
