//! Router validation (Alg. 2) against the properties of §III-C: tampered values are detected
//! (F5), overuse is cut back to β (F4), hop keys fail on another path (F6), replays are
//! suppressed without charging the source (F8); malformed packets are dropped with counted
//! reasons; nothing panics.

use aviary_glwp::header::field;
use aviary_glwp::packet::path_len;
use aviary_glwp::{testbed, AidMonitor, Freshness, GlwpDrop, Router, SourceAllocation};
use aviary_qos::{Admission, DropReason, DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::IsdAsn;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_700_000_000 * S;
const SRC: IsdAsn = testbed::SRC_IA;
const SECRETS: [[u8; 16]; 2] = [[0x11; 16], [0x22; 16]];
/// Source leaves on 1; AS 1 enters on 2, leaves on 3; AS 2 (the destination) enters on 4.
const PATH: [(u16, u16); 3] = [(0, 1), (2, 3), (4, 0)];
const FRESH: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };

struct Alloc {
    aid: u64,
    beta_kbps: u32,
    ts_exp: u32,
}

const ALLOC: Alloc = Alloc { aid: 0xa1d0_0000_0000_0001, beta_kbps: 8_000, ts_exp: 1_700_003_600 };

fn hop_keys(secrets: &[[u8; 16]], path: &[(u16, u16)], a: &Alloc) -> Vec<[u8; 16]> {
    testbed::allocation(SRC, path, (a.aid, a.beta_kbps, a.ts_exp), secrets).hop_keys
}

/// A SCION packet of path type GLWP on `path`, stamped with `keys`.
fn packet(path: &[(u16, u16)], a: &Alloc, keys: &[[u8; 16]], ts_pkt: u64, payload_len: usize) -> Vec<u8> {
    let source = SourceAllocation {
        path: path.to_vec(),
        aid: a.aid,
        beta: a.beta_kbps,
        ts_exp: a.ts_exp,
        hop_keys: keys.to_vec(),
    };
    source.packet(&testbed::addresses(SRC), ts_pkt, &vec![0x5a; payload_len]).unwrap()
}

fn router(secret: &[u8; 16], burst: u16) -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig {
            window_ns: FRESH.lifetime_ns + 2 * FRESH.skew_ns,
            expected_per_window: 10_000,
            false_positive_rate: 1e-9,
        },
        [9; 16],
    )
    .unwrap();
    Router::new(secret, FRESH, AidMonitor::new(64, burst, 0x1234_5678_9abc_def1), dups)
}

fn routers() -> [Router; 2] {
    [router(&SECRETS[0], 9000), router(&SECRETS[1], 9000)]
}

fn honest(ts_pkt: u64) -> Vec<u8> {
    packet(&PATH, &ALLOC, &hop_keys(&SECRETS, &PATH, &ALLOC), ts_pkt, 100)
}

#[test]
fn an_honest_packet_crosses_every_on_path_as() {
    let [mut r1, mut r2] = routers();
    let mut pkt = honest(NOW);
    assert_eq!(r1.process(&mut pkt, 2, NOW), Verdict::forward(3, Admission::GUARANTEED));
    assert_eq!(r2.process(&mut pkt, 4, NOW + 1000), Verdict::Deliver);
    assert_eq!((r1.stats.forwarded, r2.stats.delivered), (1, 1));
    // Both hops traversed: nobody validates it again.
    assert_eq!(r2.process(&mut pkt, 4, NOW + 2000), Verdict::Drop(GlwpDrop::PathComplete.reason()));
}

/// The source AS's router sends its own hosts' packets out on j_0, within β, without replays,
/// and leaves the hop pointer for AS 1; nobody else's packets leave as GLWP from inside.
#[test]
fn the_source_as_sends_its_hosts_packets_within_beta() {
    let pkt = honest(NOW);
    let mut source = router(&[0x33; 16], pkt.len() as u16).with_source_as(SRC);
    let mut first = pkt.clone();
    assert_eq!(source.process(&mut first, 0, NOW), Verdict::forward(1, Admission::GUARANTEED));
    assert_eq!(first, pkt, "the hop pointer stays at 0");
    let [mut r1, _] = routers();
    assert_eq!(r1.process(&mut first, 2, NOW), Verdict::forward(3, Admission::GUARANTEED));
    let mut replay = pkt.clone();
    assert_eq!(source.process(&mut replay, 0, NOW + 10), Verdict::Drop(DropReason::Duplicate));
    // A burst of one packet: the next one at once is over β.
    let mut next = honest(NOW + 20);
    assert_eq!(source.process(&mut next, 0, NOW + 20), Verdict::Drop(GlwpDrop::Overuse.reason()));
    // Another AS's name from inside, and any GLWP from inside a router that sends none.
    let mut foreign = router(&[0x33; 16], 9000).with_source_as(IsdAsn::new(1, 0xff00_0000_0999));
    assert_eq!(foreign.process(&mut pkt.clone(), 0, NOW), Verdict::Drop(DropReason::BadSrcIa));
    assert_eq!(r1.process(&mut honest(NOW + 30), 0, NOW + 30), Verdict::Drop(DropReason::BadSrcIa));
    // π must start at the source's local interface.
    let bad_path: [(u16, u16); 3] = [(7, 1), (2, 3), (4, 0)];
    let mut bad = packet(&bad_path, &ALLOC, &hop_keys(&SECRETS, &bad_path, &ALLOC), NOW + 40, 100);
    let mut source = router(&[0x33; 16], 9000).with_source_as(SRC);
    assert_eq!(source.process(&mut bad, 0, NOW + 40), Verdict::Drop(DropReason::MalformedPath));
}

