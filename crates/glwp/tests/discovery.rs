//! Discovery (Alg. 1) on chains of ASes against the properties of §III-C: the source gets
//! β = G(π) and hop keys that every on-path AS's router accepts (F5); tampering anywhere is
//! detected (F5); discovering a path again yields the same AID and β, so no more bandwidth
//! (F3); hop keys fail on another path (F6); a preliminary guarantee below τ comes back as an
//! authenticated refusal; neighbours contradicting themselves and over-rate neighbours are
//! dropped; malformed messages are dropped with counted reasons and never panic.

use aviary_glwp::discovery::wire::{field, Kind, Message};
use aviary_glwp::discovery::{DiscoveryDrop, SourceError};
use aviary_glwp::testbed::discovery::{self as chain, pair, Chain, Failure, HopSpec, FRESHNESS};
use aviary_glwp::{guarantee, prefix_guarantees, testbed, SourceAllocation};
use aviary_glwp::{AidMonitor, Router};
use aviary_qos::{Admission, Verdict};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig};
use proptest::prelude::*;

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_700_000_000 * S;

/// The border router of on-path AS k.
fn router(k: usize) -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig {
            window_ns: FRESHNESS.lifetime_ns + 2 * FRESHNESS.skew_ns,
            expected_per_window: 10_000,
            false_positive_rate: 1e-9,
        },
        [9; 16],
    )
    .unwrap();
    Router::new(&chain::secret(k), FRESHNESS, AidMonitor::new(64, 9000, 0x1234_5678_9abc_def1), dups)
}

fn spec() -> impl Strategy<Value = HopSpec> {
    (100_000_000u64..10_000_000_000, 0u64..5_000_000_000, 0u64..5_000_000_000)
        .prop_map(|(m_bps, extra_div_bps, extra_con_bps)| HopSpec { m_bps, extra_div_bps, extra_con_bps })
}

fn specs() -> impl Strategy<Value = Vec<HopSpec>> {
    prop::collection::vec(spec(), 3..=5)
}

/// Sends one packet of `alloc` through the routers of every on-path AS; each must accept it.
fn routers_accept(alloc: &SourceAllocation, now: u64) {
    let l = alloc.path.len();
    let mut pkt = alloc.packet(&testbed::addresses(chain::ia(0)), now, &[0x5a; 100]).unwrap();
    for k in 1..l {
        let (i, j) = pair(k, l);
        let want = if k + 1 == l { Verdict::Deliver } else { Verdict::forward(j, Admission::GUARANTEED) };
        assert_eq!(router(k).process(&mut pkt, i, now), want, "the router of AS {k}");
    }
}

