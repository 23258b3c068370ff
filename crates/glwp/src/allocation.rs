//! The GMA allocation of a path (the GLWP paper, Eq. 2) and the preliminary guarantees of its
//! prefixes, in integer bits per second.
//!
//! A path of ℓ ASes contributes one [`HopValues`] per AS: the divergent `DIV_i` of the interface
//! it enters through, the matrix entry `M_ij` of its interface pair and the convergent `CON_j`
//! of the interface it leaves through (Eq. 1). Eq. 2:
//!
//! ```text
//! G(π) = min over x of  T_x,   T_x = Π_{k<x} M_k/CON_k · M_x · Π_{k>x} M_k/DIV_k
//! ```
//!
//! # Arithmetic: integers, every division rounded down
//!
//! Each AS on a path computes β = G(π) on its own and puts it into the hop key
//! (`HK_k = MAC_{K_k}(Src, AID, β, i_k, j_k, ts_exp)`), so every AS must reach the same β bit for
//! bit: floating point (whose results depend on evaluation order and on the machine's fused
//! operations) is out. Exact rationals would need products of up to ℓ 64-bit numbers. Instead,
//! `T_x` is evaluated in one fixed order with a floor after every factor:
//!
//! ```text
//! v ← M_x;  for k = 1, …, x−1:  v ← ⌊v · M_k / CON_k⌋;  for k = x+1, …, ℓ:  v ← ⌊v · M_k / DIV_k⌋
//! ```
//!
//! `M_k ≤ CON_k` and `M_k ≤ DIV_k` (checked by [`HopValues::new`], as Alg. 1 line 31 checks the
//! announced hop values), so `v ≤ M_x < 2^64` throughout and `v · M_k < 2^128` never overflows
//! a `u128`. A factor with `M_k = 0` gives 0 (and its `DIV`/`CON` may then be 0 too).
//!
//! **Rounding never over-allocates.** If `v ≤ v*` (the exact value so far) then
//! `⌊v·M/D⌋ ≤ v·M/D ≤ v*·M/D`; by induction every computed `T̃_x ≤ T_x`, so `G̃(π) = min T̃_x ≤
//! G(π)`. Every bound that holds for the exact allocations (below) holds for the rounded ones.
//! The loss is small: a floor loses less than 1 bit/s and the later factors (each ≤ 1) do not
//! magnify it, so `G̃(π) > G(π) − ℓ` bit/s.
//!
//! **No over-allocation** (GMA's theorem; the argument, for the reader who checks): fix AS `a`
//! at position `x` of the paths through its pair `(i, j)`. Every such path contributes at most
//! its own `T_x = P · M_ij · S`, where `P = Π_{k<x} M_k/CON_k` depends only on the prefix and
//! `S = Π_{k>x} M_k/DIV_k` only on the suffix. Summed over all suffixes that leave through `j`
//! and end at some AS's local interface 0, `Σ S ≤ 1`: the next AS enters at `i'` and splits
//! `Σ_{j'} M_{i'j'}/DIV_{i'} = 1` among its pairs, ending there (`j' = 0`) or going on, where the
//! same holds by induction on the suffix length; loop-free suffixes are a subset of these walks.
//! Likewise `Σ P ≤ 1` over the prefixes that start at a local interface 0 and enter through `i`,
//! with `CON`. So `Σ_π G(π) ≤ M_ij · Σ P · Σ S ≤ M_ij`. A link from `a`'s interface `j` to
//! `b`'s interface `i'` then carries at most `Σ_i M_ij = CON_j^(a)` and, by the same argument at
//! `b`, at most `DIV_{i'}^(b)`: an AS whose divergent and convergent of each interface are within
//! that link's capacity never sees it congested by allocations.
//!
//! **Preliminary guarantees** (the extensibility property): the allocation of the prefix of the
//! first `k` hops. The computation of `T̃_x` on a prefix is the first steps of its computation on
//! any longer prefix, whose further factors are at most 1; a longer prefix also takes the min
//! over more terms. So the rounded preliminary guarantees never increase along the path and the
//! last one is `G̃(π)`: an AS that refuses a discovery whose preliminary guarantee is below the
//! threshold τ (Alg. 1 line 20) never refuses a path whose final allocation would reach τ.

use thiserror::Error;