/// F6: hop keys issued for one path fail on another, even through the same AS.
#[test]
fn hop_keys_fail_on_another_path() {
    let other: [(u16, u16); 3] = [(0, 1), (2, 5), (6, 0)];
    let keys = hop_keys(&SECRETS, &other, &ALLOC);
    let [mut r1, _] = routers();
    // The keys of path `other`, used on `PATH`.
    let mut pkt = packet(&PATH, &ALLOC, &keys, NOW, 100);
    assert_eq!(r1.process(&mut pkt, 2, NOW), Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason()));
    // Keys of another AS's secret.
    let mut pkt = packet(&PATH, &ALLOC, &hop_keys(&[SECRETS[1], SECRETS[0]], &PATH, &ALLOC), NOW + 1, 100);
    assert_eq!(r1.process(&mut pkt, 2, NOW), Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason()));
    assert_eq!(r1.stats.drops.get(GlwpDrop::BadHopAuthenticator.reason()), 2);
}

/// F8: a replay within the window is suppressed and not charged to the source.
#[test]
fn replays_are_suppressed_without_charging_the_source() {
    // A burst of exactly one packet (and 8 Mbit/s = 1 byte/ns ÷ 1000: nothing refills in 1 µs).
    let pkt = honest(NOW);
    let mut r1 = router(&SECRETS[0], pkt.len() as u16);
    let mut first = pkt.clone();
    assert!(matches!(r1.process(&mut first, 2, NOW), Verdict::Forward { .. }));
    for t in [NOW + 100, NOW + S / 2] {
        let mut replay = pkt.clone();
        assert_eq!(r1.process(&mut replay, 2, t), Verdict::Drop(DropReason::Duplicate));
    }
    assert_eq!(r1.stats.drops.get(DropReason::Duplicate), 2);
    assert_eq!(r1.stats.drops.get(GlwpDrop::Overuse.reason()), 0, "replays never reach the monitor");
    // The source's next packet, once the bucket has refilled, is admitted.
    let mut next = honest(NOW + S / 2);
    assert!(matches!(r1.process(&mut next, 2, NOW + S / 2), Verdict::Forward { .. }));
}

/// F4: a source sending at twice its β gets through at most β·t + burst.
#[test]
fn overuse_is_detected_and_cut_back_to_beta() {
    let len = honest(NOW).len() as u64;
    let burst = 3000u16;
    let mut r1 = router(&SECRETS[0], burst);
    let keys = hop_keys(&SECRETS, &PATH, &ALLOC);
    let beta_bytes_per_s = u64::from(ALLOC.beta_kbps) * 1000 / 8;
    // Twice β for one second.
    let gap = len * S / (2 * beta_bytes_per_s);
    let (mut admitted, mut sent) = (0u64, 0u64);
    let mut t = NOW;
    while t < NOW + S {
        let mut pkt = packet(&PATH, &ALLOC, &keys, t, 100);
        sent += 1;
        if matches!(r1.process(&mut pkt, 2, t), Verdict::Forward { .. }) {
            admitted += len;
        }
        t += gap;
    }
    let elapsed = t - gap - NOW;
    assert!(admitted <= beta_bytes_per_s * elapsed / S + u64::from(burst), "{admitted} bytes");
    assert!(admitted >= beta_bytes_per_s * elapsed / S * 9 / 10, "β itself gets through: {admitted}");
    assert_eq!(r1.stats.drops.get(GlwpDrop::Overuse.reason()), sent - admitted / len);
    // Another allocation through the same AS is untouched by this source's overuse.
    let other = Alloc { aid: 2, ..ALLOC };
    let mut pkt = packet(&PATH, &other, &hop_keys(&SECRETS, &PATH, &other), t, 100);
    assert!(matches!(r1.process(&mut pkt, 2, t), Verdict::Forward { .. }));
}

/// A change made to an honest packet.
type Mangle = Box<dyn Fn(&mut Vec<u8>)>;

