//! KT128's tree mode (RFC 9861, §3.2) for messages too long for one node, one state at a
//! time: pathval payloads above 8191 bytes exist only over jumbo links, so they need not share
//! lanes, and the incremental sponge here needs no buffer for the final node.

use super::permutation::Rounds;
use super::portable;

/// The bytes of `S` per chunk.
pub(super) const CHUNK: usize = 8192;
/// TurboSHAKE128's rate.
const RATE: usize = 168;
/// The domain bytes of the final node and of a leaf's chaining value.
const FINAL_NODE_DOMAIN: u8 = 0x06;
const LEAF_DOMAIN: u8 = 0x0b;
/// The final node's header after `S_0`: `0x03` and seven zeros.
const FINAL_NODE_MARK: [u8; 8] = [0x03, 0, 0, 0, 0, 0, 0, 0];
/// A leaf's chaining value: 32 bytes of TurboSHAKE128.
const CV_LEN: usize = 32;

/// TurboSHAKE128 absorbing its input piece by piece.
struct TurboShake {
    state: [u64; 25],
    /// Bytes of the current block absorbed.
    at: usize,
}

impl TurboShake {
    fn new() -> Self {
        Self { state: [0; 25], at: 0 }
    }

    fn absorb(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = (RATE - self.at).min(bytes.len());
            for (i, &b) in bytes[..take].iter().enumerate() {
                self.xor_byte(self.at + i, b);
            }
            self.at += take;
            bytes = &bytes[take..];
            if self.at == RATE {
                self.permute();
                self.at = 0;
            }
        }
    }

    /// Pads with `domain` and returns the first `N` bytes of output (`N` at most the rate).
    fn finish<const N: usize>(mut self, domain: u8) -> [u8; N] {
        self.xor_byte(self.at, domain);
        self.xor_byte(RATE - 1, 0x80);
        self.permute();
        let mut out = [0u8; N];
        for (i, o) in out.iter_mut().enumerate() {
            *o = (self.state[i / 8] >> (8 * (i % 8))) as u8;
        }
        out
    }

    fn xor_byte(&mut self, i: usize, b: u8) {
        self.state[i / 8] ^= u64::from(b) << (8 * (i % 8));
    }

    fn permute(&mut self) {
        portable::permute_one(&mut self.state, Rounds::Twelve);
    }
}

/// KT128(M, "", N) for any `M` (RFC 9861, §3.2), by the tree mode where `|M| + 1 > 8192`:
/// `S = M | 0x00` cut into chunks `S_0 … S_{n-1}` of 8192 bytes; the final node is
/// `S_0 | 03 00…00 | CV_1 | … | CV_{n-1} | length_encode(n - 1) | FF FF` with
/// `CV_i = TurboSHAKE128(S_i, 0x0B, 32)`, hashed with the domain byte `0x06`.
pub(super) fn kt128<const N: usize>(msg: &[u8]) -> [u8; N] {
    assert!(N <= RATE, "one block out");
    // The chunks of `S`, the last one with the zero byte `S` ends in.
    let s_len = msg.len() + 1;
    let chunk = |i: usize| &msg[(i * CHUNK).min(msg.len())..((i + 1) * CHUNK).min(msg.len())];
    let chunks = s_len.div_ceil(CHUNK);
    let mut final_node = TurboShake::new();
    final_node.absorb(chunk(0));
    if chunks == 1 {
        final_node.absorb(&[0]);
        return final_node.finish(0x07);
    }
    final_node.absorb(&FINAL_NODE_MARK);
    for i in 1..chunks {
        let mut leaf = TurboShake::new();
        leaf.absorb(chunk(i));
        if i == chunks - 1 {
            leaf.absorb(&[0]);
        }
        final_node.absorb(&leaf.finish::<CV_LEN>(LEAF_DOMAIN));
    }
    let (encoded, len) = length_encode(chunks as u64 - 1);
    final_node.absorb(&encoded[..len]);
    final_node.absorb(&[0xff, 0xff]);
    final_node.finish(FINAL_NODE_DOMAIN)
}

/// RFC 9861's `length_encode(x)`: `x` big-endian in as few bytes as it needs (none for 0),
/// then that count as one byte.
fn length_encode(x: u64) -> ([u8; 9], usize) {
    let bytes = x.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    let mut out = [0u8; 9];
    let n = 8 - skip;
    out[..n].copy_from_slice(&bytes[skip..]);
    out[n] = n as u8;
    (out, n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_encode_is_rfc_9861s() {
        // RFC 9861, §3.3: length_encode(0) = 0x00, (12) = 0x0C 0x01, (65538) = 0x01 0x00 0x02 0x03.
        assert_eq!(length_encode(0).0[..1], [0x00]);
        let (e, n) = length_encode(12);
        assert_eq!(e[..n], [0x0c, 0x01]);
        let (e, n) = length_encode(65538);
        assert_eq!(e[..n], [0x01, 0x00, 0x02, 0x03]);
    }
}
