//! The batched router against the one-packet router: on random mixes of valid, tampered,
//! expired, replayed, over-rate, malformed, already advanced and source-AS packets, and packets
//! under the `K_k` a rotation replaced (whose deadline falls anywhere in the run), `process_batch`
//! in batches of any size gives the verdicts, packet bytes and counters of `process` on each
//! packet in turn.

use aviary_glwp::{locate, testbed, AidMonitor, Freshness, GlwpDrop, Header, Router, SourceAllocation};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, Verdict};
use aviary_scion::IsdAsn;
use proptest::prelude::*;

const S: u64 = 1_000_000_000;
const NOW: u64 = 1_700_000_000 * S;
const SRC: IsdAsn = testbed::SRC_IA;
const SECRET: [u8; 16] = [0x11; 16];
/// `K_k` before the routers' rotation to [`SECRET`].
const OLD_SECRET: [u8; 16] = [0x33; 16];
/// Source leaves on 1; AS 1 (the router under test) enters on 2, leaves on 3; AS 2 enters on 4.
const PATH: [(u16, u16); 3] = [(0, 1), (2, 3), (4, 0)];
const FRESH: Freshness = Freshness { lifetime_ns: S / 2, skew_ns: S };

fn allocation(aid: u64, beta_kbps: u32, ts_exp: u32) -> SourceAllocation {
    testbed::allocation(SRC, &PATH, (aid, beta_kbps, ts_exp), &[SECRET, [0x22; 16]])
}

/// An allocation AS 1 issued under its previous `K_k`.
fn old_allocation(aid: u64, ts_exp: u32) -> SourceAllocation {
    testbed::allocation(SRC, &PATH, (aid, 1000, ts_exp), &[OLD_SECRET, [0x22; 16]])
}

/// A router rotated from [`OLD_SECRET`] to [`SECRET`], the old key verifying until
/// `previous_until_ns`.
fn rotated(previous_until_ns: u64) -> Router {
    let mut r = router_with(&OLD_SECRET);
    r.rotate(&SECRET, previous_until_ns);
    r
}

fn router() -> Router {
    router_with(&SECRET)
}

/// A small burst, so that a few packets of one allocation go over its β.
fn router_with(secret: &[u8; 16]) -> Router {
    let dups = DuplicateFilter::new(
        DuplicateFilterConfig { window_ns: 3 * S, expected_per_window: 10_000, false_positive_rate: 1e-9 },
        [9; 16],
    )
    .unwrap();
    Router::new(secret, FRESH, AidMonitor::new(8, 3000, 0x1234_5678_9abc_def1), dups).with_source_as(SRC)
}

/// A position in a sequence, in thousandths of its length.
type Permille = u16;

fn pick(at: Permille, len: usize) -> usize {
    usize::from(at) * len / 1000
}

#[derive(Clone, Debug)]
enum Kind {
    /// Of one of three allocations (β 100 kbit/s or more), at a timestamp near now.
    Valid { allocation: u8, ts_offset_ns: u64 },
    /// Of an allocation issued under the previous `K_k`.
    OldKey,
    /// Of that allocation, one byte changed.
    OldKeyTampered { at: Permille, flip: u8 },
    /// A valid packet with one byte changed.
    Tampered { at: Permille, flip: u8 },
    /// Older than L + ε.
    Expired,
    /// A copy of an earlier packet of the mix.
    Replay(Permille),
    /// Of an allocation that ends before the packet could expire.
    AllocationEnding,
    /// Cut short.
    Truncated(Permille),
    /// From a host of this AS (ingress 0); ignored ingress for the others.
    FromSourceAs,
    /// A valid packet whose hop pointer is already 1 (at AS 2, which another ingress leads
    /// to) or 2 (every on-path AS passed): dropped after the MAC inputs of the packets
    /// before it in the batch are gathered.
    Advanced(u8),
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        4 => (0u8..3, 0u64..1_000_000).prop_map(|(allocation, ts_offset_ns)| Kind::Valid { allocation, ts_offset_ns }),
        1 => (0u16..1000, 1u8..=255).prop_map(|(at, flip)| Kind::Tampered { at, flip }),
        3 => Just(Kind::OldKey),
        1 => (0u16..1000, 1u8..=255).prop_map(|(at, flip)| Kind::OldKeyTampered { at, flip }),
        1 => Just(Kind::Expired),
        2 => (0u16..1000).prop_map(Kind::Replay),
        1 => Just(Kind::AllocationEnding),
        1 => (0u16..1000).prop_map(Kind::Truncated),
        1 => Just(Kind::FromSourceAs),
        1 => (1u8..=2).prop_map(Kind::Advanced),
    ]
}

