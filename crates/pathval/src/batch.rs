//! A trusted router's processing of a batch of packets, staged so that the hashing of the
//! whole batch runs together in [`crate::keccak`]'s multi-state Keccak:
//!
//! 1. **Parse and check** every packet (header, HopCount, Timestamp) and run EpSampling (a
//!    CMAC over the received header) for all of them in one pass of interleaved AES
//!    ([`aviary_scion::cmac`]); from these, both HiddenSamples a packet needs are known:
//!    the one to verify, `H(0 | DataHash | HopCount | K_prev)`, and the one for the next node,
//!    `H(Flag | DataHash | HopCount + 1 | K_next)`.
//! 2. **HiddenSamples to verify**: SHA3-256, all in one pass (one block each), with as many
//!    HiddenSamples for the next node as fill the lanes of its last permutation.
//! 3. **DataHash and the next HiddenSamples**: KT128 over the payloads of the packets whose
//!    HiddenSample did not verify (the previous node sampled them, or they were altered) and
//!    SHA3-256 of the other HiddenSamples for the next node, all in one pass whose lanes run the
//!    rounds each block needs (a one-block HiddenSample fills a lane a payload leaves).
//! 4. **Proofs**: every ValidationProof CMAC of the batch in one interleaved pass, the ones to
//!    check and the ones to write (both cover received header fields only).
//! 5. **Finish**: the checks, then Construction or Update written into the packet. A dropped
//!    packet is left as it came.
//!
//! The outcome is exactly that of [`Router::process`] packet by packet (the same drops, the
//! same bytes out, random proofs apart). Per-packet state lives on the stack, sized for the
//! largest batch ([`MAX_BATCH`]): no allocation.

use aviary_qos::RandomSource;
use aviary_scion::cmac::{mac_each, CmacKey};

use crate::crypto::{
    ct_eq, prf_input, proof_input, HiddenSampleInput, LinkKey, PrfInput, ProofInput, HIDDEN_SAMPLE_INPUT_LEN,
    PRF_INPUT_LEN, PROOF_INPUT_LEN,
};
use crate::functions::{self, HeaderMut};
use crate::header::{field, locate, Metadata, PathvalView, BLOCK_LEN, HIDDEN_SAMPLE_LEN};
use crate::keccak::{hash_mixed, sha3_256_many, Function, DIGEST_LEN, LANES};
use crate::router::{PathvalDrop, Router, Verdict};

/// Packets processed together (stack-allocated state per packet).
pub const MAX_BATCH: usize = 32;

/// The keys of one packet of a batch, `(k_prev, k_next)`; `None` for a packet the router is
/// not to process (its bytes and verdict are left alone).
pub type BatchKeys<'k> = Option<(&'k LinkKey, &'k LinkKey)>;

/// One packet between the stages.
#[derive(Clone, Copy)]
struct Checked {
    /// Where the header and the payload are in the packet.
    header: (usize, usize),
    payload: (usize, usize),
    meta: Metadata,
    hop_count: u8,
    /// EpSampling's decision at this router.
    sampled: bool,
}

