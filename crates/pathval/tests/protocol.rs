//! pathval end to end on chains of 2-12 nodes: honest packets arrive, sampling is
//! equal-probability (chi-square), an observer cannot tell sampled from unsampled packets,
//! and every tampering or malformed header is dropped with its counted reason.

use aviary_pathval::header::field;
use aviary_pathval::{locate, Chain, Freshness, PathvalDrop, Trip, Verdict, HEADER_LEN};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000;
const FRESH: Freshness = Freshness { max_age_s: 3, max_future_s: 1 };

fn chain(nodes: usize, seed: u64) -> Chain {
    Chain::new(nodes, seed, Epoch::new(1_699_990_000, 1_700_090_000).unwrap(), FRESH).unwrap()
}

/// A distinct payload per packet, so that the sampling PRF sees distinct inputs.
fn payload(i: u64) -> Vec<u8> {
    let mut p = b"pathval test payload ".to_vec();
    p.extend_from_slice(&i.to_be_bytes());
    p
}

fn trip(c: &mut Chain, i: u64, rng: &mut SeededRandom) -> Trip {
    let mut pkt = c.packet(&payload(i));
    c.run(&mut pkt, NOW as u32, NOW, rng)
}

#[test]
fn honest_packets_are_delivered_and_every_sample_is_verified_downstream() {
    let mut rng = SeededRandom::new(1);
    for nodes in 2..=12 {
        let mut c = chain(nodes, nodes as u64);
        let mut samples = 0u64;
        for i in 0..200 {
            let t = trip(&mut c, i, &mut rng);
            assert_eq!(t.verdict, Verdict::Deliver, "{nodes} nodes, packet {i}");
            assert_eq!(t.sampled.len(), nodes - 1);
            assert!(t.sampled[0], "the source samples every packet");
            samples += t.sampled.iter().filter(|s| **s).count() as u64;
        }
        let verified: u64 =
            c.routers().iter().map(|r| r.stats.proofs_verified).sum::<u64>() + c.destination().stats.proofs_verified;
        assert_eq!(verified, samples, "{nodes} nodes");
    }
}

/// Upper 0.1% points of the chi-square distribution for 1..=10 degrees of freedom.
const CHI2_999: [f64; 10] = [10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59];

/// How many packets each sampling node (source first) was the last to sample.
fn last_sampler_counts(nodes: usize, packets: u64) -> Vec<u64> {
    let mut c = chain(nodes, 100 + nodes as u64);
    let mut rng = SeededRandom::new(nodes as u64);
    let mut counts = vec![0u64; nodes - 1];
    for i in 0..packets {
        let t = trip(&mut c, i, &mut rng);
        assert_eq!(t.verdict, Verdict::Deliver);
        counts[t.sampled.iter().rposition(|s| *s).unwrap()] += 1;
    }
    counts
}

fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len() as f64;
    counts.iter().map(|c| (*c as f64 - expected).powi(2) / expected).sum()
}

#[test]
fn the_last_sampler_is_uniform_over_the_sampling_nodes_for_every_path_length() {
    let packets = 3000;
    assert_eq!(last_sampler_counts(2, packets), [packets]);
    for nodes in 3..=12 {
        let counts = last_sampler_counts(nodes, packets);
        let x2 = chi_square(&counts);
        assert!(x2 < CHI2_999[nodes - 3], "{nodes} nodes: chi-square {x2:.1} of {counts:?}");
    }
    // The test can fail: the same statistic rejects a sampler biased toward the source by a
    // few percent (one node with 10% more packets than its share).
    let mut biased = vec![300u64; 10];
    biased[0] = 330;
    biased[9] = 270;
    assert!(chi_square(&biased) * 10.0 > CHI2_999[8]);
}

