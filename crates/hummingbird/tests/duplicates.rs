//! Optional duplicate suppression of flyover packets: a replay within the freshness window gets
//! no priority and does not spend its owner's reservation.

use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{Profile, Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, Verdict};

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const AS: usize = 1;
const NOW: u64 = T0 as u64 * S + 300 * MS;
/// Offset of the source host address in the testbed's packets (IPv4 destination and source).
const SRC_HOST: usize = 32;

struct Flow {
    chain: Chain,
    res: Reservation,
    src: Source,
}

impl Flow {
    /// A 5 kbit/s reservation (paper codec) at AS 1.
    fn new() -> Self {
        let chain = Chain::new(3, T0 - 3600);
        let res = chain.grant(AS, 7, 5, T0 - 10, 600);
        let src = Source::new(&chain.hbird_packet(&[(AS, res)], T0, 0).unwrap(), &[res]).unwrap();
        Self { chain, res, src }
    }

    /// The owner's next packet, 300 bytes in all, as it reaches AS 1.
    fn packet(&mut self, sent_ns: u64) -> Vec<u8> {
        let mut pkt = self.chain.hbird_packet(&[(AS, self.res)], (sent_ns / S) as u32, 180).unwrap();
        assert_eq!(pkt.len(), 300);
        self.src.stamp(&mut pkt, sent_ns).unwrap();
        self.chain.router(0, RouterParams::default()).process(&mut pkt, 0, sent_ns);
        pkt
    }
}

fn verdict(r: &mut Router, pkt: &[u8], now_ns: u64) -> Verdict {
    let mut p = pkt.to_vec();
    r.process(&mut p, Chain::forward_ingress(AS), now_ns)
}

fn priority(r: &mut Router, pkt: &[u8], now_ns: u64) -> bool {
    matches!(verdict(r, pkt, now_ns), Verdict::Forward { admission: Admission::RESERVED, .. })
}

/// The owner sends one packet, an on-path adversary replays it 20 times within the freshness
/// window, 10 ms apart (some with a rewritten source address, which no MAC covers), then the
/// owner's next packet arrives 200 ms after the first. At 5 kbit/s a 300-byte packet takes
/// 480 ms: the burst floor of 1500 bytes admits five at once, so without suppression the
/// replays exhaust it.
fn owner_next_packet_has_priority(params: RouterParams) -> (bool, Router) {
    let mut f = Flow::new();
    let mut r = Chain::new(3, T0 - 3600).router(AS, params);
    let first = f.packet(NOW);
    assert!(priority(&mut r, &first, NOW));
    for k in 0..20u64 {
        let mut replay = first.clone();
        if k % 2 == 1 {
            replay[SRC_HOST + 3] ^= k as u8;
        }
        // Still a valid packet: forwarded, and never dropped for being a replay.
        let v = verdict(&mut r, &replay, NOW + k * 10 * MS);
        assert!(matches!(v, Verdict::Forward { egress: IF_NEXT, .. }), "{v:?}");
    }
    let next = f.packet(NOW + 100 * MS);
    (priority(&mut r, &next, NOW + 200 * MS), r)
}

#[test]
fn with_suppression_a_replay_gets_no_priority_and_spends_nothing() {
    for profile in [Profile::Paper, Profile::Scionproto] {
        // The paper codec in both, so that the reservation is 5 kbit/s in both.
        let on = RouterParams { duplicate_suppression: true, codec: Profile::Paper.params().codec, ..profile.params() };
        let (next, r) = owner_next_packet_has_priority(on);
        assert!(next, "{profile:?}: the replays spent the owner's budget");
        assert_eq!(r.counters().duplicate, 20, "{profile:?}");
        assert_eq!(r.counters().reserved, 2, "{profile:?}");
    }
}

#[test]
fn suppression_is_off_by_default_in_paper_and_then_replays_spend_the_budget() {
    assert!(!RouterParams::default().duplicate_suppression);
    let (next, r) = owner_next_packet_has_priority(RouterParams::default());
    assert!(!next);
    assert_eq!(r.counters().duplicate, 0);
}

#[test]
fn a_stale_replay_is_stale_not_a_duplicate() {
    let mut f = Flow::new();
    let mut r = Chain::new(3, T0 - 3600).router(AS, RouterParams { duplicate_suppression: true, ..Default::default() });
    let pkt = f.packet(NOW);
    assert!(priority(&mut r, &pkt, NOW));
    assert!(!priority(&mut r, &pkt, NOW + 2 * S));
    assert_eq!((r.counters().stale, r.counters().duplicate), (1, 0));
}