/// The hop values an AS announces for one path (Alg. 1's `HV_k`): the divergent of the ingress
/// interface, the allocation-matrix entry of the interface pair and the convergent of the
/// egress interface, in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HopValues {
    div_bps: u64,
    m_bps: u64,
    con_bps: u64,
}

/// Hop values that no allocation matrix can produce (Alg. 1 line 31: "drop packet / blame AS m").
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HopValuesError {
    #[error("matrix entry {m_bps} exceeds the divergent {div_bps} of its ingress interface")]
    EntryAboveDivergent { m_bps: u64, div_bps: u64 },
    #[error("matrix entry {m_bps} exceeds the convergent {con_bps} of its egress interface")]
    EntryAboveConvergent { m_bps: u64, con_bps: u64 },
}

impl HopValues {
    /// Checked: an entry is part of both sums of Eq. 1, so `M ≤ DIV` and `M ≤ CON`.
    pub fn new(div_bps: u64, m_bps: u64, con_bps: u64) -> Result<Self, HopValuesError> {
        if m_bps > div_bps {
            return Err(HopValuesError::EntryAboveDivergent { m_bps, div_bps });
        }
        if m_bps > con_bps {
            return Err(HopValuesError::EntryAboveConvergent { m_bps, con_bps });
        }
        Ok(Self { div_bps, m_bps, con_bps })
    }

    /// `DIV_i`: the most the AS allocates from the ingress interface to all its interfaces.
    pub fn divergent_bps(self) -> u64 {
        self.div_bps
    }

    /// `M_ij`: the most the AS allocates to all paths through this interface pair.
    pub fn entry_bps(self) -> u64 {
        self.m_bps
    }

    /// `CON_j`: the most the AS allocates from all its interfaces to the egress interface.
    pub fn convergent_bps(self) -> u64 {
        self.con_bps
    }

    /// The temporary hop values an AS announces while it changes its matrix (the GLWP paper,
    /// §V-C): the larger divergent and convergent and the smaller entry of the old and the new
    /// matrix. Every factor of Eq. 2 then is at most its value under either matrix, so the
    /// temporary allocations never exceed the old ones nor the new ones.
    pub fn during_update(old: HopValues, new: HopValues) -> HopValues {
        // min(M) ≤ M_old ≤ DIV_old ≤ max(DIV), likewise for CON: still consistent.
        HopValues {
            div_bps: old.div_bps.max(new.div_bps),
            m_bps: old.m_bps.min(new.m_bps),
            con_bps: old.con_bps.max(new.con_bps),
        }
    }
}

/// `⌊v · num / den⌋` for `num ≤ den`; 0 when `num = 0` (then `den` may be 0 too).
fn scale_down(v: u64, num: u64, den: u64) -> u64 {
    if num == 0 {
        return 0;
    }
    // num ≤ den, so the quotient is at most v and fits in a u64.
    (u128::from(v) * u128::from(num) / u128::from(den)) as u64
}

/// The preliminary guarantee of every prefix of the path: element `k` is the GMA allocation of
/// the first `k + 1` hops, in bits per second, rounded as the module documentation says. The
/// last element is the path's allocation [`guarantee`]; the sequence never increases. O(ℓ²).
pub fn prefix_guarantees(hops: &[HopValues]) -> Vec<u64> {
    let mut prelim = vec![u64::MAX; hops.len()];
    for (x, hop) in hops.iter().enumerate() {
        let mut term = hop.m_bps;
        for before in &hops[..x] {
            term = scale_down(term, before.m_bps, before.con_bps);
        }
        prelim[x] = prelim[x].min(term);
        for (k, after) in hops.iter().enumerate().skip(x + 1) {
            term = scale_down(term, after.m_bps, after.div_bps);
            prelim[k] = prelim[k].min(term);
        }
    }
    prelim
}

