//! The router's cache of expanded A_Ks and recalled hop-field CMACs
//! (`aviary_hummingbird::auth_key_cache`) changes no verdict: only packets that verified fill
//! it, a packet whose reservation fields differ from the cached ones in anything is recomputed,
//! a packet whose candidate MAC differs from the verified one is refused whether its CMAC is
//! recalled or not, and a rotation of the AS secret empties it, so that after the overlap a
//! reservation authenticated under the old SV, or a hop field under the old key, gets nothing
//! from what was cached before the rotation.

use aviary_hummingbird::auth_key_cache::AuthKeyCacheCounters;
use aviary_hummingbird::path::field;
use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::ScionView;

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const NOW: u64 = T0 as u64 * S + 250_000_000;
const ASES: usize = 4;
/// The transit AS whose router is tested.
const AT: usize = 1;

fn params() -> RouterParams {
    RouterParams { max_res_id: 4095, ..RouterParams::default() }
}

fn grants(chain: &Chain, res_id: u32) -> Vec<(usize, Reservation)> {
    (0..ASES).map(|i| (i, chain.grant(i, res_id + i as u32, 600, T0 - 10, 3600))).collect()
}

/// A packet on `path_chain`'s path (its hop fields under that chain's keys) with the flyovers
/// `res` (their A_Ks from whichever chain granted them), stamped at `sent_ns`, as AS `AT` gets it
/// from routers of `path_chain`.
fn packet(path_chain: &Chain, res: &[(usize, Reservation)], sent_ns: u64) -> Vec<u8> {
    let mut pkt = path_chain.hbird_packet(res, (sent_ns / S) as u32, 80).unwrap();
    let r: Vec<Reservation> = res.iter().map(|r| r.1).collect();
    Source::new(&pkt, &r).unwrap().stamp(&mut pkt, sent_ns).unwrap();
    for j in 0..AT {
        let v = path_chain.router(j, params()).process(&mut pkt, Chain::forward_ingress(j), NOW);
        assert!(matches!(v, Verdict::Forward { .. }), "AS {j}: {v:?}");
    }
    pkt
}

fn alone(router: &mut Router, pkt: &[u8], now: u64) -> Verdict {
    router.process(&mut pkt.to_vec(), Chain::forward_ingress(AT), now)
}

fn reserved(v: Verdict) -> bool {
    matches!(v, Verdict::Forward { admission: Admission::RESERVED, .. })
}

#[test]
fn only_verified_packets_fill_the_cache_and_later_ones_hit_it() {
    let chain = Chain::new(ASES, T0 - 60);
    let mut router = chain.router(AT, params());
    let pkt = packet(&chain, &grants(&chain, 7), NOW);
    // The same reservation with another Counter than the source stamped: its A_K input is the
    // reservation's, its FlyoverMAC input is not.
    let mut forged = pkt.clone();
    let counter = ScionView::new_checked(&pkt[..]).unwrap().path_range().start + field::meta::HIGH_RES_TS.end - 1;
    forged[counter] ^= 1;
    let batch = |router: &mut Router, now: u64| {
        let (mut a, mut b) = (pkt.clone(), pkt.clone());
        let mut verdicts = [Verdict::Deliver; 2];
        router.process_batch(&mut [&mut a, &mut b], Chain::forward_ingress(AT), now, &mut verdicts);
        assert!(verdicts.into_iter().all(reserved), "{verdicts:?}");
    };
    for _ in 0..3 {
        assert_eq!(alone(&mut router, &forged, NOW), Verdict::Drop(DropReason::BadMac));
    }
    // Valid packets in a batch right after: the A_K the forged packet left expanded is not
    // theirs to cache, and a batch neither uses nor fills the cache.
    batch(&mut router, NOW);
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 0, inserts: 0, mac_recalls: 0 });
    for k in 0..3 {
        assert!(reserved(alone(&mut router, &pkt, NOW + (k + 1) * 1000)));
    }
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 2, inserts: 1, mac_recalls: 2 });
    // A forged packet of the cached reservation uses the cached A_K and still fails.
    assert_eq!(alone(&mut router, &forged, NOW), Verdict::Drop(DropReason::BadMac));
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 3, inserts: 1, mac_recalls: 2 });
    batch(&mut router, NOW + 5000);
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 3, inserts: 1, mac_recalls: 2 });
}

#[test]
fn a_reservation_field_changed_is_not_taken_for_the_cached_one() {
    let chain = Chain::new(ASES, T0 - 60);
    let mut router = chain.router(AT, params());
    let res = grants(&chain, 7);
    assert!(reserved(alone(&mut router, &packet(&chain, &res, NOW), NOW)));
    // The same ResID on the same interfaces, claiming more bandwidth, a longer reservation or
    // another start, with the A_K of the reservation that was granted (and cached): each is a
    // different A_K input block, recomputed, and refused.
    let changes: [fn(&mut Reservation); 3] = [|r| r.info.bw = 1023, |r| r.info.duration += 1, |r| r.info.start -= 1];
    for change in changes {
        let mut claimed = res.clone();
        change(&mut claimed[AT].1);
        let pkt = packet(&chain, &claimed, NOW);
        assert_eq!(alone(&mut router, &pkt, NOW), Verdict::Drop(DropReason::BadMac));
    }
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 0, inserts: 1, mac_recalls: 0 });
    // The granted reservation's next packet hits; the claimed reservation's A_K, left expanded
    // by the last refused packet, is not cached after it.
    assert!(reserved(alone(&mut router, &packet(&chain, &res, NOW), NOW + 1000)));
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 1, inserts: 1, mac_recalls: 1 });
}