/// The byte ranges whose change the protocol must detect, in `msg` as it is about to be
/// delivered: the identity of the path and the time, every authenticator someone will still
/// check, every filled hop value and every filled sealed key.
fn live_ranges(msg: &[u8]) -> Vec<std::ops::Range<usize>> {
    let m = Message::new_checked(msg).unwrap();
    let (l, hp) = (usize::from(m.ases()), m.hop_pointer());
    let mut r = vec![field::TS_PKT, field::AID];
    for k in 0..l {
        r.push(field::nid(k));
        r.push(field::pair(l, k));
    }
    match m.kind() {
        Kind::Request => {
            r.extend((0..l).map(|k| field::auth(l, k)));
            r.extend((0..hp).map(|k| field::hop_values(l, k)));
        }
        Kind::Response => {
            r.extend((0..=hp).map(|k| field::auth(l, k)));
            r.extend((0..l).map(|k| field::hop_values(l, k)));
            r.extend((hp + 1..l).map(|k| field::sealed(l, k)));
        }
        Kind::Refusal => unreachable!("τ = 0: nobody refuses"),
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// F5: β is GMA's allocation of the hop values, and the data plane accepts the hop keys.
    #[test]
    fn discovery_gives_gma_and_working_hop_keys(specs in specs(), dt in 0u64..S / 2) {
        let mut chain = Chain::new(&specs, 0).unwrap();
        let alloc = chain.discover(NOW).unwrap();
        let want = guarantee(&chain.hop_values());
        prop_assert_eq!(u64::from(alloc.beta), want / 1000);
        prop_assert_eq!(&alloc.path, &chain.path());
        prop_assert_eq!(alloc.ts_exp, (NOW / S) as u32 + 86_400);
        routers_accept(&alloc, NOW + dt);
    }

    /// F5: a bit flipped in any live field at any step is caught by the next verifier or the
    /// source.
    #[test]
    fn tampering_is_detected(specs in specs(), step in 0usize..10, pick in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut chain = Chain::new(&specs, 0).unwrap();
        let steps = 2 * (specs.len() - 1);
        let step = step % steps;
        let mut tampered = None;
        let res = chain.carry(chain.request(NOW), NOW, &mut |s, msg| {
            if s == step {
                let at = live_ranges(msg).into_iter().flatten().collect::<Vec<_>>();
                let i = at[pick.index(at.len())];
                msg[i] ^= 1 << bit;
                tampered = Some(i);
            }
        });
        prop_assert!(tampered.is_some());
        prop_assert!(res.is_err(), "byte {:?} at step {step} went unnoticed", tampered);
    }

    /// Garbage never panics, and every message dropped is counted under a reason.
    #[test]
    fn garbage_is_dropped_and_counted(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut chain = Chain::new(&[HopSpec { m_bps: 1 << 30, extra_div_bps: 0, extra_con_bps: 0 }; 3], 0).unwrap();
        let (mut fwd, mut back) = (bytes.clone(), bytes.clone());
        let as1 = &mut chain.on_path[0];
        let errors = [as1.forward(&mut fwd, chain::ia(0), NOW).is_err(), as1.backward(&mut back, chain::ia(2), NOW).is_err()];
        prop_assert_eq!(as1.stats.total_drops(), errors.iter().filter(|&&e| e).count() as u64);
        let _ = chain.source.finish(&mut chain.source_neighbourhood, &bytes, NOW);
    }
}

/// F3: discovering the same path again, or replaying the request, gives the same AID and β;
/// the hop keys differ only with ts_exp, and a router charges both allocations to one bucket.
#[test]
fn a_second_discovery_adds_no_bandwidth() {
    let specs = [HopSpec { m_bps: 2_000_000_000, extra_div_bps: 1, extra_con_bps: 2 }; 4];
    let mut chain = Chain::new(&specs, 0).unwrap();
    let first = chain.discover(NOW).unwrap();
    let replayed = chain.carry(chain.request(NOW), NOW, &mut |_, _| {}).unwrap();
    assert_eq!(replayed, first, "a replayed request is answered with the same allocation");
    let again = chain.discover(NOW + 3 * S).unwrap();
    assert_eq!((again.aid, again.beta, &again.path), (first.aid, first.beta, &first.path));
    assert_ne!(again.hop_keys, first.hop_keys);
    // Packets of both allocations at one instant: the router's bucket for the AID (9000 B)
    // lets through as many as one allocation alone would get.
    let mut r = router(1);
    let (i, _) = pair(1, 4);
    let mut passed = 0;
    for n in 0..40u64 {
        let alloc = if n % 2 == 0 { &first } else { &again };
        let mut pkt = alloc.packet(&testbed::addresses(chain::ia(0)), NOW + 4 * S + n, &[0; 900]).unwrap();
        passed += u64::from(matches!(r.process(&mut pkt, i, NOW + 4 * S), Verdict::Forward { .. }));
    }
    let len = first.packet(&testbed::addresses(chain::ia(0)), 0, &[0; 900]).unwrap().len() as u64;
    assert!(passed >= 1 && passed <= 9000 / len, "{passed} packets of {len} B through a 9000 B burst");
}

/// F6: the hop keys of one path fail on another path between the same ASes.
#[test]
fn hop_keys_fail_on_another_path() {
    let a = [HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 0 }; 3];
    let mut b = a;
    b[1].m_bps = 500_000_000;
    let alloc_a = Chain::new(&a, 0).unwrap().discover(NOW).unwrap();
    let alloc_b = Chain::new(&b, 0).unwrap().discover(NOW).unwrap();
    assert_ne!(alloc_a.beta, alloc_b.beta);
    let forged = SourceAllocation { hop_keys: alloc_a.hop_keys.clone(), ..alloc_b.clone() };
    let mut pkt = forged.packet(&testbed::addresses(chain::ia(0)), NOW, &[0; 10]).unwrap();
    let (i, _) = pair(1, 3);
    assert!(matches!(router(1).process(&mut pkt, i, NOW), Verdict::Drop(_)));
    // And on a path with another interface at AS 2, under A's β and AID.
    let mut moved = alloc_a.clone();
    moved.path[2].0 += 1;
    let mut pkt = moved.packet(&testbed::addresses(chain::ia(0)), NOW, &[0; 10]).unwrap();
    let mut r1 = router(1);
    assert!(matches!(r1.process(&mut pkt, i, NOW), Verdict::Forward { .. }));
    assert!(matches!(router(2).process(&mut pkt, moved.path[2].0, NOW), Verdict::Drop(_)));
}

