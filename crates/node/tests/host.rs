//! The host agent: packets it builds go through real Hummingbird routers (a `testbed::Chain`,
//! each AS with its own keys) and into the sink; the sender runs end to end against a fake
//! control service and an in-process chain of routers on loopback.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use aviary_hummingbird::testbed::{Chain, IF_NEXT};
use aviary_hummingbird::{as_hops, BwCodec, Router, RouterParams};
use aviary_node::api::{PathWire, PathsReply};
use aviary_node::config::HostConfig;
use aviary_node::host::{
    run_sender, run_sink, FlowKind, FlowSpec, Forgery, Generator, HopReservation, PacketFactory, ReservationFile,
    ScionAddr, SendOptions, Sink, SinkOptions,
};
use aviary_node::routes::AsOnRoute;
use aviary_qos::{Admission, DropReason, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::{HostAddr, ScionUdpView, ScionView};
use clap::Parser;

const NS: u64 = 1_000_000_000;
const NOW_S: u32 = 1_750_000_000;
const NOW_NS: u64 = NOW_S as u64 * NS + 250_000_000;

fn path_wire(chain: &Chain) -> PathWire {
    let ases = as_hops(&chain.path)
        .iter()
        .zip(&chain.ases)
        .map(|(h, a)| AsOnRoute { ia: a.ia, ingress: h.ingress, egress: h.egress })
        .collect();
    PathWire {
        ases,
        path: hex::encode(chain.path.to_bytes().unwrap()),
        expiry: u64::from(u32::MAX),
        sigmas: Vec::new(),
    }
}

/// Reservations of `bps` on the AS hops `hops`, each granted with its AS's own key.
fn reservation_file(chain: &Chain, hops: &[usize], start: u32, bps: u64) -> ReservationFile {
    let bw = BwCodec::Paper.encode_ceil(bps).unwrap();
    let reservations = hops
        .iter()
        .map(|&i| HopReservation {
            ia: chain.ases[i].ia,
            bandwidth_bps: BwCodec::Paper.decode_bps(bw),
            reservation: chain.grant(i, 10 + i as u32, bw, start, 3600),
        })
        .collect();
    ReservationFile { dst: chain.dst_ia(), reservations }
}

fn spec(chain: &Chain, name: &str, size: usize) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        src_ia: chain.src_ia(),
        src: "127.0.0.1:40001".parse().unwrap(),
        dst: ScionAddr { ia: chain.dst_ia(), host: "127.0.0.2:40000".parse().unwrap() },
        size,
    }
}

fn routers(chain: &Chain) -> Vec<Router> {
    (0..chain.ases.len()).map(|i| chain.router(i, RouterParams::default())).collect()
}

/// The verdicts along the chain, up to the first that is not a forward.
fn walk(routers: &mut [Router], pkt: &mut [u8], now_ns: u64) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (i, r) in routers.iter_mut().enumerate() {
        let v = r.process(pkt, Chain::forward_ingress(i), now_ns);
        out.push(v);
        if !matches!(v, Verdict::Forward { .. }) {
            break;
        }
    }
    out
}

#[test]
fn best_effort_packets_parse_and_carry_a_valid_checksum() {
    let chain = Chain::new(3, NOW_S - 60);
    let mut f = PacketFactory::new(&spec(&chain, "be", 700), &path_wire(&chain), &[], None).unwrap();
    let pkt = f.fill(42, NOW_NS).unwrap().to_vec();
    assert_eq!(pkt.len(), 700);
    let v = ScionView::new_checked(&pkt[..]).unwrap();
    assert_eq!((v.path_type(), v.src_ia(), v.dst_ia()), (path_type::SCION, chain.src_ia(), chain.dst_ia()));
    assert_eq!(v.dst_host(), HostAddr::V4("127.0.0.2".parse().unwrap()));
    let udp = ScionUdpView::new_checked(&pkt[..]).unwrap();
    udp.verify().unwrap();
    assert_eq!((udp.src_port(), udp.dst_port()), (40001, 40000));
    assert_eq!(&udp.payload()[..4], b"AVRY");
    let mut rs = routers(&chain);
    let mut p = pkt.clone();
    assert_eq!(walk(&mut rs, &mut p, NOW_NS).last(), Some(&Verdict::Deliver));
    // Too small for the headers, or a name too long: errors, not panics.
    assert!(PacketFactory::new(&spec(&chain, "be", 100), &path_wire(&chain), &[], None).is_err());
    assert!(PacketFactory::new(&spec(&chain, &"n".repeat(33), 700), &path_wire(&chain), &[], None).is_err());
}

