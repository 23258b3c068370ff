//! Matrix updates (§V-C): an AS that changes its matrix announces it, promotes the old values
//! before t_1, the temporary ones in [t_1, t_2) and the new ones from t_2, and its neighbours
//! accept every one of them; an AS that promotes other values than it announced, or never
//! announced, or announces contradicting rows, is refused and blamed (F2). Announcements are
//! authenticated, fresh, not replayable and rate limited.

use std::collections::BTreeMap;

use aviary_glwp::discovery::{BlamePolicy, BlameReason, DiscoveryDrop, Neighbourhood, Promoted};
use aviary_glwp::schedule::ChangeWindow;
use aviary_glwp::testbed::discovery::{self as chain, Chain, Failure, HopSpec, ANNOUNCEMENTS, FRESHNESS, JOINED_NS};
use aviary_glwp::{guarantee, HopValues};

const S: u64 = 1_000_000_000;
const DAY: u64 = 86_400 * S;

fn specs() -> [HopSpec; 4] {
    [
        HopSpec { m_bps: 4_000_000_000, extra_div_bps: 1_000_000_000, extra_con_bps: 0 },
        HopSpec { m_bps: 3_000_000_000, extra_div_bps: 500_000_000, extra_con_bps: 2_000_000_000 },
        HopSpec { m_bps: 2_000_000_000, extra_div_bps: 2_000_000_000, extra_con_bps: 100_000_000 },
        HopSpec { m_bps: 5_000_000_000, extra_div_bps: 0, extra_con_bps: 1_000_000_000 },
    ]
}

/// AS 2 changes its entry down and its off-path pairs up, announced at `at`.
fn change_as2(chain: &mut Chain, at: u64) -> (ChangeWindow, HopSpec) {
    let new = HopSpec { m_bps: 1_500_000_000, extra_div_bps: 3_000_000_000, extra_con_bps: 400_000_000 };
    let window = chain.neighbourhood(2).change_matrix(chain::matrix(new, chain::pair(2, 4)).unwrap(), at).unwrap();
    assert!(chain.announce(at + 1).iter().all(|(_, _, r)| r.is_ok()), "announcements refused");
    (window, new)
}

fn beta_bps(specs: &[HopSpec]) -> u64 {
    let mut c = Chain::new(specs, 0).unwrap();
    guarantee(&c.hop_values()).min(c.discover(JOINED_NS).map(|a| u64::from(a.beta) * 1000).unwrap_or(u64::MAX))
}

#[test]
fn a_legitimate_update_is_accepted_before_during_and_after_the_overlap() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    let old = chain.discover(JOINED_NS).unwrap();
    let (w, new_spec) = change_as2(&mut chain, JOINED_NS + 10 * S);
    assert_eq!(w.t2_ns - w.t1_ns, DAY, "ΔT is the allocation lifetime");
    assert!(w.t1_ns >= JOINED_NS + 10 * S + FRESHNESS.lifetime_ns + FRESHNESS.skew_ns, "announced ahead");

    let before = chain.discover(w.t1_ns - 1).unwrap();
    assert_eq!(before.beta, old.beta, "old values until t_1");

    let during = chain.discover(w.t1_ns).unwrap();
    let mut new_specs = specs();
    new_specs[2] = new_spec;
    let new_beta = beta_bps(&new_specs);
    let during_bps = u64::from(during.beta) * 1000;
    assert!(during_bps <= u64::from(old.beta) * 1000 && during_bps <= new_beta, "temporary β ≤ old and new");
    let late = chain.discover(w.t2_ns - 1).unwrap();
    assert_eq!(late.beta, during.beta);

    let after = chain.discover(w.t2_ns).unwrap();
    assert_eq!(u64::from(after.beta) * 1000, new_beta, "new values from t_2");
    for k in 0..4 {
        assert!(chain.neighbourhood(k).blames().is_empty(), "AS {k} blamed someone");
    }
}

#[test]
fn the_temporary_values_are_the_safe_side_of_old_and_new() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    let (w, new_spec) = change_as2(&mut chain, JOINED_NS + S);
    let p = chain::pair(2, 4);
    let old = chain::matrix(specs()[2], p).unwrap().hop_values(p.0, p.1);
    let new = chain::matrix(new_spec, p).unwrap().hop_values(p.0, p.1);
    let temp = chain.neighbourhood(2).schedule().hop_values(p.0, p.1, w.t1_ns);
    assert_eq!(temp, HopValues::during_update(old, new));
}