/// A preliminary guarantee below τ returns an authenticated refusal from the first AS where
/// it falls below.
#[test]
fn a_guarantee_below_tau_is_refused() {
    let specs = [
        HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 1_000_000_000 },
        HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 0 },
        HopSpec { m_bps: 1_000_000_000, extra_div_bps: 3_000_000_000, extra_con_bps: 0 },
        HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 0 },
    ];
    let mut probe = Chain::new(&specs, 0).unwrap();
    let prelim = prefix_guarantees(&probe.hop_values());
    assert!(probe.discover(NOW).is_ok());
    let tau = prelim[1] - 1;
    let below = prelim.iter().position(|&p| p < tau).unwrap();
    assert_eq!(below, 2);
    let mut chain = Chain::new(&specs, tau).unwrap();
    assert_eq!(
        chain.discover(NOW),
        Err(Failure::Source(SourceError::Refused { position: 2, ia: chain::ia(2), preliminary_bps: prelim[2] }))
    );
    assert_eq!(chain.on_path[1].stats.refused, 1);
    // A refusal whose values were changed on the way is not believed.
    let res = chain.carry(chain.request(NOW), NOW, &mut |s, msg| {
        if s == 2 {
            msg[field::hop_values(4, 2).start + 9] ^= 1;
        }
    });
    assert_eq!(res, Err(Failure::Source(SourceError::Drop(DiscoveryDrop::BadAuthenticator))));
}

/// A neighbour that promotes other values than it announced (it changed its matrix without
/// the update subprotocol) is caught by the AS next to it on the return path (line 33).
#[test]
fn a_neighbour_contradicting_itself_is_dropped() {
    let specs = [HopSpec { m_bps: 1_000_000_000, extra_div_bps: 500, extra_con_bps: 500 }; 3];
    let mut chain = Chain::new(&specs, 0).unwrap();
    chain.discover(NOW).unwrap();
    // AS 2 (the destination) now announces a larger entry for the same pair.
    let mut changed = specs;
    changed[2].m_bps += 1_000_000;
    let other = Chain::new(&changed, 0).unwrap();
    chain.on_path[1] = other.on_path.into_iter().nth(1).unwrap();
    assert_eq!(
        chain.discover(NOW + S),
        Err(Failure::Dropped { position: 1, drop: DiscoveryDrop::InconsistentNeighbour })
    );
    assert_eq!(chain.on_path[0].stats.drops(DiscoveryDrop::InconsistentNeighbour), 1);
}

/// A neighbour may send requests at a rate in proportion to the divergent of its interface:
/// beyond its bucket they are dropped and counted.
#[test]
fn requests_beyond_the_neighbours_rate_are_dropped() {
    let specs = [HopSpec { m_bps: 100_000_000, extra_div_bps: 0, extra_con_bps: 0 }; 3];
    let mut chain = Chain::new(&specs, 0).unwrap();
    let req = chain.request(NOW);
    let admitted = (0..40).filter(|_| chain.on_path[0].forward(&mut req.clone(), chain::ia(0), NOW).is_ok()).count();
    let burst = usize::from(chain::RATE.burst_bytes);
    assert_eq!(admitted, burst / req.len());
    assert_eq!(chain.on_path[0].stats.drops(DiscoveryDrop::RateLimited), (40 - admitted) as u64);
    // 100 kbit/s (0.1 % of DIV = 100 Mbit/s) refills one request of 208 B in 16.6 ms.
    assert!(chain.on_path[0].forward(&mut req.clone(), chain::ia(0), NOW + S / 50).is_ok());
}

