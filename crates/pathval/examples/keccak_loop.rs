//! Time of one Keccak-f[1600] permutation per state in each implementation this CPU runs,
//! through the public SHA3-256 of [`aviary_pathval::keccak`]: groups of eight messages of
//! 34 bytes (one block each: HiddenSample) and of 1000 bytes (eight blocks: DataHash).
//!
//! ```text
//! target/release/examples/keccak_loop [ROUNDS] [REPEATS]
//! ```
//!
//! Under callgrind (no AVX-512 there), the difference of two round counts gives instructions.
//!
//! On x86-64 it also prints a yardstick of the core's clock, a chain of dependent register
//! additions (one a cycle), timed before the first implementation and right after each: a
//! CPU that slows its clock for heavy 512-bit work would show it in the run after AVX-512.

use std::hint::black_box;
use std::time::Instant;

use aviary_pathval::keccak::{sha3_256_many_with, Implementation, DIGEST_LEN, LANES};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize =
        args.get(1).map_or(Some(20_000), |r| r.parse().ok()).expect("usage: keccak_loop [ROUNDS] [REPEATS]");
    let repeats: usize =
        args.get(2).map_or(Some(5), |r| r.parse().ok()).expect("usage: keccak_loop [ROUNDS] [REPEATS]");
    yardstick("before");
    for len in [34usize, 1000] {
        let msgs: Vec<Vec<u8>> = (0..LANES).map(|i| vec![i as u8; len]).collect();
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let blocks = len / 136 + 1;
        for imp in Implementation::available() {
            let mut out = [[0u8; DIGEST_LEN]; LANES];
            let mut best = f64::INFINITY;
            for _ in 0..repeats {
                let t = Instant::now();
                for _ in 0..rounds {
                    sha3_256_many_with(imp, black_box(&refs), &mut out);
                }
                let per_state = t.elapsed().as_nanos() as f64 / (rounds * LANES * blocks) as f64;
                best = best.min(per_state);
            }
            println!("{imp:?}, {len}-byte messages: {best:.1} ns per permutation and state (best of {repeats})");
            yardstick(&format!("right after {imp:?}"));
        }
    }
}

/// Prints the core's clock ([`aviary_scion::cpu::clock_ghz`]: dependent additions per ns).
fn yardstick(when: &str) {
    if let Some(ghz) = aviary_scion::cpu::clock_ghz() {
        println!("  clock {when}: {ghz:.2} GHz (dependent additions per ns)");
    }
}
