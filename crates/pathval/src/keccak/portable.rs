//! The fallback without SIMD: each live state on its own through the `keccak` crate's
//! Keccak-f[1600].

use super::{Interleaved, LANES};

/// Permutes the states of `states` whose bit is set in `live` (bit `i`: state `i`).
pub(super) fn permute_live(states: &mut Interleaved, live: u8) {
    let keccak = keccak::Keccak::new();
    for lane in (0..LANES).filter(|l| live >> l & 1 == 1) {
        let mut state = [0u64; 25];
        for (w, words) in state.iter_mut().zip(states.iter()) {
            *w = words[lane];
        }
        keccak.with_f1600(|f| f(&mut state));
        for (w, words) in state.iter().zip(states.iter_mut()) {
            words[lane] = *w;
        }
    }
}
