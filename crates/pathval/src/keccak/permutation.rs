//! Keccak-p[1600, n_r] (FIPS 202, §3.3) written once over a vector of 64-bit words, so that
//! each SIMD implementation only says how its vector type XORs, rotates and masks: all 24
//! rounds (Keccak-f[1600], SHA3) or the last 12 (TurboSHAKE and KangarooTwelve, RFC 9861).
//! Word `j` of the state is `A[x, y]` with `j = x + 5y`.

/// The round constants of ι (FIPS 202, §3.2.5), one per round.
pub(super) const ROUND_CONSTANTS: [u64; 24] = [
    0x0000_0000_0000_0001,
    0x0000_0000_0000_8082,
    0x8000_0000_0000_808a,
    0x8000_0000_8000_8000,
    0x0000_0000_0000_808b,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8009,
    0x0000_0000_0000_008a,
    0x0000_0000_0000_0088,
    0x0000_0000_8000_8009,
    0x0000_0000_8000_000a,
    0x0000_0000_8000_808b,
    0x8000_0000_0000_008b,
    0x8000_0000_0000_8089,
    0x8000_0000_0000_8003,
    0x8000_0000_0000_8002,
    0x8000_0000_0000_0080,
    0x0000_0000_0000_800a,
    0x8000_0000_8000_000a,
    0x8000_0000_8000_8081,
    0x8000_0000_0000_8080,
    0x0000_0000_8000_0001,
    0x8000_0000_8000_8008,
];

/// How many rounds a permutation runs. Keccak-p[1600, n_r] runs the *last* `n_r` rounds of
/// Keccak-f[1600] (FIPS 202, §3.3): the twelve rounds take the round constants of rounds 12-23.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounds {
    /// Keccak-f[1600]: 24 rounds.
    Full,
    /// Keccak-p[1600, 12]: rounds 12 to 23.
    Twelve,
}

/// What one vector permutation runs in each of its lanes. The rounds of Keccak-f[1600] differ
/// only in ι's round constant, so twelve rounds can be the first half of a Keccak-f in some
/// lanes and the second half (or Keccak-p[1600, 12] of TurboSHAKE) in the others: ι XORs a
/// vector of per-lane constants instead of one constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Keccak-f[1600], all 24 rounds, in every lane.
    Full,
    /// Twelve rounds: rounds 0-11 in the lanes whose bit is set in `first_half` (bit `i`:
    /// lane `i`), rounds 12-23 in the others.
    Half { first_half: u8 },
}

impl From<Rounds> for Step {
    fn from(rounds: Rounds) -> Step {
        match rounds {
            Rounds::Full => Step::Full,
            Rounds::Twelve => Step::Half { first_half: 0 },
        }
    }
}

/// The operations the permutation needs from a vector of independent 64-bit words (one per
/// state). Implementations are `#[inline(always)]` so that the whole permutation is compiled
/// inside a `#[target_feature]` function with the vector instructions it enables.
pub(super) trait Words: Copy {
    /// Whether [`Words::xor3`] is one instruction (AVX-512's VPTERNLOGQ) rather than two
    /// XORs. If it is, θ XORs each word with its two neighbouring column parities in one
    /// `xor3` (25 operations a round) instead of first combining them into D (5 more); with
    /// two-operand XORs the D form is the cheaper one.
    const XOR3_IN_ONE: bool = false;
    fn splat(w: u64) -> Self;
    /// `set` in the lanes whose bit is set in `mask` (bit `i`: this vector's lane `i`), `clear`
    /// in the others.
    fn select(mask: u8, set: u64, clear: u64) -> Self;
    fn xor(self, other: Self) -> Self;
    fn xor3(self, b: Self, c: Self) -> Self;
    /// `self ^ (!b & c)`, χ's step.
    fn xor_andnot(self, b: Self, c: Self) -> Self;
    fn rotate_left(self, n: u32) -> Self;
}

/// `step` on every state of `a` at once; `lanes_from` is the lane of `a`'s first word in the
/// bits of [`Step::Half`]'s mask (a vector narrower than the eight states covers some of them).
#[inline(always)]
pub(super) fn permute_step<W: Words>(a: &mut [W; 25], step: Step, lanes_from: usize) {
    match step {
        Step::Full => permute_with_constants(a, &ROUND_CONSTANTS.map(W::splat)),
        Step::Half { first_half } => {
            let mask = first_half >> lanes_from;
            let constants: [W; 12] =
                core::array::from_fn(|r| W::select(mask, ROUND_CONSTANTS[r], ROUND_CONSTANTS[r + 12]));
            permute_with_constants(a, &constants);
        }
    }
}

