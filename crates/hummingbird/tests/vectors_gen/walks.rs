//! The packet walks of the vectors: whole packets before and after each router.

use super::*;

// ---------------------------------------------------------------------------------------
// Packet walks.

/// Routers of one walk, with the steps recorded so far.
struct Walker<'a> {
    chain: &'a Chain,
    routers: Vec<Router>,
    steps: Vec<Step>,
}

impl<'a> Walker<'a> {
    fn new(chain: &'a Chain) -> Self {
        let routers = (0..chain.ases.len()).map(|i| chain.router(i, RouterParams::default())).collect();
        Self { chain, routers, steps: Vec::new() }
    }

    fn step(&mut self, i: usize, pkt: &mut [u8], ingress: u16, now_ns: u64) -> Verdict {
        let before = hex::encode(&*pkt);
        let v = self.routers[i].process(pkt, ingress, now_ns);
        let a = &self.chain.ases[i];
        self.steps.push(Step {
            as_: a.ia.to_string(),
            master_secret: hex::encode(a.master_secret),
            interfaces: self.routers[i].forwarding().interfaces.iter().collect(),
            ingress,
            now_ns,
            before,
            after: hex::encode(&*pkt),
            verdict: verdict_text(&v),
        });
        v
    }

    /// From AS 0 towards the last AS, until a router does not forward.
    fn forward(&mut self, pkt: &mut [u8], now_ns: u64) -> Vec<Verdict> {
        let n = self.chain.ases.len();
        let mut out = Vec::new();
        for i in 0..n {
            let v = self.step(i, pkt, Chain::forward_ingress(i), now_ns);
            out.push(v);
            if !matches!(v, Verdict::Forward { .. }) {
                break;
            }
        }
        out
    }

    /// From the last AS back to AS 0, until a router does not forward.
    fn backward(&mut self, pkt: &mut [u8], now_ns: u64) -> Vec<Verdict> {
        let n = self.chain.ases.len();
        let mut out = Vec::new();
        for i in (0..n).rev() {
            let ingress = if i + 1 == n { 0 } else { IF_NEXT };
            let v = self.step(i, pkt, ingress, now_ns);
            out.push(v);
            if !matches!(v, Verdict::Forward { .. }) {
                break;
            }
        }
        out
    }

    fn finish(self, name: &str, comment: &str) -> PacketWalk {
        PacketWalk { name: name.into(), comment: comment.into(), steps: self.steps }
    }
}

const P1: Verdict = Verdict::reserved(IF_NEXT);
const BE1: Verdict = Verdict::unauthenticated(IF_NEXT);
const BE2: Verdict = Verdict::unauthenticated(IF_PREV);
const DELIVER: Verdict = Verdict::Deliver;

/// A stamped Hummingbird packet from AS 0 to the last AS with the given reservations.
fn stamped(chain: &Chain, res: &[(usize, Reservation)], payload_len: usize, send_ns: u64) -> Vec<u8> {
    let base_ts = (send_ns / NS) as u32;
    let mut pkt = chain.hbird_packet(res, base_ts, payload_len).expect("hbird packet");
    let rs: Vec<Reservation> = res.iter().map(|r| r.1).collect();
    Source::new(&pkt, &rs).expect("source").stamp(&mut pkt, send_ns).expect("stamp");
    pkt
}

/// The reply to an arrived packet: addresses swapped, path reversed.
fn reply(pkt: &[u8]) -> Vec<u8> {
    let mut r = ScionPacket::parse(pkt).expect("arrived packet");
    std::mem::swap(&mut r.header.src_ia, &mut r.header.dst_ia);
    std::mem::swap(&mut r.header.src_host, &mut r.header.dst_host);
    r.header.path = match r.header.path_type {
        aviary_scion::wire::header::path_type::HUMMINGBIRD => {
            let mut p = HbirdPath::parse(&r.header.path).expect("hbird path");
            p.reverse().expect("reverse");
            p.to_bytes().expect("emit")
        }
        _ => {
            let mut p = StandardPath::parse(&r.header.path).expect("standard path");
            p.reverse().expect("reverse");
            p.to_bytes().expect("emit")
        }
    };
    r.to_bytes().expect("reply")
}

