//! The cryptography of discovery (Alg. 1): the allocation identifier, the MACs that AS a
//! adds to AS b's aggregate authenticator, and the sealing of hop keys to the source.
//!
//! ```text
//! AID          = SHA-256("aviary/glwp/aid/v1" | ℓ (1) | ℓ × (NId (8) | in (2) | out (2)))[0:8]
//! MAC_{a→b}    = CMAC_{K_{a→b}}(Src (8) | ts_pkt (8) | AID (8) | DIV_a (8) | M_a (8) | CON_a (8))
//! Seal_k       = AES-128-GCM_{K_{k→Src}}(nonce, AAD = context, HK_k) → (Ciph_k 16 B, Tag_k 16 B)
//! context      = Src (8) | AID (8) | ts_pkt (8) | β (4) | ts_exp (4) | k (1) | i_k (2) | j_k (2)
//! nonce        = SHA-256("aviary/glwp/seal-nonce/v1" | context)[0:12]
//! ```
//!
//! **AID over the ASes too.** The paper hashes π, the interface pairs; interface numbers are
//! local to an AS, so two paths through different ASes can have the same pairs. Hashing the AS
//! identifiers with them gives each path its own AID, so two paths never share a traffic
//! monitor's bucket by accident of numbering.
//!
//! **Aggregate authenticators.** Each AS's slot `Auth_b` is the XOR of the MACs of all other
//! ASes' hop values to b (Alg. 1 lines 14-18), one 16-byte field per AS rather than ℓ².
//!
//! **Sealing.** The GCM tag is not carried: it is XORed into the source's aggregate `Auth_0`
//! (line 39), which the source checks after recomputing every tag (line 45). GCM's ciphertext
//! is the hop key XOR a key stream that does not depend on the tag, so the source opens a
//! sealed key by recovering the key stream (the encryption of zeros under the same nonce) and
//! recomputes the tag by sealing the hop key again. A changed ciphertext changes both the hop
//! key and the tag, and so the aggregate. The nonce is derived from the whole context, every
//! input of the hop key except the AS's secret: a nonce repeats only for the same allocation,
//! whose hop key (and ciphertext) is then the same, never for two different plaintexts (as long
//! as the AS keeps its secret `K_k` for the DRKey epoch of `K_{k→Src}`).

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce, Tag};
use aviary_scion::cmac::CmacKey;
use aviary_scion::IsdAsn;
use sha2::{Digest, Sha256};

use crate::discovery::wire::{field::HV_LEN, Announced};
use crate::matrix::InterfaceId;

const AID_LABEL: &[u8] = b"aviary/glwp/aid/v1";
const NONCE_LABEL: &[u8] = b"aviary/glwp/seal-nonce/v1";
const ANNOUNCEMENT_LABEL: &[u8] = b"aviary/glwp/announcement/v1";

/// `AID = H(π)`, over the ASes and their interface pairs (`ases.len() == path.len() ≤ 255`).
pub fn aid(ases: &[IsdAsn], path: &[(InterfaceId, InterfaceId)]) -> u64 {
    let mut h = Sha256::new();
    h.update(AID_LABEL);
    h.update([ases.len().min(255) as u8]);
    for (ia, (i, j)) in ases.iter().zip(path) {
        h.update(ia.to_bytes());
        h.update(i.to_be_bytes());
        h.update(j.to_be_bytes());
    }
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// `MAC_{K_{a→b}}(Src, ts_pkt, AID, HV_a)`: what AS a adds to AS b's aggregate.
pub fn hop_values_mac(key: &[u8; 16], src: IsdAsn, ts_pkt: u64, aid: u64, hv: Announced) -> [u8; 16] {
    let mut msg = [0u8; 24 + HV_LEN];
    msg[0..8].copy_from_slice(&src.to_bytes());
    msg[8..16].copy_from_slice(&ts_pkt.to_be_bytes());
    msg[16..24].copy_from_slice(&aid.to_be_bytes());
    msg[24..].copy_from_slice(&hv.bytes());
    CmacKey::new(key).mac(&msg)
}

/// `MAC_{K_{a→b}}(label | announcement)`: authenticates AS a's matrix announcement to b. The
/// label keeps it apart from the hop-value MACs under the same key.
pub fn announcement_mac(key: &[u8; 16], announcement: &[u8]) -> [u8; 16] {
    let mut msg = Vec::with_capacity(ANNOUNCEMENT_LABEL.len() + announcement.len());
    msg.extend_from_slice(ANNOUNCEMENT_LABEL);
    msg.extend_from_slice(announcement);
    CmacKey::new(key).mac(&msg)
}

/// XORs `b` into `a`.
pub fn xor_into(a: &mut [u8; 16], b: &[u8; 16]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x ^= y);
}

/// What a sealed hop key is bound to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealContext {
    pub src: IsdAsn,
    pub aid: u64,
    pub ts_pkt: u64,
    pub beta: u32,
    pub ts_exp: u32,
    /// Position of the sealing AS on the path.
    pub position: u8,
    pub ingress: InterfaceId,
    pub egress: InterfaceId,
}

impl SealContext {
    fn bytes(&self) -> [u8; 37] {
        let mut b = [0u8; 37];
        b[0..8].copy_from_slice(&self.src.to_bytes());
        b[8..16].copy_from_slice(&self.aid.to_be_bytes());
        b[16..24].copy_from_slice(&self.ts_pkt.to_be_bytes());
        b[24..28].copy_from_slice(&self.beta.to_be_bytes());
        b[28..32].copy_from_slice(&self.ts_exp.to_be_bytes());
        b[32] = self.position;
        b[33..35].copy_from_slice(&self.ingress.to_be_bytes());
        b[35..37].copy_from_slice(&self.egress.to_be_bytes());
        b
    }