/// The rounds of Keccak-f[1600] whose round constants are `constants` (the rounds differ in
/// nothing else), on every state of `a` at once, written out with constant indices so that the
/// state stays in registers. π moves word `x + 5y` to `y + 5((2x + 3y) mod 5)`, which ρ
/// rotates by its offset of FIPS 202's Table 2; χ combines each row's words.
#[inline(always)]
pub(super) fn permute_with_constants<W: Words>(a: &mut [W; 25], constants: &[W]) {
    let mut s = *a;
    for &rc in constants {
        let a = &s;
        // θ
        let c = [
            a[0].xor3(a[5], a[10]).xor3(a[15], a[20]),
            a[1].xor3(a[6], a[11]).xor3(a[16], a[21]),
            a[2].xor3(a[7], a[12]).xor3(a[17], a[22]),
            a[3].xor3(a[8], a[13]).xor3(a[18], a[23]),
            a[4].xor3(a[9], a[14]).xor3(a[19], a[24]),
        ];
        // θ's D[x] = C[x − 1] ^ rot(C[x + 1], 1), XORed into every word of column x: as two
        // values in one `xor3` per word where that is one instruction (the constant is known
        // at compile time, so only one form is generated).
        let r =
            [c[0].rotate_left(1), c[1].rotate_left(1), c[2].rotate_left(1), c[3].rotate_left(1), c[4].rotate_left(1)];
        let d = [c[4].xor(r[1]), c[0].xor(r[2]), c[1].xor(r[3]), c[2].xor(r[4]), c[3].xor(r[0])];
        let theta = |w: W, x: usize| {
            if W::XOR3_IN_ONE {
                w.xor3(c[(x + 4) % 5], r[(x + 1) % 5])
            } else {
                w.xor(d[x])
            }
        };
        // ρ and π: `b[PI[j]] = rot(a[j] ^ d[x], RHO[j])`.
        let b = [
            theta(a[0], 0).rotate_left(0),
            theta(a[6], 1).rotate_left(44),
            theta(a[12], 2).rotate_left(43),
            theta(a[18], 3).rotate_left(21),
            theta(a[24], 4).rotate_left(14),
            theta(a[3], 3).rotate_left(28),
            theta(a[9], 4).rotate_left(20),
            theta(a[10], 0).rotate_left(3),
            theta(a[16], 1).rotate_left(45),
            theta(a[22], 2).rotate_left(61),
            theta(a[1], 1).rotate_left(1),
            theta(a[7], 2).rotate_left(6),
            theta(a[13], 3).rotate_left(25),
            theta(a[19], 4).rotate_left(8),
            theta(a[20], 0).rotate_left(18),
            theta(a[4], 4).rotate_left(27),
            theta(a[5], 0).rotate_left(36),
            theta(a[11], 1).rotate_left(10),
            theta(a[17], 2).rotate_left(15),
            theta(a[23], 3).rotate_left(56),
            theta(a[2], 2).rotate_left(62),
            theta(a[8], 3).rotate_left(55),
            theta(a[14], 4).rotate_left(39),
            theta(a[15], 0).rotate_left(41),
            theta(a[21], 1).rotate_left(2),
        ];
        // χ, then ι.
        s = [
            b[0].xor_andnot(b[1], b[2]),
            b[1].xor_andnot(b[2], b[3]),
            b[2].xor_andnot(b[3], b[4]),
            b[3].xor_andnot(b[4], b[0]),
            b[4].xor_andnot(b[0], b[1]),
            b[5].xor_andnot(b[6], b[7]),
            b[6].xor_andnot(b[7], b[8]),
            b[7].xor_andnot(b[8], b[9]),
            b[8].xor_andnot(b[9], b[5]),
            b[9].xor_andnot(b[5], b[6]),
            b[10].xor_andnot(b[11], b[12]),
            b[11].xor_andnot(b[12], b[13]),
            b[12].xor_andnot(b[13], b[14]),
            b[13].xor_andnot(b[14], b[10]),
            b[14].xor_andnot(b[10], b[11]),
            b[15].xor_andnot(b[16], b[17]),
            b[16].xor_andnot(b[17], b[18]),
            b[17].xor_andnot(b[18], b[19]),
            b[18].xor_andnot(b[19], b[15]),
            b[19].xor_andnot(b[15], b[16]),
            b[20].xor_andnot(b[21], b[22]),
            b[21].xor_andnot(b[22], b[23]),
            b[22].xor_andnot(b[23], b[24]),
            b[23].xor_andnot(b[24], b[20]),
            b[24].xor_andnot(b[20], b[21]),
        ];
        s[0] = s[0].xor(rc);
    }
    *a = s;
}

