//! Rotating an on-path AS's `K_k`: allocations issued under the replaced key keep passing its
//! router until the rotation's deadline and are refused as `bad_hop_authenticator` after it;
//! new allocations pass from the rotation on; a packet neither key made is refused throughout;
//! `previous_key_packets` counts the packets only the old key verified.

use aviary_glwp::{hop_key, testbed, AidMonitor, Freshness, GlwpDrop, Router, SourceAllocation};
use aviary_qos::{Admission, DuplicateFilter, DuplicateFilterConfig, Processor, Verdict};
use aviary_scion::IsdAsn;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_700_000_000 * S;
const SRC: IsdAsn = testbed::SRC_IA;
/// The master secrets of AS 1 before and after the rotation, and AS 2's.
const OLD_MASTER: [u8; 32] = [0x0a; 32];
const NEW_MASTER: [u8; 32] = [0x0b; 32];
const AS2: [u8; 16] = [0x22; 16];
/// Source leaves on 1; AS 1 (the router under test) enters on 2, leaves on 3; AS 2 enters on 4.
const PATH: [(u16, u16); 3] = [(0, 1), (2, 3), (4, 0)];
const FRESH: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };
/// The old key's deadline.
const UNTIL: u64 = NOW + 60 * S;
const TS_EXP: u32 = (NOW / S) as u32 + 3600;
const FORWARDED: Verdict = Verdict::forward(3, Admission::GUARANTEED);

fn bad_ha() -> Verdict {
    Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason())
}

/// AS 1's router, started under the old master secret and rotated to the new one at `UNTIL`.
fn rotated() -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 3 * S, expected_per_window: 10_000, false_positive_rate: 1e-9 },
        [9; 16],
    )
    .unwrap();
    let mut r = Router::new(&hop_key::as_secret(&OLD_MASTER), FRESH, AidMonitor::new(64, 60_000, 7), dups);
    // As the border router's key rotation calls it, with the master secret.
    Processor::rotate_secret(&mut r, &NEW_MASTER, UNTIL);
    r
}

/// An allocation of AS 1 under `master`'s `K_k`.
fn allocation(aid: u64, master: &[u8]) -> SourceAllocation {
    testbed::allocation(SRC, &PATH, (aid, 1000, TS_EXP), &[hop_key::as_secret(master), AS2])
}

fn packet(a: &SourceAllocation, ts_pkt: u64) -> Vec<u8> {
    a.packet(&testbed::addresses(SRC), ts_pkt, &[0x5a; 100]).unwrap()
}

fn counter(r: &Router, name: &str) -> Option<u64> {
    let mut found = None;
    r.counters(&mut |n, v| {
        if n == name {
            found = Some(v);
        }
    });
    found
}

#[test]
fn old_allocations_pass_until_the_deadline_and_new_ones_from_the_rotation_on() {
    let (old, new) = (allocation(1, &OLD_MASTER), allocation(2, &NEW_MASTER));
    let mut r = rotated();
    assert_eq!(counter(&r, "previous_key_packets"), Some(0), "reported before any packet");
    assert_eq!(r.process(&mut packet(&new, NOW), 2, NOW), FORWARDED);
    assert_eq!(r.process(&mut packet(&old, NOW + 1), 2, NOW), FORWARDED);
    let just_before = UNTIL - 1;
    assert_eq!(r.process(&mut packet(&old, just_before), 2, just_before), FORWARDED);
    assert_eq!(r.stats.previous_key_packets, 2, "only the old key's packets");
    assert_eq!(r.process(&mut packet(&old, UNTIL), 2, UNTIL), bad_ha());
    assert_eq!(r.process(&mut packet(&new, UNTIL + 1), 2, UNTIL), FORWARDED);
    assert_eq!(r.stats.forwarded, 4);
    assert_eq!(r.stats.drops.get(GlwpDrop::BadHopAuthenticator.reason()), 1);
    assert_eq!(counter(&r, "previous_key_packets"), Some(2));
}

#[test]
fn a_router_not_rotated_refuses_the_new_key_and_one_rotated_twice_the_first_key() {
    let new = allocation(2, &NEW_MASTER);
    let mut r = rotated();
    let third = [0x0c; 32];
    Processor::rotate_secret(&mut r, &third, UNTIL);
    // The first key is forgotten at once; the second verifies as the previous one.
    assert_eq!(r.process(&mut packet(&allocation(1, &OLD_MASTER), NOW), 2, NOW), bad_ha());
    assert_eq!(r.process(&mut packet(&new, NOW + 1), 2, NOW), FORWARDED);
    assert_eq!(r.process(&mut packet(&allocation(3, &third), NOW + 2), 2, NOW), FORWARDED);
    assert_eq!(r.stats.previous_key_packets, 1);
}

#[test]
fn a_batch_mixes_old_and_new_keys_and_counts_the_old_ones() {
    let (old, new) = (allocation(1, &OLD_MASTER), allocation(2, &NEW_MASTER));
    let mut r = rotated();
    let mut pkts: Vec<Vec<u8>> = (0..8).map(|i| packet(if i % 3 == 0 { &old } else { &new }, NOW + i)).collect();
    // A replay of an old-key packet: verified under the old key (counted), then suppressed.
    pkts.push(pkts[0].clone());
    let mut refs: Vec<&mut [u8]> = pkts.iter_mut().map(|p| p.as_mut_slice()).collect();
    let mut verdicts = vec![Verdict::Deliver; refs.len()];
    r.process_batch(&mut refs, 2, NOW, &mut verdicts);
    assert!(verdicts[..8].iter().all(|v| *v == FORWARDED), "{verdicts:?}");
    assert_eq!(verdicts[8], Verdict::Drop(aviary_qos::DropReason::Duplicate));
    assert_eq!(r.stats.previous_key_packets, 4);
}

proptest! {
    /// A packet whose hop authenticator for AS 1 neither key made (any value other than the
    /// old or the new key's) is refused, before and after the deadline, and never counted as
    /// an old-key packet.
    #[test]
    fn a_forged_authenticator_fails_under_both_keys(
        forged_key in any::<[u8; 16]>(),
        after_deadline in any::<bool>(),
    ) {
        let (old, new) = (allocation(1, &OLD_MASTER), allocation(2, &NEW_MASTER));
        prop_assume!(forged_key != old.hop_keys[0] && forged_key != new.hop_keys[0]);
        let mut forged = old.clone();
        forged.hop_keys[0] = forged_key;
        let now = if after_deadline { UNTIL } else { NOW };
        let mut r = rotated();
        prop_assert_eq!(r.process(&mut packet(&forged, now), 2, now), bad_ha());
        prop_assert_eq!(r.stats.previous_key_packets, 0);
    }
}