/// A packet whose hop fields are under the new keys but whose reservation at the AS was
/// authenticated under the old SV: only an A_K cached from before the rotation would let it
/// through.
#[test]
fn a_rotation_forgets_the_keys_cached_under_the_old_secret() {
    let (old, new) = (Chain::with_key_generation(ASES, T0 - 60, 0), Chain::with_key_generation(ASES, T0 - 60, 1));
    let until = NOW + S;
    let mut router = old.router(AT, params());
    assert!(reserved(alone(&mut router, &packet(&old, &grants(&old, 7), NOW), NOW)));
    assert_eq!(router.auth_key_cache_counters().inserts, 1);
    router.rotate_secret(&new.ases[AT].master_secret, until);
    // In the overlap the old keys verify, and what the current SV made of the packet's
    // reservation is not cached for it.
    let old_pkt = packet(&old, &grants(&old, 7), NOW);
    assert!(reserved(alone(&mut router, &old_pkt, NOW + 1000)));
    assert_eq!(router.previous_key_packets(), 1);
    assert_eq!(router.auth_key_cache_counters().inserts, 1);

    let later = until + S;
    let mut res = grants(&new, 7);
    res[AT] = grants(&old, 7)[AT];
    let mixed = packet(&new, &res, later);
    assert_eq!(alone(&mut router, &mixed, later), Verdict::Drop(DropReason::BadMac));
    // Nor does a packet all under the old keys, which verified before the rotation: its A_K and
    // its hop field's CMAC were cached then.
    let old_later = packet(&old, &grants(&old, 7), later);
    assert_eq!(alone(&mut router, &old_later, later), Verdict::Drop(DropReason::BadMac));
    // Under the new keys throughout, the same reservation verifies (and is cached anew).
    let current = packet(&new, &grants(&new, 7), later);
    assert!(reserved(alone(&mut router, &current, later)));
    assert!(reserved(alone(&mut router, &current, later + 1000)));
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 1, inserts: 2, mac_recalls: 1 });
}

/// Against construction direction, the candidate MAC's first two bytes enter the hop field's
/// CMAC input (chained into the SegID): a packet whose AggMAC differs there has another input;
/// one whose AggMAC differs only in the last four bytes has the recalled input, but the recalled
/// CMAC would not verify its candidate. Every such packet is refused with its CMAC computed, not
/// recalled (so that its time says nothing of how close its candidate came), and the valid one
/// still passes with its CMAC recalled.
#[test]
fn a_changed_agg_mac_is_refused_with_its_cmac_computed() {
    let chain = Chain::new(ASES, T0 - 60);
    let mut router = chain.router(AT, params());
    let pkt = packet(&chain, &grants(&chain, 7), NOW);
    assert!(reserved(alone(&mut router, &pkt, NOW)));
    assert!(reserved(alone(&mut router, &pkt, NOW + 1000)));
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 1, inserts: 1, mac_recalls: 1 });
    let view = ScionView::new_checked(&pkt[..]).unwrap();
    let path = view.path_range();
    let flyover = aviary_hummingbird::path_view::HbirdPathView::new_checked(&pkt[path.clone()]).unwrap();
    let agg = path.start + flyover.current_hop_offset() + field::flyover::MAC.start;
    for byte in 0..6 {
        for bit in [0, 7] {
            let mut forged = pkt.clone();
            forged[agg + byte] ^= 1 << bit;
            let recalls = router.auth_key_cache_counters().mac_recalls;
            assert_eq!(
                alone(&mut router, &forged, NOW + 2000),
                Verdict::Drop(DropReason::BadMac),
                "AggMAC byte {byte}"
            );
            assert_eq!(router.auth_key_cache_counters().mac_recalls, recalls, "AggMAC byte {byte} recalled");
        }
    }
    // The hop field's expiry extended, its AggMAC kept: the candidate is the verified MAC, but
    // the CMAC input is not the recalled one.
    let mut extended = pkt.clone();
    extended[agg - field::flyover::MAC.start + aviary_scion::wire::path::field::hop::EXP_TIME] += 1;
    assert_eq!(alone(&mut router, &extended, NOW + 2000), Verdict::Drop(DropReason::BadMac));
    assert!(reserved(alone(&mut router, &pkt, NOW + 3000)));
    assert_eq!(router.auth_key_cache_counters(), AuthKeyCacheCounters { hits: 15, inserts: 1, mac_recalls: 2 });
}
