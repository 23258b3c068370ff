//! pathval's router processor on the test topology's diamond, sans IO: S (source AS) – T –
//! U (untrusted) or V – D (destination AS), with the plan worked out from the tables and keys
//! from DRKey as the routers hold them. Packets are handed from processor to processor along
//! the egress each one chose.

use std::collections::BTreeMap;

use aviary_pathval::{plan, Chain, PathvalConfig, PathvalIssuer, PathvalProcessor, PlanAs, Policy, Role, Route};
use aviary_qos::{Context, DropReason, LinkState, Processor, SeededRandom, Verdict};
use aviary_scion::drkey::{Epoch, EpochSchedule, RotatingSecret};
use aviary_scion::IsdAsn;

const NOW_NS: u64 = 1_750_000_000_000_000_000;

fn ia(i: usize) -> IsdAsn {
    Chain::ia(i)
}

/// `(AS, role, routes to D, links (ifid, neighbour, neighbour's ifid))`.
type NodeSpec = (IsdAsn, Role, Vec<Route>, Vec<(u16, IsdAsn, u16)>);

fn network() -> Vec<NodeSpec> {
    let d = ia(4);
    let r = |via: &[u16]| vec![Route { dst: d, via: via.to_vec(), policy: Policy::RoundRobin }];
    vec![
        (ia(0), Role::Trusted, r(&[1]), vec![(1, ia(1), 1)]),
        (ia(1), Role::Trusted, r(&[2, 3]), vec![(1, ia(0), 1), (2, ia(2), 1), (3, ia(3), 1)]),
        (ia(2), Role::Untrusted, r(&[2]), vec![(1, ia(1), 2), (2, d, 1)]),
        (ia(3), Role::Trusted, r(&[2]), vec![(1, ia(1), 3), (2, d, 2)]),
        (d, Role::Trusted, vec![], vec![(1, ia(2), 2), (2, ia(3), 2)]),
    ]
}

fn secret(a: IsdAsn) -> Vec<u8> {
    format!("master secret of {a}").into_bytes()
}

struct Net {
    routers: BTreeMap<IsdAsn, PathvalProcessor>,
    links: BTreeMap<(IsdAsn, u16), (IsdAsn, u16)>,
    random: SeededRandom,
}

impl Net {
    fn new() -> Self {
        let epoch = EpochSchedule::SCION_DEFAULT.epoch_at(NOW_NS / 1_000_000_000).unwrap();
        Self::with_epochs(epoch, |_| epoch)
    }

