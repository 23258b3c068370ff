//! The paper's six functions (Alg. 1 and 2) on one header, each on its own so that they can
//! be timed one by one (Table IV); [`crate::router`] composes them per node.
//!
//! Alg. 2 as printed inverts three conditions (lines 16, 19, 36); here a router verifies the
//! proof when the recomputed DataHash matches, accepts it when the recomputed proof matches,
//! and the destination accepts when the recomputed Concealment matches.

use aviary_qos::RandomSource;

use crate::crypto::{ct_eq, data_hash, EndToEndKey, LinkKey, SamplingKey};
use crate::header::{PathvalView, BLOCK_LEN, HIDDEN_SAMPLE_LEN};
use crate::router::PathvalDrop;

/// A mutable view of the 101 header bytes, as the functions take it.
pub type HeaderMut<'a> = PathvalView<&'a mut [u8]>;

/// SrcInitialization (Alg. 2, lines 1-7): Metadata, `HopCount = 0` and
/// `Concealment = CMAC_{K_0n}(SessionID | Timestamp | DataHash)`.
pub fn src_initialization(
    hdr: &mut HeaderMut<'_>,
    payload: &[u8],
    session_id: &[u8; BLOCK_LEN],
    timestamp: u32,
    k0n: &EndToEndKey,
) {
    hdr.set_session_id(session_id);
    hdr.set_timestamp(timestamp);
    hdr.set_data_hash(&data_hash(payload));
    hdr.set_hop_count(0);
    let c = k0n.concealment(&hdr.metadata());
    hdr.set_concealment(&c);
}

/// EpSampling (Alg. 1) on the received header: whether this node samples the packet.
pub fn ep_sampling(hdr: &HeaderMut<'_>, key: &SamplingKey) -> bool {
    key.ep_sampling(&hdr.metadata(), hdr.hop_count())
}

/// The incremented HopCount, or the drop of a packet that has counted 255 nodes already.
fn next_hop_count(hdr: &HeaderMut<'_>) -> Result<u8, PathvalDrop> {
    hdr.hop_count().checked_add(1).ok_or(PathvalDrop::HopCountOverflow)
}

/// Construction (Alg. 2, lines 8-11): `HopCount += 1`, `HiddenSample = H(1 | DataHash |
/// HopCount | K)`, `ValidationProof = CMAC_K(Metadata | HopCount | Concealment)` for the next
/// trusted node.
pub fn construction(hdr: &mut HeaderMut<'_>, k_next: &LinkKey) -> Result<(), PathvalDrop> {
    let hidden_sample = k_next.hidden_sample(true, &hdr.data_hash(), next_hop_count(hdr)?);
    prove(hdr, k_next)?;
    hdr.set_hidden_sample(&hidden_sample);
    Ok(())
}

/// [`construction`] with its HiddenSample, `H(1 | DataHash | HopCount + 1 | K)`, and its
/// ValidationProof, `CMAC_K(Metadata | HopCount + 1 | Concealment)`, computed already (a router
/// hashes and MACs a whole batch at once, see [`crate::batch`]).
pub fn construction_proved(
    hdr: &mut HeaderMut<'_>,
    hidden_sample: &[u8; HIDDEN_SAMPLE_LEN],
    proof: &[u8; BLOCK_LEN],
) -> Result<(), PathvalDrop> {
    let hc = next_hop_count(hdr)?;
    hdr.set_hop_count(hc);
    hdr.set_validation_proof(proof);
    hdr.set_hidden_sample(hidden_sample);
    Ok(())
}

/// The proof part of Construction, which the schemes without a hidden sample state (Baseline,
/// PPV, EPIC-style) run alone: `HopCount += 1` and `ValidationProof = CMAC_K(Metadata |
/// HopCount | Concealment)`. Returns the new HopCount.
pub fn prove(hdr: &mut HeaderMut<'_>, k_next: &LinkKey) -> Result<u8, PathvalDrop> {
    let hc = next_hop_count(hdr)?;
    hdr.set_hop_count(hc);
    let vp = k_next.validation_proof(&hdr.metadata(), hc, &hdr.concealment());
    hdr.set_validation_proof(&vp);
    Ok(hc)
}

/// `HopCount += 1` and nothing else: what a PPV router that neither samples nor verifies
/// does.
pub fn count_hop(hdr: &mut HeaderMut<'_>) -> Result<(), PathvalDrop> {
    let hc = next_hop_count(hdr)?;
    hdr.set_hop_count(hc);
    Ok(())
}

/// The first half of Verification (Alg. 2, line 13-14): whether the previous trusted node
/// left the packet unsampled, i.e. `HiddenSample == H(0 | DataHash | HopCount | K)`. If not,
/// the packet was sampled or altered, and [`verify_validation_proof`] decides.
pub fn verify_hidden_sample(hdr: &HeaderMut<'_>, k_prev: &LinkKey) -> bool {
    ct_eq(&k_prev.hidden_sample(false, &hdr.data_hash(), hdr.hop_count()), &hdr.hidden_sample())
}

/// The second half of Verification (Alg. 2, lines 15-25, conditions corrected): the payload
/// must hash to DataHash and the proof must be the previous node's.
pub fn verify_validation_proof(hdr: &HeaderMut<'_>, payload: &[u8], k_prev: &LinkKey) -> Result<(), PathvalDrop> {
    verify_validation_proof_hashed(hdr, &data_hash(payload), k_prev)
}