/// Malformed or misdirected messages are dropped under their own reasons.
#[test]
fn malformed_messages_are_dropped_with_named_reasons() {
    let specs = [HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 0 }; 3];
    let mut chain = Chain::new(&specs, 0).unwrap();
    let req = chain.request(NOW);
    let src = chain::ia(0);
    let as1 = &mut chain.on_path[0];
    let mut check = |mut msg: Vec<u8>, from, now, want| {
        assert_eq!(as1.forward(&mut msg, from, now), Err(want));
    };
    check(req[..10].to_vec(), src, NOW, DiscoveryDrop::Truncated);
    check(req[..req.len() - 1].to_vec(), src, NOW, DiscoveryDrop::Truncated);
    let with = |at: usize, v: u8| {
        let mut m = req.clone();
        m[at] = v;
        m
    };
    check(with(field::KIND, 7), src, NOW, DiscoveryDrop::UnknownKind);
    check(with(field::KIND, Kind::Response as u8), src, NOW, DiscoveryDrop::WrongKind);
    check(with(field::HOP_POINTER, 2), src, NOW, DiscoveryDrop::NotOnPath);
    check(with(field::RESERVED, 1), src, NOW, DiscoveryDrop::ReservedBits);
    check(req.clone(), chain::ia(2), NOW, DiscoveryDrop::WrongNeighbour);
    check(req.clone(), src, NOW + 2 * S, DiscoveryDrop::TimestampExpired);
    check(req.clone(), src, NOW - 2 * S, DiscoveryDrop::TimestampFuture);
    check(with(field::AID.start, req[field::AID.start] ^ 1), src, NOW, DiscoveryDrop::BadAid);
    check(with(field::auth(3, 1).start, req[field::auth(3, 1).start] ^ 1), src, NOW, DiscoveryDrop::BadAuthenticator);
    // The source's DIV below its entry: caught by the MAC before anyone computes with it.
    let mut bad_hv = req.clone();
    bad_hv[field::hop_values(3, 0).start..][..8].fill(0);
    check(bad_hv, src, NOW, DiscoveryDrop::BadAuthenticator);
    assert_eq!(as1.stats.total_drops(), 12);
    assert_eq!(as1.stats.iter().filter(|&(_, n)| n > 0).count(), 10);
}

/// Line 31: an AS announcing an entry above its divergent, even with valid MACs, is caught by
/// the next AS, which computes with the values.
#[test]
fn impossible_hop_values_are_refused_by_the_next_as() {
    use aviary_glwp::discovery::crypto::{hop_values_mac, xor_into};
    use aviary_glwp::discovery::wire::Announced;
    use aviary_glwp::discovery::DiscoveryKeys;

    let specs = [HopSpec { m_bps: 1_000_000_000, extra_div_bps: 0, extra_con_bps: 0 }; 4];
    let mut chain = Chain::new(&specs, 0).unwrap();
    let mut msg = chain.request(NOW);
    chain.on_path[0].forward(&mut msg, chain::ia(0), NOW).unwrap();
    // AS 1 lies after the fact: it rewrites its own values and authenticates them to all.
    let mut m = Message::new_checked(&mut msg[..]).unwrap();
    let honest = m.hop_values(1);
    let keys = chain::keys(1, 4);
    let (src, ts, aid) = (m.src(), m.ts_pkt(), m.aid());
    let forged = Announced { div_bps: 1, ..honest };
    for b in [0, 2, 3] {
        let mut auth = m.auth(b);
        xor_into(&mut auth, &hop_values_mac(&keys.key_to(chain::ia(b)), src, ts, aid, honest));
        xor_into(&mut auth, &hop_values_mac(&keys.key_to(chain::ia(b)), src, ts, aid, forged));
        m.set_auth(b, &auth);
    }
    m.set_hop_values(1, forged);
    assert_eq!(chain.on_path[1].forward(&mut msg, chain::ia(1), NOW), Err(DiscoveryDrop::ImpossibleHopValues));
}
