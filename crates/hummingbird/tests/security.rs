//! The data-plane security properties of the Hummingbird paper, §5 as tests: forged, re-routed,
//! replayed, stale, over-used, expired and not-yet-active reservation traffic never gets
//! priority.

use aviary_hummingbird::crypto::ResInfo;
use aviary_hummingbird::path::{HbirdPath, META_LEN};
use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{BwCodec, PolicingMode, Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::wire::header::ScionView;

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// The reserved AS under test: AS 1 of a 3-AS chain (a crossover AS).
const AS: usize = 1;

struct Setup {
    chain: Chain,
    res: Reservation,
}

fn setup(bw: u16, start: u32, duration: u16) -> Setup {
    let chain = Chain::new(3, T0 - 3600);
    let res = chain.grant(AS, 42, bw, start, duration);
    Setup { chain, res }
}

impl Setup {
    /// A packet stamped at `sent_ns` with `payload` bytes, processed by AS 0 already.
    fn packet_at(&self, sent_ns: u64, payload: usize, src: &mut Source) -> Vec<u8> {
        let mut pkt = self.chain.hbird_packet(&[(AS, self.res)], (sent_ns / S) as u32, payload).unwrap();
        src.stamp(&mut pkt, sent_ns).unwrap();
        assert_eq!(
            self.chain.router(0, RouterParams::default()).process(&mut pkt, 0, sent_ns),
            Verdict::unauthenticated(IF_NEXT)
        );
        pkt
    }
    fn source(&self, sent_ns: u64) -> Source {
        let pkt = self.chain.hbird_packet(&[(AS, self.res)], (sent_ns / S) as u32, 0).unwrap();
        Source::new(&pkt, &[self.res]).unwrap()
    }
    fn router(&self) -> Router {
        self.chain.router(AS, RouterParams::default())
    }
}

fn at(now_ns: u64, r: &mut Router, pkt: &[u8]) -> Verdict {
    let mut p = pkt.to_vec();
    r.process(&mut p, Chain::forward_ingress(AS), now_ns)
}

fn is_priority(v: Verdict) -> bool {
    matches!(v, Verdict::Forward { admission: Admission::RESERVED, .. })
}

const NOW: u64 = T0 as u64 * S + 300 * MS;

#[test]
fn baseline_valid_packet_gets_priority() {
    let s = setup(600, T0 - 10, 600);
    let pkt = s.packet_at(NOW, 200, &mut s.source(NOW));
    assert_eq!(at(NOW, &mut s.router(), &pkt), Verdict::reserved(IF_NEXT));
}

/// Byte range of the current (flyover) hop field and the meta header within the packet.
fn ranges(pkt: &[u8]) -> (std::ops::Range<usize>, usize) {
    let v = ScionView::new_checked(pkt).unwrap();
    let path_start = v.path_range().start;
    let p = HbirdPath::parse(v.path()).unwrap();
    let hop_start = path_start + META_LEN + 8 * p.info.len() + 4 * usize::from(p.curr_hf);
    (hop_start..hop_start + 20, path_start)
}

#[test]
fn flipping_any_bit_of_the_flyover_field_never_yields_priority() {
    let s = setup(600, T0 - 10, 600);
    let pkt = s.packet_at(NOW, 200, &mut s.source(NOW));
    let (hop, _) = ranges(&pkt);
    // Byte 0 bit 7 is F: clearing it makes the hop a plain hop field with a wrong MAC.
    for byte in hop {
        for bit in 0..8 {
            if byte == ranges(&pkt).0.start && bit < 2 {
                continue; // I/E router-alert flags are not authenticated by SCION either.
            }
            if byte == ranges(&pkt).0.start && (2..7).contains(&bit) {
                continue; // reserved bits
            }
            let mut p = pkt.clone();
            p[byte] ^= 1 << bit;
            let v = at(NOW, &mut s.router(), &p);
            assert!(!is_priority(v), "byte {byte} bit {bit}: {v:?}");
            assert!(matches!(v, Verdict::Drop(_)), "byte {byte} bit {bit}: {v:?}");
        }
    }
}

#[test]
fn flipping_dst_ia_pkt_len_or_timestamps_never_yields_priority() {
    let s = setup(600, T0 - 10, 600);
    let pkt = s.packet_at(NOW, 200, &mut s.source(NOW));
    let (_, path_start) = ranges(&pkt);
    // DstISD|DstAS (bytes 12..20) and BaseTimestamp|Millis|Counter (meta bytes 4..12).
    let targets = (12..20).chain(path_start + 4..path_start + 12);
    for byte in targets {
        for bit in 0..8 {
            let mut p = pkt.clone();
            p[byte] ^= 1 << bit;
            let v = at(NOW, &mut s.router(), &p);
            assert!(!is_priority(v), "byte {byte} bit {bit}: {v:?}");
        }
    }
    // The packet length: a byte more or less of payload, with consistent lengths.
    for delta in [-1i32, 1, 100] {
        let mut p = pkt.clone();
        let len = (u16::from_be_bytes([p[6], p[7]]) as i32 + delta) as u16;
        p[6..8].copy_from_slice(&len.to_be_bytes());
        p.resize((p.len() as i32 + delta) as usize, 0);
        let v = at(NOW, &mut s.router(), &p);
        assert_eq!(v, Verdict::Drop(DropReason::BadMac), "length change {delta}");
    }
}

#[test]
fn forged_aggregate_macs_are_dropped() {
    let s = setup(600, T0 - 10, 600);
    let pkt = s.packet_at(NOW, 200, &mut s.source(NOW));
    let (hop, _) = ranges(&pkt);
    for x in 1..=255u8 {
        let mut p = pkt.clone();
        p[hop.start + 6 + usize::from(x) % 6] ^= x;
        assert_eq!(at(NOW, &mut s.router(), &p), Verdict::Drop(DropReason::BadMac));
    }
}

#[test]
fn freshness_window_is_now_minus_delta_minus_skew_to_now_plus_skew() {
    let s = setup(600, T0 - 10, 600);
    let sent = NOW;
    let pkt = s.packet_at(sent, 200, &mut s.source(sent));
    let p = RouterParams::default();
    let cases = [
        (sent - p.freshness_future_ns - MS, false), // from the future beyond the skew
        (sent - p.freshness_future_ns, true),
        (sent, true),
        (sent + p.freshness_past_ns, true),
        (sent + p.freshness_past_ns + MS, false), // too old: a late replay
        (sent + 60 * S, false),
    ];
    for (now, fresh) in cases {
        let v = at(now, &mut s.router(), &pkt);
        // Stale packets are still valid SCION packets: forwarded, best effort.
        let want = if fresh { Verdict::reserved(IF_NEXT) } else { Verdict::unauthenticated(IF_NEXT) };
        assert_eq!(v, want, "router time {now} for a packet sent at {sent}");
    }
}

#[test]
fn replays_count_against_the_reservation_and_stale_replays_get_best_effort() {
    // BW code 100: e = 3, s = 4 → 36 << 2 = 144 kbit/s; a 50 ms burst is 900 bytes, raised to
    // the 1500 bytes of the burst floor (max_packet_len).
    let s = setup(100, T0 - 10, 600);
    let pkt = s.packet_at(NOW, 0, &mut s.source(NOW));
    let mut r = s.router();
    let verdicts: Vec<bool> = (0..200).map(|_| is_priority(at(NOW, &mut r, &pkt))).collect();
    // The same packet over and over at one instant: only a burst's worth is prioritised.
    let admitted = verdicts.iter().filter(|p| **p).count();
    let len = pkt.len() as u64;
    let p = RouterParams::default();
    let burst_bytes = (BwCodec::Paper.decode_bps(100) * p.burst_ns / 8 / S).max(u64::from(p.max_packet_len));
    assert!(admitted as u64 <= burst_bytes / len + 1, "{admitted} replays prioritised");
    assert!(admitted >= 1);
    assert!(verdicts.windows(2).all(|w| w[0] || !w[1]), "priority resumed without time passing");
    // A replay after the freshness window never gets priority, whatever the policer says.
    let mut fresh_router = s.router();
    assert!(!is_priority(at(NOW + 2 * S, &mut fresh_router, &pkt)));
}

#[test]
fn traffic_above_the_reservation_gets_best_effort_beyond_the_burst() {
    for policing in [PolicingMode::Division, PolicingMode::Table] {
        // BW code 160: e = 5, s = 0 → 32 << 4 = 512 kbit/s = 64 kB/s.
        let s = setup(160, T0 - 10, 600);
        let rate_bytes_per_s = BwCodec::Paper.decode_bps(160) / 8;
        let params = RouterParams { policing, ..Default::default() };
        let mut r = s.chain.router(AS, params);
        let mut src = s.source(NOW);
        // 1000-byte packets: within the rate one every ~15.6 ms. Send one every 5 ms
        // (3.1× the rate) for 2 s.
        let mut priority_bytes = 0u64;
        let mut best_effort = 0;
        let mut first_be = None;
        for k in 0..400u64 {
            let now = NOW + k * 5 * MS;
            let pkt = s.packet_at(now, 1000 - 100, &mut src);
            match at(now, &mut r, &pkt) {
                Verdict::Forward { admission: Admission::RESERVED, .. } => priority_bytes += pkt.len() as u64,
                Verdict::Forward { admission: Admission::UNAUTHENTICATED, .. } => {
                    best_effort += 1;
                    first_be.get_or_insert(k);
                }
                v => panic!("{v:?}"),
            }
        }
        let span = 400 * 5 * MS;
        let allowed = rate_bytes_per_s * (span + params.burst_ns) / S + 1000;
        assert!(priority_bytes <= allowed, "{policing:?}: {priority_bytes} > {allowed}");
        assert!(priority_bytes >= rate_bytes_per_s * span / S * 9 / 10, "{policing:?}: only {priority_bytes}");
        assert!(best_effort > 200, "{policing:?}");
        // The first packets of the burst got priority.
        assert!(first_be.unwrap() >= 3, "{policing:?}");
    }
}

/// Table policing is Alg. 1 as written, not an approximation: over a reservation's rate,
/// with packet lengths and gaps that put the virtual clock on and around the burst's edge,
/// both modes give every packet the same verdict.
#[test]
fn table_and_division_policing_give_the_same_verdicts() {
    for bw in [160, 192, 208] {
        let s = setup(bw, T0 - 10, 600);
        let mut routers = [PolicingMode::Division, PolicingMode::Table]
            .map(|policing| s.chain.router(AS, RouterParams { policing, ..Default::default() }));
        let mut src = s.source(NOW);
        let (mut now, mut both) = (NOW, [0u32; 2]);
        for k in 0..600u64 {
            now += (k * 7919 % 13) * MS / 2;
            let pkt = s.packet_at(now, (k * 104_729 % 1400) as usize, &mut src);
            let [a, b] = [0, 1].map(|i| at(now, &mut routers[i], &pkt));
            assert_eq!(a, b, "BW code {bw}, packet {k}");
            both[usize::from(is_priority(a))] += 1;
        }
        assert!(both[0] > 50 && both[1] > 50, "BW code {bw}: {both:?} (best effort, priority)");
    }
}

#[test]
fn traffic_within_the_reservation_always_gets_priority() {
    let s = setup(160, T0 - 10, 600); // 64 kB/s
    let mut r = s.router();
    let mut src = s.source(NOW);
    let header = s.packet_at(NOW, 0, &mut src).len();
    for k in 0..300u64 {
        let now = NOW + k * 16 * MS; // 1000 B every 16 ms = 62.5 kB/s
        let pkt = s.packet_at(now, 1000 - header, &mut src);
        assert_eq!(pkt.len(), 1000);
        assert!(is_priority(at(now, &mut r, &pkt)), "packet {k}");
    }
}

#[test]
fn expired_or_not_yet_started_reservations_get_best_effort() {
    // Active in [T0, T0 + 10).
    let s = setup(600, T0, 10);
    let start = T0 as u64 * S;
    let cases = [
        (start, start - 100 * MS, false), // stamped at the start, router clock 100 ms behind
        (start, start, true),
        (start + 9 * S + 900 * MS, start + 9 * S + 999 * MS, true),
        (start + 9 * S + 900 * MS, start + 10 * S, false), // expired at the router
        (start + 10 * S + 100 * MS, start + 10 * S + 100 * MS, false), // sent after expiry
    ];
    for (sent, now, active) in cases {
        let pkt = s.packet_at(sent, 200, &mut s.source(sent));
        let want = if active { Verdict::reserved(IF_NEXT) } else { Verdict::unauthenticated(IF_NEXT) };
        assert_eq!(at(now, &mut s.router(), &pkt), want, "sent {sent} now {now}");
    }
}

#[test]
fn a_reservation_used_on_another_interface_pair_fails() {
    let s = setup(600, T0 - 10, 600);
    // The attacker holds a genuine reservation of AS 1 for another interface pair and
    // presents it on this path's hop (2 -> 0 after the crossover is 2 -> 1).
    let hop = aviary_hummingbird::as_hops(&s.chain.path)[AS];
    for (ingress, egress) in [(hop.egress, hop.ingress), (hop.ingress, 7), (0, hop.egress), (hop.ingress, 0)] {
        let info = ResInfo { ingress, egress, ..s.res.info };
        let stolen = Reservation { info, ak: s.chain.ases[AS].sv.auth_key(&info) };
        // Build the packet with the path's interfaces but the other pair's key.
        let mut pkt = s.chain.hbird_packet(&[(AS, s.res)], (NOW / S) as u32, 200).unwrap();
        let mut src = Source::new(&pkt, &[Reservation { info: s.res.info, ak: stolen.ak }]).unwrap();
        src.stamp(&mut pkt, NOW).unwrap();
        s.chain.router(0, RouterParams::default()).process(&mut pkt, 0, NOW);
        assert_eq!(at(NOW, &mut s.router(), &pkt), Verdict::Drop(DropReason::BadMac), "{ingress}->{egress}");
    }
}

#[test]
fn a_reservation_of_another_as_fails() {
    let s = setup(600, T0 - 10, 600);
    // A_K of AS 2 presented at AS 1.
    let wrong_as = Reservation { ak: s.chain.ases[2].sv.auth_key(&s.res.info), ..s.res };
    let mut pkt = s.chain.hbird_packet(&[(AS, s.res)], (NOW / S) as u32, 200).unwrap();
    let mut src = Source::new(&pkt, &[wrong_as]).unwrap();
    src.stamp(&mut pkt, NOW).unwrap();
    s.chain.router(0, RouterParams::default()).process(&mut pkt, 0, NOW);
    assert_eq!(at(NOW, &mut s.router(), &pkt), Verdict::Drop(DropReason::BadMac));
}

#[test]
fn standard_hop_checks_drop_forged_expired_and_misrouted_packets() {
    let chain = Chain::new(3, T0 - 3600);
    let pkt = chain.standard_packet(50);
    let mut r0 = chain.router(0, RouterParams::default());
    let mut ok = pkt.clone();
    assert_eq!(r0.process(&mut ok, 0, NOW), Verdict::unauthenticated(IF_NEXT));
    // Wrong ingress interface at AS 1.
    let mut p = ok.clone();
    assert_eq!(chain.router(1, RouterParams::default()).process(&mut p, 1, NOW), Verdict::Drop(DropReason::BadIngress));
    // Expired hop fields (ExpTime 63 → 64 × 337.5 s = 6 h after the info timestamp).
    let mut p = ok.clone();
    let late = (T0 as u64 - 3600 + 6 * 3600 + 1) * S;
    assert_eq!(
        chain.router(1, RouterParams::default()).process(&mut p, 2, late),
        Verdict::Drop(DropReason::ExpiredHop)
    );
    // A flipped MAC bit.
    let v = ScionView::new_checked(&ok[..]).unwrap();
    let mac_at = v.path_range().start + 4 + 8 * 2 + 12 + 6;
    let mut p = ok.clone();
    p[mac_at] ^= 1;
    assert_eq!(chain.router(1, RouterParams::default()).process(&mut p, 2, NOW), Verdict::Drop(DropReason::BadMac));
    // The source AS refuses a packet claiming another source ISD-AS.
    let mut p = pkt.clone();
    p[20..28].copy_from_slice(&chain.dst_ia().to_bytes());
    assert_eq!(r0.process(&mut p, 0, NOW), Verdict::Drop(DropReason::BadSrcIa));
}