#[test]
fn reserved_packets_from_a_reservation_file_get_priority_at_each_reserved_as() {
    // line5: reservations on the three transit ASes, as in the demo.
    let chain = Chain::new(5, NOW_S - 60);
    let file = reservation_file(&chain, &[3, 1, 2], NOW_S - 10, 2_000_000);
    let dir = aviary_scratch::ScratchDir::new("host-test");
    let at = dir.join("res.json");
    file.save(&at).unwrap();
    let file = ReservationFile::load(&at).unwrap();
    assert_eq!(file.reserved_bps(), Some(2_016_000));

    let paths = [path_wire(&chain)];
    let (path, on_path) = file.select_path(&paths).unwrap();
    assert_eq!(on_path.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [1, 2, 3]);
    let mut f = PacketFactory::new(&spec(&chain, "res", 1000), path, &on_path, None).unwrap();
    let mut rs = routers(&chain);
    let mut sink = Sink::new(NOW_NS - NS, 250);
    // 1000-byte packets 5 ms apart: 1.6 Mbit/s, within the reservation.
    for seq in 0..20 {
        let now = NOW_NS + seq * 5_000_000;
        let mut pkt = f.fill(seq, now).unwrap().to_vec();
        assert_eq!(ScionView::new_checked(&pkt[..]).unwrap().path_type(), path_type::HUMMINGBIRD);
        let p = Verdict::reserved(IF_NEXT);
        assert_eq!(
            walk(&mut rs, &mut pkt, now),
            [Verdict::unauthenticated(IF_NEXT), p, p, p, Verdict::Deliver],
            "{seq}"
        );
        // Routers rewrote the AggMACs; the checksum does not cover the path.
        sink.receive(&pkt, now + 3_000_000);
    }
    let r = sink.report();
    assert_eq!((r.bad_checksum, r.malformed), (0, 0));
    let flow = &r.flows["res"];
    assert_eq!((flow.received_packets, flow.received_bytes, flow.lost), (20, 20_000, 0));
    assert_eq!((flow.p50_ms, flow.max_ms), (3.0, 3.0));
}

#[test]
fn path_selection_needs_every_reserved_hop_and_names_them_otherwise() {
    let chain = Chain::new(4, NOW_S - 60);
    let file = reservation_file(&chain, &[1, 2], NOW_S - 10, 1_000_000);
    let good = path_wire(&chain);
    let mut other = good.clone();
    other.ases[2].egress = 7;
    let paths = [other.clone(), good.clone()];
    let (p, on_path) = file.select_path(&paths).unwrap();
    assert_eq!((p, on_path.len()), (&good, 2));
    let e = file.select_path(&[other]).unwrap_err().to_string();
    assert!(e.contains(&chain.ases[2].ia.to_string()) && e.contains("no path"), "{e}");
    assert!(file.select_path(&[]).unwrap_err().to_string().contains("offered no path"));
}

#[test]
fn forged_flyovers_are_dropped_with_a_bad_mac() {
    let chain = Chain::new(4, NOW_S - 60);
    let file = reservation_file(&chain, &[1, 2], NOW_S - 10, 1_000_000);
    let paths = [path_wire(&chain)];
    let (path, on_path) = file.select_path(&paths).unwrap();
    let mut rs = routers(&chain);
    let mut dropped = 0;
    for forgery in [Forgery::RaiseBw, Forgery::ExtendDuration, Forgery::WrongKey, Forgery::Cycle] {
        let mut f = PacketFactory::new(&spec(&chain, "forge", 600), path, &on_path, Some(forgery)).unwrap();
        for seq in 0..3 {
            let mut pkt = f.fill(seq, NOW_NS).unwrap().to_vec();
            let v = walk(&mut rs, &mut pkt, NOW_NS);
            assert_eq!(v, [Verdict::unauthenticated(IF_NEXT), Verdict::Drop(DropReason::BadMac)], "{forgery:?} {seq}");
            dropped += 1;
        }
    }
    assert_eq!(dropped, 12);
}