/// Accuracy on `test` of a naive-Bayes distinguisher trained on `train`: per bit of the
/// observed bytes, the log odds of "sampled" learnt from bit frequencies.
fn distinguisher_accuracy(train: &[(Vec<u8>, bool)], test: &[(Vec<u8>, bool)]) -> f64 {
    let bits = train[0].0.len() * 8;
    let bit = |b: &[u8], i: usize| (b[i / 8] >> (i % 8)) & 1 == 1;
    let mut ones = [vec![1.0f64; bits], vec![1.0f64; bits]];
    let mut n = [2.0f64, 2.0];
    for (x, s) in train {
        n[usize::from(*s)] += 1.0;
        for (i, count) in ones[usize::from(*s)].iter_mut().enumerate() {
            *count += f64::from(u8::from(bit(x, i)));
        }
    }
    let correct = test
        .iter()
        .filter(|(x, s)| {
            let mut score = (n[1] / n[0]).ln();
            for (i, (o1, o0)) in ones[1].iter().zip(&ones[0]).enumerate() {
                let (p1, p0) = (o1 / n[1], o0 / n[0]);
                score += if bit(x, i) { (p1 / p0).ln() } else { ((1.0 - p1) / (1.0 - p0)).ln() };
            }
            (score > 0.0) == *s
        })
        .count();
    correct as f64 / test.len() as f64
}

#[test]
fn an_observer_cannot_tell_sampled_from_unsampled_packets() {
    // On a 3-node path the router samples half of the packets; an observer on its outgoing
    // link sees the whole header of each.
    let mut c = chain(3, 7);
    let mut rng = SeededRandom::new(3);
    let mut seen = Vec::new();
    for i in 0..2400 {
        let mut pkt = c.packet(&payload(i));
        let mut observed = Vec::new();
        let t = c.run_with(&mut pkt, NOW as u32, NOW, &mut rng, |hop, p| {
            if hop == 1 {
                observed = p[locate(p).unwrap().header].to_vec();
            }
        });
        assert_eq!(observed.len(), HEADER_LEN);
        seen.push((observed, t.sampled[1]));
    }
    let (train, test) = seen.split_at(1200);
    let sampled = test.iter().filter(|(_, s)| *s).count() as f64 / test.len() as f64;
    let chance = sampled.max(1.0 - sampled);
    let sigma = 0.5 / (test.len() as f64).sqrt();
    let acc = distinguisher_accuracy(train, test);
    assert!(acc < chance + 4.0 * sigma, "accuracy {acc:.3} against chance {chance:.3}");
    // The distinguisher has power: one leaked bit of the flag is found at once.
    let leak = |v: &[(Vec<u8>, bool)]| -> Vec<(Vec<u8>, bool)> {
        v.iter().map(|(x, s)| (x.iter().copied().chain([u8::from(*s)]).collect(), *s)).collect()
    };
    assert!(distinguisher_accuracy(&leak(train), &leak(test)) > 0.95);
}

/// Runs one packet on a 4-node chain with `tamper(hop, pkt)` applied on the wire and returns
/// the verdict and the node (1 = first router, 3 = destination) that counted a drop.
fn tampered(tamper: impl FnMut(usize, &mut [u8]), seed: u64) -> (Verdict, Option<usize>) {
    let mut c = chain(4, 40);
    let mut rng = SeededRandom::new(seed);
    let mut pkt = c.packet(&payload(seed));
    let t = c.run_with(&mut pkt, NOW as u32, NOW, &mut rng, tamper);
    let mut counted = c.routers().iter().map(|r| r.stats.drops.total()).chain([c.destination().stats.drops.total()]);
    let at = counted.position(|n| n > 0).map(|i| i + 1);
    if let Verdict::Drop(d) = t.verdict {
        let node = at.expect("a drop is counted");
        let stats = if node == 3 { &c.destination().stats } else { &c.routers()[node - 1].stats };
        assert_eq!(stats.drops.get(d.reason()), 1, "{d:?} counted once");
    }
    (t.verdict, at)
}

fn header_at(p: &mut [u8]) -> &mut [u8] {
    let h = locate(p).unwrap().header;
    &mut p[h]
}