    fn nonce(aad: &[u8; 37]) -> [u8; 12] {
        let d = Sha256::new().chain_update(NONCE_LABEL).chain_update(aad).finalize();
        let mut n = [0u8; 12];
        n.copy_from_slice(&d[..12]);
        n
    }
}

fn gcm(key: &[u8; 16], ctx: &SealContext, plaintext: [u8; 16]) -> ([u8; 16], [u8; 16]) {
    let cipher = Aes128Gcm::new(key.into());
    let aad = ctx.bytes();
    let nonce = SealContext::nonce(&aad);
    let mut buf = plaintext;
    let tag: Tag = cipher
        .encrypt_in_place_detached(Nonce::from_slice(&nonce), &aad, &mut buf)
        // 16 bytes are far below GCM's length limits.
        .unwrap_or_else(|_| unreachable!("AES-GCM refuses only inputs beyond 64 GiB"));
    (buf, tag.into())
}

/// Alg. 1 line 37: `(Ciph_k, Tag_k) = AuthEnc_{K_{k→Src}}(context, HK_k)`.
pub fn seal(key: &[u8; 16], ctx: &SealContext, hop_key: &[u8; 16]) -> ([u8; 16], [u8; 16]) {
    gcm(key, ctx, *hop_key)
}

/// Alg. 1 line 44: `(HK_k, Tag_k) = AuthDec_{K_{k→Src}}(context, Ciph_k)`; the tag is checked
/// in the aggregate, not here.
pub fn open(key: &[u8; 16], ctx: &SealContext, sealed: &[u8; 16]) -> ([u8; 16], [u8; 16]) {
    let (key_stream, _) = gcm(key, ctx, [0; 16]);
    let mut hop_key = *sealed;
    xor_into(&mut hop_key, &key_stream);
    let (_, tag) = gcm(key, ctx, hop_key);
    (hop_key, tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> SealContext {
        SealContext {
            src: IsdAsn::new(1, 0xff00_0000_0110),
            aid: 7,
            ts_pkt: 8,
            beta: 9,
            ts_exp: 10,
            position: 1,
            ingress: 2,
            egress: 3,
        }
    }

    /// Both MACs are AES-CMAC (RFC 4493) over their fields in order, as the `cmac` crate
    /// computes it over the pieces.
    #[test]
    fn macs_are_cmac_over_their_fields() {
        use cmac::{Cmac, Mac};
        let reference = |key: &[u8; 16], pieces: &[&[u8]]| -> [u8; 16] {
            let mut mac = <Cmac<aes::Aes128> as Mac>::new(key.into());
            pieces.iter().for_each(|p| mac.update(p));
            mac.finalize().into_bytes().into()
        };
        let (key, src) = ([3u8; 16], IsdAsn::new(1, 0xff00_0000_0110));
        let hv = Announced { div_bps: 1, m_bps: 2, con_bps: 3 };
        assert_eq!(
            hop_values_mac(&key, src, 8, 9, hv),
            reference(&key, &[&src.to_bytes(), &8u64.to_be_bytes(), &9u64.to_be_bytes(), &hv.bytes()])
        );
        for len in [0, 1, 15, 16, 17, 100] {
            let announcement: Vec<u8> = (0..len as u8).collect();
            assert_eq!(announcement_mac(&key, &announcement), reference(&key, &[ANNOUNCEMENT_LABEL, &announcement]));
        }
    }

    #[test]
    fn open_recovers_the_hop_key_and_the_tag() {
        let key = [5u8; 16];
        let hk = [0x42u8; 16];
        let (sealed, tag) = seal(&key, &ctx(), &hk);
        assert_ne!(sealed, hk);
        assert_eq!(open(&key, &ctx(), &sealed), (hk, tag));
        // The tag is GCM's: the library's own decryption accepts it.
        let aad = ctx().bytes();
        let mut buf = sealed;
        Aes128Gcm::new((&key).into())
            .decrypt_in_place_detached(Nonce::from_slice(&SealContext::nonce(&aad)), &aad, &mut buf, (&tag).into())
            .unwrap();
        assert_eq!(buf, hk);
    }

    #[test]
    fn another_context_key_or_ciphertext_changes_the_tag() {
        let key = [5u8; 16];
        let hk = [0x42u8; 16];
        let (sealed, tag) = seal(&key, &ctx(), &hk);
        assert_ne!(open(&key, &SealContext { beta: 99, ..ctx() }, &sealed).1, tag);
        assert_ne!(open(&key, &SealContext { position: 2, ..ctx() }, &sealed).1, tag);
        assert_ne!(open(&[6u8; 16], &ctx(), &sealed).1, tag);
        let mut flipped = sealed;
        flipped[0] ^= 1;
        assert_ne!(open(&key, &ctx(), &flipped).1, tag);
    }

    #[test]
    fn the_aid_covers_ases_and_interfaces() {
        let a = [IsdAsn::new(1, 1), IsdAsn::new(1, 2)];
        let b = [IsdAsn::new(1, 1), IsdAsn::new(1, 3)];
        let p = [(0, 1), (2, 0)];
        assert_eq!(aid(&a, &p), aid(&a, &p));
        assert_ne!(aid(&a, &p), aid(&b, &p));
        assert_ne!(aid(&a, &p), aid(&a, &[(0, 1), (3, 0)]));
    }
}