#[test]
fn replayed_packets_are_sent_late_and_get_no_priority() {
    let chain = Chain::new(4, NOW_S - 60);
    let file = reservation_file(&chain, &[1, 2], NOW_S - 10, 1_000_000);
    let paths = [path_wire(&chain)];
    let (path, on_path) = file.select_path(&paths).unwrap();
    let factory = |name: &str| PacketFactory::new(&spec(&chain, name, 600), path, &on_path, None).unwrap();
    let mut replay = Generator::new(factory("replay"), Some(2 * NS));
    let mut honest = Generator::new(factory("honest"), None);
    let mut rs = routers(&chain);
    let collect = |g: &mut Generator, now: u64| {
        let mut out = Vec::new();
        g.slot(now, |p| out.push(p.to_vec())).unwrap();
        out
    };
    // Capture for two seconds, ten packets a second: nothing goes out yet.
    for i in 0..20 {
        assert!(collect(&mut replay, NOW_NS + i * NS / 10).is_empty());
    }
    for i in 20..30 {
        let now = NOW_NS + i * NS / 10;
        let sent = collect(&mut replay, now);
        assert_eq!(sent.len(), 1);
        let mut pkt = sent.into_iter().next().unwrap();
        let udp = ScionUdpView::new_checked(&pkt[..]).unwrap();
        udp.verify().unwrap();
        // The copy of the packet stamped two seconds earlier, byte for byte.
        assert_eq!(u64::from_be_bytes(udp.payload()[11..19].try_into().unwrap()), i - 20);
        let be = Verdict::unauthenticated(IF_NEXT);
        assert_eq!(walk(&mut rs, &mut pkt, now), [be, be, be, Verdict::Deliver], "replay {i}");
        // The same reservation, fresh, still has priority.
        let mut fresh = collect(&mut honest, now).pop().unwrap();
        let p = Verdict::reserved(IF_NEXT);
        assert_eq!(walk(&mut rs, &mut fresh, now), [be, p, p, Verdict::Deliver]);
    }
    // Both reserved ASes saw every replay as stale and every fresh packet as reserved.
    for r in &rs[1..3] {
        assert_eq!((r.counters().stale, r.counters().reserved), (10, 10));
    }
}

#[test]
fn sink_accounts_loss_duplicates_and_malformed_datagrams() {
    let chain = Chain::new(2, NOW_S - 60);
    let mut f = PacketFactory::new(&spec(&chain, "a", 500), &path_wire(&chain), &[], None).unwrap();
    let start = NOW_NS;
    let mut sink = Sink::new(start, 100);
    // Sequence 2 and 4 lost, 3 duplicated; one-way delays of 1..=5 ms.
    for (i, seq) in [0u64, 1, 3, 3, 5].into_iter().enumerate() {
        let pkt = f.fill(seq, start + seq * 10_000_000).unwrap().to_vec();
        sink.receive(&pkt, start + seq * 10_000_000 + (i as u64 + 1) * 1_000_000);
    }
    // A second flow, received in the third 100 ms bin.
    let mut g = PacketFactory::new(&spec(&chain, "b", 500), &path_wire(&chain), &[], None).unwrap();
    sink.receive(f.fill(6, start).unwrap(), start + 60_000_000);
    sink.receive(g.fill(0, start).unwrap(), start + 250_000_000);

    let mut bad = f.fill(7, start).unwrap().to_vec();
    *bad.last_mut().unwrap() ^= 1;
    sink.receive(&bad, start);
    let mut no_magic = f.fill(8, start).unwrap().to_vec();
    let off = ScionUdpView::new_checked(&no_magic[..]).unwrap().payload_range().start;
    no_magic[off] = b'X';
    aviary_scion::wire::udp::set_checksum(&mut no_magic).unwrap();
    sink.receive(&no_magic, start);
    let good = f.fill(9, start).unwrap().to_vec();
    for cut in [0, 1, 20, 60, good.len() - 1] {
        sink.receive(&good[..cut], start);
    }
    sink.receive(&[0xff; 300], start);

    let r = sink.report();
    assert_eq!((r.bad_checksum, r.malformed, r.untracked), (1, 7, 0));
    let a = &r.flows["a"];
    assert_eq!((a.received_packets, a.duplicates, a.max_seq, a.lost), (5, 1, 6, 2));
    assert_eq!(a.received_bytes, 2500);
    assert_eq!((a.first_rx_ns, a.last_rx_ns), (start + 1_000_000, start + 60_000_000));
    assert_eq!(a.goodput_bps, (2500.0 * 8.0 / 0.059) as u64);
    // Delays 1, 2, 3, 5 and 60 ms (the duplicate's is not counted).
    assert_eq!((a.p50_ms, a.p99_ms, a.max_ms), (3.0, 60.0, 60.0));
    assert_eq!(a.timeline_bps, [2500 * 8 * 10, 0, 0]);
    assert_eq!(r.flows["b"].timeline_bps, [0, 0, 500 * 8 * 10]);
}

