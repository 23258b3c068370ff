//! Hop keys and hop authenticators (the GLWP paper, Alg. 1 line 35 and Alg. 2 lines 6, 13-14),
//! with AES-128-CMAC as the MAC. Inputs, big-endian, no padding (CMAC pads itself):
//!
//! ```text
//! HK_k = CMAC_{K_k}(Src (8) | AID (8) | β (4) | i_k (2) | j_k (2) | ts_exp (4))     28 bytes in
//! HA_k = CMAC_{HK_k}(Src (8) | ts_pkt (8) | pkt_len (2))[0:3]                        18 bytes in
//! ```
//!
//! `K_k` is AS k's secret key, `i_k`/`j_k` its interface pair on the path, Src the source's
//! ISD-AS, `pkt_len` the length of the whole SCION packet that carries the header.

use aviary_scion::cmac::CmacKey;
#[cfg(target_arch = "x86_64")]
use aviary_scion::cpu::AesNi;
use aviary_scion::cpu::{Cpu, Portable};
use aviary_scion::IsdAsn;

use crate::header::field::HA_LEN;
use crate::matrix::InterfaceId;

fn cmac(key: &[u8; 16], input: &[u8]) -> [u8; 16] {
    CmacKey::new(key).mac(input)
}

/// What AS k's hop key binds: the allocation and the AS's interface pair on its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopKeyInput {
    pub src: IsdAsn,
    pub aid: u64,
    pub beta: u32,
    pub ingress: InterfaceId,
    pub egress: InterfaceId,
    pub ts_exp: u32,
}

impl HopKeyInput {
    /// The 28 bytes the MAC runs over.
    pub fn bytes(&self) -> [u8; 28] {
        let mut b = [0u8; 28];
        b[0..8].copy_from_slice(&self.src.to_bytes());
        b[8..16].copy_from_slice(&self.aid.to_be_bytes());
        b[16..20].copy_from_slice(&self.beta.to_be_bytes());
        b[20..22].copy_from_slice(&self.ingress.to_be_bytes());
        b[22..24].copy_from_slice(&self.egress.to_be_bytes());
        b[24..28].copy_from_slice(&self.ts_exp.to_be_bytes());
        b
    }
}

/// PBKDF2 salt of an AS's GLWP secret `K_k` derived from its master secret.
pub const AS_SECRET_SALT: &[u8] = b"Derive GLWP hop key";

/// `K_k` from the AS's master secret, as SCION derives its other per-AS keys (PBKDF2-HMAC-SHA256,
/// 1000 iterations): the AS's GLWP service issues hop keys with it and its routers check them.
pub fn as_secret(master_secret: &[u8]) -> [u8; 16] {
    aviary_scion::derive_key(master_secret, AS_SECRET_SALT)
}

/// `HK_k = MAC_{K_k}(Src, AID, β, i_k, j_k, ts_exp)`.
pub fn hop_key(as_secret: &[u8; 16], input: &HopKeyInput) -> [u8; 16] {
    cmac(as_secret, &input.bytes())
}

/// The 18 bytes a hop authenticator's MAC runs over, the same for every on-path AS.
pub fn hop_authenticator_input(src: IsdAsn, ts_pkt: u64, pkt_len: u16) -> [u8; 18] {
    let mut b = [0u8; 18];
    b[0..8].copy_from_slice(&src.to_bytes());
    b[8..16].copy_from_slice(&ts_pkt.to_be_bytes());
    b[16..18].copy_from_slice(&pkt_len.to_be_bytes());
    b
}

/// The hop authenticator carried in a header: the first bytes of the MAC.
pub fn truncate(mac: &[u8; 16]) -> [u8; HA_LEN] {
    [mac[0], mac[1], mac[2]]
}

/// `HA_k = MAC_{HK_k}(Src, ts_pkt, pkt_len)[0:3]`.
pub fn hop_authenticator(hop_key: &[u8; 16], src: IsdAsn, ts_pkt: u64, pkt_len: u16) -> [u8; HA_LEN] {
    truncate(&cmac(hop_key, &hop_authenticator_input(src, ts_pkt, pkt_len)))
}

/// `HA_k` for several hop keys of one packet at once (a source stamping its packet): the
/// MACs under the different keys run interleaved.
pub fn hop_authenticators(hop_keys: &[[u8; 16]], src: IsdAsn, ts_pkt: u64, pkt_len: u16, out: &mut [[u8; HA_LEN]]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(ni) = AesNi::detect() {
        // SAFETY: `ni` proves the CPU has the features `hop_authenticators_aes_ni` is compiled for.
        return unsafe { hop_authenticators_aes_ni(ni, hop_keys, src, ts_pkt, pkt_len, out) };
    }
    hop_authenticators_on(Portable, hop_keys, src, ts_pkt, pkt_len, out);
}

