//! Reservation authentication (the Hummingbird paper, §4.1, A.4, A.6): the AS secret value SV, the
//! authentication key `A_K = AES_SV(ResInfo)` and the per-packet
//! `FlyoverMAC = AES_{A_K}(DstIA | PktLen | ResStartOffset | Millis·2^22 + Counter)[:6]`.

use aviary_scion::aes::Aes128;
use serde::{Deserialize, Serialize};

use aviary_scion::mac::derive_key;

use crate::path::{high_res_ts, res_word};

/// Salt of the PBKDF2 derivation of the Hummingbird secret value.
pub const SV_SALT: &[u8] = b"Derive hbird sv";

/// SV = PBKDF2-HMAC-SHA256(master secret, "Derive hbird sv", 1000, 16).
pub fn derive_sv(master_secret: &[u8]) -> [u8; 16] {
    derive_key(master_secret, SV_SALT)
}

/// What an AS grants for one hop (Eq. 1). `ingress`/`egress` are in the direction of
/// travel; `start` is Unix seconds; the reservation is active in `[start, start + duration)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResInfo {
    pub ingress: u16,
    pub egress: u16,
    /// 22-bit reservation id, unique per ingress interface while the reservation lasts.
    pub res_id: u32,
    /// 10-bit bandwidth code, interpreted by the granting AS's codec.
    pub bw: u16,
    pub start: u32,
    pub duration: u16,
}

impl ResInfo {
    /// The A_K input block: `In | Eg | ResID<<10 | BW | ResStart | ResDuration | 0x0000`.
    #[inline]
    pub fn block(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..2].copy_from_slice(&self.ingress.to_be_bytes());
        b[2..4].copy_from_slice(&self.egress.to_be_bytes());
        b[4..8].copy_from_slice(&res_word(self.res_id, self.bw).to_be_bytes());
        b[8..12].copy_from_slice(&self.start.to_be_bytes());
        b[12..14].copy_from_slice(&self.duration.to_be_bytes());
        b
    }

    /// Whether the reservation is active at `now_ns` (no clock skew: A.7).
    #[inline]
    pub fn active_at(&self, now_ns: u64) -> bool {
        let start = u64::from(self.start) * 1_000_000_000;
        now_ns >= start && now_ns < start + u64::from(self.duration) * 1_000_000_000
    }
}

/// An AS's expanded secret value.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(Aes128);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretValue(..)")
    }
}

impl SecretValue {
    pub fn new(sv: &[u8; 16]) -> Self {
        Self(Aes128::new(sv))
    }
    pub fn from_master_secret(master_secret: &[u8]) -> Self {
        Self::new(&derive_sv(master_secret))
    }
    /// A_K for many ResInfo blocks at once, in place (the blocks interleave in AES-NI), on
    /// the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn auth_keys_in_place(&self, cpu: impl aviary_scion::cpu::Cpu, res_blocks: &mut [[u8; 16]]) {
        self.0.encrypt_many_on(cpu, res_blocks);
    }

    /// The expanded SV, for a caller that runs A_K's rounds beside other AES work.
    #[inline]
    pub(crate) fn cipher(&self) -> &Aes128 {
        &self.0
    }

    /// A_K for a reservation (Eq. 2).
    #[inline]
    pub fn auth_key(&self, res: &ResInfo) -> [u8; 16] {
        self.0.encrypt(&res.block())
    }
}

/// The FlyoverMAC input block: `DstIA(8) | PktLen(2) | ResStartOffset(2) | Millis<<22|Counter (4)`.
#[inline]
pub fn flyover_block(dst_ia: [u8; 8], pkt_len: u16, res_start_offset: u16, millis: u16, counter: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[0..8].copy_from_slice(&dst_ia);
    b[8..10].copy_from_slice(&pkt_len.to_be_bytes());
    b[10..12].copy_from_slice(&res_start_offset.to_be_bytes());
    b[12..16].copy_from_slice(&high_res_ts(millis, counter).to_be_bytes());
    b
}

/// An expanded authentication key A_K (kept by a source for the reservation's lifetime).
#[derive(Clone)]
pub struct AuthKey(Aes128);

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKey(..)")
    }
}

impl AuthKey {
    #[inline]
    pub fn new(ak: &[u8; 16]) -> Self {
        Self(Aes128::new(ak))
    }
    /// The 6-byte FlyoverMAC of one input block (Eq. 7a).
    #[inline]
    pub fn flyover_mac(&self, block: &[u8; 16]) -> [u8; 6] {
        self.flyover_mac_on(aviary_scion::cpu::Detect, block)
    }

    /// [`Self::flyover_mac`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn flyover_mac_on(&self, cpu: impl aviary_scion::cpu::Cpu, block: &[u8; 16]) -> [u8; 6] {
        self.0.encrypt_on(cpu, block)[..6].try_into().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::{MAX_COUNTER, MAX_RES_ID};

    #[test]
    fn blocks_have_the_specified_layout() {
        let r = ResInfo {
            ingress: 0x0102,
            egress: 0x0304,
            res_id: MAX_RES_ID,
            bw: 0x3ff,
            start: 0x0a0b0c0d,
            duration: 0x0e0f,
        };
        assert_eq!(hex::encode(r.block()), "01020304ffffffff0a0b0c0d0e0f0000");
        let r = ResInfo { res_id: 1, bw: 2, ..r };
        assert_eq!(&r.block()[4..8], &[0, 0, 4, 2]);
        let b = flyover_block([0, 1, 0xff, 0, 0, 0, 1, 0x10], 0x1234, 0x5678, 0x3ff, MAX_COUNTER);
        assert_eq!(hex::encode(b), "0001ff0000000110123456 78ffffffff".replace(' ', ""));
        assert_eq!(high_res_ts(1, 0), 1 << 22);
    }

    #[test]
    fn activity_window_is_half_open() {
        let r = ResInfo { start: 100, duration: 10, ..Default::default() };
        let s = 1_000_000_000u64;
        assert!(!r.active_at(100 * s - 1));
        assert!(r.active_at(100 * s));
        assert!(r.active_at(110 * s - 1));
        assert!(!r.active_at(110 * s));
    }
}