/// Flips one bit of byte `byte` of the MAC field of hop field `hop` (path order).
fn flip_mac_byte(pkt: &mut [u8], hop: usize, byte: usize) {
    let v = ScionView::new_checked(&*pkt).expect("packet");
    let range = v.path_range();
    let path = &pkt[range.clone()];
    let off = if v.path_type() == aviary_scion::wire::header::path_type::HUMMINGBIRD {
        let (base, _) = aviary_hummingbird::path::hop_area(path).expect("hop area");
        let p = HbirdPath::parse(path).expect("hbird path");
        base + 4 * p.hops().take(hop).map(|h| h.lines()).sum::<usize>()
    } else {
        let p = StandardPath::parse(path).expect("standard path");
        4 + 8 * p.info.len() + 12 * hop
    };
    pkt[range.start + off + 6 + byte] ^= 0x01;
}

pub(super) fn first_walk_reservations(chain: &Chain) -> [(usize, Reservation); 2] {
    [(1, chain.grant(1, 7, 600, NOW_S - 10, 3600)), (2, chain.grant(2, 100_000, 600, NOW_S - 30, 120))]
}

const FIRST_WALK_PAYLOAD: usize = 500;

pub(super) fn first_walk_pkt_len() -> u16 {
    let chain = Chain::new(4, BEACON_TS);
    stamped(&chain, &first_walk_reservations(&chain), FIRST_WALK_PAYLOAD, NOW_NS).len() as u16
}