/// [`hop_authenticators_on`] compiled with AES-NI enabled: fewer than four keys take the
/// AES-NI code, inlined here (called piece by piece from the baseline build, a source's
/// packet over 2 on-path ASes took 120 ns instead of 82).
///
/// # Safety
/// The CPU has the features of `aviary_scion::cpu::AES_NI_FEATURES` (`ni` proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
fn hop_authenticators_aes_ni(
    ni: AesNi,
    hop_keys: &[[u8; 16]],
    src: IsdAsn,
    ts_pkt: u64,
    pkt_len: u16,
    out: &mut [[u8; HA_LEN]],
) {
    hop_authenticators_on(ni, hop_keys, src, ts_pkt, pkt_len, out);
}

#[inline(always)]
fn hop_authenticators_on(
    cpu: impl Cpu,
    hop_keys: &[[u8; 16]],
    src: IsdAsn,
    ts_pkt: u64,
    pkt_len: u16,
    out: &mut [[u8; HA_LEN]],
) {
    const CHUNK: usize = 8;
    let input = [hop_authenticator_input(src, ts_pkt, pkt_len); CHUNK];
    for (keys, out) in hop_keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
        let mut macs = [[0u8; 16]; CHUNK];
        aviary_scion::cmac::mac_two_blocks_fresh_keys_on(cpu, keys, &input[..keys.len()], &mut macs);
        for (o, mac) in out.iter_mut().zip(&macs) {
            *o = truncate(mac);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4493, example 2 (16-byte message): the MAC is AES-128-CMAC.
    #[test]
    fn the_mac_is_aes_cmac() {
        let key = [0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f, 0x3c];
        let msg = [0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17, 0x2a];
        let want = [0x07, 0x0a, 0x16, 0xb4, 0x6b, 0x4d, 0x41, 0x44, 0xf7, 0x9b, 0xdd, 0x9d, 0xd0, 0x4a, 0x28, 0x7c];
        assert_eq!(cmac(&key, &msg), want);
    }

    #[test]
    fn the_hop_key_input_layout() {
        let input = HopKeyInput {
            src: IsdAsn::from_u64(0x0102_0304_0506_0708),
            aid: 0x1112_1314_1516_1718,
            beta: 0x2122_2324,
            ingress: 0x3132,
            egress: 0x4142,
            ts_exp: 0x5152_5354,
        };
        assert_eq!(
            input.bytes(),
            [
                1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22, 0x23, 0x24, 0x31,
                0x32, 0x41, 0x42, 0x51, 0x52, 0x53, 0x54
            ]
        );
        let key = [7u8; 16];
        assert_eq!(hop_key(&key, &input), reference_cmac(&key, &input.bytes()));
    }

    /// The `cmac` crate, as the reference for the hand-rolled MAC.
    fn reference_cmac(key: &[u8; 16], input: &[u8]) -> [u8; 16] {
        use cmac::{Cmac, Mac};
        let mut mac = <Cmac<aes::Aes128> as Mac>::new(key.into());
        mac.update(input);
        mac.finalize().into_bytes().into()
    }

    #[test]
    fn authenticators_equal_the_reference_mac_one_by_one_and_batched() {
        let src = IsdAsn::new(1, 0xff00_0000_0110);
        let keys: Vec<[u8; 16]> = (0..11u8).map(|i| [i.wrapping_mul(37); 16]).collect();
        let mut batched = vec![[0u8; HA_LEN]; keys.len()];
        hop_authenticators(&keys, src, 0x0102_0304_0506_0708, 1234, &mut batched);
        for (k, b) in keys.iter().zip(&batched) {
            let want = reference_cmac(k, &hop_authenticator_input(src, 0x0102_0304_0506_0708, 1234));
            assert_eq!(*b, truncate(&want));
            assert_eq!(hop_authenticator(k, src, 0x0102_0304_0506_0708, 1234), truncate(&want));
        }
    }

    #[test]
    fn every_bound_value_changes_the_key_and_the_authenticator() {
        let key = [9u8; 16];
        let (ia1, ia2) = (IsdAsn::new(1, 0xff00_0000_0110), IsdAsn::new(1, 0xff00_0000_0111));
        let base = HopKeyInput { src: ia1, aid: 2, beta: 3, ingress: 4, egress: 5, ts_exp: 6 };
        let hk = hop_key(&key, &base);
        let variants = [
            HopKeyInput { src: ia2, ..base },
            HopKeyInput { aid: 20, ..base },
            HopKeyInput { beta: 30, ..base },
            HopKeyInput { ingress: 40, ..base },
            HopKeyInput { egress: 50, ..base },
            HopKeyInput { ts_exp: 60, ..base },
        ];
        for v in variants {
            assert_ne!(hop_key(&key, &v), hk, "{v:?}");
        }
        assert_ne!(hop_key(&[8u8; 16], &base), hk, "another AS secret");
        let ha = hop_authenticator(&hk, ia1, 100, 500);
        assert_eq!(ha, hop_authenticator(&hk, ia1, 100, 500));
        assert_ne!(ha, hop_authenticator(&hk, ia1, 101, 500));
        assert_ne!(ha, hop_authenticator(&hk, ia1, 100, 501));
        assert_ne!(ha, hop_authenticator(&hk, ia2, 100, 500));
    }
}
