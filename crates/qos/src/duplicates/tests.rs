use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

const W: u64 = 1_000_000_000;
const KEY: [u8; 16] = *b"not-a-real-key!!";

fn config(n: u64, p: f64) -> DuplicateFilterConfig {
    DuplicateFilterConfig { window_ns: W, expected_per_window: n, false_positive_rate: p }
}

/// A GLWP-style key: 8 bytes of source, 8 of packet timestamp.
fn key(src: u64, ts: u64) -> [u8; 16] {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&src.to_be_bytes());
    k[8..].copy_from_slice(&ts.to_be_bytes());
    k
}

#[test]
fn configs_name_the_wrong_field() {
    use DuplicateFilterConfigError as E;
    let ok = config(1000, 0.01);
    assert_eq!(DuplicateFilter::new(DuplicateFilterConfig { window_ns: 0, ..ok }, KEY).unwrap_err(), E::ZeroWindow);
    let zero = DuplicateFilterConfig { expected_per_window: 0, ..ok };
    assert_eq!(DuplicateFilter::new(zero, KEY).unwrap_err(), E::ZeroExpected);
    for p in [0.0, 1.0, -0.5, 2.0] {
        let bad = DuplicateFilterConfig { false_positive_rate: p, ..ok };
        assert_eq!(DuplicateFilter::new(bad, KEY).unwrap_err(), E::FalsePositiveRate(p));
    }
    let nan = DuplicateFilter::new(DuplicateFilterConfig { false_positive_rate: f64::NAN, ..ok }, KEY);
    assert!(matches!(nan, Err(E::FalsePositiveRate(p)) if p.is_nan()));
    assert!(DuplicateFilter::new(config(u64::MAX, 1e-9), KEY).unwrap_err().to_string().contains("expected_per_window"));
    assert!(E::ZeroWindow.to_string().contains("window_ns"));
}

#[test]
fn sized_by_the_standard_formulas() {
    // p = 1 %: p_g = 1 − √0.99 ≈ 0.005013, m/n = −ln p_g / ln²2 ≈ 11.02, k = 7.64 → 8.
    let f = DuplicateFilter::new(config(10_000, 0.01), KEY).unwrap();
    assert_eq!(f.bits_per_generation(), 110_272); // 110 226 rounded up to 64-bit words
    assert_eq!(f.hashes(), 8);
}

/// (ii) Keys are forgotten two windows after they were accepted, and (v) time going
/// backwards neither panics nor forgets.
#[test]
fn remembers_one_window_forgets_after_two_and_ignores_time_going_back() {
    let mut f = DuplicateFilter::new(config(1000, 0.001), KEY).unwrap();
    let t = 7 * W + W / 2;
    for i in 0..1000 {
        assert!(f.check_and_insert(&key(i, t), t), "fresh key {i} reported seen");
    }
    // Back to 0, then to just before the end of the window: all still duplicates.
    for now in [0, t - 3 * W, t + W - 1] {
        assert!((0..1000).all(|i| !f.check_and_insert(&key(i, t), now)), "forgot at {now}");
    }
    // Two windows later both generations have been cleared: every key is new again.
    assert!((0..1000).all(|i| !f.contains(&key(i, t), t + 2 * W)));
    // A key inserted while time ran backwards lands in the current generation.
    assert!(f.check_and_insert(b"late", t));
    assert!(!f.check_and_insert(b"late", t + 2 * W + W / 2));
}

