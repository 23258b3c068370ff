//! Keccak-f[1600] (FIPS 202, §3.3) written once over a vector of 64-bit words, so that each
//! SIMD implementation only says how its vector type XORs, rotates and masks. Word `j` of the
//! state is `A[x, y]` with `j = x + 5y`.

/// The round constants of ι (FIPS 202, §3.2.5), one per round.
const ROUND_CONSTANTS: [u64; 24] = [
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

/// ρ's rotation of word `x + 5y` (FIPS 202, Table 2).
const RHO: [u32; 25] = [0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14];

/// π moves word `x + 5y` to `y + 5((2x + 3y) mod 5)`; `PI[j]` is where word `j` goes.
const PI: [usize; 25] = {
    let mut to = [0; 25];
    let mut j = 0;
    while j < 25 {
        let (x, y) = (j % 5, j / 5);
        to[j] = y + 5 * ((2 * x + 3 * y) % 5);
        j += 1;
    }
    to
};

/// The operations the permutation needs from a vector of independent 64-bit words (one per
/// state). Implementations are `#[inline(always)]` so that the whole permutation is compiled
/// inside a `#[target_feature]` function with the vector instructions it enables.
pub(super) trait Words: Copy {
    fn splat(w: u64) -> Self;
    fn xor(self, other: Self) -> Self;
    fn xor3(self, b: Self, c: Self) -> Self;
    /// `self ^ (!b & c)`, χ's step.
    fn xor_andnot(self, b: Self, c: Self) -> Self;
    fn rotate_left(self, n: u32) -> Self;
}

/// Keccak-f[1600] on every state of `a` at once.
#[inline(always)]
pub(super) fn permute<W: Words>(a: &mut [W; 25]) {
    for rc in ROUND_CONSTANTS {
        // θ
        let mut c = [W::splat(0); 5];
        for (x, cx) in c.iter_mut().enumerate() {
            *cx = a[x].xor3(a[x + 5], a[x + 10]).xor3(a[x + 15], a[x + 20]);
        }
        let mut d = [W::splat(0); 5];
        for (x, dx) in d.iter_mut().enumerate() {
            *dx = c[(x + 4) % 5].xor(c[(x + 1) % 5].rotate_left(1));
        }
        // ρ and π
        let mut b = [W::splat(0); 25];
        for j in 0..25 {
            b[PI[j]] = a[j].xor(d[j % 5]).rotate_left(RHO[j]);
        }
        // χ
        for y in 0..5 {
            for x in 0..5 {
                a[x + 5 * y] = b[x + 5 * y].xor_andnot(b[(x + 1) % 5 + 5 * y], b[(x + 2) % 5 + 5 * y]);
            }
        }
        // ι
        a[0] = a[0].xor(W::splat(rc));
    }
}

/// The permutation on one state, through the same code as the vector implementations.
impl Words for u64 {
    #[inline(always)]
    fn splat(w: u64) -> Self {
        w
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
            permute(&mut ours);
            keccak::Keccak::new().with_f1600(|f| f(&mut theirs));
        }
        assert_eq!(ours, theirs);
    }
}