pub(super) fn packet_walks() -> Vec<PacketWalk> {
    let mut out = Vec::new();
    let c4 = Chain::new(4, BEACON_TS);
    let c2 = Chain::new(2, BEACON_TS);

    // 1. Flyovers on both crossover ASes, then the reply on the reversed path.
    let res = first_walk_reservations(&c4);
    let mut pkt = stamped(&c4, &res, FIRST_WALK_PAYLOAD, NOW_NS);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, P1, P1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_flyovers_on_crossovers",
        "4 ASes, three segments (up C=0, core C=0, down C=1); flyovers on the crossover ASes 1-ff00:0:111 \
         (ResID 7, BW 600) and 1-ff00:0:112 (ResID 100000, BW 600), placed on their hop fields in the \
         earlier segment. Stamped at now_ns, Counter 0.",
    ));
    let mut back = reply(&pkt);
    let mut w = Walker::new(&c4);
    assert_eq!(w.backward(&mut back, NOW_NS + MS), [BE2, BE2, BE2, DELIVER]);
    out.push(w.finish(
        "hbird_4as_reply_on_reversed_path",
        "The packet of hbird_4as_flyovers_on_crossovers as it arrived, with source and destination swapped \
         and its type-5 path reversed (flyovers turned into hop fields, BaseTimestamp/Millis/Counter kept), \
         sent back 1 ms later.",
    ));

    // 2. Flyovers on every AS, including source and destination.
    let res: Vec<_> = (0..4).map(|i| (i, c4.grant(i, i as u32, 800, NOW_S - 5, 60))).collect();
    let mut pkt = stamped(&c4, &res, 1200, NOW_NS);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [P1, P1, P1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_flyovers_everywhere",
        "Flyovers on all four ASes (ResID = AS index, BW 800), including the source AS (ingress 0) and the \
         destination AS (egress 0).",
    ));

    // 3. Edge values of the reservation fields.
    let res = [
        (0, c4.grant(0, 0, 1023, NOW_S - 1, 10)),
        (1, c4.grant(1, MAX_RES_ID, 0, NOW_S - 100, 3600)),
        (2, c4.grant(2, 99_999, 512, NOW_S - u32::from(u16::MAX), u16::MAX)),
    ];
    let mut pkt = stamped(&c4, &res, 64, NOW_NS);
    let mut w = Walker::new(&c4);
    // A reservation with ResStartOffset 65535 ends at BaseTimestamp at the latest: it can
    // only be active for routers whose clock is behind the source's (within freshness_future_ns).
    let behind = u64::from(NOW_S) * NS - 1;
    assert_eq!(w.forward(&mut pkt, behind), [P1, BE1, P1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_edge_reservations",
        "Stamped at BaseTimestamp now_s + 250 ms; the routers' clock reads now_s - 1 ns (within freshness_future_ns). \
         AS 1-ff00:0:110: ResID 0, BW 1023 -> priority. AS 1-ff00:0:111: ResID 2^22-1, BW 0 -> valid MAC but \
         best effort (zero rate, and ResID above the router's max_res_id). AS 1-ff00:0:112: ResStartOffset \
         65535, ResDuration 65535 (active until exactly BaseTimestamp) -> priority.",
    ));

    // 4. A type-5 path without any flyover.
    let mut pkt = stamped(&c4, &[], 100, NOW_NS);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, BE1, DELIVER]);
    out.push(w.finish("hbird_4as_no_flyovers", "A Hummingbird path without reservations: plain hop fields only."));

    // 5. Two ASes, one segment.
    let res = [(0, c2.grant(0, 1, 700, NOW_S - 2, 30)), (1, c2.grant(1, 2, 700, NOW_S - 2, 30))];
    let mut pkt = stamped(&c2, &res, 300, NOW_NS);
    let mut w = Walker::new(&c2);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [P1, DELIVER]);
    out.push(w.finish("hbird_2as_flyovers_both", "2 ASes, one segment (C=1); flyovers on both ASes."));

    let res = [(1, c2.grant(1, 3, 100, NOW_S - 2, 30))];
    let mut pkt = stamped(&c2, &res, 20, NOW_NS);
    let mut w = Walker::new(&c2);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, DELIVER]);
    out.push(w.finish("hbird_2as_flyover_destination_only", "2 ASes; a flyover on the destination AS only."));

    // 6. Policing: eight packets on one reservation of 100 kbit/s (BW code 82).
    let res = [(0, c2.grant(0, 42, 82, NOW_S - 10, 600))];
    let mut template = c2.hbird_packet(&res, NOW_S, 162).expect("hbird packet");
    assert_eq!(template.len(), 250);
    let mut src = Source::new(&template, &[res[0].1]).expect("source");
    let mut w = Walker::new(&c2);
    let steps = [(0, P1), (0, P1), (0, P1), (0, P1), (0, P1), (0, P1), (0, BE1), (100 * MS, P1)];
    for (k, (dt, expect)) in steps.into_iter().enumerate() {
        let t = NOW_NS + dt;
        src.stamp(&mut template, t).expect("stamp");
        let mut pkt = template.clone();
        assert_eq!(w.forward(&mut pkt, t), [expect, DELIVER], "policing packet {k}");
    }
    out.push(w.finish(
        "hbird_2as_policing",
        "One source, one reservation at AS 1-ff00:0:110 (ResID 42, BW code 82 = 100 kbit/s in the paper codec), \
         250-byte packets (20 ms each at that rate), burst 50 ms raised to the 120 ms that a 1500-byte packet \
         takes at that rate (max_packet_len). Packets 0-6 are sent at now_ns (Counter 0-6): the seventh would \
         put the reservation 140 ms ahead and goes best effort. Packet 7 (Counter 7) is sent 100 ms later, when \
         the reservation is 40 ms ahead with it, and has priority again. The routers keep their state across \
         the steps of this walk.",
    ));

    // 7. Valid flyovers that do not earn priority.
    let res = first_walk_reservations(&c4);
    let sent = NOW_NS - 2 * NS;
    let mut pkt = stamped(&c4, &res, 100, sent);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, BE1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_stale_packet",
        "As hbird_4as_flyovers_on_crossovers, but stamped 2 s before the routers' now: older than \
         freshness_past_ns, so the valid flyovers are forwarded best effort.",
    ));
    let sent = NOW_NS + NS;
    let mut pkt = stamped(&c4, &res, 100, sent);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, BE1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_packet_from_the_future",
        "Stamped 1 s after the routers' now (more than freshness_future_ns ahead): best effort.",
    ));
    let res = [(1, c4.grant(1, 9, 600, NOW_S - 100, 100)), (2, c4.grant(2, 10, 600, NOW_S - 100, 101))];
    let mut pkt = stamped(&c4, &res, 100, NOW_NS);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, P1, DELIVER]);
    out.push(w.finish(
        "hbird_4as_reservation_ended",
        "AS 1-ff00:0:111's reservation ran [now_s-100, now_s) and has ended (best effort); AS 1-ff00:0:112's \
         runs [now_s-100, now_s+1) and is active (priority).",
    ));

    // 8. Drops.
    let res = first_walk_reservations(&c4);
    let mut pkt = stamped(&c4, &res, 100, NOW_NS);
    flip_mac_byte(&mut pkt, 1, 3);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, Verdict::Drop(aviary_qos::DropReason::BadMac)]);
    out.push(w.finish(
        "hbird_4as_flipped_aggmac",
        "As hbird_4as_flyovers_on_crossovers with one bit of byte 3 of AS 1-ff00:0:111's AggMAC flipped: \
         dropped there as bad_mac.",
    ));

    let mut pkt = stamped(&c4, &res, 100, NOW_NS);
    flip_mac_byte(&mut pkt, 2, 5);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, Verdict::Drop(aviary_qos::DropReason::BadMac)]);
    out.push(w.finish(
        "hbird_4as_flipped_second_crossover_mac",
        "A bit of the last MAC byte flipped in AS 1-ff00:0:111's second hop field (first of the core segment, \
         verified at the crossover): bad_mac.",
    ));

    let old = Chain::new(4, NOW_S - HOP_LIFETIME_S - 1);
    let res = [(1, old.grant(1, 7, 600, NOW_S - 10, 3600))];
    let mut pkt = stamped(&old, &res, 100, NOW_NS);
    let mut w = Walker::new(&old);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [Verdict::Drop(aviary_qos::DropReason::ExpiredHop)]);
    out.push(w.finish(
        "hbird_4as_expired_hop",
        "Hop fields with beacon timestamp now_s - 21601 and ExpTime 63 (lifetime 6 h = 21600 s) expired 1 s \
         before now: dropped at the first AS.",
    ));

    // 9. Standard SCION (path type 1).
    let mut pkt = c4.standard_packet(100);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, BE1, DELIVER]);
    out.push(w.finish("scion_4as", "A standard SCION packet (path type 1) over the 4-AS chain."));
    let mut back = reply(&pkt);
    let mut w = Walker::new(&c4);
    assert_eq!(w.backward(&mut back, NOW_NS), [BE2, BE2, BE2, DELIVER]);
    out.push(w.finish("scion_4as_reply", "The reply of scion_4as on the reversed standard path."));

    let mut pkt = c2.standard_packet(0);
    let mut w = Walker::new(&c2);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, DELIVER]);
    out.push(w.finish("scion_2as", "A standard SCION packet over 2 ASes, empty payload."));

    let mut pkt = c4.standard_packet(100);
    flip_mac_byte(&mut pkt, 4, 5);
    let mut w = Walker::new(&c4);
    assert_eq!(w.forward(&mut pkt, NOW_NS), [BE1, BE1, Verdict::Drop(aviary_qos::DropReason::BadMac)]);
    out.push(w.finish(
        "scion_4as_flipped_mac",
        "scion_4as with a bit of the last MAC byte of hop field 4 (AS 1-ff00:0:112's hop field in the down \
         segment, verified at its crossover) flipped: bad_mac.",
    ));

    let edge = Chain::new(2, NOW_S - HOP_LIFETIME_S);
    let mut pkt = edge.standard_packet(10);
    let mut w = Walker::new(&edge);
    let expiry_ns = u64::from(NOW_S) * NS;
    assert_eq!(w.forward(&mut pkt, expiry_ns), [BE1, DELIVER]);
    out.push(w.finish(
        "scion_2as_at_expiry",
        "Hop fields with timestamp now_s - 21600 and ExpTime 63 expire at exactly now_s: processed at that \
         instant they are still valid.",
    ));
    let mut pkt = edge.standard_packet(10);
    let mut w = Walker::new(&edge);
    assert_eq!(w.forward(&mut pkt, expiry_ns + 1), [Verdict::Drop(aviary_qos::DropReason::ExpiredHop)]);
    out.push(w.finish("scion_2as_after_expiry", "The same packet 1 ns after the expiry: expired_hop."));

    out
}