#[test]
fn a_neighbour_promoting_unannounced_values_is_refused_and_blamed() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    // AS 2 changes its matrix in place without announcing it.
    let mut changed = specs();
    changed[2].m_bps -= 1;
    let other = Chain::new(&changed, 0).unwrap();
    chain.on_path[1] = other.on_path.into_iter().nth(1).unwrap();
    assert_eq!(
        chain.discover(JOINED_NS + S),
        Err(Failure::Dropped { position: 3, drop: DiscoveryDrop::InconsistentNeighbour }),
        "AS 3, the first on the return path, checks AS 2"
    );
    let blame = chain.neighbourhood(3).blames()[&chain::ia(2)];
    assert_eq!((blame.count(BlameReason::InconsistentValues), blame.last), (1, BlameReason::InconsistentValues));

    // A neighbourhood that never heard from AS 2 (it or AS 2 has just started) refuses what it
    // promotes as not yet known, without blame.
    let mut deaf = Neighbourhood::new(
        chain::matrix(specs()[1], chain::pair(1, 4)).unwrap(),
        BTreeMap::from([(11, chain::ia(0)), (21, chain::ia(2))]),
        aviary_glwp::discovery::DiscoveryParams { freshness: FRESHNESS, validity_s: 86_400, min_guarantee_bps: 0 },
        ANNOUNCEMENTS,
    );
    let hv = chain.hop_values()[2];
    let promoted = |facing| Promoted {
        neighbour: chain::ia(2),
        ours: 21,
        pair: (facing, chain::pair(2, 4).1),
        facing,
        values: hv,
        ts_pkt: JOINED_NS,
    };
    assert_eq!(deaf.check_promoted(&promoted(12), JOINED_NS), Err(DiscoveryDrop::NotAnnounced));
    assert!(deaf.blames().is_empty(), "blamed for what it had no chance to announce");

    // One that announced its link but promotes values over another link is blamed.
    let mut heard = Chain::new(&specs(), 0).unwrap();
    assert!(heard.neighbourhood(1).has_heard(chain::ia(2)));
    assert_eq!(heard.neighbourhood(1).check_promoted(&promoted(99), JOINED_NS), Err(DiscoveryDrop::NotAnnounced));
    assert_eq!(heard.neighbourhood(1).blames()[&chain::ia(2)].last, BlameReason::Unannounced);
}

#[test]
fn repeated_blame_holds_a_neighbour_down_until_it_ends_or_is_cleared() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    let policy = BlamePolicy { blames: 2, window_ns: 60 * S, hold_down_ns: 300 * S };
    chain.neighbourhood(3).set_blame_policy(policy);
    // AS 2 changes its matrix in place without announcing it: AS 3 blames it for each response.
    let mut changed = specs();
    changed[2].m_bps -= 1;
    chain.on_path[1] = Chain::new(&changed, 0).unwrap().on_path.into_iter().nth(1).unwrap();
    let inconsistent = Err(Failure::Dropped { position: 3, drop: DiscoveryDrop::InconsistentNeighbour });
    let held = Err(Failure::Dropped { position: 3, drop: DiscoveryDrop::NeighbourHeldDown });
    assert_eq!(chain.discover(JOINED_NS + S), inconsistent);
    assert_eq!(chain.discover(JOINED_NS + 2 * S), inconsistent);
    // The second blame within the window: AS 3 now refuses the request itself.
    assert_eq!(chain.discover(JOINED_NS + 3 * S), held);
    let blame = chain.neighbourhood(3).blames()[&chain::ia(2)];
    assert_eq!((blame.hold_downs, blame.held_until_ns), (1, JOINED_NS + 2 * S + 300 * S));
    // The operator clears it; the neighbour is checked (and blamed) again.
    assert!(chain.neighbourhood(3).clear_hold_down(chain::ia(2), JOINED_NS + 4 * S));
    assert_eq!(chain.discover(JOINED_NS + 5 * S), inconsistent);
    // Blames decay: one more, a window later, is not enough.
    assert_eq!(chain.discover(JOINED_NS + 70 * S), inconsistent);
    assert_eq!(chain.neighbourhood(3).blames()[&chain::ia(2)].hold_downs, 1);
}

