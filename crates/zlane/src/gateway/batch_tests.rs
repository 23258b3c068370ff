//! The batched gateway against itself one packet at a time: on random mixes of compliant,
//! over-rate, spoofed, unknown-host, replayed and bad-path packets, batches of any size give
//! the same bytes, verdicts and counters as processing every packet alone.

use proptest::prelude::*;

use super::tests::{config, one, PAYLOAD};
use super::*;
use crate::testbed::Net;

const NOW: u64 = 1_750_000_000 * 1_000_000_000;

/// What a generated packet is.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// From a host listed with room in its rate (1, 2), or with a small rate (3).
    Listed(u16),
    /// From a host no prefix covers: entered in the table, never within a rate.
    Unknown(u16),
    /// Sealed by host 1, claiming host 2.
    Spoofed,
    /// A copy of an earlier packet.
    Replay(prop::sample::Index),
    /// A byte of the path flipped.
    BadPath(prop::sample::Index, u8),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => (1u16..=3).prop_map(Kind::Listed),
        1 => (10u16..14).prop_map(Kind::Unknown),
        1 => Just(Kind::Spoofed),
        1 => any::<prop::sample::Index>().prop_map(Kind::Replay),
        1 => (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(i, x)| Kind::BadPath(i, x)),
    ]
}

fn packets(net: &mut Net, kinds: &[Kind]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        let now = NOW + i as u64;
        let pkt = match *k {
            Kind::Listed(h) | Kind::Unknown(h) => net.packet(Net::host(h), PAYLOAD, now),
            Kind::Spoofed => net.packet_as(Net::host(1), Net::host(2), PAYLOAD, now),
            Kind::Replay(at) if !out.is_empty() => out[at.index(out.len())].clone(),
            Kind::Replay(_) => net.packet(Net::host(1), PAYLOAD, now),
            Kind::BadPath(at, x) => {
                let mut p = net.packet(Net::host(2), PAYLOAD, now);
                let range = aviary_scion::ScionView::new_checked(&p[..]).expect("header").path_range();
                p[range.start + at.index(range.len())] ^= x;
                p
            }
        };
        out.push(pkt);
    }
    out
}

/// Everything a gateway counted: drops by reason, packets without path keys, each host's counters.
type Counted = (Vec<(&'static str, u64)>, u64, Vec<(HostAddr, HostCounters)>);

fn counted(gw: &Gateway) -> Counted {
    let mut hosts: Vec<(HostAddr, HostCounters)> = gw.hosts().map(|(h, c)| (h, *c)).collect();
    hosts.sort_by_key(|(h, _)| format!("{h:?}"));
    (gw.drops().collect(), gw.no_path_keys(), hosts)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn batches_are_packets_one_at_a_time(
        kinds in prop::collection::vec(kind(), 1..90),
        cuts in prop::collection::vec(1usize..70, 1..8),
        crossover in any::<bool>(),
    ) {
        let mut net = if crossover { Net::with_crossover(4, NOW) } else { Net::new(5, NOW) };
        let cfg = config(&[("10.0.0.1", None), ("10.0.0.2", None), ("10.0.0.3", Some(8_000))], 1_000_000_000, OverRatePolicy::Unflagged);
        let pkts = packets(&mut net, &kinds);
        let now = NOW + kinds.len() as u64;

        let mut alone = net.gateway(&cfg, NOW).expect("gateway");
        let mut alone_pkts = pkts.clone();
        let alone_verdicts: Vec<GatewayVerdict> = alone_pkts.iter_mut().map(|p| one(&mut alone, p, now)).collect();

        let mut batched = net.gateway(&cfg, NOW).expect("gateway");
        let mut batched_pkts = pkts.clone();
        let mut verdicts = vec![GatewayVerdict::Unflagged; pkts.len()];
        let (mut rest, mut out, mut c) = (&mut batched_pkts[..], &mut verdicts[..], 0);
        while !rest.is_empty() {
            let m = cuts[c % cuts.len()].min(rest.len());
            c += 1;
            let (batch, more) = std::mem::take(&mut rest).split_at_mut(m);
            let (v, more_v) = std::mem::take(&mut out).split_at_mut(m);
            let mut refs: Vec<&mut [u8]> = batch.iter_mut().map(|p| p.as_mut_slice()).collect();
            batched.process_batch(&mut refs, now, v);
            (rest, out) = (more, more_v);
        }

        prop_assert_eq!(&verdicts, &alone_verdicts);
        prop_assert_eq!(&batched_pkts, &alone_pkts);
        prop_assert_eq!(counted(&batched), counted(&alone));
        // The mix reached the paths it is meant to.
        prop_assert!(alone_verdicts.contains(&GatewayVerdict::Authorized) || !kinds.iter().any(|k| matches!(k, Kind::Listed(1 | 2))));
    }
}
