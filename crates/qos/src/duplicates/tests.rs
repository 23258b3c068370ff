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

/// The block count is the fewest that meet `p_g` by the blocked filter's formula, and gives
/// the bits per key that formula predicts (13.8 at 1 %, against 11.0 for a classic filter).
#[test]
fn sized_by_the_blocked_formula() {
    for (n, p, bits_per_key) in [(10_000u64, 0.01, 13.8), (10_000, 0.001, 18.9), (1_000_000, 1e-6, 42.4)] {
        let f = DuplicateFilter::new(config(n, p), KEY).unwrap();
        let blocks = f.bits_per_generation() / 512;
        let p_gen = 1.0 - (1.0 - p).sqrt();
        assert!(sizing::false_positive_rate(n as f64, blocks as f64) <= p_gen);
        assert!(sizing::false_positive_rate(n as f64, (blocks - 1) as f64) > p_gen);
        let per_key = f.bits_per_generation() as f64 / n as f64;
        assert!((per_key - bits_per_key).abs() < 0.1, "n {n}, p {p}: {per_key} bits per key");
        assert_eq!(f.hashes(), 16);
    }
}

/// The formula against cases worked by hand: one block holding everything is
/// `f(n) = (1 − (31/32)^n)^16`, and with one key in a generation of `b` blocks a fresh key is
/// a false positive only if it shares the block (1/b) and all 16 bits (2⁻⁸⁰).
#[test]
fn the_formula_in_closed_cases() {
    let f = |j: f64| (1.0 - (31.0f64 / 32.0).powf(j)).powi(16);
    for n in [1.0, 10.0, 100.0] {
        assert!((sizing::false_positive_rate(n, 1.0) - f(n)).abs() < 1e-12 * f(n));
    }
    let one_key = sizing::false_positive_rate(1.0, 1000.0);
    assert!((one_key / (2f64.powi(-80) / 1000.0) - 1.0).abs() < 1e-9, "{one_key}");
    // Saturated: far more keys than bits.
    assert_eq!(sizing::false_positive_rate(1e12, 10.0), 1.0);
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
    assert_eq!(before as u64, std::mem::size_of::<DuplicateFilter>() as u64 + 2 * f.bits_per_generation() / 8);
    for i in 0..200_000u64 {
        f.check_and_insert(&key(i, i), i * (W / 10_000));
    }
    assert_eq!(f.memory_bytes(), before);
    let big = DuplicateFilter::new(config(100_000, 0.01), KEY).unwrap();
    let generations = |f: &DuplicateFilter| (f.memory_bytes() - std::mem::size_of::<DuplicateFilter>()) as f64;
    let ratio = generations(&big) / generations(&f);
    assert!((9.9..10.1).contains(&ratio), "ratio {ratio}");
}

