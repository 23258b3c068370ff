use std::collections::BTreeMap;

use super::*;
use crate::classes::{RateConfig, RouterClass, Verified, ZlaneConfig};
use proptest::prelude::*;

const LINK: u16 = 1;
const CAPACITY: u64 = 10_000_000;
const MU_G: RateBound = RateBound::Ppm(200_000);

fn ia(isd: u16, n: u64) -> IsdAsn {
    IsdAsn::new(isd, 0xff00_0000_0100 + n)
}

/// Router of ISD 1 with ASes 1-..100 and 1-..101 and ISD 2: 2 Mbit/s of μ_G, a third each.
fn guarantees(rates: &[(&str, RateConfig)]) -> Guarantees {
    let c = ZlaneConfig {
        ases: vec![ia(1, 0), ia(1, 1)],
        isds: vec![2],
        rates: rates.iter().map(|(k, r)| (k.to_string(), r.clone())).collect::<BTreeMap<_, _>>(),
        burst_bytes: 3_000,
        drkey_protocol: 42,
    };
    Guarantees::new(&c.plan(1).unwrap(), [(LINK, MU_G)])
}

/// Over one second, every source of `srcs` sends 1000-byte packets at `offered_bps`: the
/// bytes they got as G together, and the bytes they sent.
fn run(g: &mut Guarantees, srcs: &[IsdAsn], offered_bps: u64, capacity: u64) -> (u64, u64) {
    let gap = 1000 * 8 * 1_000_000_000 / offered_bps;
    let (mut granted, mut sent, mut now) = (0, 0, 0);
    while now < 1_000_000_000 {
        for &src in srcs {
            let class = g.classify(Verified::Epic { src, qos: true }, LINK, capacity, 1000, now);
            assert_eq!(class == RouterClass::Guaranteed, class != RouterClass::Authenticated);
            granted += if class == RouterClass::Guaranteed { 1000 } else { 0 };
            sent += 1000;
        }
        now += gap;
    }
    (granted, sent)
}

/// Whether `bytes` in one second is the rate `bps`, give or take a packet, plus the burst.
fn about(bytes: u64, bps: u64) -> bool {
    bytes + 1_000 >= bps / 8 && bytes <= bps / 8 + 3_000 + 1_000
}

#[test]
fn within_the_guarantee_is_g_and_the_overuse_a() {
    let mut g = guarantees(&[]);
    // 666 kbit/s each, rounded down to 600 kbit/s by the bucket's 100 kbit/s units.
    let (granted, sent) = run(&mut g, &[ia(1, 0)], 500_000, CAPACITY);
    assert_eq!(granted, sent, "all of a source within its rate is guaranteed");
    let (granted, sent) = run(&mut g, &[ia(1, 1)], 5_000_000, CAPACITY);
    assert!(about(granted, 600_000), "overuse is held to the rate: {granted} of {sent}");
    // Another ISD's ASes share their ISD's bucket.
    let (granted, sent) = run(&mut g, &[ia(2, 5), ia(2, 6)], 400_000, CAPACITY);
    assert!(about(granted, 600_000), "{granted} of {sent}");
}

#[test]
fn without_the_flag_without_a_guarantee_or_unauthenticated_is_never_g() {
    let mut g = guarantees(&[]);
    let mut class = |v| g.classify(v, LINK, CAPACITY, 100, 0);
    assert_eq!(class(Verified::Epic { src: ia(1, 0), qos: false }), RouterClass::Authenticated);
    assert_eq!(class(Verified::Epic { src: ia(1, 9), qos: true }), RouterClass::Authenticated);
    assert_eq!(class(Verified::Epic { src: ia(3, 0), qos: true }), RouterClass::Authenticated);
    assert_eq!(class(Verified::Unauthenticated), RouterClass::Unauthenticated);
    assert_eq!(class(Verified::Reservation), RouterClass::Reservation);
    assert_eq!(class(Verified::Neighbor), RouterClass::Neighbor);
    assert_eq!(class(Verified::Epic { src: ia(1, 0), qos: true }), RouterClass::Guaranteed);
    // An unknown egress has no guarantees.
    assert_eq!(
        g.classify(Verified::Epic { src: ia(1, 0), qos: true }, 9, CAPACITY, 100, 0),
        RouterClass::Authenticated
    );
}

#[test]
fn relative_guarantees_follow_the_link_capacity() {
    let mut g = guarantees(&[("2", RateConfig::Bps(1_000_000))]);
    // Half of μ_G for each AS: 1 Mbit/s at 10 Mbit/s, 2 Mbit/s at 20 Mbit/s.
    let (at_10, _) = run(&mut g, &[ia(1, 0)], 8_000_000, CAPACITY);
    assert!(about(at_10, 1_000_000), "{at_10}");
    let (at_20, _) = run(&mut g, &[ia(1, 1)], 8_000_000, 2 * CAPACITY);
    assert!(about(at_20, 2_000_000), "{at_20}");
    // The absolute rate does not move.
    let (isd, _) = run(&mut g, &[ia(2, 1)], 8_000_000, 2 * CAPACITY);
    assert!(about(isd, 1_000_000), "{isd}");
}

#[test]
fn a_replaced_plan_keeps_the_tokens_of_origins_that_stay() {
    let mut g = guarantees(&[]);
    let src = ia(1, 0);
    assert_eq!(g.classify(Verified::Epic { src, qos: true }, LINK, CAPACITY, 3_000, 0), RouterClass::Guaranteed);
    let c = ZlaneConfig {
        ases: vec![ia(1, 0), ia(1, 2)],
        isds: vec![],
        rates: BTreeMap::new(),
        burst_bytes: 3_000,
        drkey_protocol: 42,
    };
    g.replace(&c.plan(1).unwrap(), 0);
    assert_eq!(g.rates().len(), 2);
    // The drained bucket stays drained; the new origin starts full; the removed one has none.
    assert_eq!(g.classify(Verified::Epic { src, qos: true }, LINK, CAPACITY, 1_000, 0), RouterClass::Authenticated);
    let new = Verified::Epic { src: ia(1, 2), qos: true };
    assert_eq!(g.classify(new, LINK, CAPACITY, 3_000, 0), RouterClass::Guaranteed);
    let gone = Verified::Epic { src: ia(1, 1), qos: true };
    assert_eq!(g.classify(gone, LINK, CAPACITY, 100, 0), RouterClass::Authenticated);
}

proptest! {
    /// Whatever a source sends, what it gets as G in any run is at most its rate times the
    /// time plus one burst, and nothing it sends is dropped or made unauthenticated.
    #[test]
    fn g_never_exceeds_rate_plus_burst(
        pkts in proptest::collection::vec((0u64..2_000_000, 1usize..1500, any::<bool>()), 1..300),
    ) {
        let mut g = guarantees(&[]);
        let (mut now, mut granted) = (0u64, 0u64);
        for (gap, len, qos) in pkts {
            now += gap;
            let class = g.classify(Verified::Epic { src: ia(1, 0), qos }, LINK, CAPACITY, len, now);
            prop_assert!(matches!(class, RouterClass::Guaranteed | RouterClass::Authenticated));
            prop_assert!(qos || class == RouterClass::Authenticated);
            if class == RouterClass::Guaranteed {
                granted += len as u64;
            }
            // 600 kbit/s = 75 bytes per ms.
            prop_assert!(granted <= 3_000 + now * 75 / 1_000_000, "{} bytes by {} ns", granted, now);
        }
    }
}