/// `G(π)` (Eq. 2) in bits per second, rounded down as the module documentation says; 0 for an
/// empty path.
pub fn guarantee(hops: &[HopValues]) -> u64 {
    prefix_guarantees(hops).last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hv(div: u64, m: u64, con: u64) -> HopValues {
        HopValues::new(div, m, con).unwrap()
    }

    #[test]
    fn inconsistent_hop_values_are_refused() {
        assert_eq!(HopValues::new(5, 6, 10), Err(HopValuesError::EntryAboveDivergent { m_bps: 6, div_bps: 5 }));
        assert_eq!(HopValues::new(10, 6, 5), Err(HopValuesError::EntryAboveConvergent { m_bps: 6, con_bps: 5 }));
        assert!(HopValues::new(0, 0, 0).is_ok());
    }

    /// Two ASes, computed by hand.
    /// Source A: DIV_0 = 100, M_{0,1} = 60, CON_1 = 80. Destination B: DIV_1 = 40, M_{1,0} = 30,
    /// CON_0 = 90.
    /// T_1 = 60 · 30/40 = 45;  T_2 = 60/80 · 30 = 22.5;  G = 22.5, rounded down: 22.
    /// Preliminary guarantee of the one-hop prefix: 60.
    #[test]
    fn two_hops_by_hand() {
        let hops = [hv(100, 60, 80), hv(40, 30, 90)];
        assert_eq!(prefix_guarantees(&hops), vec![60, 22]);
        assert_eq!(guarantee(&hops), 22);
    }

    /// Three ASes, computed by hand (Mbit/s scaled to bit/s: the values are in units of 10^6).
    /// A: M = 10, CON = 20.  B: DIV = 30, M = 12, CON = 24.  C: DIV = 18, M = 9.
    /// T_1 = 10 · 12/30 · 9/18 = 2;  T_2 = 10/20 · 12 · 9/18 = 3;  T_3 = 10/20 · 12/24 · 9 = 2.25.
    /// G = 2 (·10^6). Prefixes: {A} = 10; {A,B}: T_1 = 10 · 12/30 = 4, T_2 = 10/20 · 12 = 6 → 4.
    #[test]
    fn three_hops_by_hand() {
        let u = 1_000_000;
        let hops = [hv(10 * u, 10 * u, 20 * u), hv(30 * u, 12 * u, 24 * u), hv(18 * u, 9 * u, 9 * u)];
        assert_eq!(prefix_guarantees(&hops), vec![10 * u, 4 * u, 2 * u]);
    }

    /// Rounding happens after every factor, so the loss can add up (but stays below ℓ bit/s).
    /// A: DIV = M = CON = 2.  B: DIV = 3, M = 2, CON = 2.  C: DIV = 4, M = 3, CON = 4.
    /// Exact: T_1 = 2 · 2/3 · 3/4 = 1, T_2 = 2/2 · 2 · 3/4 = 1.5, T_3 = 2/2 · 2/2 · 3 = 3; G = 1.
    /// Rounded: T_1 = ⌊⌊2 · 2/3⌋ · 3/4⌋ = ⌊1 · 3/4⌋ = 0, so G = 0 (one-step rounding would give 1).
    /// Prefix {A,B}: T_1 = ⌊4/3⌋ = 1, T_2 = 2 → 1.
    #[test]
    fn every_division_rounds_down() {
        assert_eq!(prefix_guarantees(&[hv(2, 2, 2), hv(3, 2, 2), hv(4, 3, 4)]), vec![2, 1, 0]);
        // T_1 = 1 · 7/7 = 1, T_2 = ⌊7 · 1/3⌋ = 2 (exactly 2.33): G = 1.
        assert_eq!(prefix_guarantees(&[hv(1, 1, 3), hv(7, 7, 7)]), vec![1, 1]);
    }

    #[test]
    fn a_zero_entry_allocates_nothing_and_needs_no_divisor() {
        let hops = [hv(10, 10, 10), hv(0, 0, 0), hv(10, 10, 10)];
        assert_eq!(prefix_guarantees(&hops), vec![10, 0, 0]);
        assert_eq!(guarantee(&[]), 0);
    }

    #[test]
    fn the_largest_values_do_not_overflow() {
        let max = u64::MAX;
        assert_eq!(guarantee(&[hv(max, max, max), hv(max, max, max)]), max);
        assert_eq!(guarantee(&[hv(max, max, max), hv(max, max / 2, max)]), max / 2);
    }

    #[test]
    fn temporary_values_take_the_safe_side_of_both_matrices() {
        let old = hv(100, 50, 80);
        let new = hv(60, 55, 90);
        let t = HopValues::during_update(old, new);
        assert_eq!((t.divergent_bps(), t.entry_bps(), t.convergent_bps()), (100, 50, 90));
        assert!(HopValues::new(t.divergent_bps(), t.entry_bps(), t.convergent_bps()).is_ok());
    }
}
