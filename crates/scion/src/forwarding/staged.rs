//! The generic batched staged forwarder: what every router of an AS does to a batch of packets,
//! whatever mechanism it also runs, in stages so that the AES work of the batch interleaves.
//!
//! 1. **Parse and check** every packet without cryptography: the empty path (delivered inside
//!    the AS), the standard path, or a path type of the mechanism ([`HopExtension::prepare`]),
//!    each giving a [`super::HopWork`] (the hop field(s) to verify and what to write back).
//! 2. **Mechanism cryptography** ([`HopExtension::crypto`]) for the whole batch: e.g. a
//!    flyover's A_K and FlyoverMAC, after which the hop's candidate MAC is known. A packet
//!    alone goes through [`HopExtension::crypto_single`], where the mechanism may compute the
//!    current hop field's CMAC of stage 3 inside its own AES chain.
//! 3. **Hop-field MACs** of every packet (and of the second hop field at a segment crossover)
//!    under the one AS key, interleaved.
//! 4. **Finish**: verify, update SegID and CurrINF/CurrHF, let the mechanism check and write
//!    back its fields with the full hop-field MACs of stage 3 (EPIC keys its validation fields
//!    with them) and decide the admission or drop the packet ([`HopExtension::admit`]), with
//!    what admission needs of the batch's ingress and time worked out once
//!    ([`HopExtension::admit_context`]).
//!
//! During a key rotation's overlap (see [`super::rotation`]) a packet refused for its MAC is
//! prepared again from its unchanged bytes and verified under the previous keys as well (the
//! AS's hop-field key and the mechanism's own, in every combination): only refused packets pay
//! for the retry.
//!
//! Standard SCION is the forwarder with no extension ([`Standard`]); a mechanism implements only
//! its own fields and cryptography (the `extension` module). No allocation: per-packet state lives on the stack, sized
//! for the largest batch ([`MAX_BATCH`]).

use std::mem::MaybeUninit;

#[cfg(target_arch = "x86_64")]
use aviary_aes::cpu::AesNi;
use aviary_aes::cpu::{Cpu, Detect, Portable};
use aviary_qos::{Admission, Claim, Context, DropReason, Processor, Verdict};

use super::extension::truncated;
pub use super::extension::{HopAuth, HopExtension, Staged, Standard};
use super::AsForwarding;
use crate::mac::HopMacKey;
use crate::wire::header::{field, path_type, ScionView};

/// Packets processed together (stack-allocated state per packet).
pub const MAX_BATCH: usize = 32;

/// The forwarder of one AS with the extension `E`.
#[derive(Clone, Debug)]
pub struct StagedForwarder<E> {
    pub fwd: AsForwarding,
    pub ext: E,
    /// Packets forwarded or delivered only because a previous key verified them: when this
    /// stops growing, nothing issued under the old keys is in use any more.
    pub previous_key_packets: u64,
}

/// Standard SCION forwarding (path types 0 and 1).
pub type StandardForwarder = StagedForwarder<Standard>;

impl StandardForwarder {
    pub fn standard(fwd: AsForwarding) -> Self {
        Self::new(fwd, Standard)
    }
}

impl<E: HopExtension> StagedForwarder<E> {
    pub fn new(fwd: AsForwarding, ext: E) -> Self {
        Self { fwd, ext, previous_key_packets: 0 }
    }

