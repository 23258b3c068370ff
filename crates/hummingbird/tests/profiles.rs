//! One test per difference between the verdict profiles `paper` and `scionproto` (the table in
//! docs/profiles.md), each written so that it fails if the difference is removed, and the burst
//! floor that both share.

use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{BwCodec, Profile, Reservation, Router, RouterParams, Source};
use aviary_qos::{Admission, Verdict};
use aviary_scion::wire::header::ScionView;

const T0: u32 = 1_750_000_000;
const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// The reserved AS under test: AS 1 of a 3-AS chain.
const AS: usize = 1;
const NOW: u64 = T0 as u64 * S + 300 * MS;
const PAPER: Profile = Profile::Paper;
const SCION: Profile = Profile::Scionproto;

/// A reservation at AS 1 and a source for it.
struct Flow {
    chain: Chain,
    res: Reservation,
    src: Source,
}

impl Flow {
    fn new(bw: u16, start: u32) -> Self {
        let chain = Chain::new(3, T0 - 3600);
        let res = chain.grant(AS, 42, bw, start, 600);
        let template = chain.hbird_packet(&[(AS, res)], start.max(T0 - 5), 0).unwrap();
        let src = Source::new(&template, &[res]).unwrap();
        Self { chain, res, src }
    }

    /// A packet of `len` bytes in all stamped at `sent_ns`, as it reaches AS 1.
    fn packet(&mut self, sent_ns: u64, len: usize) -> Vec<u8> {
        let base = (sent_ns / S) as u32;
        let header = self.chain.hbird_packet(&[(AS, self.res)], base, 0).unwrap().len();
        let mut pkt = self.chain.hbird_packet(&[(AS, self.res)], base, len - header).unwrap();
        self.src.stamp(&mut pkt, sent_ns).unwrap();
        let v = self.chain.router(0, RouterParams::default()).process(&mut pkt, 0, sent_ns);
        assert_eq!(v, Verdict::unauthenticated(IF_NEXT));
        pkt
    }

    fn router(&self, params: RouterParams) -> Router {
        self.chain.router(AS, params)
    }
}

fn priority(r: &mut Router, pkt: &[u8], now_ns: u64) -> bool {
    let mut p = pkt.to_vec();
    match r.process(&mut p, Chain::forward_ingress(AS), now_ns) {
        Verdict::Forward { admission, .. } => admission == Admission::RESERVED,
        v => panic!("valid packet not forwarded: {v:?}"),
    }
}

/// BW codes of 64 kB/s (512 kbit/s) in each profile's codec, to compare other differences at
/// one rate.
fn code_64kbyte_s(profile: Profile) -> u16 {
    let code = profile.params().codec.encode_floor(512_000);
    assert_eq!(profile.params().codec.decode_bps(code), 512_000);
    code
}

#[test]
fn codec_paper_decodes_kbit_floats_scionproto_64_byte_units() {
    // BW code 100: paper 36 << 2 = 144 kbit/s (18 kB/s); linear 100 × 64 B/s = 6.4 kB/s.
    // 600-byte packets (500 B of payload) every 50 ms for 6 s: 12 kB/s of packets, 10 kB/s of
    // payload: within the paper's reading of the code, above the linear one.
    for (profile, want_all) in [(PAPER, true), (SCION, false)] {
        let mut f = Flow::new(100, T0 - 10);
        let mut r = f.router(profile.params());
        let n = 120u64;
        let admitted = (0..n)
            .filter(|k| {
                let now = NOW + k * 50 * MS;
                let pkt = f.packet(now, 600);
                priority(&mut r, &pkt, now)
            })
            .count() as u64;
        if want_all {
            assert_eq!(admitted, n, "{profile:?}");
        } else {
            // 6.4 kB/s of payload over 6 s plus the 1 s burst: about 45 kB of the 58 kB, i.e.
            // 93 of the 480-byte payloads.
            assert!(admitted <= 96, "{profile:?}: {admitted} of {n}");
        }
    }
    assert_eq!(PAPER.params().codec, BwCodec::Paper);
    assert_eq!(SCION.params().codec, BwCodec::Linear);
}