/// The permutation on one state, through the same code as the vector implementations.
impl Words for u64 {
    #[inline(always)]
    fn splat(w: u64) -> Self {
        w
    }
    #[inline(always)]
    fn select(mask: u8, set: u64, clear: u64) -> Self {
        if mask & 1 == 1 {
            set
        } else {
            clear
        }
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        self ^ other
    }
    #[inline(always)]
    fn xor3(self, b: Self, c: Self) -> Self {
        self ^ b ^ c
    }
    #[inline(always)]
    fn xor_andnot(self, b: Self, c: Self) -> Self {
        self ^ (!b & c)
    }
    #[inline(always)]
    fn rotate_left(self, n: u32) -> Self {
        u64::rotate_left(self, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generic_permutation_is_the_keccak_crates() {
        let mut ours = [0u64; 25];
        let mut theirs = [0u64; 25];
        for (i, (o, t)) in ours.iter_mut().zip(&mut theirs).enumerate() {
            *o = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            *t = *o;
        }
        for _ in 0..3 {
            permute_step(&mut ours, Step::Full, 0);
            keccak::Keccak::new().with_f1600(|f| f(&mut theirs));
        }
        assert_eq!(ours, theirs);
        for _ in 0..3 {
            permute_step(&mut ours, Rounds::Twelve.into(), 0);
            keccak::Keccak::new().with_p1600::<12>(|f| f(&mut theirs));
        }
        assert_eq!(ours, theirs);
    }

    /// One state whose `xor3` claims to be one instruction: θ's form for AVX-512, checked
    /// on any CPU.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Fused(u64);

    impl Words for Fused {
        const XOR3_IN_ONE: bool = true;
        fn splat(w: u64) -> Self {
            Fused(w)
        }
        fn select(mask: u8, set: u64, clear: u64) -> Self {
            Fused(u64::select(mask, set, clear))
        }
        fn xor(self, other: Self) -> Self {
            Fused(self.0 ^ other.0)
        }
        fn xor3(self, b: Self, c: Self) -> Self {
            Fused(self.0 ^ b.0 ^ c.0)
        }
        fn xor_andnot(self, b: Self, c: Self) -> Self {
            Fused(self.0.xor_andnot(b.0, c.0))
        }
        fn rotate_left(self, n: u32) -> Self {
            Fused(self.0.rotate_left(n))
        }
    }

    #[test]
    fn theta_with_three_way_xors_is_keccak_f() {
        let mut state = [0u64; 25];
        for (i, w) in state.iter_mut().enumerate() {
            *w = (i as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        let mut fused = state.map(Fused);
        for _ in 0..3 {
            permute_step(&mut fused, Step::Full, 0);
            permute_step(&mut state, Step::Full, 0);
        }
        assert_eq!(fused.map(|w| w.0), state);
        permute_step(&mut fused, Step::Half { first_half: 1 }, 0);
        permute_step(&mut state, Step::Half { first_half: 1 }, 0);
        assert_eq!(fused.map(|w| w.0), state);
    }

    #[test]
    fn twelve_rounds_are_the_last_twelve_of_keccak_f() {
        // Keccak-f = its first twelve rounds, then Keccak-p[1600, 12]: a state run through
        // the first twelve (constants 0-11) and then `Rounds::Twelve` is Keccak-f's output.
        let mut state = [0u64; 25];
        for (i, w) in state.iter_mut().enumerate() {
            *w = (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
        }
        let mut full = state;
        permute_step(&mut full, Step::Full, 0);
        let mut halves = state;
        permute_with_constants(&mut halves, &ROUND_CONSTANTS[..12]);
        permute_step(&mut halves, Rounds::Twelve.into(), 0);
        assert_eq!(halves, full);
        // The same two halves as mixed steps: the first with the lane's bit set.
        let mut steps = state;
        permute_step(&mut steps, Step::Half { first_half: 1 }, 0);
        permute_step(&mut steps, Step::Half { first_half: 0 }, 0);
        assert_eq!(steps, full);
        let mut last_only = state;
        permute_step(&mut last_only, Rounds::Twelve.into(), 0);
        assert_ne!(last_only, full);
    }
}