#[test]
fn sink_over_loopback_counts_what_arrives_and_survives_garbage() {
    let chain = Chain::new(2, NOW_S - 60);
    let port = free_port();
    let cfg = HostConfig {
        name: "sink".into(),
        ia: chain.dst_ia(),
        addr: "127.0.0.1".parse().unwrap(),
        router: "127.0.0.1:9".parse().unwrap(),
        control: "127.0.0.1:9".parse().unwrap(),
        zlane_gateway: None,
    };
    let opts = SinkOptions { listen_port: port, duration_ms: Some(1000), report: None, bin_ms: 100, metrics: None };
    let sink = thread::spawn(move || run_sink(&cfg, &opts).unwrap());
    thread::sleep(Duration::from_millis(200));
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut spec = spec(&chain, "direct", 300);
    spec.dst.host = SocketAddr::new("127.0.0.1".parse().unwrap(), port);
    let mut f = PacketFactory::new(&spec, &path_wire(&chain), &[], None).unwrap();
    for seq in [0, 1, 2, 2, 4] {
        tx.send_to(f.fill(seq, aviary_node::host::unix_ns()).unwrap(), ("127.0.0.1", port)).unwrap();
    }
    for junk in [&b""[..], b"AVRY", &[0u8; 64], &[0xff; 1500]] {
        tx.send_to(junk, ("127.0.0.1", port)).unwrap();
    }
    let r = sink.join().unwrap();
    let flow = &r.flows["direct"];
    assert_eq!((flow.received_packets, flow.duplicates, flow.lost, flow.max_seq), (4, 1, 1, 4));
    assert_eq!((flow.received_bytes, r.malformed, r.bad_checksum), (1200, 4, 0));
    assert!(flow.p99_ms < 500.0, "{flow:?}");
}

/// A chain of routers in one thread: packets from the host's socket go through every AS and
/// are delivered to their SCION/UDP destination, as the router processes would.
struct Network {
    addr: SocketAddr,
    /// Per AS, the classes the packets got.
    classes: Arc<Mutex<Vec<Vec<Admission>>>>,
    stop: Arc<AtomicBool>,
}

impl Network {
    fn start(chain: &Chain) -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let addr = socket.local_addr().unwrap();
        let mut rs = routers(chain);
        let classes = Arc::new(Mutex::new(vec![Vec::new(); rs.len()]));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (classes.clone(), stop.clone());
        thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while !s.load(Ordering::Relaxed) {
                let Ok(n) = socket.recv(&mut buf) else { continue };
                let pkt = &mut buf[..n];
                let now = aviary_node::host::unix_ns();
                if walk(&mut rs, pkt, now).into_iter().enumerate().all(|(i, v)| match v {
                    Verdict::Forward { admission: class, .. } => {
                        c.lock().unwrap()[i].push(class);
                        true
                    }
                    _ => v == Verdict::Deliver,
                }) {
                    let v = ScionUdpView::new_checked(&pkt[..]).unwrap();
                    let HostAddr::V4(ip) = ScionView::new_checked(&pkt[..]).unwrap().dst_host() else { continue };
                    let _ = socket.send_to(pkt, (ip, v.dst_port()));
                }
            }
        });
        Self { addr, classes, stop }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers every request with `paths`.
