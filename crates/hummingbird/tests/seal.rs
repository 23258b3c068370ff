//! Sealing reservations to the buyer: round trip, key and context binding, tampering,
//! truncation, strict plaintext parsing, and a known-answer test of the HPKE suite against
//! RFC 9180 Appendix A.2.1.

use aviary_hummingbird::seal::rand_core::{CryptoRng, RngCore};
use aviary_hummingbird::seal::{
    decode_reservation, encode_reservation, hpke_open_base, hpke_seal_base, seal_with_ephemeral_ikm, seal_with_os_rng,
    ENC_LEN, PLAINTEXT_LEN, SEALED_LEN,
};
use aviary_hummingbird::{open, seal, BuyerKey, ResInfo, Reservation, SealContext, SealError};

/// A deterministic test RNG (SplitMix64). Not cryptographic: for tests only.
struct TestRng(u64);

impl RngCore for TestRng {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}
impl CryptoRng for TestRng {}

fn reservation() -> Reservation {
    Reservation {
        info: ResInfo { ingress: 3, egress: 7, res_id: 0x2a_bcde, bw: 0x3ff, start: 1_700_000_000, duration: 600 },
        ak: *b"0123456789abcdef",
    }
}

fn context() -> SealContext {
    let mut request_id = [0u8; 32];
    request_id[31] = 42;
    request_id[0] = 0x80;
    SealContext::new(31337, 0x0001_ff00_0000_0110, request_id)
}

fn sealed(rng: &mut TestRng, buyer: &BuyerKey) -> Vec<u8> {
    seal(&reservation(), &context(), &buyer.public(), rng).unwrap()
}

#[test]
fn round_trip() {
    let mut rng = TestRng(1);
    let buyer = BuyerKey::generate(&mut rng);
    let blob = sealed(&mut rng, &buyer);
    assert_eq!(blob.len(), SEALED_LEN);
    assert_eq!(open(&blob, &context(), &buyer), Ok(reservation()));

    // Edge values of every field survive.
    for info in [
        ResInfo { ingress: 0, egress: 0, res_id: 0, bw: 0, start: 0, duration: 1 },
        ResInfo {
            ingress: u16::MAX,
            egress: u16::MAX,
            res_id: (1 << 22) - 1,
            bw: 1023,
            start: u32::MAX,
            duration: u16::MAX,
        },
    ] {
        let r = Reservation { info, ak: [0xa5; 16] };
        let blob = seal(&r, &context(), &buyer.public(), &mut rng).unwrap();
        assert_eq!(open(&blob, &context(), &buyer), Ok(r));
    }

    // The OS-randomness variants work too, and every seal uses a fresh ephemeral key.
    let os_buyer = BuyerKey::from_os_rng().unwrap();
    let a = seal_with_os_rng(&reservation(), &context(), &os_buyer.public()).unwrap();
    let b = seal_with_os_rng(&reservation(), &context(), &os_buyer.public()).unwrap();
    assert_ne!(a, b);
    assert_ne!(a[..ENC_LEN], b[..ENC_LEN]);
    assert_eq!(open(&a, &context(), &os_buyer), Ok(reservation()));
    assert_eq!(open(&b, &context(), &os_buyer), Ok(reservation()));
}

#[test]
fn buyer_key_survives_storage() {
    let mut rng = TestRng(2);
    let buyer = BuyerKey::generate(&mut rng);
    let restored = BuyerKey::from_secret_bytes(&buyer.secret_bytes());
    assert_eq!(restored.public(), buyer.public());
    let blob = sealed(&mut rng, &buyer);
    assert_eq!(open(&blob, &context(), &restored), Ok(reservation()));
    // Debug does not print the secret.
    let dbg = format!("{buyer:?}");
    let secret_hex: String = buyer.secret_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert!(!dbg.contains(&secret_hex), "{dbg}");
}

#[test]
fn opens_only_with_the_buyers_key() {
    let mut rng = TestRng(3);
    let buyer = BuyerKey::generate(&mut rng);
    let blob = sealed(&mut rng, &buyer);
    for _ in 0..8 {
        let other = BuyerKey::generate(&mut rng);
        assert_ne!(other.public(), buyer.public());
        assert_eq!(open(&blob, &context(), &other), Err(SealError::Open));
    }
}

#[test]
fn every_flipped_bit_is_rejected() {
    let mut rng = TestRng(4);
    let buyer = BuyerKey::generate(&mut rng);
    let blob = sealed(&mut rng, &buyer);
    for byte in 0..blob.len() {
        for bit in 0..8 {
            let mut b = blob.clone();
            b[byte] ^= 1 << bit;
            assert_eq!(open(&b, &context(), &buyer), Err(SealError::Open), "byte {byte} bit {bit}");
        }
    }
}