#[test]
fn malformed_and_invalid_packets_are_dropped_with_counted_reasons() {
    let cases: Vec<(&str, Mangle, u16, u64, DropReason)> = vec![
        ("path type", Box::new(|p: &mut Vec<u8>| p[8] = 1), 2, NOW, DropReason::UnsupportedPathType),
        ("truncated", Box::new(|p: &mut Vec<u8>| p.truncate(20)), 2, NOW, DropReason::Truncated),
        ("src", Box::new(|p: &mut Vec<u8>| p[27] ^= 1), 2, NOW, DropReason::BadSrcIa),
        ("ingress", Box::new(|_: &mut Vec<u8>| {}), 3, NOW, DropReason::BadIngress),
        ("stale", Box::new(|_: &mut Vec<u8>| {}), 2, NOW + 2 * S, GlwpDrop::TimestampExpired.reason()),
        ("future", Box::new(|_: &mut Vec<u8>| {}), 2, NOW - 2 * S, GlwpDrop::TimestampFuture.reason()),
    ];
    for (name, mangle, ingress, now, want) in cases {
        let [mut r1, _] = routers();
        let mut pkt = honest(NOW);
        mangle(&mut pkt);
        assert_eq!(r1.process(&mut pkt, ingress, now), Verdict::Drop(want), "{name}");
        assert_eq!((r1.stats.drops.get(want), r1.stats.drops.total()), (1, 1), "{name}");
    }
    // An allocation that expires before a packet sent now could arrive.
    let soon = Alloc { ts_exp: (NOW / S) as u32 + 1, ..ALLOC };
    let mut pkt = packet(&PATH, &soon, &hop_keys(&SECRETS, &PATH, &soon), NOW, 100);
    let [mut r1, _] = routers();
    assert_eq!(r1.process(&mut pkt, 2, NOW), Verdict::Drop(GlwpDrop::AllocationExpired.reason()));
    // A path whose middle AS claims the local interface.
    let bad = [(0, 1), (2, 0), (4, 0)];
    let mut pkt = packet(&bad, &ALLOC, &hop_keys(&SECRETS, &bad, &ALLOC), NOW, 100);
    assert_eq!(r1.process(&mut pkt, 2, NOW), Verdict::Drop(DropReason::MalformedPath));
}

/// Byte ranges of the packet that on-path AS 1's hop authenticator covers: Src, its pair, β,
/// AID, ts_pkt, ts_exp, HA_1; and the packet length.
fn covered_by_as1(pkt: &[u8]) -> Vec<usize> {
    let path = pkt.len() - 100 - path_len(2);
    let after = path + field::pair(3).start;
    let mut at: Vec<usize> = field::SRC.map(|i| path + i).collect();
    at.extend(field::pair(1).map(|i| path + i));
    at.extend((after..after + field::after_path::HA + field::HA_LEN).collect::<Vec<_>>());
    at
}

proptest! {
    /// F5: any change to a value AS 1's hop authenticator binds is detected there.
    #[test]
    fn tampering_is_detected(pick in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut pkt = honest(NOW);
        let covered = covered_by_as1(&pkt);
        let at = covered[pick.index(covered.len())];
        pkt[at] ^= flip;
        let [mut r1, _] = routers();
        let v = r1.process(&mut pkt, 2, NOW);
        prop_assert!(matches!(v, Verdict::Drop(_)), "byte {} flipped: {:?}", at, v);
        prop_assert_eq!(r1.stats.drops.total(), 1);
    }

    /// Changing the packet's length (padding the payload) is detected too.
    #[test]
    fn a_changed_length_is_detected(extra in 1usize..64) {
        let pkt = honest(NOW);
        let mut longer = packet(&PATH, &ALLOC, &hop_keys(&SECRETS, &PATH, &ALLOC), NOW, 100 + extra);
        let hdr = pkt.len() - 100;
        longer[hdr - path_len(2)..hdr].copy_from_slice(&pkt[hdr - path_len(2)..hdr]);
        let [mut r1, _] = routers();
        prop_assert_eq!(r1.process(&mut longer, 2, NOW), Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason()));
    }

    /// Arbitrary bytes, and honest packets with arbitrary bytes changed, never panic; every
    /// packet is either forwarded, delivered or counted as a drop.
    #[test]
    fn every_packet_is_accounted_for(
        junk in prop::collection::vec(any::<u8>(), 0..200),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        ingress in 0u16..6,
    ) {
        let [mut r1, _] = routers();
        let mut junk = junk;
        r1.process(&mut junk, ingress, NOW);
        let mut pkt = honest(NOW);
        for (i, b) in edits {
            let n = pkt.len();
            pkt[i.index(n)] = b;
        }
        r1.process(&mut pkt, ingress, NOW);
        prop_assert_eq!(r1.stats.drops.total() + r1.stats.forwarded + r1.stats.delivered, 2);
    }
}