/// (iii) At the expected load in both generations, the measured false-positive rate of
/// fresh keys is within 1.5× of the configured rate.
#[test]
fn false_positive_rate_at_the_expected_load() {
    for (n, p) in [(10_000u64, 0.01), (20_000, 0.001)] {
        let mut f = DuplicateFilter::new(config(n, p), KEY).unwrap();
        // Fill the previous epoch's generation, then the current one, to n keys each; keys
        // that collide on insertion are false positives too but stay out of the count.
        for (epoch, src) in [(0, 1u64), (1, 2)] {
            let mut inserted = 0;
            let mut ts = 0;
            while inserted < n {
                inserted += u64::from(f.check_and_insert(&key(src, ts), epoch * W));
                ts += 1;
            }
        }
        let queries = (1000.0 / p) as u64;
        let fp = (0..queries).filter(|&ts| f.contains(&key(3, ts), W + 1)).count();
        let measured = fp as f64 / queries as f64;
        println!("n {n}, configured {p}: measured false-positive rate {measured:.6} over {queries} keys");
        assert!(measured <= 1.5 * p, "measured {measured}, configured {p}");
    }
}

/// (iv) Memory is fixed by the config: the same before and after lots of traffic, and
/// proportional to the expected load.
#[test]
fn memory_depends_on_the_config_only() {
    let mut f = DuplicateFilter::new(config(10_000, 0.01), KEY).unwrap();
    let before = f.memory_bytes();
    assert_eq!(before, std::mem::size_of::<DuplicateFilter>() + 2 * 110_272 / 8);
    for i in 0..200_000u64 {
        f.check_and_insert(&key(i, i), i * (W / 10_000));
    }
    assert_eq!(f.memory_bytes(), before);
    let big = DuplicateFilter::new(config(100_000, 0.01), KEY).unwrap();
    let ratio = big.memory_bytes() as f64 / before as f64;
    assert!((9.9..10.1).contains(&ratio), "ratio {ratio}");
}

#[test]
fn a_different_secret_gives_different_bits() {
    let mut a = DuplicateFilter::new(config(100, 0.01), KEY).unwrap();
    let b = DuplicateFilter::new(config(100, 0.01), [7; 16]).unwrap();
    assert!(a.check_and_insert(b"k", 0));
    assert_ne!(a.sip.hash128(b"k"), b.sip.hash128(b"k"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// (i) and (v) No false negatives: a key accepted at `t` is a duplicate at every later
    /// call as long as the latest time seen is before `t + window`, with times that may also
    /// step backwards. (After a jump forward and back, the latest time is what counts: the
    /// jump already rotated the key out.)
    #[test]
    fn every_key_accepted_within_the_window_is_a_duplicate(
        steps in prop::collection::vec(
            (0u64..40, prop_oneof![0..W / 50, 0..W, Just(W), W..3 * W], any::<bool>()), 1..400),
    ) {
        // Tiny filter, so the generations are saturated and the bits are really shared.
        let mut f = DuplicateFilter::new(config(50, 0.05), KEY).unwrap();
        let mut accepted: HashMap<u64, u64> = HashMap::new();
        let mut now = 5 * W;
        let mut latest = now;
        for (id, dt, back) in steps {
            // Forward by dt, or back by a little.
            now = if back { now.saturating_sub(dt % (W / 10)) } else { now + dt };
            latest = latest.max(now);
            let new = f.check_and_insert(&key(id, 0), now);
            if let Some(&t) = accepted.get(&id) {
                if latest < t + W {
                    prop_assert!(!new, "key {} accepted at {} forgotten at {}", id, t, now);
                }
            }
            if new {
                accepted.insert(id, now);
            }
        }
    }
}

proptest! {
    /// Checking through a hash (with a prefetch first, as a batch does) answers as checking
    /// the key does.
    #[test]
    fn the_hashed_path_answers_as_the_key_path(ops in proptest::collection::vec((0u64..20, 0u64..4 * W), 1..200)) {
        let mut by_key = DuplicateFilter::new(config(100, 0.01), KEY).unwrap();
        let mut by_hash = by_key.clone();
        let mut now = 0;
        for (ts, dt) in ops {
            now += dt / 8;
            let k = key(1, ts);
            let h = by_hash.hash(&k);
            by_hash.prefetch(h);
            prop_assert_eq!(by_key.check_and_insert(&k, now), by_hash.check_and_insert_hashed(h, now));
        }
    }
}