    /// The diamond with the Level-1 keys every AS's DRKey service issued in `issued`, and
    /// each AS's router deriving its own keys in `held(AS)`.
    fn with_epochs(issued: Epoch, held: impl Fn(IsdAsn) -> Epoch) -> Self {
        let epoch = issued;
        let net = network();
        let planned = plan(
            &net.iter()
                .map(|(a, role, routes, links)| PlanAs { ia: *a, role: *role, routes, links: links.clone() })
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let mut routers = BTreeMap::new();
        let mut links = BTreeMap::new();
        for (a, role, routes, ls) in &net {
            let p = planned.get(a).cloned().unwrap_or_default();
            let level1 = net
                .iter()
                .filter(|(b, r, ..)| b != a && *r == Role::Trusted)
                .map(|(b, ..)| (*b, PathvalIssuer::new(&secret(*b), epoch).unwrap().level1(*a)))
                .collect();
            let cfg = PathvalConfig {
                role: *role,
                attack: None,
                routes: routes.clone(),
                upstream: p.upstream,
                next: p.next,
                level1_keys_file: None,
                max_age_s: 10,
                max_future_s: 2,
            };
            let ids: Vec<u16> = ls.iter().map(|l| l.0).collect();
            routers.insert(
                *a,
                PathvalProcessor::new(
                    *a,
                    &ids,
                    cfg,
                    &RotatingSecret::new(&secret(*a)).unwrap(),
                    level1,
                    [9; 16],
                    held(*a),
                )
                .unwrap(),
            );
            for &(i, n, ni) in ls {
                links.insert((*a, i), (n, ni));
            }
        }
        Self { routers, links, random: SeededRandom::new(1) }
    }

    fn at(&mut self, a: IsdAsn, ingress: u16, pkt: &mut [u8]) -> Verdict {
        let states: Vec<LinkState> = self
            .links
            .keys()
            .filter(|(x, _)| *x == a)
            .map(|&(_, id)| LinkState { id, up: true, rate_bps: 1_000_000, queued_bytes: 0, queue_limit_bytes: 1000 })
            .collect();
        let mut ctx = Context { now_ns: NOW_NS, ingress, links: &states, random: &mut self.random };
        let mut v = [Verdict::Deliver];
        self.routers.get_mut(&a).unwrap().process_batch(&mut ctx, &mut [&mut pkt[..]], &mut v);
        v[0]
    }

    /// Sends `pkt` from S's inside; the ASes it crossed and the final verdict.
    fn send(&mut self, mut pkt: Vec<u8>) -> (Vec<IsdAsn>, Verdict) {
        let (mut a, mut ingress, mut crossed) = (ia(0), 0, vec![ia(0)]);
        loop {
            match self.at(a, ingress, &mut pkt) {
                Verdict::Forward { egress, .. } => {
                    (a, ingress) = self.links[&(a, egress)];
                    crossed.push(a);
                }
                v => return (crossed, v),
            }
        }
    }

    /// Sends `pkts` from S's inside as one batch; every router gets the packets that reach
    /// it over one ingress together, in order; the last byte of packet `damage.0` is flipped
    /// on its way to `damage.1`. The final verdict of each.
    fn send_batch(&mut self, pkts: Vec<Vec<u8>>, damage: (usize, IsdAsn)) -> Vec<Verdict> {
        let mut verdicts = vec![Verdict::Deliver; pkts.len()];
        let mut moving: Vec<(usize, IsdAsn, u16, Vec<u8>)> =
            pkts.into_iter().enumerate().map(|(i, p)| (i, ia(0), 0, p)).collect();
        while let Some(&(_, a, ingress, _)) = moving.first() {
            let (mut here, rest): (Vec<_>, Vec<_>) = moving.into_iter().partition(|m| (m.1, m.2) == (a, ingress));
            moving = rest;
            let states: Vec<LinkState> = self
                .links
                .keys()
                .filter(|(x, _)| *x == a)
                .map(|&(_, id)| LinkState {
                    id,
                    up: true,
                    rate_bps: 1_000_000,
                    queued_bytes: 0,
                    queue_limit_bytes: 1000,
                })
                .collect();
            let mut ctx = Context { now_ns: NOW_NS, ingress, links: &states, random: &mut self.random };
            let mut out = vec![Verdict::Deliver; here.len()];
            let mut refs: Vec<&mut [u8]> = here.iter_mut().map(|m| m.3.as_mut_slice()).collect();
            self.routers.get_mut(&a).unwrap().process_batch(&mut ctx, &mut refs, &mut out);
            for ((i, _, _, pkt), v) in here.into_iter().zip(out) {
                match v {
                    Verdict::Forward { egress, .. } => {
                        let (next, next_ingress) = self.links[&(a, egress)];
                        let mut pkt = pkt;
                        if (i, next) == damage {
                            *pkt.last_mut().unwrap() ^= 1;
                        }
                        moving.push((i, next, next_ingress, pkt));
                    }
                    v => verdicts[i] = v,
                }
            }
        }
        verdicts
    }
}

/// A packet from S's host to D's, as `aviary host pathval-send` makes them: the empty path
/// and a zeroed pathval header (the chain's header has the topology's ASes 0 and 4).
fn packet(i: u8) -> Vec<u8> {
    use std::sync::OnceLock;
    static CHAIN: OnceLock<Chain> = OnceLock::new();
    let chain = CHAIN.get_or_init(|| {
        let fresh = aviary_pathval::Freshness { max_age_s: 1, max_future_s: 1 };
        Chain::new(5, 1, aviary_scion::drkey::Epoch::new(0, 1).unwrap(), fresh).unwrap()
    });
    chain.packet(&[i; 1000])
}

fn counter(p: &PathvalProcessor, name: &str) -> u64 {
    let mut v = 0;
    p.counters(&mut |n, x| {
        if n == name {
            v = x;
        }
    });
    v
}

/// Every AS's DRKey service with one-hour epochs: routers keyed in the same epochs accept
/// every honest packet; a router keyed in SCION's default day (as the routers had hard-coded
/// whatever the control service's `[drkey]` said) holds other keys, and the packets fail.
#[test]
fn routers_must_derive_in_their_ass_drkey_epochs() {
    let now_s = NOW_NS / 1_000_000_000;
    let hour = EpochSchedule::new(3600, 5).unwrap().epoch_at(now_s).unwrap();
    let day = EpochSchedule::SCION_DEFAULT.epoch_at(now_s).unwrap();
    assert_ne!(hour, day);
    let mut net = Net::with_epochs(hour, |_| hour);
    for i in 0..4 {
        let (crossed, v) = net.send(packet(i));
        assert_eq!(v, Verdict::Deliver, "packet {i} over {crossed:?}");
    }
    // The source's first trusted router downstream (T) on the default schedule.
    let mut net = Net::with_epochs(hour, |a| if a == ia(1) { day } else { hour });
    for i in 0..4 {
        let (crossed, v) = net.send(packet(i));
        assert!(matches!(v, Verdict::Drop(_)), "packet {i} over {crossed:?}: {v:?}");
    }
}

#[test]
fn round_robin_over_the_diamond_and_every_honest_packet_accepted() {
    let mut net = Net::new();
    let mut through = Vec::new();
    for i in 0..8 {
        let (crossed, v) = net.send(packet(i));
        assert_eq!(v, Verdict::Deliver, "packet {i} over {crossed:?}");
        through.push(crossed[2]);
    }
    assert_eq!(through, [ia(2), ia(3), ia(2), ia(3), ia(2), ia(3), ia(2), ia(3)]);
    assert_eq!(counter(&net.routers[&ia(4)], "accepted_packets"), 8);
    assert_eq!(counter(&net.routers[&ia(0)], "initialized_packets"), 8);
}

#[test]
fn the_untrusted_router_s_alteration_is_dropped_at_the_destination() {
    let mut net = Net::new();
    net.routers.get_mut(&ia(2)).unwrap().control(&serde_json::json!({"attack": "payload_alteration"})).unwrap();
    let label = |v: Verdict| match v {
        Verdict::Drop(DropReason::Mechanism(i)) => aviary_pathval::PathvalDrop::LABELS[usize::from(i)],
        other => panic!("{other:?}"),
    };
    let (crossed, v) = net.send(packet(1));
    assert_eq!((crossed[2], label(v)), (ia(2), "bad_validation_proof"));
    let (crossed, v) = net.send(packet(2));
    assert_eq!((crossed[2], v), (ia(3), Verdict::Deliver));
    assert_eq!(counter(&net.routers[&ia(2)], "attacked_packets"), 1);
    // A trusted router does not attack; an attack needing more than the packet is refused.
    assert!(net
        .routers
        .get_mut(&ia(1))
        .unwrap()
        .control(&serde_json::json!({"attack": "payload_alteration"}))
        .is_err());
    assert!(net.routers.get_mut(&ia(2)).unwrap().control(&serde_json::json!({"attack": "replay"})).is_err());
}

#[test]
fn misrouted_and_malformed_packets_are_counted_drops() {
    let mut net = Net::new();
    let reason = |v: Verdict| match v {
        Verdict::Drop(DropReason::Mechanism(i)) => aviary_pathval::PathvalDrop::LABELS[usize::from(i)],
        other => panic!("{other:?}"),
    };
    // A packet with a path type other than the empty path.
    let mut pkt = packet(1);
    pkt[aviary_scion::wire::header::field::PATH_TYPE] = 1;
    assert_eq!(reason(net.at(ia(0), 0, &mut pkt)), "not_destination_routed");
    // A destination no table knows.
    let mut pkt = packet(1);
    pkt[aviary_scion::wire::header::field::DST_IA].copy_from_slice(&ia(9).to_bytes());
    assert_eq!(reason(net.at(ia(0), 0, &mut pkt)), "no_route");
    // T's inside is no source for S's hosts.
    let mut pkt = packet(1);
    assert_eq!(reason(net.at(ia(1), 0, &mut pkt)), "unknown_upstream");
    // D hears trusted nodes on interfaces 1 and 2 only.
    let mut pkt = packet(1);
    assert!(matches!(net.at(ia(0), 0, &mut pkt), Verdict::Forward { .. }));
    assert_eq!(reason(net.at(ia(4), 7, &mut pkt)), "unknown_upstream");
    // A packet that skips T (S's proof is for T) fails at V.
    let mut pkt = packet(1);
    assert!(matches!(net.at(ia(0), 0, &mut pkt), Verdict::Forward { .. }));
    let r = reason(net.at(ia(3), 1, &mut pkt));
    assert!(r == "bad_validation_proof" || r == "bad_data_hash", "{r}");
}

#[test]
fn a_batch_larger_than_a_router_s_crosses_the_diamond_and_a_damaged_packet_in_it_is_dropped() {
    let mut net = Net::new();
    let pkts: Vec<Vec<u8>> = (0..45).map(packet).collect();
    let damaged = 17;
    let verdicts = net.send_batch(pkts, (damaged, ia(1)));
    for (i, v) in verdicts.iter().enumerate() {
        if i == damaged {
            // The source always samples, so T verifies its proof and the payload's hash.
            let want = aviary_pathval::PathvalDrop::BadDataHash.reason();
            assert_eq!(*v, Verdict::Drop(want), "packet {i}");
        } else {
            assert_eq!(*v, Verdict::Deliver, "packet {i}");
        }
    }
    assert_eq!(counter(&net.routers[&ia(4)], "accepted_packets"), 44);
    let (via_u, via_v) =
        (counter(&net.routers[&ia(2)], "forwarded_packets"), counter(&net.routers[&ia(3)], "forwarded_packets"));
    // T alternates its egress over all 45 (routing comes before verification): the even
    // packets by U, the odd ones by V, damaged packet 17 among them.
    assert_eq!((via_u, via_v), (23, 21));
}