/// The packets of a mix, each with the ingress it arrives on.
fn build(kinds: &[Kind]) -> Vec<(Vec<u8>, u16)> {
    let addresses = testbed::addresses(SRC);
    let ts_exp = (NOW / S) as u32 + 3600;
    let allocations = [allocation(1, 100, ts_exp), allocation(2, 1000, ts_exp), allocation(3, 50_000, ts_exp)];
    let old = old_allocation(5, ts_exp);
    let mut out: Vec<(Vec<u8>, u16)> = Vec::new();
    for (i, kind) in kinds.iter().enumerate() {
        // Distinct timestamps, so only replays repeat (Src, ts_pkt).
        let ts = NOW - S / 4 + i as u64 * 1000;
        let valid = |a: usize, ts: u64| allocations[a].packet(&addresses, ts, &[0x5a; 300]).unwrap();
        let pkt = match kind {
            Kind::Valid { allocation, ts_offset_ns } => (valid(usize::from(*allocation), ts + ts_offset_ns), 2),
            Kind::Tampered { at, flip } => {
                let mut p = valid(0, ts);
                let at = pick(*at, p.len());
                p[at] ^= flip;
                (p, 2)
            }
            Kind::OldKey => (old.packet(&addresses, ts, &[0x6b; 300]).unwrap(), 2),
            Kind::OldKeyTampered { at, flip } => {
                let mut p = old.packet(&addresses, ts, &[0x6b; 300]).unwrap();
                let at = pick(*at, p.len());
                p[at] ^= flip;
                (p, 2)
            }
            Kind::Expired => (valid(1, NOW - 2 * S), 2),
            Kind::Replay(of) if !out.is_empty() => out[pick(*of, out.len())].clone(),
            Kind::Replay(_) => (valid(2, ts), 2),
            Kind::AllocationEnding => {
                (allocation(4, 1000, (NOW / S) as u32 + 1).packet(&addresses, ts, &[1; 50]).unwrap(), 2)
            }
            Kind::Truncated(at) => {
                let mut p = valid(1, ts);
                p.truncate(pick(*at, p.len()));
                (p, 2)
            }
            Kind::FromSourceAs => (valid(2, ts), 0),
            Kind::Advanced(hops) => {
                let mut p = valid(1, ts);
                let at = locate(&p).unwrap().header;
                let mut header = Header::new_checked(&mut p[at]).unwrap();
                for _ in 0..*hops {
                    header.advance_hop_pointer();
                }
                (p, 2)
            }
        };
        out.push(pkt);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn batched_verdicts_equal_one_by_one(
        kinds in proptest::collection::vec(kind(), 1..90),
        sizes in proptest::collection::vec(1usize..40, 1..8),
        time_step_ns in 0u64..2_000_000,
        // The old key's deadline: before the run, during it or after it.
        until_offset_ns in 0u64..200_000_000,
    ) {
        let packets = build(&kinds);
        let until = NOW - 10_000_000 + until_offset_ns;
        let (mut single, mut batched) = (rotated(until), rotated(until));
        let mut one_by_one = packets.clone();
        let mut in_batches = packets.clone();
        let (mut want, mut got) = (Vec::new(), Vec::new());
        // Both routers see the same packets at the same times, in runs that share an ingress.
        let mut start = 0;
        let mut size = sizes.iter().cycle();
        while start < packets.len() {
            let ingress = packets[start].1;
            let end = (start + size.next().unwrap())
                .min(packets[start..].iter().position(|p| p.1 != ingress).map_or(packets.len(), |e| start + e));
            let now = NOW + start as u64 * time_step_ns;
            for (pkt, _) in &mut one_by_one[start..end] {
                want.push(single.process(pkt, ingress, now));
            }
            let mut refs: Vec<&mut [u8]> = in_batches[start..end].iter_mut().map(|(p, _)| p.as_mut_slice()).collect();
            let mut verdicts = vec![Verdict::Deliver; refs.len()];
            batched.process_batch(&mut refs, ingress, now, &mut verdicts);
            got.extend(verdicts);
            start = end;
        }
        prop_assert_eq!(&got, &want);
        prop_assert!(one_by_one == in_batches, "the routers left different bytes in the packets");
        prop_assert_eq!(single.stats.forwarded, batched.stats.forwarded);
        prop_assert_eq!(single.stats.delivered, batched.stats.delivered);
        prop_assert_eq!(single.stats.previous_key_packets, batched.stats.previous_key_packets);
        let drops = |r: &Router| r.stats.drops.iter(GlwpDrop::LABELS).collect::<Vec<_>>();
        prop_assert_eq!(drops(&single), drops(&batched));
    }
}

/// The mixes cover what they claim: one of each kind (and a run of one small allocation's
/// packets) meets every verdict the property compares.
#[test]
fn a_mix_meets_every_verdict() {
    let mut kinds = vec![Kind::Valid { allocation: 0, ts_offset_ns: 0 }; 10];
    kinds.extend([
        // Inside the AID: the payload and the addresses are not what hop authenticators bind.
        Kind::Tampered { at: 160, flip: 1 },
        Kind::Expired,
        Kind::Replay(0),
        Kind::AllocationEnding,
        Kind::Truncated(500),
        Kind::Advanced(1),
        Kind::Advanced(2),
    ]);
    kinds.extend([Kind::OldKey, Kind::OldKeyTampered { at: 160, flip: 1 }]);
    let mut r = rotated(NOW + S);
    let mut verdicts: Vec<Verdict> = Vec::new();
    for (mut pkt, ingress) in build(&kinds) {
        verdicts.push(r.process(&mut pkt, ingress, NOW));
    }
    assert!(matches!(verdicts[verdicts.len() - 2], Verdict::Forward { .. }), "the old key's packet");
    assert_eq!(verdicts[verdicts.len() - 1], Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason()));
    assert_eq!(r.stats.previous_key_packets, 1);
    // After the deadline, the old key's packet is refused.
    let mut late = rotated(NOW);
    let mut old = build(&[Kind::OldKey]);
    assert_eq!(late.process(&mut old[0].0, 2, NOW), Verdict::Drop(GlwpDrop::BadHopAuthenticator.reason()));
    let mut from_source = build(&[Kind::FromSourceAs]);
    assert!(matches!(router().process(&mut from_source[0].0, 0, NOW), Verdict::Forward { .. }));
    for reason in [
        GlwpDrop::Overuse.reason(),
        GlwpDrop::BadHopAuthenticator.reason(),
        GlwpDrop::TimestampExpired.reason(),
        GlwpDrop::AllocationExpired.reason(),
        aviary_qos::DropReason::Duplicate,
        aviary_qos::DropReason::LengthMismatch,
        aviary_qos::DropReason::BadIngress,
        GlwpDrop::PathComplete.reason(),
    ] {
        assert!(verdicts.contains(&Verdict::Drop(reason)), "no {reason:?} in {verdicts:?}");
    }
    assert!(verdicts.iter().any(|v| matches!(v, Verdict::Forward { .. })));
}