    /// Processes one packet that arrived on `ingress` (0: from inside the AS) at `now_ns`.
    pub fn process(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves the CPU has the features `process_one_aes_ni` is compiled for.
            return unsafe { self.process_one_aes_ni(ni, pkt, ingress, now_ns) };
        }
        self.process_one(Portable, pkt, ingress, now_ns)
    }

    /// [`Self::process_one`] compiled with AES-NI (and SSSE3, SSE4.1, PCLMULQDQ) enabled: a
    /// copy of its own, whose packet and verdict pass in registers (through
    /// [`Self::process_chunk_aes_ni`] a single packet ran 8 to 9 instructions more).
    ///
    /// # Safety
    /// The CPU has those features (`ni` proves it).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // aviary_aes::cpu::AES_NI_FEATURES
    fn process_one_aes_ni(&mut self, ni: AesNi, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        self.process_one(ni, pkt, ingress, now_ns)
    }

    #[inline(always)]
    fn process_one(&mut self, cpu: impl Cpu, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let mut v = [Verdict::Deliver];
        self.process_chunk::<1>(cpu, &mut [pkt], ingress, now_ns, &mut v);
        v[0]
    }

    /// Processes packets that arrived on the same interface at the same time; `verdicts[i]` is
    /// the verdict of `pkts[i]`. A lone packet (what the I/O loop hands over when traffic is
    /// light) takes the stages sized for one, as [`Self::process`]: its AES chain is its latency.
    pub fn process_batch(&mut self, pkts: &mut [&mut [u8]], ingress: u16, now_ns: u64, verdicts: &mut [Verdict]) {
        if let ([pkt], [verdict]) = (&mut *pkts, &mut *verdicts) {
            *verdict = self.process(pkt, ingress, now_ns);
            return;
        }
        for (p, v) in pkts.chunks_mut(MAX_BATCH).zip(verdicts.chunks_mut(MAX_BATCH)) {
            self.process_chunk_fastest::<MAX_BATCH>(p, ingress, now_ns, v);
        }
    }

    /// [`Self::process_chunk`] compiled for AES-NI where the CPU has it (chosen at run time,
    /// [`aviary_aes::cpu`]), so that the AES code of the stages is inlined into them; else
    /// the portable build's.
    #[inline(always)]
    fn process_chunk_fastest<const N: usize>(
        &mut self,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        #[cfg(target_arch = "x86_64")]
        if let Some(ni) = AesNi::detect() {
            // SAFETY: `ni` proves the CPU has the features `process_chunk_aes_ni` is compiled for.
            return unsafe { self.process_chunk_aes_ni::<N>(ni, pkts, ingress, now_ns, verdicts) };
        }
        self.process_chunk::<N>(Portable, pkts, ingress, now_ns, verdicts);
    }

    /// [`Self::process_chunk`] compiled with AES-NI (and SSSE3, SSE4.1, PCLMULQDQ) enabled.
    ///
    /// # Safety
    /// The CPU has those features (`ni` proves it: call through [`Self::process_chunk_fastest`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // aviary_aes::cpu::AES_NI_FEATURES
    fn process_chunk_aes_ni<const N: usize>(
        &mut self,
        ni: AesNi,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        self.process_chunk::<N>(ni, pkts, ingress, now_ns, verdicts);
    }

    /// The stages for up to `N` packets (state on the stack, sized for `N`).
    #[inline(always)]
    fn process_chunk<const N: usize>(
        &mut self,
        cpu: impl Cpu,
        pkts: &mut [&mut [u8]],
        ingress: u16,
        now_ns: u64,
        verdicts: &mut [Verdict],
    ) {
        let n = pkts.len().min(verdicts.len()).min(N);
        // Both cut to `n`, so that the stages' indices below `n` need no bounds checks.
        let (pkts, verdicts) = (&mut pkts[..n], &mut verdicts[..n]);
        let mut work: [Option<Staged<E::Work>>; N] = [None; N];

        // Stage 1: parse and check everything that needs no cryptography.
        for i in 0..n {
            if let Err(v) = self.prepare(pkts[i], ingress, &mut work[i]) {
                verdicts[i] = v;
            }
        }

        // One packet: stage 2 and the current hop field's CMAC together as the mechanism
        // chooses (its AES chain is the packet's latency), the rest of stage 3 and stage 4
        // straight through (through the batch's arrays, a single packet ran 36 instructions
        // more; callgrind, 2026-11-26). Each block asked for where it is used: from one
        // `mac_blocks` before the branch, a single flyover ran 17 instructions more and a
        // single standard packet through the Hummingbird router 17 more (callgrind,
        // 2026-11-26).
        if N == 1 {
            let key = self.fwd.mac_keys.current();
            let early = self.ext.crypto_single(cpu, &pkts[..n], &mut work[..n], ingress, key);
            if let (Some(w), [pkt], [verdict]) = (&work[0], &mut *pkts, &mut *verdicts) {
                let layout = w.layout(pkt);
                // No closures: they would not be inlined into, nor compiled for the features of,
                // the AES-NI copy of these stages (`process_one_aes_ni`).
                let current = match early {
                    Some(mac) => mac,
                    None => key.cmac_block_on(cpu, &w.hop.mac_blocks(cpu, layout).0),
                };
                #[allow(clippy::manual_map)]
                let next = match w.hop.mac_blocks(cpu, layout).1 {
                    Some(b) => Some(key.cmac_block_on(cpu, &b)),
                    None => None,
                };
                // SAFETY: `w.layout(pkt)` passed just above.
                *verdict = unsafe { self.finish_one(w, pkt, &current, next.as_ref(), None, ingress, now_ns) };
            }
            return;
        }

        // Stage 2: the mechanism's cryptography, over the batch.
        self.ext.crypto::<N>(cpu, &pkts[..n], &mut work[..n], ingress);

        // Stage 3: hop-field MACs (and crossover MACs) under the AS key. Packet `i`'s first
        // block is block `i` (zero for a packet that goes no further: one wasted AES block per
        // drop instead of an index per packet), a crossover's second block one after the
        // batch's `n`, its place in `second`: stage 4 reads the MACs where stage 3 leaves them,
        // with no owner list and no per-packet `HopAuth` copied out (callgrind, 2026-11-26).
        // Not zeroed (1 KiB for a batch of 32): only the first `nb` entries are written and read.
        // A block's index (below `2 * N`) is kept in a byte.
        const { assert!(2 * N <= 256, "a batch's second-block indices must fit a byte") };
        let mut blocks = [[const { MaybeUninit::<[u8; 16]>::uninit() }; 2]; N];
        let mut second = [const { MaybeUninit::<u8>::uninit() }; N];
        let blocks = blocks.as_flattened_mut();
        let mut nb = n;
        for (i, w) in work[..n].iter().enumerate() {
            debug_assert!(i < n && n == pkts.len() && nb < n + i + 1 && n <= N);
            let Some(w) = w else {
                // SAFETY: `i < n <= N <= 2 * N`, the array's length.
                unsafe { blocks.get_unchecked_mut(i) }.write([0; 16]);
                continue;
            };
            // SAFETY: `i < n == pkts.len()` (cut above).
            let (b1, b2) = w.hop.mac_blocks(cpu, w.layout(unsafe { pkts.get_unchecked(i) }));
            // SAFETY: as above.
            unsafe { blocks.get_unchecked_mut(i) }.write(b1);
            if let Some(b2) = b2 {
                // SAFETY: before packet `i` at most `i` second blocks were added after the
                // first `n`, so `nb <= n + i < 2 * N`; `i < N`, the length of `second`.
                unsafe {
                    blocks.get_unchecked_mut(nb).write(b2);
                    second.get_unchecked_mut(i).write(nb as u8);
                }
                nb += 1;
            }
        }
        debug_assert!(nb <= 2 * n);
        // SAFETY: `nb <= 2 * n <= 2 * N` (above), and the first `nb` entries were written in the
        // loop (the first `n` one per packet, the rest one per crossover); `MaybeUninit<T>` has
        // the layout of `T`.
        let blocks =
            unsafe { &mut *(blocks.get_unchecked_mut(..nb) as *mut [MaybeUninit<[u8; 16]>] as *mut [[u8; 16]]) };
        self.fwd.mac_keys.current().macs_on(cpu, blocks);
        let blocks = &*blocks;

        // Stage 4: verify, update, let the mechanism write back and admit, indexed by packet
        // (over zipped iterators a batch ran 7 to 11 instructions more a packet; callgrind,
        // 2026-11-26). What admission needs of the batch's ingress and time is worked out once.
        let at = self.ext.admit_context(ingress, now_ns);
        for (i, w) in work[..n].iter().enumerate() {
            let Some(w) = w else { continue };
            debug_assert!(i < n && i < N);
            // SAFETY: `i < n`, and stage 3 wrote the first `n` blocks.
            let current = unsafe { blocks.get_unchecked(i) };
            // SAFETY: a crossover's packet had `second[i]` written in stage 3 (`i < N`).
            let next = if w.hop.at_crossover() {
                blocks.get(usize::from(unsafe { second.get_unchecked(i).assume_init() }))
            } else {
                None
            };
            // SAFETY: `i < n == pkts.len() == verdicts.len()` (both cut above).
            debug_assert!(i < pkts.len() && i < verdicts.len());
            let (pkt, verdict) = unsafe { (pkts.get_unchecked_mut(i), verdicts.get_unchecked_mut(i)) };
            // SAFETY: stage 3 called `w.layout` on this packet (its length cannot change: the
            // stages hold no way to replace a packet's slice).
            *verdict = unsafe { self.finish_one(w, pkt, current, next, Some(&at), ingress, now_ns) };
        }
    }

    /// Stage 4 for one prepared packet `pkt` (`w` its record, `current` and at a crossover
    /// `next` its full MACs from stage 3, `at` its batch's admission context if worked out).
    ///
    /// # Safety
    /// Stage 3 proved the record for the packet: [`Staged::layout`] passed for `w` and a packet
    /// of `pkt`'s length.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn finish_one(
        &mut self,
        w: &Staged<E::Work>,
        pkt: &mut [u8],
        current: &[u8; 16],
        next: Option<&[u8; 16]>,
        at: Option<&E::Admit>,
        ingress: u16,
        now_ns: u64,
    ) -> Verdict {
        let (mac, next_mac) = (truncated(current), next.map(truncated));
        // SAFETY: stage 3 proved the layout for this record and packet (the caller's promise).
        let (path, layout_offset) = unsafe { w.path_and_layout(pkt) };
        debug_assert!(layout_offset + usize::from(w.hop.end) <= path.len());
        // SAFETY: as above, the layout at `layout_offset` holds every field of the hop work.
        let finished = unsafe {
            let layout = path.get_unchecked_mut(layout_offset..);
            self.fwd.finish_proven(layout, &w.hop, mac, next_mac, now_ns)
        };
        match finished {
            Err(DropReason::BadMac) if self.in_overlap(now_ns) => self.verify_previous(pkt, ingress, now_ns),
            result => self.conclude(path, w, current, next, result, at, ingress, now_ns),
        }
    }

    fn in_overlap(&self, now_ns: u64) -> bool {
        self.fwd.mac_keys.previous_at(now_ns).is_some() || self.ext.in_overlap(now_ns)
    }

    /// The verdict of a finished packet; the mechanism admits it if it verified (`current` and
    /// `next` are its full MACs, given to the mechanism as a [`HopAuth`]; `at` the batch's
    /// admission context, worked out here for a packet alone, and only if it needs one).
    // Forced: with the MACs as two arguments LLVM kept it apart for a single packet, +29
    // instructions a standard one (callgrind, 2026-11-26).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn conclude(
        &mut self,
        path: &mut [u8],
        w: &Staged<E::Work>,
        current: &[u8; 16],
        next: Option<&[u8; 16]>,
        finished: Result<Option<u16>, DropReason>,
        at: Option<&E::Admit>,
        ingress: u16,
        now_ns: u64,
    ) -> Verdict {
        // Matched step by step, not through `and_then`: the closure became a function of its own
        // that every packet called with its captures spilled to the stack.
        let egress = match finished {
            Ok(egress) => egress,
            Err(r) => return Verdict::Drop(r),
        };
        // Most traffic carries no part of the mechanism (a standard packet): it is
        // unauthenticated without a call (callgrind, 2026-11-26: -24 instructions a standard
        // packet).
        let admitted = match &w.ext {
            None => Ok(Admission::UNAUTHENTICATED),
            Some(ext) => {
                let auth = HopAuth { current: *current, next: next.copied() };
                // The batch's by reference: copied, it cost a batched flyover 16 instructions.
                let alone;
                let at = match at {
                    Some(at) => at,
                    None => {
                        alone = self.ext.admit_context(ingress, now_ns);
                        &alone
                    }
                };
                self.ext.admit(path, w, ext, &auth, at)
            }
        };
        match (egress, admitted) {
            (_, Err(r)) => Verdict::Drop(r),
            (Some(egress), Ok(admission)) => Verdict::forward(egress, admission),
            (None, Ok(_)) => Verdict::Deliver,
        }
    }

    /// Stages 1 to 4 again for a packet refused for its MAC during an overlap, from its bytes
    /// as they came (a refused packet is not written to, so its SegID is the original one):
    /// the mechanism's cryptography under its current and then its previous keys, each with
    /// the hop-field MACs of whichever AS key the hop fields carry.
    #[cold]
    fn verify_previous(&mut self, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let mut current = [None];
        let (Ok(()), Some(fresh)) = (self.prepare(pkt, ingress, &mut current[0]), current[0]) else {
            return Verdict::Drop(DropReason::BadMac);
        };
        self.ext.crypto::<1>(Detect, &[&mut *pkt], &mut current, ingress);
        let mut previous = fresh;
        let previous = self.ext.crypto_previous(pkt, &mut previous, now_ns).then_some(previous);
        for w in current.into_iter().flatten().chain(previous) {
            let auth = self.fwd.macs_across_rotation(&w.hop, w.layout(pkt), now_ns);
            let (mac, next_mac) = auth.macs();
            let path = &mut pkt[usize::from(w.path_start)..];
            match self.fwd.finish(&mut path[usize::from(w.layout_offset)..], &w.hop, mac, next_mac, now_ns) {
                Err(DropReason::BadMac) => continue,
                result => {
                    if result.is_ok() {
                        self.previous_key_packets += 1;
                    }
                    return self.conclude(path, &w, &auth.current, auth.next.as_ref(), result, None, ingress, now_ns);
                }
            }
        }
        Verdict::Drop(DropReason::BadMac)
    }

    /// Stage 1 for a packet of the standard path type, in one pass over its words without
    /// the views, its record written straight into the batch's `slot` (returned, it was
    /// copied there through a temporary, ≈ 7 instructions a packet). Inlined into stage 1's
    /// loop with the mechanism's raw pass: as a function of its own called a packet, a
    /// batched standard packet ran 436.7 instructions where it now runs 407.1, one alone 493
    /// where 450, a batched flyover 753.8 where 749.0 (callgrind, 2026-11-29; wall time
    /// unchanged). Before admission was inlined into stage 4, inlining it cost a flyover 12
    /// instructions (2026-11-26).
    #[inline(always)]
    fn prepare_standard(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        let (path_start, hop) = self.fwd.prepare_scion(pkt, ingress).map_err(Verdict::Drop)?;
        *slot = Some(Staged { path_start, layout_offset: 0, hop, ext: None });
        Ok(())
    }

    /// Stage 1 for one packet into its `slot` of the batch (left as it is if the packet goes no
    /// further); `Err` is its final verdict (a drop, or local delivery on the empty path). Only
    /// the path type is read here; the standard path's is the one tested (testing the
    /// mechanism's raw path type here as well cost a standard packet 2 instructions; callgrind,
    /// 2026-11-26).
    #[inline(always)]
    fn prepare(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        if pkt.get(field::PATH_TYPE) == Some(&path_type::SCION) {
            self.prepare_standard(pkt, ingress, slot)
        } else {
            self.prepare_other(pkt, ingress, slot)
        }
    }

    /// Stage 1 for the other path types: the mechanism's raw pass if it has one
    /// ([`HopExtension::prepare_raw`], its record written into the batch's `slot`), and for a
    /// packet it rejects or for a mechanism without one, the views ([`Self::prepare_view`]),
    /// which name the drop reason. The raw pass is inlined into stage 1's loop, where the
    /// batch's `self`, ingress and slots stay in registers: a function of its own, called a
    /// packet, a batched flyover ran 764.7 instructions where it ran 753.8 inlined, and a packet
    /// alone 790 where 780 (callgrind, 2026-11-29). The views' route is a function of its own.
    #[inline(always)]
    fn prepare_other(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        if E::RAW_PATH_TYPE.is_none() {
            return self.prepare_view_apart(pkt, ingress, slot);
        }
        match self.ext.prepare_raw(&self.fwd, pkt, ingress) {
            Some(staged) => {
                *slot = Some(staged);
                Ok(())
            }
            None => self.prepare_view_cold(pkt, ingress, slot),
        }
    }

    /// [`Self::prepare_view`] for a mechanism without a raw pass: apart, as the standard path's
    /// route is, so that stage 1's loop keeps its registers.
    #[inline(never)]
    fn prepare_view_apart(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        self.prepare_view(pkt, ingress, slot)
    }

    /// [`Self::prepare_view`] for a packet the mechanism's raw pass rejected: the views' route
    /// names its drop reason, or handles its path type. Apart and cold, so that the raw pass
    /// keeps its registers.
    #[cold]
    #[inline(never)]
    fn prepare_view_cold(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        let outcome = self.prepare_view(pkt, ingress, slot);
        // The raw pass is exact for its path type, so a packet of it that the views prepare is
        // a mix-up in the pass; the views' outcome stands all the same (a test build says so).
        debug_assert!(
            outcome.is_err() || pkt.get(field::PATH_TYPE).copied() != E::RAW_PATH_TYPE,
            "the raw pass rejected a packet the views prepare"
        );
        outcome
    }

    /// Stage 1 over the checked views for the path types without a raw pass, into the batch's
    /// `slot` as [`Self::prepare_standard`] writes it.
    #[inline]
    fn prepare_view(&self, pkt: &[u8], ingress: u16, slot: &mut Option<Staged<E::Work>>) -> Result<(), Verdict> {
        let view = ScionView::new_checked(pkt).map_err(|e| Verdict::Drop(e.into()))?;
        // Below 1020 (see `Staged::path_start`).
        let path_start = view.path_range().start as u16;
        match view.path_type() {
            path_type::EMPTY => Err(self.fwd.process_empty(view.src_ia(), view.dst_ia(), ingress)),
            _ => {
                let (hop, ext) = self.ext.prepare(&self.fwd, &view, ingress).map_err(Verdict::Drop)?;
                let layout_offset = self.ext.hop_layout_offset(view.path_type());
                *slot = Some(Staged { path_start, layout_offset, hop, ext });
                Ok(())
            }
        }
    }
}

/// Standard SCION as a router processor: the empty path inside the AS and the standard path.
impl Processor for StandardForwarder {
    fn name(&self) -> &'static str {
        "scion"
    }

    fn claims(&self) -> &'static [Claim] {
        &[Claim::PathType(path_type::EMPTY), Claim::PathType(path_type::SCION)]
    }

    fn process_batch(&mut self, ctx: &mut Context<'_>, pkts: &mut [&mut [u8]], verdicts: &mut [Verdict]) {
        StagedForwarder::process_batch(self, pkts, ctx.ingress, ctx.now_ns, verdicts);
    }

    fn counters(&self, out: &mut dyn FnMut(&'static str, u64)) {
        out("previous_key_packets", self.previous_key_packets);
    }

    fn rotate_secret(&mut self, secret: &[u8], previous_until_ns: u64) {
        self.fwd.rotate(HopMacKey::from_master_secret(secret), previous_until_ns);
    }
}
