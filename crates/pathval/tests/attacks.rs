//! The schemes on honest packets and under attack: every scheme delivers honest packets, PPV
//! marks its samplers uniformly, and each attack of the harness is detected at the rate the
//! analysis predicts (within 4 binomial standard deviations; exactly where the prediction is 0
//! or 1). The selective attacker guesses sampled packets no better than chance under pathval,
//! and perfectly under PPV, whose mark is in plaintext.

use aviary_pathval::attack::{self, attacker_position, sampled_at, Attack, Outcome};
use aviary_pathval::{Chain, Freshness, SchemeKind, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;

const NOW: u64 = 1_700_000_000;
const FRESH: Freshness = Freshness { max_age_s: 3, max_future_s: 1 };

fn chain(scheme: SchemeKind, nodes: usize) -> Chain {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).unwrap();
    Chain::with_scheme(scheme, nodes, 0xa77 + nodes as u64, epoch, FRESH).unwrap()
}

/// Whether `hits` of `n` trials are consistent with probability `p` (4 standard deviations).
fn within_4_sigma(hits: u64, n: u64, p: f64) -> bool {
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    (hits as f64 - n as f64 * p).abs() <= 4.0 * sd + 1e-9
}

#[test]
fn every_scheme_delivers_honest_packets_and_ppv_marks_uniformly() {
    let mut rng = SeededRandom::new(3);
    for scheme in SchemeKind::ALL {
        for nodes in 2..=12 {
            let mut c = chain(scheme, nodes);
            let mut last_sampler = vec![0u64; nodes - 1];
            for i in 0..150u64 {
                let mut pkt = c.packet(&i.to_be_bytes());
                let t = c.run(&mut pkt, NOW as u32, NOW, &mut rng);
                assert_eq!(t.verdict, Verdict::Deliver, "{scheme:?}, {nodes} nodes, packet {i}");
                let samples = t.sampled.iter().filter(|s| **s).count();
                match scheme {
                    SchemeKind::Ppv => assert_eq!(samples, 1, "PPV samples each packet once"),
                    SchemeKind::Baseline | SchemeKind::Epic => assert_eq!(samples, nodes - 1),
                    SchemeKind::Pathval => assert!(t.sampled[0]),
                }
                last_sampler[t.sampled.iter().rposition(|s| *s).unwrap()] += 1;
            }
            if scheme == SchemeKind::Ppv {
                let p = 1.0 / (nodes - 1) as f64;
                assert!(last_sampler.iter().all(|c| within_4_sigma(*c, 150, p)), "{nodes}: {last_sampler:?}");
            }
        }
    }
}

#[test]
fn a_packet_that_skips_a_router_is_dropped_next_and_epic_says_it_is_off_its_path() {
    let mut rng = SeededRandom::new(4);
    for scheme in [SchemeKind::Pathval, SchemeKind::Baseline, SchemeKind::Epic] {
        let mut c = chain(scheme, 5);
        let mut pkt = c.packet(b"x");
        c.send(&mut pkt, NOW as u32).unwrap();
        // Node 2 gets the packet node 1 should have had: keys and position both wrong.
        let v = c.step(2, &mut pkt, NOW, &mut rng);
        let want = match scheme {
            SchemeKind::Epic => Verdict::Drop(aviary_pathval::PathvalDrop::OffStaticPath),
            _ => Verdict::Drop(aviary_pathval::PathvalDrop::BadValidationProof),
        };
        assert_eq!(v, want, "{scheme:?}");
    }
}

fn run(scheme: SchemeKind, nodes: usize, a: Attack, packets: u64) -> Outcome {
    let mut c = chain(scheme, nodes);
    let mut rng = SeededRandom::new(nodes as u64 * 31 + a as u64);
    attack::measure(&mut c, a, packets, NOW, &mut rng)
}

#[test]
fn every_attack_is_detected_at_the_predicted_rate() {
    for scheme in SchemeKind::ALL {
        for nodes in [3, 5, 8, 12] {
            for a in Attack::ALL {
                let o = run(scheme, nodes, a, 240);
                assert_eq!(o.honest_drops, 0);
                assert_eq!(o.seen, 240);
                if a != Attack::SelectiveMisroute {
                    assert_eq!(o.attacked, 240, "{scheme:?} {a:?}");
                }
                let p = a.predicted_detection(scheme, nodes);
                if o.attacked > 0 {
                    assert!(
                        within_4_sigma(o.detected, o.attacked, p),
                        "{scheme:?}, N = {nodes}, {a:?}: {} of {} detected, predicted {p}",
                        o.detected,
                        o.attacked
                    );
                }
                assert_eq!(o.undetected() + o.detected, o.attacked);
            }
        }
    }
}

#[test]
fn the_selective_attacker_guesses_at_chance_under_pathval_and_perfectly_under_ppv() {
    let nodes = 9;
    let a = attacker_position(nodes);
    assert_eq!(a, 3);
    let o = run(SchemeKind::Pathval, nodes, Attack::SelectiveMisroute, 2000);
    let base = sampled_at(SchemeKind::Pathval, a, nodes);
    assert!(within_4_sigma(o.sampled, o.seen, base), "{o:?}");
    // Of the packets it believed sampled, as many were as among all packets.
    assert!(within_4_sigma(o.guessed_sampled_right, o.guessed_sampled, base), "{o:?}");
    // It bypassed about half and every bypass was caught.
    assert!(within_4_sigma(o.attacked, o.seen, 0.5), "{o:?}");
    assert_eq!(o.detected, o.attacked);

    let o = run(SchemeKind::Ppv, nodes, Attack::SelectiveMisroute, 2000);
    assert!(within_4_sigma(o.sampled, o.seen, sampled_at(SchemeKind::Ppv, a, nodes)), "{o:?}");
    assert_eq!(o.guessed_sampled_right, o.guessed_sampled, "the mark is in plaintext");
    assert_eq!(o.guessed_sampled, o.sampled);
    // The same statistic that finds no edge under pathval finds PPV's at once.
    assert!(!within_4_sigma(o.guessed_sampled_right, o.guessed_sampled, o.sampled_rate()));
    assert!(o.attacked > 1000 && o.detected == 0, "{o:?}");
}