#[test]
fn wrong_context_is_rejected() {
    let mut rng = TestRng(5);
    let buyer = BuyerKey::generate(&mut rng);
    let blob = sealed(&mut rng, &buyer);
    let ctx = context();
    let mut others = Vec::new();
    for i in 0..32 {
        let mut c = ctx;
        c.request_id[i] ^= 1;
        others.push(c);
    }
    others.push(SealContext { isd_as: ctx.isd_as + 1, ..ctx });
    others.push(SealContext { isd_as: ctx.isd_as ^ (1 << 48), ..ctx });
    others.push(SealContext { chain_id: 1, ..ctx });
    others.push(SealContext { chain_id: ctx.chain_id ^ (1 << 63), ..ctx });
    // Fields do not slide into each other.
    others.push(SealContext { chain_id: ctx.isd_as, isd_as: ctx.chain_id, ..ctx });
    for c in others {
        assert_ne!(c, ctx);
        assert_eq!(open(&blob, &c, &buyer), Err(SealError::Open), "{c:?}");
    }
    assert_eq!(open(&blob, &ctx, &buyer), Ok(reservation()));
}

#[test]
fn truncated_and_extended_blobs_are_rejected() {
    let mut rng = TestRng(6);
    let buyer = BuyerKey::generate(&mut rng);
    let blob = sealed(&mut rng, &buyer);
    for len in 0..blob.len() {
        assert_eq!(open(&blob[..len], &context(), &buyer), Err(SealError::SealedLength(len)));
        // Cut from the front too, and through the raw HPKE layer: an error, never a panic.
        assert!(open(&blob[blob.len() - len..], &context(), &buyer).is_err());
        assert!(hpke_open_base(&buyer, &blob[..len], &context().info(), &[]).is_err());
    }
    let mut longer = blob.clone();
    longer.push(0);
    assert_eq!(open(&longer, &context(), &buyer), Err(SealError::SealedLength(SEALED_LEN + 1)));
}

#[test]
fn plaintext_encoding_is_fixed() {
    let pt = encode_reservation(&reservation()).unwrap();
    assert_eq!(pt.len(), PLAINTEXT_LEN);
    assert_eq!(hex::encode(pt), "00030007002abcde03ff6553f1000258".to_owned() + &hex::encode(b"0123456789abcdef"));
    assert_eq!(decode_reservation(&pt), Ok(reservation()));
    for len in 0..PLAINTEXT_LEN + 2 {
        if len != PLAINTEXT_LEN {
            let v = vec![0u8; len];
            assert_eq!(decode_reservation(&v), Err(SealError::PlaintextLength(len)));
        }
    }
}

#[test]
fn out_of_range_fields_are_rejected_both_ways() {
    let mut rng = TestRng(7);
    let buyer = BuyerKey::generate(&mut rng);
    let bad = [
        (ResInfo { res_id: 1 << 22, ..reservation().info }, SealError::ResIdRange(1 << 22)),
        (ResInfo { res_id: u32::MAX, ..reservation().info }, SealError::ResIdRange(u32::MAX)),
        (ResInfo { bw: 1 << 10, ..reservation().info }, SealError::BwRange(1 << 10)),
        (ResInfo { bw: u16::MAX, ..reservation().info }, SealError::BwRange(u16::MAX)),
        (ResInfo { duration: 0, ..reservation().info }, SealError::ZeroDuration),
    ];
    for (info, err) in bad {
        let r = Reservation { info, ak: [1; 16] };
        // The AS refuses to seal it ...
        assert_eq!(encode_reservation(&r), Err(err));
        assert_eq!(seal(&r, &context(), &buyer.public(), &mut rng), Err(err));
        // ... and a buyer refuses it even when correctly sealed (hand-encoded plaintext).
        let mut pt = encode_reservation(&reservation()).unwrap();
        pt[4..8].copy_from_slice(&info.res_id.to_be_bytes());
        pt[8..10].copy_from_slice(&info.bw.to_be_bytes());
        pt[14..16].copy_from_slice(&info.duration.to_be_bytes());
        assert_eq!(decode_reservation(&pt), Err(err));
        let mut ikm = [0u8; 32];
        rng.fill_bytes(&mut ikm);
        let blob = hpke_seal_base(&buyer.public(), &context().info(), &[], &pt, &ikm).unwrap();
        assert_eq!(blob.len(), SEALED_LEN);
        assert_eq!(open(&blob, &context(), &buyer), Err(err));
    }
}

