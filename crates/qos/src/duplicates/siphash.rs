//! SipHash-1-3 with a 128-bit output (Aumasson and Bernstein), written out here so the
//! filter needs no hashing crate. One compression and three finalisation rounds are what
//! Rust's standard hash maps use against hash flooding; the 128 bits give the filter two
//! independent 64-bit hashes for double hashing.

/// A secret 128-bit key.
#[derive(Clone, Copy)]
pub(crate) struct SipKey {
    k0: u64,
    k1: u64,
}

impl SipKey {
    pub(crate) fn new(key: [u8; 16]) -> Self {
        let (lo, hi) = key.split_at(8);
        Self { k0: u64::from_le_bytes(lo.try_into().unwrap()), k1: u64::from_le_bytes(hi.try_into().unwrap()) }
    }

    /// SipHash-1-3-128 of `msg`, as two little-endian words.
    pub(crate) fn hash128(&self, msg: &[u8]) -> (u64, u64) {
        let mut v = [
            self.k0 ^ 0x736f_6d65_7073_6575,
            self.k1 ^ 0x646f_7261_6e64_6f6d ^ 0xee, // 0xee: the 128-bit variant
            self.k0 ^ 0x6c79_6765_6e65_7261,
            self.k1 ^ 0x7465_6462_7974_6573,
        ];
        let mut blocks = msg.chunks_exact(8);
        for b in &mut blocks {
            compress(&mut v, u64::from_le_bytes(b.try_into().unwrap()));
        }
        let mut last = [0u8; 8];
        let tail = blocks.remainder();
        last[..tail.len()].copy_from_slice(tail);
        last[7] = msg.len() as u8;
        compress(&mut v, u64::from_le_bytes(last));
        v[2] ^= 0xee;
        rounds(&mut v, 3);
        let h1 = v[0] ^ v[1] ^ v[2] ^ v[3];
        v[1] ^= 0xdd;
        rounds(&mut v, 3);
        (h1, v[0] ^ v[1] ^ v[2] ^ v[3])
    }
}

#[inline]
fn compress(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    rounds(v, 1);
    v[0] ^= m;
}

#[inline]
fn rounds(v: &mut [u64; 4], n: usize) {
    for _ in 0..n {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outputs of the `siphasher` crate (1.0.4, `sip128::SipHasher13`) for the reference
    /// key 00..0f and messages 00, 01, .. of each length; the first matches its own test.
    const VECTORS: [(usize, u64, u64); 9] = [
        (0, 0xbea5_8827_b2bc_7ee7, 0x0130_30dd_6adb_62fd),
        (1, 0xa8ed_d360_0437_6ffc, 0x63f0_2f2b_cc73_055e),
        (7, 0xc3e0_aaf2_23b9_8410, 0x77ab_4808_c82e_2fa6),
        (8, 0xb4da_e3d5_e1fe_12aa, 0x99c7_f935_ab16_4f72),
        (9, 0x9439_f32c_04b8_dd81, 0x427c_1394_000e_72f4),
        (15, 0x6c52_bdb2_0555_7ec1, 0x0901_7e1e_eccd_2129),
        (16, 0xeb8e_5115_57d9_a8d0, 0x9317_9e3d_f8b0_13b5),
        (17, 0x8d66_bb3f_f926_4123, 0xecf7_bdfe_e812_5197),
        (63, 0x6f42_fe4e_e300_584c, 0xad60_52a7_0a6b_9f07),
    ];

    #[test]
    fn matches_the_reference_outputs() {
        let key = SipKey::new(core::array::from_fn(|i| i as u8));
        for (len, h1, h2) in VECTORS {
            let msg: Vec<u8> = (0..len as u8).collect();
            assert_eq!(key.hash128(&msg), (h1, h2), "length {len}");
        }
    }
}
