//! A trusted router's processing of a batch of packets, staged so that the SHA3-256 work of
//! the whole batch runs together in [`crate::keccak`]'s multi-state Keccak:
//!
//! 1. **Parse and check** every packet (header, HopCount, Timestamp) and run EpSampling (a
//!    CMAC over the received header); from these, both HiddenSamples a packet needs are known:
//!    the one to verify, `H(0 | DataHash | HopCount | K_prev)`, and the one for the next node,
//!    `H(Flag | DataHash | HopCount + 1 | K_next)`.
//! 2. **Hash** the HiddenSamples of the whole batch at once.
//! 3. **DataHash** over the payloads of the packets whose HiddenSample did not verify (the
//!    previous node sampled them, or they were altered), all at once.
//! 4. **Finish**: the ValidationProof checks, then Construction or Update written into the
//!    packet. A dropped packet is left as it came.
//!
//! The outcome is exactly that of [`Router::process`] packet by packet (the same drops, the
//! same bytes out, random proofs apart). Per-packet state lives on the stack, sized for the
//! largest batch ([`MAX_BATCH`]): no allocation.

use aviary_qos::RandomSource;

use crate::crypto::{ct_eq, HiddenSampleInput, LinkKey, HIDDEN_SAMPLE_INPUT_LEN};
use crate::functions::{self, HeaderMut};
use crate::header::{locate, Metadata, PathvalView, BLOCK_LEN, HIDDEN_SAMPLE_LEN};
use crate::keccak::{sha3_256_many, DIGEST_LEN};
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
        // 1. Parse, check, sample; the HiddenSample inputs.
        let mut checked: [Option<Checked>; MAX_BATCH] = [None; MAX_BATCH];
        let mut inputs: [HiddenSampleInput; 2 * MAX_BATCH] = [[0; HIDDEN_SAMPLE_INPUT_LEN]; 2 * MAX_BATCH];
        for (i, (pkt, k)) in pkts.iter().zip(keys).enumerate() {
            let Some((k_prev, k_next)) = k else { continue };
            match self.check(pkt, now_s) {
                Ok(c) => {
                    inputs[2 * i] = k_prev.hidden_sample_input(false, &c.meta.data_hash, c.hop_count);
                    inputs[2 * i + 1] = k_next.hidden_sample_input(c.sampled, &c.meta.data_hash, c.hop_count + 1);
                    checked[i] = Some(c);
                }
                Err(d) => verdicts[i] = self.stats.drop(d),
            }
        }
        // 2. Every HiddenSample of the batch (those of skipped packets hash zeros, unread).
        let n = pkts.len();
        let mut msgs: [&[u8]; 2 * MAX_BATCH] = [&[]; 2 * MAX_BATCH];
        for (m, input) in msgs.iter_mut().zip(&inputs[..2 * n]) {
            *m = input;
        }
        let mut hidden: [[u8; DIGEST_LEN]; 2 * MAX_BATCH] = [[0; DIGEST_LEN]; 2 * MAX_BATCH];
        sha3_256_many(&msgs[..2 * n], &mut hidden[..2 * n]);
        // 3. DataHash of the packets the previous node may have sampled.
        let mut unverified = [0usize; MAX_BATCH];
        let mut u = 0;
        let mut payloads: [&[u8]; MAX_BATCH] = [&[]; MAX_BATCH];
        for (i, c) in checked.iter().enumerate().take(n) {
            let Some(c) = c else { continue };
            let carried = &pkts[i][c.header.0..c.header.0 + HIDDEN_SAMPLE_LEN];
            if !ct_eq(&hidden[2 * i], carried) {
                unverified[u] = i;
                payloads[u] = &pkts[i][c.payload.0..c.payload.1];
                u += 1;
            }
        }
        let mut payload_hashes: [[u8; DIGEST_LEN]; MAX_BATCH] = [[0; DIGEST_LEN]; MAX_BATCH];
        sha3_256_many(&payloads[..u], &mut payload_hashes[..u]);
        let mut payload_hash: [Option<[u8; BLOCK_LEN]>; MAX_BATCH] = [None; MAX_BATCH];
        for (&i, h) in unverified[..u].iter().zip(&payload_hashes) {
            payload_hash[i] = Some(h[..BLOCK_LEN].try_into().expect("16 bytes"));
        }
        // 4. Proofs, then the header for the next node.
        for (i, c) in checked.iter().enumerate().take(n) {
            let (Some(c), Some((k_prev, k_next))) = (c, keys[i]) else { continue };
            let next_hidden: &[u8; HIDDEN_SAMPLE_LEN] = &hidden[2 * i + 1];
            let mut hdr = PathvalView::new_checked(&mut pkts[i][c.header.0..c.header.1]).expect("checked in stage 1");
            verdicts[i] = match finish(&mut hdr, c, payload_hash[i].as_ref(), (k_prev, k_next), next_hidden, random) {
                Ok(verified) => {
                    self.stats.proofs_verified += u64::from(verified);
                    self.stats.sampled += u64::from(c.sampled);
                    Verdict::Forward { sampled: c.sampled }
                }
                Err(d) => self.stats.drop(d),
            };
        }
    }

    /// Stage 1 for one packet: what [`Router::process`] checks before any cryptography, and
    /// EpSampling.
    fn check(&self, pkt: &[u8], now_s: u64) -> Result<Checked, PathvalDrop> {
        let at = locate(pkt)?;
        let hdr = PathvalView::new_checked(&pkt[at.header.clone()])?;
        if hdr.hop_count() == u8::MAX {
            return Err(PathvalDrop::HopCountOverflow);
        }
        self.freshness.check(hdr.timestamp(), now_s)?;
        let meta = hdr.metadata();
        Ok(Checked {
            header: (at.header.start, at.header.end),
            payload: (at.payload.start, at.payload.end),
            meta,
            hop_count: hdr.hop_count(),
            sampled: self.sampling.ep_sampling(&meta, hdr.hop_count()),
        })
    }
}

/// Stage 4 for one packet: Verification's proof check if its HiddenSample did not verify
/// (`payload_hash` is then its payload's DataHash), then Construction or Update. Returns
/// whether it verified a proof.
fn finish(
    hdr: &mut HeaderMut<'_>,
    c: &Checked,
    payload_hash: Option<&[u8; BLOCK_LEN]>,
    (k_prev, k_next): (&LinkKey, &LinkKey),
    next_hidden: &[u8; HIDDEN_SAMPLE_LEN],
    random: &mut dyn RandomSource,
) -> Result<bool, PathvalDrop> {
    if let Some(h) = payload_hash {
        functions::verify_validation_proof_hashed(hdr, h, k_prev)?;
    }
    if c.sampled {
        functions::construction_hashed(hdr, k_next, next_hidden)?;
    } else {
        functions::update_hashed(hdr, next_hidden, random)?;
    }
    Ok(payload_hash.is_some())
}