#[test]
fn a_different_secret_gives_different_bits() {
    let a = DuplicateFilter::new(config(100_000, 0.01), KEY).unwrap();
    let b = DuplicateFilter::new(config(100_000, 0.01), [7; 16]).unwrap();
    let keys: Vec<[u8; 16]> = (0..1000).map(|i| key(1, i)).collect();
    let same_hash = keys.iter().filter(|k| a.hash(&k[..]) == b.hash(&k[..])).count();
    let same_block = keys.iter().filter(|k| a.block_of(a.hash(&k[..])) == b.block_of(b.hash(&k[..]))).count();
    let same_bits = keys.iter().filter(|k| bits_of(a.hash(&k[..])) == bits_of(b.hash(&k[..]))).count();
    // 2 699 blocks: about 0.4 of the 1 000 keys share a block by chance.
    assert_eq!((same_hash, same_bits), (0, 0));
    assert!(same_block <= 10, "{same_block} keys in the same block under both secrets");
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

/// At the configured load (two full generations of n = 10⁵ keys, p = 10⁻³) the measured
/// rate over 10⁶ fresh keys is within the bound and where the blocked formula puts it. The
/// keys are fixed, so the test is deterministic; the margins are 6 standard deviations of
/// the binomial count (≈ 31 around 1 000), so a correct filter is far from failing it.
#[test]
fn measured_false_positive_rate_matches_the_formula() {
    let (n, p) = (100_000u64, 1e-3);
    let mut f = DuplicateFilter::new(config(n, p), KEY).unwrap();
    for (epoch, src) in [(0, 1u64), (1, 2)] {
        let (mut inserted, mut ts) = (0, 0);
        while inserted < n {
            inserted += u64::from(f.check_and_insert(&key(src, ts), epoch * W));
            ts += 1;
        }
    }
    let probes = 1_000_000u64;
    let keys: Vec<[u8; 16]> = (0..probes).map(|ts| key(3, ts)).collect();
    let mut hashes = vec![KeyHash(0); keys.len()];
    f.hash_many(&keys, &mut hashes);
    let fp = hashes.iter().filter(|&&h| f.pair_of(h).0.iter().any(|b| holds(b, &bits_of(h)))).count() as f64;
    let per_gen = sizing::false_positive_rate(n as f64, (f.bits_per_generation() / 512) as f64);
    let predicted = 1.0 - (1.0 - per_gen).powi(2);
    let sd = (probes as f64 * predicted).sqrt();
    println!("predicted {predicted:.6}, measured {:.6}", fp / probes as f64);
    assert!(predicted <= p);
    assert!((fp - predicted * probes as f64).abs() <= 6.0 * sd, "{fp} false positives, predicted {predicted}");
    assert!(fp <= p * probes as f64 + 6.0 * sd);
}

/// Forgetting happens exactly at the second epoch boundary after the key's epoch, wherever
/// in its epoch the key arrived, and an idle gap of two epochs clears everything.
#[test]
fn forgets_exactly_at_the_second_epoch_boundary() {
    for offset in [0, 1, W / 2, W - 1] {
        let mut f = DuplicateFilter::new(config(1000, 1e-6), KEY).unwrap();
        let t = 4 * W + offset;
        assert!(f.check_and_insert(b"k", t));
        assert!(!f.check_and_insert(b"k", 5 * W)); // the next epoch: previous generation
        assert!(f.contains(b"k", 6 * W - 1));
        assert!(!f.contains(b"k", 6 * W), "remembered past the second boundary (offset {offset})");
        assert!(f.check_and_insert(b"k", 6 * W));
    }
    let mut f = DuplicateFilter::new(config(1000, 1e-6), KEY).unwrap();
    assert!(f.check_and_insert(b"a", 4 * W));
    assert!(f.check_and_insert(b"b", 5 * W));
    // Straight to two epochs after b's: both generations cleared at once.
    assert!(!f.contains(b"a", 7 * W) && !f.contains(b"b", 7 * W));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No false negatives for keys of any length (one, two, three AES blocks) inserted at any
    /// times of one epoch: every one is a duplicate until the end of the next epoch.
    #[test]
    fn no_key_of_any_length_is_forgotten_within_the_window(
        keys in prop::collection::hash_set(prop::collection::vec(any::<u8>(), 0..48), 1..300),
        epoch in 0u64..1000,
        times in prop::collection::vec(0..W, 300),
        later in 0..W,
    ) {
        let mut f = DuplicateFilter::new(config(50, 0.01), KEY).unwrap();
        let accepted: Vec<&Vec<u8>> =
            keys.iter().zip(&times).filter(|(k, &t)| f.check_and_insert(k, epoch * W + t)).map(|(k, _)| k).collect();
        for k in accepted {
            prop_assert!(f.contains(k, (epoch + 1) * W + later));
            prop_assert!(!f.check_and_insert(k, (epoch + 1) * W + later));
        }
    }

    /// The batch hash is the single hash, for the 16-byte GLWP key and the 37-byte EPIC key,
    /// and a filter fed through it answers as one fed key by key.
    #[test]
    fn the_batch_answers_as_one_key_at_a_time(
        short in prop::collection::vec(any::<[u8; 16]>(), 0..70),
        long in prop::collection::vec(any::<[u8; 37]>(), 0..70),
        now in 0..3 * W,
    ) {
        let mut by_key = DuplicateFilter::new(config(100, 0.01), KEY).unwrap();
        let mut by_batch = by_key.clone();
        let mut short_hashes = vec![KeyHash(0); short.len()];
        by_batch.hash_many(&short, &mut short_hashes);
        let mut long_hashes = vec![KeyHash(0); long.len()];
        by_batch.hash_many(&long, &mut long_hashes);
        for (k, h) in short.iter().zip(&short_hashes) {
            prop_assert_eq!(by_key.hash(k), *h);
            by_batch.prefetch(*h);
        }
        for (k, h) in long.iter().zip(&long_hashes) {
            prop_assert_eq!(by_key.hash(k), *h);
        }
        for (k, h) in short.iter().zip(&short_hashes) {
            prop_assert_eq!(by_key.check_and_insert(k, now), by_batch.check_and_insert_hashed(*h, now));
        }
        for (k, h) in long.iter().zip(&long_hashes) {
            prop_assert_eq!(by_key.check_and_insert(k, now), by_batch.check_and_insert_hashed(*h, now));
        }
    }
}

/// The vector `bits_of` against the scalar formula: every position of every word, and random
/// hashes.
#[test]
fn bits_of_is_the_scalar_formula() {
    for w in 0..WORDS {
        for n in 0..u128::from(WORD_BITS) {
            let h = KeyHash(n << (20 * (w % 4) + 5 * (w / 4)) | (u128::MAX << 80));
            assert_eq!(bits_of(h), bits_of_scalar(h), "word {w}, position {n}");
            assert_eq!(bits_of(h)[w], 1 << n);
        }
    }
    let mut x = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210u128;
    for _ in 0..10_000 {
        // xorshift128 steps, enough to vary every field.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        assert_eq!(bits_of(KeyHash(x)), bits_of_scalar(KeyHash(x)));
    }
}

/// A new filter takes the epoch of the first time it sees, whatever it is, without clearing
/// its (empty) generations: a key inserted then is remembered to the end of the next epoch and
/// forgotten after, as in any other epoch, and a first look that inserts nothing starts the
/// epoch just the same.
#[test]
fn a_new_filter_starts_at_the_first_time_it_sees() {
    let late = u64::MAX / W - 3;
    for (first, offset) in [(0, 0), (0, W - 1), (1, 0), (2, W / 2), (late, 7)] {
        for look_first in [false, true] {
            let mut f = DuplicateFilter::new(config(1000, 1e-6), KEY).unwrap();
            let t = first * W + offset;
            if look_first {
                assert!(!f.contains(b"k", t));
            }
            assert!(f.check_and_insert(b"k", t));
            assert!(!f.check_and_insert(b"k", t), "epoch {first}");
            assert!(f.contains(b"k", (first + 2) * W - 1), "epoch {first}");
            assert!(!f.contains(b"k", (first + 2) * W), "epoch {first}");
        }
    }
}