#[test]
fn low_order_buyer_key_is_rejected() {
    // The all-zero point (and other low-order points) gives an all-zero DH output: RFC 9180
    // §7.1.4 requires aborting.
    let mut rng = TestRng(8);
    for pk in [[0u8; 32], {
        let mut p = [0u8; 32];
        p[0] = 1;
        p
    }] {
        assert_eq!(seal(&reservation(), &context(), &pk, &mut rng), Err(SealError::BadPublicKey));
    }
}

#[test]
fn sealing_is_deterministic_in_the_ephemeral_ikm() {
    let mut rng = TestRng(9);
    let buyer = BuyerKey::generate(&mut rng);
    let ikm = [7u8; 32];
    let a = seal_with_ephemeral_ikm(&reservation(), &context(), &buyer.public(), &ikm).unwrap();
    let b = seal_with_ephemeral_ikm(&reservation(), &context(), &buyer.public(), &ikm).unwrap();
    assert_eq!(a, b);
    // `enc` is the public key DeriveKeyPair(ikm) gives.
    assert_eq!(a[..ENC_LEN], BuyerKey::derive(&ikm).public());
    assert_eq!(open(&a, &context(), &buyer), Ok(reservation()));
}

/// RFC 9180 Appendix A.2.1: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, ChaCha20Poly1305, base
/// mode (the CFRG test vectors, which the `hpke` crate ships as test-vectors-5f503c5.json;
/// mode 0, kem_id 0x20, kdf_id 1, aead_id 3). Checks, through the same functions [`seal`] and
/// [`open`] use: DeriveKeyPair(ikmR) gives skRm/pkRm; DeriveKeyPair(ikmE) gives pkEm; SealBase
/// with the ephemeral key from ikmE gives enc = pkEm and the ciphertext of encryption 0 (which
/// depends on shared_secret, the key schedule (key, base_nonce) and the AEAD); OpenBase with
/// skR recovers the plaintext, and fails with another info or AAD.
#[test]
fn rfc9180_a_2_1_known_answer() {
    let h = |s: &str| hex::decode(s).unwrap();
    let info = h("4f6465206f6e2061204772656369616e2055726e");
    let ikm_r = h("1ac01f181fdf9f352797655161c58b75c656a6cc2716dcb66372da835542e1df");
    let ikm_e: [u8; 32] = h("909a9b35d3dc4713a5e72a4da274b55d3d3821a37e5d099e74a647db583a904b").try_into().unwrap();
    let sk_rm = h("8057991eef8f1f1af18f4a9491d16a1ce333f695d4db8e38da75975c4478e0fb");
    let pk_rm = h("4310ee97d88cc1f088a5576c77ab0cf5c3ac797f3d95139c6c84b5429c59662a");
    let pk_em = h("1afa08d3dec047a643885163f1180476fa7ddb54c6a8029ea33f95796bf2ac4a");
    let sk_em = h("f4ec9b33b792c372c1d2c2063507b684ef925b8c75a42dbcbf57d63ccd381600");
    // Encryption sequence number 0.
    let aad = h("436f756e742d30");
    let pt = h("4265617574792069732074727574682c20747275746820626561757479");
    let ct = h("1c5250d8034ec2b784ba2cfd69dbdb8af406cfe3ff938e131f0def8c8b60b4db21993c62ce81883d2dd1b51a28");

    let recipient = BuyerKey::derive(&ikm_r);
    assert_eq!(recipient.secret_bytes().to_vec(), sk_rm, "skRm");
    assert_eq!(recipient.public().to_vec(), pk_rm, "pkRm");
    let eph = BuyerKey::derive(&ikm_e);
    assert_eq!(eph.secret_bytes().to_vec(), sk_em, "skEm");
    assert_eq!(eph.public().to_vec(), pk_em, "pkEm");

    let sealed = hpke_seal_base(&recipient.public(), &info, &aad, &pt, &ikm_e).unwrap();
    assert_eq!(hex::encode(&sealed[..ENC_LEN]), hex::encode(&pk_em), "enc");
    assert_eq!(hex::encode(&sealed[ENC_LEN..]), hex::encode(&ct), "ct of encryption 0");

    let mut blob = pk_em.clone();
    blob.extend_from_slice(&ct);
    assert_eq!(hpke_open_base(&recipient, &blob, &info, &aad), Ok(pt));
    assert_eq!(hpke_open_base(&recipient, &blob, &info, b"Count-1"), Err(SealError::Open));
    assert_eq!(hpke_open_base(&recipient, &blob, b"Ode on a Grecian Urm", &aad), Err(SealError::Open));
}
