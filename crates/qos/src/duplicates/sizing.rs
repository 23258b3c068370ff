//! How many blocks a generation needs: the false-positive rate of a split-block Bloom filter.
//!
//! A generation of `b` blocks holds `n` keys; each key sets one uniformly random bit in each
//! of the [`WORDS`] words of one uniformly random block. A fresh key is a false positive when
//! its bit is already set in every word of its block. If `j` other keys landed in that block,
//! each word has each of its [`WORD_BITS`] bits set with probability `1 − (1 − 1/32)^j`
//! independently of the other words, so the key is a false positive with probability
//! `f(j) = (1 − (1 − 1/32)^j)^16`. The number of keys in the block is binomial(`n`, `1/b`),
//! hence the rate of one generation
//!
//! `FP(n, b) = Σ_j C(n, j) b^−j (1 − 1/b)^(n−j) f(j)`,
//!
//! summed here exactly (term by term from the mode outwards, until the terms no longer
//! matter). It falls as `b` grows, so the smallest `b` that meets a target is found by
//! bisection.

/// Mean keys per block beyond which every word is full: fewer than half as many keys in the
/// block has probability below e^−500, and with 2048 keys `f = (1 − e^−65)^16`, which is 1
/// in double precision.
const SATURATED: f64 = 4096.0;

/// Words per block (and bits a key sets, one per word).
pub(super) const WORDS: usize = 16;
/// Bits per word.
pub(super) const WORD_BITS: u32 = u32::BITS;

/// `FP(n, b)`: the probability that a fresh key is reported present by one generation of
/// `blocks` blocks holding `keys` keys.
pub(super) fn false_positive_rate(keys: f64, blocks: f64) -> f64 {
    if blocks <= 1.0 {
        return f_of(keys);
    }
    let q = 1.0 / blocks;
    let mean = keys * q;
    if mean > SATURATED {
        return 1.0;
    }
    // Log of the binomial probability of the mode, then neighbours by the ratio of terms.
    let mode = (mean.floor()).min(keys);
    let log_pmf_mode = ln_choose(keys, mode) + mode * q.ln() + (keys - mode) * (-q).ln_1p();
    let pmf_mode = log_pmf_mode.exp();
    let ratio_up = |j: f64| (keys - j) / (j + 1.0) * q / (1.0 - q);
    let mut sum = pmf_mode * f_of(mode);
    // Upwards: f ≤ 1, so stop once the remaining tail (geometric bound) is negligible.
    let (mut j, mut pmf) = (mode, pmf_mode);
    while j < keys {
        pmf *= ratio_up(j);
        j += 1.0;
        sum += pmf * f_of(j);
        if pmf < 1e-18 * sum.max(f64::MIN_POSITIVE) && ratio_up(j) < 0.5 {
            break;
        }
    }
    // Downwards: f falls too, so the terms only shrink.
    let (mut j, mut pmf) = (mode, pmf_mode);
    while j > 0.0 {
        pmf /= ratio_up(j - 1.0);
        j -= 1.0;
        let term = pmf * f_of(j);
        sum += term;
        if term < 1e-18 * sum.max(f64::MIN_POSITIVE) {
            break;
        }
    }
    sum
}

/// `f(j)`: the false-positive probability in a block holding `j` keys.
fn f_of(j: f64) -> f64 {
    let word_bit_set = 1.0 - (1.0 - 1.0 / f64::from(WORD_BITS)).powf(j);
    word_bit_set.powi(WORDS as i32)
}

/// `ln C(n, k)`, by summing logarithms over the shorter side (`k` is the mode, at most
/// [`SATURATED`]).
fn ln_choose(n: f64, k: f64) -> f64 {
    let k = k.min(n - k);
    (0..k as u64).map(|i| ((n - i as f64) / (i as f64 + 1.0)).ln()).sum()
}

/// The fewest blocks, at most `max_blocks`, for which `FP(keys, blocks) ≤ target`; `None` if
/// even `max_blocks` do not get there.
pub(super) fn blocks_for(keys: f64, target: f64, max_blocks: u64) -> Option<u64> {
    if false_positive_rate(keys, max_blocks as f64) > target {
        return None;
    }
    let (mut lo, mut hi) = (0u64, max_blocks); // FP(lo) > target (or lo = 0), FP(hi) ≤ target
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if false_positive_rate(keys, mid as f64) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}