impl Router {
    /// [`Router::process`] on `pkts[i]` with `keys[i]` for every `i` with keys, the verdict
    /// in `verdicts[i]`.
    ///
    /// # Panics
    /// If `keys` or `verdicts` is shorter than `pkts`.
    pub fn process_batch(
        &mut self,
        pkts: &mut [&mut [u8]],
        keys: &[BatchKeys<'_>],
        now_s: u64,
        random: &mut dyn RandomSource,
        verdicts: &mut [Verdict],
    ) {
        assert!(keys.len() >= pkts.len() && verdicts.len() >= pkts.len(), "keys and a verdict per packet");
        for (start, chunk) in (0..pkts.len()).step_by(MAX_BATCH).zip(pkts.chunks_mut(MAX_BATCH)) {
            let end = start + chunk.len();
            self.process_chunk(chunk, &keys[start..end], now_s, random, &mut verdicts[start..end]);
        }
    }

    fn process_chunk(
        &mut self,
        pkts: &mut [&mut [u8]],
        keys: &[BatchKeys<'_>],
        now_s: u64,
        random: &mut dyn RandomSource,
        verdicts: &mut [Verdict],
    ) {
        let n = pkts.len();
        // Any key of the batch fills the unused slots of the proof keys below.
        let Some(&(filler, _)) = keys[..n].iter().flatten().next() else { return };
        // 1. Parse and check; EpSampling of all checked packets in one pass of CMACs; the
        //    HiddenSample inputs.
        let mut checked: [Option<Checked>; MAX_BATCH] = [None; MAX_BATCH];
        let mut prf_inputs: [PrfInput; MAX_BATCH] = [[0; PRF_INPUT_LEN]; MAX_BATCH];
        let mut sampling_order = [0usize; MAX_BATCH];
        let mut s = 0;
        for (i, (pkt, k)) in pkts.iter().zip(keys).enumerate() {
            if k.is_none() {
                continue;
            }
            match self.check(pkt, now_s) {
                Ok(c) => {
                    prf_inputs[s] = prf_input(&c.meta, c.hop_count);
                    sampling_order[s] = i;
                    s += 1;
                    checked[i] = Some(c);
                }
                Err(d) => verdicts[i] = self.stats.drop(d),
            }
        }
        let mut sampled = [false; MAX_BATCH];
        self.sampling.ep_sampling_many(&prf_inputs[..s], &mut sampled[..s]);
        let mut verify_inputs: [HiddenSampleInput; MAX_BATCH] = [[0; HIDDEN_SAMPLE_INPUT_LEN]; MAX_BATCH];
        let mut next_inputs: [HiddenSampleInput; MAX_BATCH] = [[0; HIDDEN_SAMPLE_INPUT_LEN]; MAX_BATCH];
        for (&i, &flag) in sampling_order[..s].iter().zip(&sampled) {
            let (Some(c), Some((k_prev, k_next))) = (checked[i].as_mut(), keys[i]) else { continue };
            c.sampled = flag;
            verify_inputs[i] = k_prev.hidden_sample_input(false, &c.meta.data_hash, c.hop_count);
            next_inputs[i] = k_next.hidden_sample_input(flag, &c.meta.data_hash, c.hop_count + 1);
        }
        // 2. The HiddenSamples to verify, all in one pass (those of skipped packets hash zeros,
        //    unread): they decide which payloads need DataHash. The first HiddenSamples for
        //    the next node fill the lanes of its last permutation (a batch of one hashes both
        //    of its HiddenSamples together).
        let early = ((LANES - n % LANES) % LANES).min(n);
        let mut msgs: [&[u8]; 2 * MAX_BATCH] = [&[]; 2 * MAX_BATCH];
        for (m, input) in msgs.iter_mut().zip(verify_inputs[..n].iter().chain(&next_inputs[..early])) {
            *m = input;
        }
        let mut first_pass: [[u8; DIGEST_LEN]; 2 * MAX_BATCH] = [[0; DIGEST_LEN]; 2 * MAX_BATCH];
        sha3_256_many(&msgs[..n + early], &mut first_pass[..n + early]);
        let (carried_check, early_next) = first_pass.split_at(n);
        // 3. In one pass: DataHash (KT128) of the packets the previous node may have sampled,
        //    payloads first, and the other HiddenSamples for the next node (SHA3-256), which
        //    fill the lanes the payloads leave.
        let mut functions = [Function::Sha3_256; 2 * MAX_BATCH];
        let mut unverified = [0usize; MAX_BATCH];
        let mut u = 0;
        for (i, c) in checked.iter().enumerate().take(n) {
            let Some(c) = c else { continue };
            let carried = &pkts[i][c.header.0..c.header.0 + HIDDEN_SAMPLE_LEN];
            if !ct_eq(&carried_check[i], carried) {
                unverified[u] = i;
                msgs[u] = &pkts[i][c.payload.0..c.payload.1];
                functions[u] = Function::Kt128;
                u += 1;
            }
        }
        for (m, input) in msgs[u..].iter_mut().zip(&next_inputs[early..n]) {
            *m = input;
        }
        let mixed = u + n - early;
        let mut digests: [[u8; DIGEST_LEN]; 2 * MAX_BATCH] = [[0; DIGEST_LEN]; 2 * MAX_BATCH];
        hash_mixed(&functions[..mixed], &msgs[..mixed], &mut digests[..mixed]);
        let (payload_hashes, late_next) = digests.split_at(u);
        let mut payload_hash: [Option<[u8; BLOCK_LEN]>; MAX_BATCH] = [None; MAX_BATCH];
        for (&i, h) in unverified[..u].iter().zip(payload_hashes) {
            payload_hash[i] = Some(h[..BLOCK_LEN].try_into().expect("DataHash's 16 bytes"));
        }
        // 4. Every ValidationProof of the batch in one pass of CMACs: the one to check (under
        //    K_prev) where the HiddenSample did not verify, the one to write (under K_next, over
        //    HopCount + 1) where this router samples. Both cover only received header fields.
        let mut proof_inputs: [ProofInput; 2 * MAX_BATCH] = [[0; PROOF_INPUT_LEN]; 2 * MAX_BATCH];
        let mut proof_keys: [&CmacKey; 2 * MAX_BATCH] = [filler.cmac(); 2 * MAX_BATCH];
        // Where packet `i`'s proof to check and proof to write are among the inputs.
        let mut proof_at = [(0usize, 0usize); MAX_BATCH];
        let mut p = 0;
        for (i, c) in checked.iter().enumerate().take(n) {
            let (Some(c), Some((k_prev, k_next))) = (c, keys[i]) else { continue };
            let concealment = &pkts[i][c.header.0..][field::CONCEALMENT].try_into().expect("16 bytes");
            if payload_hash[i].is_some() {
                proof_inputs[p] = proof_input(&c.meta, c.hop_count, concealment);
                proof_keys[p] = k_prev.cmac();
                proof_at[i].0 = p;
                p += 1;
            }
            if c.sampled {
                proof_inputs[p] = proof_input(&c.meta, c.hop_count + 1, concealment);
                proof_keys[p] = k_next.cmac();
                proof_at[i].1 = p;
                p += 1;
            }
        }
        let mut proofs = [[0; BLOCK_LEN]; 2 * MAX_BATCH];
        mac_each(&proof_keys[..p], &proof_inputs[..p], &mut proofs[..p]);
        // 5. The checks; then the header for the next node. The random proofs of the packets
        //    that Update are drawn in one call, as many and in the order that packet by packet
        //    would draw them (a lone draw per packet waited for its own stores).
        let mut outcome: [Option<Result<bool, PathvalDrop>>; MAX_BATCH] = [None; MAX_BATCH];
        let mut updates = 0;
        for (i, c) in checked.iter().enumerate().take(n) {
            let Some(c) = c else { continue };
            let hdr = PathvalView::new_checked(&mut pkts[i][c.header.0..c.header.1]).expect("checked in stage 1");
            let check = payload_hash[i].as_ref().map(|h| (h, &proofs[proof_at[i].0]));
            let verified = verify(&hdr, check);
            updates += usize::from(verified.is_ok() && !c.sampled);
            outcome[i] = Some(verified);
        }
        let mut drawn = [[0; BLOCK_LEN]; MAX_BATCH];
        if updates > 0 {
            random.fill_bytes(drawn[..updates].as_flattened_mut());
        }
        let mut drawn = drawn.iter();
        for (i, c) in checked.iter().enumerate().take(n) {
            let (Some(c), Some(verified)) = (c, outcome[i]) else { continue };
            let next_hidden: &[u8; HIDDEN_SAMPLE_LEN] = if i < early { &early_next[i] } else { &late_next[i - early] };
            let mut hdr = PathvalView::new_checked(&mut pkts[i][c.header.0..c.header.1]).expect("checked in stage 1");
            let written = verified.and_then(|verified| {
                if c.sampled {
                    functions::construction_proved(&mut hdr, next_hidden, &proofs[proof_at[i].1])?;
                } else {
                    let proof = drawn.next().expect("a random proof drawn per Update");
                    functions::update_drawn(&mut hdr, next_hidden, proof)?;
                }
                Ok(verified)
            });
            verdicts[i] = match written {
                Ok(verified) => {
                    self.stats.proofs_verified += u64::from(verified);
                    self.stats.sampled += u64::from(c.sampled);
                    Verdict::Forward { sampled: c.sampled }
                }
                Err(d) => self.stats.drop(d),
            };
        }
    }

    /// Stage 1 for one packet: what [`Router::process`] checks before any cryptography.
    fn check(&self, pkt: &[u8], now_s: u64) -> Result<Checked, PathvalDrop> {
        let at = locate(pkt)?;
        let hdr = PathvalView::new_checked(&pkt[at.header.clone()])?;
        if hdr.hop_count() == u8::MAX {
            return Err(PathvalDrop::HopCountOverflow);
        }
        self.freshness.check(hdr.timestamp(), now_s)?;
        Ok(Checked {
            header: (at.header.start, at.header.end),
            payload: (at.payload.start, at.payload.end),
            meta: hdr.metadata(),
            hop_count: hdr.hop_count(),
            sampled: false,
        })
    }
}

/// Verification's checks for one packet if its HiddenSample did not verify (`check`: its
/// payload's DataHash and the proof the previous node should have written). Returns whether
/// it verified a proof.
fn verify(hdr: &HeaderMut<'_>, check: Option<(&[u8; BLOCK_LEN], &[u8; BLOCK_LEN])>) -> Result<bool, PathvalDrop> {
    if let Some((payload_hash, want)) = check {
        functions::check_data_hash(hdr, payload_hash)?;
        functions::check_validation_proof(hdr, want)?;
    }
    Ok(check.is_some())
}