#[test]
fn contradicting_announcements_are_refused_and_blamed() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    // AS 2 restarts with another matrix and announces it as if it had always had it.
    let mut changed = specs();
    changed[2].extra_div_bps += 7;
    let other = Chain::new(&changed, 0).unwrap();
    chain.on_path[1] = other.on_path.into_iter().nth(1).unwrap();
    let results = chain.announce(JOINED_NS + 2 * S);
    let from_2: Vec<_> = results.iter().filter(|(k, _, _)| *k == 2).map(|(_, r, res)| (*r, *res)).collect();
    assert_eq!(
        from_2,
        vec![(1, Err(DiscoveryDrop::ContradictingAnnouncement)), (3, Err(DiscoveryDrop::ContradictingAnnouncement))]
    );
    assert_eq!(chain.neighbourhood(1).blames()[&chain::ia(2)].last, BlameReason::ContradictingAnnouncement);
    // Re-sent (as every second), the same contradiction is refused but blamed once: one offence.
    let again = chain.announce(JOINED_NS + 3 * S);
    assert!(again
        .iter()
        .filter(|(k, _, _)| *k == 2)
        .all(|(_, _, r)| *r == Err(DiscoveryDrop::ContradictingAnnouncement)));
    assert_eq!(chain.neighbourhood(1).blames()[&chain::ia(2)].count(BlameReason::ContradictingAnnouncement), 1);

    // A second change before the first one is over rewrites what the first promised.
    let mut chain = Chain::new(&specs(), 0).unwrap();
    let (w, _) = change_as2(&mut chain, JOINED_NS + S);
    let mut again = specs()[2];
    again.m_bps /= 2;
    let again = chain::matrix(again, chain::pair(2, 4)).unwrap();
    assert!(chain.neighbourhood(2).change_matrix(again.clone(), w.t1_ns).is_err(), "the schedule refuses");
    // A forged schedule that forgets the first change is blamed.
    let mut forged = Chain::new(&specs(), 0).unwrap().neighbourhood(2).clone();
    forged.change_matrix(again, JOINED_NS + 3 * S).unwrap();
    chain.on_path[1].neighbourhood = forged;
    let res = chain.announce(JOINED_NS + 4 * S);
    assert!(res.iter().any(|(k, r, res)| (*k, *r) == (2, 1) && *res == Err(DiscoveryDrop::ContradictingAnnouncement)));
}

#[test]
fn announcements_are_authenticated_fresh_unreplayable_and_rate_limited() {
    let mut chain = Chain::new(&specs(), 0).unwrap();
    let now = JOINED_NS + 10 * S;
    let sent = chain.neighbourhood(2).announcements(&chain::keys(2, 4), now);
    let (to, _, bytes) = sent.iter().find(|(to, _, _)| *to == chain::ia(1)).unwrap().clone();
    assert_eq!(to, chain::ia(1));
    let keys1 = chain::keys(1, 4);
    let nb = chain.neighbourhood(1);
    let mut flipped = bytes.clone();
    flipped[40] ^= 1;
    assert_eq!(nb.receive(&flipped, chain::ia(2), &keys1, now), Err(DiscoveryDrop::BadAuthenticator));
    assert_eq!(nb.receive(&bytes, chain::ia(0), &keys1, now), Err(DiscoveryDrop::BadAuthenticator), "wrong sender");
    assert_eq!(nb.receive(&bytes, chain::ia(3), &keys1, now), Err(DiscoveryDrop::WrongNeighbour));
    assert_eq!(nb.receive(&bytes, chain::ia(2), &keys1, now + 2 * S), Err(DiscoveryDrop::TimestampExpired));
    nb.receive(&bytes, chain::ia(2), &keys1, now).unwrap();
    assert_eq!(nb.receive(&bytes, chain::ia(2), &keys1, now), Err(DiscoveryDrop::Replayed));
    assert_eq!(nb.receive(&bytes[..10], chain::ia(2), &keys1, now), Err(DiscoveryDrop::Truncated));
    // The burst is spent (the chain's own announcements took one): more are dropped before
    // their MAC is checked, until the bucket refills.
    let mut refused = 0;
    for n in 0..10 {
        let sent = chain.neighbourhood(2).announcements(&chain::keys(2, 4), now + n);
        let bytes = &sent.iter().find(|(to, _, _)| *to == chain::ia(1)).unwrap().2;
        if chain.neighbourhood(1).receive(bytes, chain::ia(2), &keys1, now + n) == Err(DiscoveryDrop::RateLimited) {
            refused += 1;
        }
    }
    assert!(refused >= 10 - ANNOUNCEMENTS.burst as usize, "only {refused} refused");
    let sent = chain.neighbourhood(2).announcements(&chain::keys(2, 4), now + 5 * S);
    let bytes = &sent.iter().find(|(to, _, _)| *to == chain::ia(1)).unwrap().2;
    assert_eq!(chain.neighbourhood(1).receive(bytes, chain::ia(2), &keys1, now + 5 * S), Ok(()));
}
