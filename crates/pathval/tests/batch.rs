//! A router's batch processing ([`aviary_pathval::batch`]) against its packet-by-packet
//! processing: the same verdicts, the same bytes out and the same counters, for honest packets
//! at every position and for tampered, stale and malformed ones mixed into the batch.

use aviary_pathval::header::field;
use aviary_pathval::{locate, Chain, Freshness, Verdict};
use aviary_qos::SeededRandom;
use aviary_scion::drkey::Epoch;
use proptest::prelude::*;

const NOW: u64 = 1_700_000_000;
const NODES: usize = 8;

fn chain() -> Chain {
    let epoch = Epoch::new(1_699_990_000, 1_700_090_000).unwrap();
    Chain::new(NODES, 0x5eed, epoch, Freshness { max_age_s: 3, max_future_s: 1 }).unwrap()
}

/// What is done to a packet on its way to the router under test.
#[derive(Clone, Copy, Debug)]
enum Damage {
    None,
    /// A payload byte flipped.
    Payload(usize),
    /// A header byte flipped.
    Header(usize),
    /// Created long before `NOW`.
    Stale,
    HopCountMax,
    /// Cut short inside the SCION header.
    Truncated,
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        1 => (0usize..64).prop_map(Damage::Payload),
        1 => (0usize..aviary_pathval::HEADER_LEN).prop_map(Damage::Header),
        1 => Just(Damage::Stale),
        1 => Just(Damage::HopCountMax),
        1 => Just(Damage::Truncated),
    ]
}

/// A packet as it reaches router `at`, damaged.
fn arriving(c: &mut Chain, at: usize, id: u64, len: usize, d: Damage, rng: &mut SeededRandom) -> Vec<u8> {
    let mut payload = vec![0x33; len];
    payload[..8].copy_from_slice(&id.to_be_bytes());
    let mut pkt = c.packet(&payload);
    let created = if matches!(d, Damage::Stale) { NOW as u32 - 100 } else { NOW as u32 };
    c.send(&mut pkt, created).unwrap();
    for j in 1..at {
        // Stale packets are carried by hand past the earlier routers.
        if !matches!(d, Damage::Stale) {
            assert!(matches!(c.step(j, &mut pkt, NOW, rng), Verdict::Forward { .. }));
        }
    }
    let at_hdr = locate(&pkt).unwrap();
    match d {
        Damage::None | Damage::Stale => {}
        Damage::Payload(i) => pkt[at_hdr.payload.start + i % len] ^= 1,
        Damage::Header(i) => pkt[at_hdr.header.start + i] ^= 0x80,
        Damage::HopCountMax => pkt[at_hdr.header.start + field::HOP_COUNT] = u8::MAX,
        Damage::Truncated => pkt.truncate(20),
    }
    pkt
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_batch_comes_out_as_packet_by_packet(
        at in 1..NODES - 1,
        pkts in prop::collection::vec((8usize..1200, damage()), 1..70),
        seed in any::<u64>(),
    ) {
        let mut setup = chain();
        let mut rng = SeededRandom::new(seed);
        let arrived: Vec<Vec<u8>> = pkts
            .iter()
            .enumerate()
            .map(|(i, &(len, d))| arriving(&mut setup, at, i as u64, len, d, &mut rng))
            .collect();

        let (mut one, mut many) = (chain(), chain());
        let mut singles = arrived.clone();
        let mut random = SeededRandom::new(seed ^ 1);
        let want: Vec<Verdict> = singles.iter_mut().map(|p| one.step(at, p, NOW, &mut random)).collect();

        let mut batched = arrived.clone();
        let mut refs: Vec<&mut [u8]> = batched.iter_mut().map(Vec::as_mut_slice).collect();
        let mut got = vec![Verdict::Deliver; refs.len()];
        let mut random = SeededRandom::new(seed ^ 1);
        many.step_batch(at, &mut refs, NOW, &mut random, &mut got);

        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&batched, &singles);
        let (a, b) = (&one.routers()[at - 1].stats, &many.routers()[at - 1].stats);
        prop_assert_eq!((a.sampled, a.proofs_verified), (b.sampled, b.proofs_verified));
        let labels = aviary_pathval::PathvalDrop::LABELS;
        prop_assert_eq!(a.drops.iter(labels).collect::<Vec<_>>(), b.drops.iter(labels).collect::<Vec<_>>());
        for (v, (_, d)) in want.iter().zip(&pkts) {
            if matches!(d, Damage::None) {
                prop_assert!(matches!(v, Verdict::Forward { .. }), "an honest packet was dropped: {:?}", v);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Packets of two paths through one router, each batch mixing their links (the proofs of a
    /// batch are MACed together, each under its own packet's keys), and some handed the other
    /// path's upstream key: the same verdicts, bytes and counters as one by one.
    #[test]
    fn a_batch_of_packets_under_different_keys_comes_out_as_packet_by_packet(
        at in 1..NODES - 1,
        pkts in prop::collection::vec((any::<bool>(), any::<bool>(), 8usize..1200, damage()), 1..70),
        seed in any::<u64>(),
    ) {
        let epoch = Epoch::new(1_699_990_000, 1_700_090_000).unwrap();
        let freshness = Freshness { max_age_s: 3, max_future_s: 1 };
        let mut paths = [chain(), Chain::new(NODES, 0xb0b, epoch, freshness).unwrap()];
        let mut rng = SeededRandom::new(seed);
        let arrived: Vec<Vec<u8>> = pkts
            .iter()
            .enumerate()
            .map(|(i, &(path, _, len, d))| arriving(&mut paths[usize::from(path)], at, i as u64, len, d, &mut rng))
            .collect();
        let keys: Vec<_> = pkts
            .iter()
            .map(|&(path, wrong_upstream, _, _)| {
                let (own, other) = (&paths[usize::from(path)], &paths[usize::from(!path)]);
                let k_prev = if wrong_upstream { other.link(at - 1) } else { own.link(at - 1) };
                Some((k_prev, own.link(at)))
            })
            .collect();

        let mut one = paths[0].routers()[at - 1].clone();
        let mut singles = arrived.clone();
        let mut random = SeededRandom::new(seed ^ 1);
        let want: Vec<Verdict> = singles
            .iter_mut()
            .zip(&keys)
            .map(|(p, k)| {
                let (k_prev, k_next) = k.unwrap();
                one.process(p, k_prev, k_next, NOW, &mut random)
            })
            .collect();

        let mut many = paths[0].routers()[at - 1].clone();
        let mut batched = arrived.clone();
        let mut refs: Vec<&mut [u8]> = batched.iter_mut().map(Vec::as_mut_slice).collect();
        let mut got = vec![Verdict::Deliver; refs.len()];
        let mut random = SeededRandom::new(seed ^ 1);
        many.process_batch(&mut refs, &keys, NOW, &mut random, &mut got);

        prop_assert_eq!(&got, &want);
        prop_assert_eq!(&batched, &singles);
        prop_assert_eq!((one.stats.sampled, one.stats.proofs_verified), (many.stats.sampled, many.stats.proofs_verified));
        for (v, &(_, wrong_upstream, _, d)) in want.iter().zip(&pkts) {
            if matches!(d, Damage::None) && !wrong_upstream {
                prop_assert!(matches!(v, Verdict::Forward { .. }), "an honest packet was dropped: {:?}", v);
            }
        }
    }
}