#[test]
fn burst_is_50_ms_in_paper_and_1_s_in_scionproto() {
    // 64 kB/s; 1000-byte packets (~900 B of payload) all at one instant.
    for (profile, lo, hi) in [(PAPER, 3, 3), (SCION, 65, 75)] {
        let mut f = Flow::new(code_64kbyte_s(profile), T0 - 10);
        let mut r = f.router(profile.params());
        let pkt = f.packet(NOW, 1000);
        // The same packet over and over (duplicate suppression is off in both profiles).
        let admitted = (0..200).take_while(|_| priority(&mut r, &pkt, NOW)).count();
        // paper: 50 ms × 64 kB/s = 3200 B → 3 packets; scionproto: 64 kB of payload → ~71.
        assert!((lo..=hi).contains(&admitted), "{profile:?}: {admitted}");
    }
}

#[test]
fn freshness_window_edges_in_each_profile() {
    // (profile, how long after sending a packet is still fresh, how long before)
    for (profile, past, future) in [(PAPER, 1_500 * MS, 500 * MS), (SCION, S, S)] {
        let mut f = Flow::new(code_64kbyte_s(profile), T0 - 10);
        let sent = NOW;
        let pkt = f.packet(sent, 300);
        for (now, fresh) in
            [(sent - future - 1, false), (sent - future, true), (sent + past, true), (sent + past + 1, false)]
        {
            let mut r = f.router(profile.params());
            assert_eq!(priority(&mut r, &pkt, now), fresh, "{profile:?}: sent {sent}, router at {now}");
            assert_eq!(r.counters().stale, u64::from(!fresh));
        }
    }
}

#[test]
fn reservation_start_is_inclusive_in_paper_and_strict_in_scionproto() {
    let start = T0 + 20;
    let at_start = u64::from(start) * S;
    for (profile, at_start_active) in [(PAPER, true), (SCION, false)] {
        let mut f = Flow::new(code_64kbyte_s(profile), start);
        let pkt = f.packet(at_start, 300);
        let mut r = f.router(profile.params());
        assert_eq!(priority(&mut r, &pkt, at_start), at_start_active, "{profile:?} at ResStart");
        assert_eq!(r.counters().inactive, u64::from(!at_start_active));
        // One nanosecond later, both are active; one before, neither.
        assert!(priority(&mut f.router(profile.params()), &pkt, at_start + 1), "{profile:?}");
        assert!(!priority(&mut f.router(profile.params()), &pkt, at_start - 1), "{profile:?}");
    }
}

#[test]
fn paper_charges_the_packet_scionproto_the_payload() {
    // 64 kB/s; 210-byte packets (90 B of payload) every 2.5 ms for 10 s: 84 kB/s of packets
    // (over the rate) but 36 kB/s of payload (within it).
    for (profile, want_all) in [(PAPER, false), (SCION, true)] {
        let mut f = Flow::new(code_64kbyte_s(profile), T0 - 10);
        let mut r = f.router(profile.params());
        let n = 4000u64;
        let admitted = (0..n)
            .filter(|k| {
                let now = NOW + k * 2_500_000;
                let pkt = f.packet(now, 210);
                priority(&mut r, &pkt, now)
            })
            .count() as u64;
        if want_all {
            assert_eq!(admitted, n, "{profile:?}");
        } else {
            // Charged 84 kB/s against 64 kB/s: about three quarters, never all.
            assert!(admitted < n * 8 / 10, "{profile:?}: {admitted} of {n}");
        }
    }
}

#[test]
fn a_maximum_size_packet_on_a_5_kbit_s_reservation_gets_priority_in_both_profiles() {
    // 5 kbit/s in the paper codec; 5.12 kbit/s (code 10, 640 B/s) in the linear one.
    for (profile, bw) in [(PAPER, 5), (SCION, 10)] {
        assert!(profile.params().codec.decode_bps(bw) <= 5_120);
        // 126 bytes take 201.6 ms at 5 kbit/s, four times the paper's 50 ms burst; 1500
        // bytes (1380 of payload) take over 2 s, twice scionproto's 1 s burst.
        for len in [126, 1500] {
            let mut f = Flow::new(bw, T0 - 10);
            let pkt = f.packet(NOW, len);
            let mut r = f.router(profile.params());
            assert!(priority(&mut r, &pkt, NOW), "{profile:?}: {len} bytes");
            assert_eq!(ScionView::new_checked(&pkt[..]).unwrap().pkt_len_u16(), Some(len as u16));
            // The floor is one maximum-size packet, not a free pass: the reservation is now
            // a whole packet ahead, so an immediate second one waits.
            if len == 1500 {
                let again = f.packet(NOW, len);
                assert!(!priority(&mut r, &again, NOW), "{profile:?}");
            }
        }
    }
}