/// [`verify_validation_proof`] with the payload's DataHash computed already (the destination
/// hashes the payload once, for this and for DstVerification).
pub fn verify_validation_proof_hashed(
    hdr: &HeaderMut<'_>,
    payload_hash: &[u8; BLOCK_LEN],
    k_prev: &LinkKey,
) -> Result<(), PathvalDrop> {
    check_data_hash(hdr, payload_hash)?;
    check_validation_proof(hdr, &k_prev.validation_proof(&hdr.metadata(), hdr.hop_count(), &hdr.concealment()))
}

/// The DataHash check of [`verify_validation_proof`], with the payload's DataHash computed
/// already.
pub fn check_data_hash(hdr: &HeaderMut<'_>, payload_hash: &[u8; BLOCK_LEN]) -> Result<(), PathvalDrop> {
    if !ct_eq(payload_hash, &hdr.data_hash()) {
        return Err(PathvalDrop::BadDataHash);
    }
    Ok(())
}

/// The proof check of [`verify_validation_proof`], with the proof the previous node should
/// have written, `CMAC_K(Metadata | HopCount | Concealment)`, computed already.
pub fn check_validation_proof(hdr: &HeaderMut<'_>, want: &[u8; BLOCK_LEN]) -> Result<(), PathvalDrop> {
    if !ct_eq(want, &hdr.validation_proof()) {
        return Err(PathvalDrop::BadValidationProof);
    }
    Ok(())
}

/// Verification: `Ok(true)` if the previous node sampled the packet and its proof holds,
/// `Ok(false)` if it did not sample it.
pub fn verification(hdr: &HeaderMut<'_>, payload: &[u8], k_prev: &LinkKey) -> Result<bool, PathvalDrop> {
    if verify_hidden_sample(hdr, k_prev) {
        return Ok(false);
    }
    verify_validation_proof(hdr, payload, k_prev).map(|()| true)
}

/// [`verification`] with the payload's DataHash computed already.
pub fn verification_hashed(
    hdr: &HeaderMut<'_>,
    payload_hash: &[u8; BLOCK_LEN],
    k_prev: &LinkKey,
) -> Result<bool, PathvalDrop> {
    if verify_hidden_sample(hdr, k_prev) {
        return Ok(false);
    }
    verify_validation_proof_hashed(hdr, payload_hash, k_prev).map(|()| true)
}

/// Update (Alg. 2, lines 28-31): `HopCount += 1`, `HiddenSample = H(0 | DataHash | HopCount |
/// K)` and a random ValidationProof from the router's random source, so that an observer
/// cannot tell an unsampled packet by an unchanged proof.
pub fn update(hdr: &mut HeaderMut<'_>, k_next: &LinkKey, random: &mut dyn RandomSource) -> Result<(), PathvalDrop> {
    let hidden_sample = k_next.hidden_sample(false, &hdr.data_hash(), next_hop_count(hdr)?);
    update_hashed(hdr, &hidden_sample, random)
}

/// [`update`] with its HiddenSample, `H(0 | DataHash | HopCount + 1 | K)`, hashed already.
pub fn update_hashed(
    hdr: &mut HeaderMut<'_>,
    hidden_sample: &[u8; HIDDEN_SAMPLE_LEN],
    random: &mut dyn RandomSource,
) -> Result<(), PathvalDrop> {
    // A packet that has counted 255 nodes draws nothing.
    next_hop_count(hdr)?;
    let mut vp = [0; BLOCK_LEN];
    random.fill_bytes(&mut vp);
    update_drawn(hdr, hidden_sample, &vp)
}

/// [`update_hashed`] with its random ValidationProof drawn already (a router draws those of a
/// whole batch at once, see [`crate::batch`]).
pub fn update_drawn(
    hdr: &mut HeaderMut<'_>,
    hidden_sample: &[u8; HIDDEN_SAMPLE_LEN],
    drawn_proof: &[u8; BLOCK_LEN],
) -> Result<(), PathvalDrop> {
    let hc = next_hop_count(hdr)?;
    hdr.set_hop_count(hc);
    hdr.set_hidden_sample(hidden_sample);
    hdr.set_validation_proof(drawn_proof);
    Ok(())
}

/// DstVerification (Alg. 2, lines 32-39, condition corrected): the Concealment recomputed
/// over the received payload's hash must match.
pub fn dst_verification(hdr: &HeaderMut<'_>, payload: &[u8], k0n: &EndToEndKey) -> Result<(), PathvalDrop> {
    dst_verification_hashed(hdr, &data_hash(payload), k0n)
}

/// [`dst_verification`] with the payload's DataHash computed already.
pub fn dst_verification_hashed(
    hdr: &HeaderMut<'_>,
    payload_hash: &[u8; BLOCK_LEN],
    k0n: &EndToEndKey,
) -> Result<(), PathvalDrop> {
    let mut meta = hdr.metadata();
    meta.data_hash = *payload_hash;
    if !ct_eq(&k0n.concealment(&meta), &hdr.concealment()) {
        return Err(PathvalDrop::BadConcealment);
    }
    Ok(())
}
