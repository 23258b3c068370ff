//! Key rotation without disruption: after a router's AS rotates its master secret, hop fields
//! and reservations issued under the old one keep verifying until the overlap ends, in any
//! mix with new ones, and are refused after it; policing and duplicate suppression carry on
//! as if nothing happened.

use aviary_hummingbird::testbed::Chain;
use aviary_hummingbird::{Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, DropReason, Verdict};

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const NOW: u64 = T0 as u64 * S + 250_000_000;
/// End of the overlap in these tests.
const UNTIL: u64 = NOW + 5 * S;
const ASES: usize = 4;

/// The chain's ASes under their old keys and under their new ones (same path, same interfaces).
fn generations() -> (Chain, Chain) {
    (Chain::with_key_generation(ASES, T0 - 60, 0), Chain::with_key_generation(ASES, T0 - 60, 1))
}

/// Every router of `old`, rotated to the secrets of `new` with an overlap until `UNTIL`.
fn rotated(old: &Chain, new: &Chain, params: RouterParams) -> Vec<Router> {
    (0..ASES)
        .map(|i| {
            let mut r = old.router(i, params);
            r.rotate_secret(&new.ases[i].master_secret, UNTIL);
            r
        })
        .collect()
}

/// A packet over the hop fields of `path_keys` with flyovers at ASes 1 and 2 (both crossovers)
/// granted by `reservations`, stamped at `sent_ns`.
fn flyover_packet(path_keys: &Chain, reservations: &[(usize, Reservation)], sent_ns: u64) -> Vec<u8> {
    let mut pkt = path_keys.hbird_packet(reservations, (sent_ns / S) as u32, 300).unwrap();
    let res: Vec<Reservation> = reservations.iter().map(|r| r.1).collect();
    Source::new(&pkt, &res).unwrap().stamp(&mut pkt, sent_ns).unwrap();
    pkt
}

fn grants(chain: &Chain) -> [(usize, Reservation); 2] {
    [(1, chain.grant(1, 7, 600, T0 - 10, 3600)), (2, chain.grant(2, 9, 600, T0 - 10, 3600))]
}

/// The packet through every router at `now`: the verdicts and the packet as it arrives.
fn travel(routers: &mut [Router], mut pkt: Vec<u8>, now: u64) -> (Vec<Verdict>, Vec<u8>) {
    let mut verdicts = Vec::new();
    for (i, r) in routers.iter_mut().enumerate() {
        let v = r.process(&mut pkt, Chain::forward_ingress(i), now);
        verdicts.push(v);
        if !matches!(v, Verdict::Forward { .. }) {
            break;
        }
    }
    (verdicts, pkt)
}

#[test]
fn old_and_new_keys_verify_during_the_overlap_and_old_ones_are_refused_after_it() {
    let (old, new) = generations();
    // Reference: the old-key packets through routers that never rotated.
    let reference = |pkt: Vec<u8>| {
        let mut never_rotated: Vec<Router> = (0..ASES).map(|i| old.router(i, RouterParams::default())).collect();
        travel(&mut never_rotated, pkt, NOW)
    };
    let standard_old = old.standard_packet(200);
    let flyover_old = flyover_packet(&old, &grants(&old), NOW);
    let (expect_std, arrived_std) = reference(standard_old.clone());
    let (expect_fly, arrived_fly) = reference(flyover_old.clone());
    assert_eq!(expect_fly[1..3], [Verdict::forward(1, Admission::RESERVED); 2]);

    let mut routers = rotated(&old, &new, RouterParams::default());
    // Old-key packets come out exactly as from the old routers: the retry under the previous
    // key chained SegIDs from the packet's own values (the up and core segments are against
    // construction direction, and ASes 1 and 2 are crossovers).
    assert_eq!(travel(&mut routers, standard_old.clone(), NOW), (expect_std, arrived_std));
    assert_eq!(travel(&mut routers, flyover_old.clone(), NOW), (expect_fly.clone(), arrived_fly));
    // New-key packets go the same way.
    let (v, _) = travel(&mut routers, new.standard_packet(200), NOW);
    assert!(matches!(v[..], [.., Verdict::Deliver]), "{v:?}");
    let (v, _) = travel(&mut routers, flyover_packet(&new, &grants(&new), NOW), NOW);
    assert_eq!(v, expect_fly);
    // Each router verified the two old-key packets with its previous keys.
    assert!(routers.iter().all(|r| r.previous_key_packets() == 2));

    // The overlap is over: old hop fields are refused at the first AS with the usual reason,
    // new ones still pass.
    let later = UNTIL;
    assert_eq!(travel(&mut routers, standard_old, later).0, [Verdict::Drop(DropReason::BadMac)]);
    assert_eq!(travel(&mut routers, flyover_old, later).0, [Verdict::Drop(DropReason::BadMac)]);
    let (v, _) = travel(&mut routers, new.standard_packet(200), later);
    assert!(matches!(v[..], [.., Verdict::Deliver]), "{v:?}");
}

