//! The fallback without SIMD: each live state on its own through the `keccak` crate's
//! Keccak-p[1600] (its `p1600::<12>` runs the last twelve rounds, as FIPS 202 defines).

use super::permutation::{permute_with_constants, Rounds, Step, ROUND_CONSTANTS};
use super::{Blocks, Interleaved, LANES};

/// Absorbs `blocks` into the states of `states` whose bit is set in `live` (bit `i`: state
/// `i`) and permutes them as `step` says, each taken out of the interleaved words once.
pub(super) fn absorb_permute_live(states: &mut Interleaved, blocks: &Blocks<'_>, live: u8, step: Step) {
    for lane in (0..LANES).filter(|l| live >> l & 1 == 1) {
        let mut state = [0u64; 25];
        if blocks.fresh >> lane & 1 == 0 {
            for (w, words) in state.iter_mut().zip(states.iter()) {
                *w = words[lane];
            }
        }
        blocks.lanes[lane].xor_words(|j, w| state[j] ^= w);
        match step {
            Step::Full => permute_one(&mut state, Rounds::Full),
            // The `keccak` crate runs the last rounds only; the first half of a Keccak-f is the
            // generic permutation's.
            Step::Half { first_half } if first_half >> lane & 1 == 1 => {
                permute_with_constants(&mut state, &ROUND_CONSTANTS[..12]);
            }
            Step::Half { .. } => permute_one(&mut state, Rounds::Twelve),
        }
        for (w, words) in state.iter().zip(states.iter_mut()) {
            words[lane] = *w;
        }
    }
}

/// Permutes one state (`rounds` rounds).
pub(super) fn permute_one(state: &mut [u64; 25], rounds: Rounds) {
    let keccak = keccak::Keccak::new();
    match rounds {
        Rounds::Full => keccak.with_f1600(|f| f(state)),
        Rounds::Twelve => keccak.with_p1600::<12>(|f| f(state)),
    }
}