fn control_service(paths: Vec<PathWire>) -> SocketAddr {
    let body = serde_json::to_string(&PathsReply { paths }).unwrap();
    let answer = move |_: &aviary_node::http::Request, _: &aviary_node::http::server::ServerStats| {
        aviary_node::http::Response::json(200, body.clone())
    };
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = aviary_node::http::server::Server::http("control", any, Default::default(), Arc::new(answer)).unwrap();
    let addr = server.addr();
    // Serves for the rest of the test process.
    std::mem::forget(server);
    addr
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[derive(Parser)]
struct SendCli {
    #[command(flatten)]
    opts: SendOptions,
}

#[test]
fn a_reserved_flow_end_to_end_over_loopback() {
    let dir = aviary_scratch::ScratchDir::new("host-e2e");
    let now_s = (aviary_node::host::unix_ns() / NS) as u32;
    let chain = Chain::new(4, now_s - 60);
    let net = Network::start(&chain);
    let res = dir.join("res.json");
    reservation_file(&chain, &[1, 2], now_s - 10, 1_000_000).save(&res).unwrap();
    let localhost: IpAddr = "127.0.0.1".parse().unwrap();
    let host = |ia| HostConfig {
        name: "h".into(),
        ia,
        addr: localhost,
        router: net.addr,
        control: control_service(vec![path_wire(&chain)]),
        zlane_gateway: None,
    };

    let sink_opts = SinkOptions {
        listen_port: free_port(),
        duration_ms: Some(3000),
        report: Some(dir.join("sink.json")),
        bin_ms: 250,
        metrics: None,
    };
    let dst_cfg = host(chain.dst_ia());
    let sink_opts2 = sink_opts.clone();
    let sink = thread::spawn(move || run_sink(&dst_cfg, &sink_opts2).unwrap());
    thread::sleep(Duration::from_millis(200));

    // 500-byte packets at 400 kbit/s for one second: 100 send slots.
    let dst = format!("{},127.0.0.1:{}", chain.dst_ia(), sink_opts.listen_port);
    let args = ["send", "--dst", &dst, "--flow", "gold", "--rate-bps", "400000", "--size", "500"];
    let mut opts = SendCli::parse_from(args.iter().chain(&["--duration-ms", "1000"])).opts;
    opts.reservation = Some(res);
    opts.report = Some(dir.join("send.json"));
    let sent = run_sender(&host(chain.src_ia()), &opts).unwrap();
    assert_eq!(sent.kind, FlowKind::Reserved);
    assert_eq!(sent.sent_packets + sent.skipped_packets + sent.send_errors, 100);
    assert!(sent.sent_packets >= 50, "{sent:?}");
    assert_eq!(sent.sent_bytes, sent.sent_packets * 500);
    assert!((1.0..3.0).contains(&sent.duration_s), "{sent:?}");
    assert_eq!(sent.reserved_bps, Some(1_008_000));

    let got = sink.join().unwrap();
    let flow = &got.flows["gold"];
    assert_eq!((flow.received_packets, flow.duplicates, got.malformed), (sent.sent_packets, 0, 0));
    assert!(flow.p99_ms < 500.0, "{flow:?}");
    let classes = net.classes.lock().unwrap().clone();
    let all =
        |i: usize, c: Admission| classes[i].len() as u64 == sent.sent_packets && classes[i].iter().all(|x| *x == c);
    assert!(
        all(0, Admission::UNAUTHENTICATED) && all(1, Admission::RESERVED) && all(2, Admission::RESERVED),
        "{classes:?}"
    );
    // Both reports were written.
    let on_disk: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("sink.json")).unwrap()).unwrap();
    assert_eq!(on_disk["flows"]["gold"]["received_packets"], sent.sent_packets);
    let on_disk: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("send.json")).unwrap()).unwrap();
    assert_eq!(on_disk["kind"], "reserved");
}

#[test]
fn send_options_parse_and_bad_combinations_are_refused() {
    let o = SendCli::parse_from([
        "send",
        "--dst",
        "1-ff00:0:121,127.0.0.1:40000",
        "--flow",
        "x",
        "--kind",
        "best_effort",
        "--rate-bps",
        "1000000",
        "--pattern",
        "bursty",
        "--attack",
        "forge",
        "--forge",
        "wrong-key",
    ])
    .opts;
    assert_eq!(o.dst.to_string(), "1-ff00:0:121,127.0.0.1:40000");
    assert_eq!(
        (o.kind, o.forge, o.size, o.replay_delay_ms),
        (Some(FlowKind::BestEffort), Forgery::WrongKey, 1000, 2000)
    );
    assert!(SendCli::try_parse_from(["send", "--dst", "1-ff00:0:121", "--flow", "x", "--rate-bps", "1"]).is_err());
    let both = ["send", "--dst", "1-ff00:0:121,[::1]:9", "--flow", "x", "--rate-bps", "1", "--path-index", "1"];
    assert!(SendCli::try_parse_from(both.iter().chain(&["--reservation", "r.json"])).is_err());

    // A forging attacker without a reservation has nothing to forge: refused before any I/O.
    let cfg = HostConfig {
        name: "h".into(),
        ia: "1-ff00:0:110".parse().unwrap(),
        addr: "127.0.0.1".parse().unwrap(),
        router: "127.0.0.1:9".parse().unwrap(),
        control: "127.0.0.1:9".parse().unwrap(),
        zlane_gateway: None,
    };
    let e = run_sender(&cfg, &o).unwrap_err().to_string();
    assert!(e.contains("needs --reservation"), "{e}");
}