#[test]
fn hop_fields_and_reservations_of_different_generations_mix_during_the_overlap() {
    let (old, new) = generations();
    let mut routers = rotated(&old, &new, RouterParams::default());
    // Paths from before the rotation with reservations sold after it, and the reverse: the
    // control service and the AS service switch keys at different moments.
    for (path, res) in [(&old, grants(&new)), (&new, grants(&old))] {
        let (v, _) = travel(&mut routers, flyover_packet(path, &res, NOW), NOW);
        assert_eq!(v[1..3], [Verdict::forward(1, Admission::RESERVED); 2]);
        assert_eq!(v[3], Verdict::Deliver);
    }
    // After the overlap the old half fails the hop at the first flyover AS.
    let (v, _) = travel(&mut routers, flyover_packet(&new, &grants(&old), UNTIL), UNTIL);
    assert_eq!(v[1], Verdict::Drop(DropReason::BadMac));
}

#[test]
fn a_forged_reservation_is_refused_under_both_keys() {
    let (old, new) = generations();
    let mut routers = rotated(&old, &new, RouterParams::default());
    for chain in [&old, &new] {
        // The packet states a larger bandwidth than AS 1 granted; the source holds the A_K of
        // the real grant. Neither SV yields that A_K for the stated reservation.
        let [mut forged, honest] = grants(chain);
        forged.1.info.bw += 1;
        let (v, _) = travel(&mut routers, flyover_packet(chain, &[forged, honest], NOW), NOW);
        assert_eq!(v[1], Verdict::Drop(DropReason::BadMac));
    }
    assert_eq!(routers[1].previous_key_packets(), 0);
}

#[test]
fn a_rotation_gives_no_fresh_budget_and_forgets_no_duplicate() {
    let (old, new) = generations();
    let params = RouterParams { duplicate_suppression: true, ..RouterParams::default() };
    // AS 1's router alone; the packets have passed AS 0.
    let mut r = old.router(1, params);
    let through_as0 = |chain: &Chain, res: &[(usize, Reservation)], sent: u64| {
        let mut pkt = flyover_packet(chain, res, sent);
        assert!(matches!(chain.router(0, params).process(&mut pkt, 0, sent), Verdict::Forward { .. }));
        pkt
    };
    // A small reservation (BW code 40: 40 kbit/s) used up by a burst of packets at one instant.
    let small = |chain: &Chain| [(1, chain.grant(1, 5, 40, T0 - 10, 3600))];
    let mut admitted = 0;
    let mut counter_ns = 0;
    loop {
        let v = r.process(&mut through_as0(&old, &small(&old), NOW + counter_ns), 2, NOW + counter_ns);
        counter_ns += 1_000_000;
        match v {
            Verdict::Forward { admission: Admission::RESERVED, .. } => admitted += 1,
            Verdict::Forward { .. } => break,
            v => panic!("{v:?}"),
        }
        assert!(admitted < 100, "the reservation is never used up");
    }
    let over_rate = r.counters().over_rate;
    assert_eq!(over_rate, 1);
    let replay = through_as0(&old, &small(&old), NOW);

    r.rotate_secret(&new.ases[1].master_secret, UNTIL);
    // Right after the rotation the reservation is still over its rate, whether its packets
    // carry the old A_K or the one the AS service now issues for the same ResID.
    let now = NOW + counter_ns;
    // (A millisecond apart: the same instant and counter would make the second a duplicate.)
    for (k, chain) in [&old, &new].into_iter().enumerate() {
        let t = now + k as u64 * 1_000_000;
        let v = r.process(&mut through_as0(chain, &small(chain), t), 2, t);
        assert_eq!(v, Verdict::forward(1, Admission::UNAUTHENTICATED));
    }
    assert_eq!(r.counters().over_rate, over_rate + 2);
    // A packet seen before the rotation is still a duplicate after it.
    let duplicates = r.counters().duplicate;
    let mut replay = replay;
    assert_eq!(r.process(&mut replay, 2, now), Verdict::forward(1, Admission::UNAUTHENTICATED));
    assert_eq!(r.counters().duplicate, duplicates + 1);
}