#[test]
fn malformed_headers_are_dropped_with_counted_reasons() {
    let hbh = |p: &mut [u8]| aviary_scion::ScionView::new_checked(&*p).unwrap().hdr_len();
    type Tamper = Box<dyn Fn(&mut [u8])>;
    let cases: Vec<(&str, Tamper, PathvalDrop)> = vec![
        ("payload length off", Box::new(|p| p[7] ^= 1), PathvalDrop::BadScionHeader),
        ("no extension", Box::new(|p| p[4] = 17), PathvalDrop::NoExtension),
        ("extension past the end", Box::new(move |p| p[hbh(p) + 1] = 255), PathvalDrop::TruncatedExtension),
        ("other option type", Box::new(move |p| p[hbh(p) + 2] = 0x51), PathvalDrop::NoOption),
        ("short option", Box::new(move |p| p[hbh(p) + 3] = 100), PathvalDrop::BadOptionLength),
        ("hop count at its limit", Box::new(|p| header_at(p)[field::HOP_COUNT] = 255), PathvalDrop::HopCountOverflow),
        ("old timestamp", Box::new(|p| header_at(p)[field::TIMESTAMP][0] ^= 0x80), PathvalDrop::StaleTimestamp),
        ("payload changed", Box::new(|p| *p.last_mut().unwrap() ^= 1), PathvalDrop::BadDataHash),
        (
            "payload and DataHash changed",
            Box::new(|p| {
                *p.last_mut().unwrap() ^= 1;
                let at = locate(p).unwrap();
                let dh = aviary_pathval::data_hash(&p[at.payload]);
                p[at.header][field::DATA_HASH].copy_from_slice(&dh);
            }),
            PathvalDrop::BadValidationProof,
        ),
        ("proof changed", Box::new(|p| header_at(p)[field::VALIDATION_PROOF][3] ^= 4), PathvalDrop::BadValidationProof),
    ];
    for (name, f, want) in cases {
        // Tampered right after the source, which always samples: the first router catches it.
        let (v, at) = tampered(
            |hop, p| {
                if hop == 0 {
                    f(p)
                }
            },
            1,
        );
        assert_eq!((v, at), (Verdict::Drop(want), Some(1)), "{name}");
    }
}

#[test]
fn tampering_that_no_router_samples_is_caught_by_the_destination() {
    // The session is changed in front of the destination. If the last router sampled the
    // packet, its proof fails; if not, HiddenSample (which does not cover the session) passes
    // and only the source's Concealment can tell.
    let mut by_concealment = 0;
    for seed in 0..40 {
        let (v, at) = tampered(
            |hop, p| {
                if hop == 2 {
                    header_at(p)[field::SESSION_ID][0] ^= 1
                }
            },
            seed,
        );
        assert_eq!(at, Some(3), "seed {seed}: {v:?}");
        match v {
            Verdict::Drop(PathvalDrop::BadConcealment) => by_concealment += 1,
            other => assert_eq!(other, Verdict::Drop(PathvalDrop::BadValidationProof), "seed {seed}"),
        }
    }
    // The last router samples a third of the packets: most are caught by Concealment.
    assert!((15..40).contains(&by_concealment), "{by_concealment} of 40");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any one-bit change to what the proofs cover (HopCount, Metadata, Concealment, the
    /// payload), on any link, keeps the packet from being delivered.
    #[test]
    fn covered_bit_flips_are_never_delivered(hop in 0usize..4, target in 0usize..4, byte in 0usize..64, bit in 0u8..8, seed in 0u64..1000) {
        let mut c = chain(5, 9);
        let mut rng = SeededRandom::new(seed);
        let mut pkt = c.packet(&payload(seed));
        let t = c.run_with(&mut pkt, NOW as u32, NOW, &mut rng, |h, p| {
            if h != hop {
                return;
            }
            let at = locate(p).unwrap();
            let range = match target {
                0 => at.header.start + field::HOP_COUNT..at.header.start + field::HOP_COUNT + 1,
                1 => at.header.start + field::DATA_HASH.start..at.header.start + field::TIMESTAMP.end,
                2 => at.header.start + field::CONCEALMENT.start..at.header.start + field::CONCEALMENT.end,
                _ => at.payload,
            };
            let i = range.start + byte % range.len();
            p[i] ^= 1 << bit;
        });
        prop_assert!(matches!(t.verdict, Verdict::Drop(_)), "{:?}", t);
    }

    /// Arbitrary bytes are dropped or handled, never a panic.
    #[test]
    fn arbitrary_packets_do_not_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let mut c = chain(3, 1);
        let k = c.link(0).clone();
        let mut rng = SeededRandom::new(1);
        let mut r = c.routers()[0].clone();
        let _ = r.process(&mut bytes, &k, &k, NOW, &mut rng);
        let _ = c.run(&mut bytes, NOW as u32, NOW, &mut rng);
    }
}
