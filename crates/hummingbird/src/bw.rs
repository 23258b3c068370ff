//! The 10-bit bandwidth field. Only the granting AS interprets it, so each AS chooses a
//! codec: the paper's floating-point one (default) or the scionproto router's linear one.

use serde::{Deserialize, Serialize};

/// Largest 10-bit code.
pub const MAX_CODE: u16 = 1023;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwCodec {
    /// 5-bit exponent e, 5-bit significand s: `s` if e = 0, else `(32 + s) << (e − 1)`,
    /// in kbit/s (0 to ≈ 68.7 Tbit/s, 32 steps per power of two).
    #[default]
    Paper,
    /// `code × 64` bytes/s (0 to ≈ 524 kbit/s), as in the scionproto router.
    Linear,
}

impl BwCodec {
    /// Bandwidth in bit/s of a 10-bit code (higher bits are ignored).
    #[inline]
    pub const fn decode_bps(self, code: u16) -> u64 {
        let code = code & MAX_CODE;
        match self {
            BwCodec::Paper => {
                let (e, s) = ((code >> 5) as u64, (code & 31) as u64);
                let kbps = if e == 0 { s } else { (32 + s) << (e - 1) };
                kbps * 1000
            }
            BwCodec::Linear => code as u64 * 64 * 8,
        }
    }

    /// The largest code whose bandwidth does not exceed `bps` (0 if none).
    pub fn encode_floor(self, bps: u64) -> u16 {
        // decode is monotonic in the code, so a binary search finds the boundary.
        let (mut lo, mut hi) = (0u16, MAX_CODE);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.decode_bps(mid) <= bps {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// The smallest code whose bandwidth is at least `bps`, or `None` above the range.
    pub fn encode_ceil(self, bps: u64) -> Option<u16> {
        let f = self.encode_floor(bps);
        if self.decode_bps(f) >= bps {
            Some(f)
        } else if f < MAX_CODE {
            Some(f + 1)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn paper_codec_values() {
        let c = BwCodec::Paper;
        assert_eq!(c.decode_bps(0), 0);
        assert_eq!(c.decode_bps(31), 31_000);
        assert_eq!(c.decode_bps(32), 32_000); // e = 1, s = 0: 32 << 0
        assert_eq!(c.decode_bps(33), 33_000);
        assert_eq!(c.decode_bps(64), 64_000); // e = 2: 32 << 1
                                              // e = 31, s = 31: 63 << 30 kbit/s, just under 2^36 kbit/s.
        assert_eq!(c.decode_bps(1023), (63u64 << 30) * 1000);
    }

    #[test]
    fn linear_codec_values() {
        assert_eq!(BwCodec::Linear.decode_bps(1), 512);
        assert_eq!(BwCodec::Linear.decode_bps(1023), 1023 * 512);
    }

    #[test]
    fn both_codecs_are_strictly_monotonic() {
        for c in [BwCodec::Paper, BwCodec::Linear] {
            for code in 1..=MAX_CODE {
                assert!(c.decode_bps(code) > c.decode_bps(code - 1), "{c:?} {code}");
            }
        }
    }

    proptest! {
        #[test]
        fn encode_brackets_the_request(bps in 0u64..80_000_000_000_000, linear: bool) {
            let c = if linear { BwCodec::Linear } else { BwCodec::Paper };
            let f = c.encode_floor(bps);
            prop_assert!(c.decode_bps(f) <= bps || f == 0);
            prop_assert!(f == MAX_CODE || c.decode_bps(f + 1) > bps);
            match c.encode_ceil(bps) {
                Some(x) => { prop_assert!(c.decode_bps(x) >= bps); prop_assert!(x == 0 || c.decode_bps(x - 1) < bps); }
                None => prop_assert!(c.decode_bps(MAX_CODE) < bps),
            }
        }

        #[test]
        fn codes_round_trip(code in 0u16..=MAX_CODE, linear: bool) {
            let c = if linear { BwCodec::Linear } else { BwCodec::Paper };
            prop_assert_eq!(c.encode_floor(c.decode_bps(code)), code);
            prop_assert_eq!(c.encode_ceil(c.decode_bps(code)), Some(code));
        }
    }
}
