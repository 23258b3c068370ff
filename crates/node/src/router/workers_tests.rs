//! A router with several workers on real sockets: the transit AS of a three-AS chain, a
//! neighbour socket sending into its interface towards AS 0 and a sink behind its interface
//! towards AS 2. Policing is exact whichever worker receives, every packet is forwarded once,
//! and management changes reach every worker.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use aviary_glwp::hop_key::as_secret;
use aviary_glwp::testbed;
use aviary_hummingbird::source::Source;
use aviary_hummingbird::testbed::{Chain, IF_NEXT, IF_PREV};
use aviary_hummingbird::RouterParams;
use aviary_qos::{Admission, Verdict};
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::udp;
use aviary_scion::{HostAddr, IsdAsn, ScionHeader};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{GatewayConfig, GatewayVerdict, OverRatePolicy};
use aviary_zlane::testbed as zlane_testbed;

use super::management::{self, Command, CommandMsg, KeyOverlap};
use super::metrics::RouterStatus;
use super::steering::{self, Spread};
use super::workers::{Handed, StatusBoard};
use super::{start, Forwarder, HANDOFF_CAPACITY};
use crate::clock::unix_ns;
use crate::config::RouterConfig;

const S: u64 = 1_000_000_000;
const TRANSIT: usize = 1;

struct Running {
    commands: Sender<CommandMsg>,
    board: Arc<StatusBoard>,
    /// The router's socket of the interface towards AS 0.
    ingress: SocketAddr,
    /// The router's socket inside its AS.
    internal: SocketAddr,
    neighbor: UdpSocket,
    sink: UdpSocket,
    /// Last, so that it goes after what uses it.
    _dir: aviary_scratch::ScratchDir,
}

/// Starts the transit router of `chain` with `workers` workers (and a policing burst of
/// `burst_ms`), every worker on a thread of its own.
fn run_router(name: &str, chain: &Chain, workers: usize, burst_ms: u64) -> Running {
    let tables = format!("[hummingbird]\nburst_ns = {}\n", burst_ms * 1_000_000);
    run_router_with(name, &Transit::of(chain), workers, &tables)
}

/// The transit AS a router is started for: its ISD-AS and master secret, and its neighbours
/// behind `IF_PREV` and `IF_NEXT`.
struct Transit {
    ia: IsdAsn,
    master_secret: [u8; 16],
    neighbours: [IsdAsn; 2],
}

impl Transit {
    fn of(chain: &Chain) -> Self {
        let a = &chain.ases[TRANSIT];
        Self { ia: a.ia, master_secret: a.master_secret, neighbours: [chain.ases[0].ia, chain.ases[2].ia] }
    }
}

/// [`run_router`] for `transit`, with the mechanism tables `tables` in its config.
fn run_router_with(name: &str, transit: &Transit, workers: usize, tables: &str) -> Running {
    let (r, forwarders) = start_router_with(name, transit, workers, tables);
    for w in forwarders {
        std::thread::spawn(move || w.run());
    }
    r
}

/// [`run_router_with`], but the workers are returned, not yet running: a test runs them, or
/// leaves one stalled.
fn start_router_with(name: &str, transit: &Transit, workers: usize, tables: &str) -> (Running, Vec<Forwarder>) {
    let dir = aviary_scratch::ScratchDir::new(&format!("workers-{name}-{workers}"));
    std::fs::write(dir.join("secret.hex"), hex::encode(transit.master_secret)).unwrap();
    let neighbor = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(400))).unwrap();
    let toml = format!(
        r#"ia = "{}"
master_secret_file = "secret.hex"
internal = "127.0.0.1:0"
management = "127.0.0.1:0"
workers = {workers}

{tables}
[[interface]]
id = {IF_PREV}
local = "127.0.0.1:0"
remote = "{}"
neighbor = "{}"
capacity_bps = 1000000000

[[interface]]
id = {IF_NEXT}
local = "127.0.0.1:0"
remote = "{}"
neighbor = "{}"
capacity_bps = 1000000000
"#,
        transit.ia,
        neighbor.local_addr().unwrap(),
        transit.neighbours[0],
        sink.local_addr().unwrap(),
        transit.neighbours[1],
    );
    let path = dir.join("router.toml");
    std::fs::write(&path, toml).unwrap();
    let cfg = RouterConfig::load(&path).unwrap();
    let (forwarders, commands, board) = start(&cfg, &path).unwrap();
    assert_eq!(forwarders.len(), workers);
    // Published before any worker runs: the management API never shows an empty router.
    assert_eq!(board.merged().interfaces.len(), 3);
    let k = forwarders[0].shared.index_of(IF_PREV).unwrap();
    let ingress = forwarders[0].shared.links[k].sock.local_addr();
    let internal = forwarders[0].shared.internal.local_addr();
    (Running { commands, board, ingress, internal, neighbor, sink, _dir: dir }, forwarders)
}

impl Running {
    fn send(&self, pkts: &[Vec<u8>]) {
        for p in pkts {
            self.neighbor.send_to(p, self.ingress).unwrap();
        }
    }

    /// Every datagram the sink gets until it is quiet for a while.
    fn drain_sink(&self) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok(n) = self.sink.recv(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        got
    }

    fn command(&self, cmd: Command) {
        let (tx, rx) = mpsc::channel();
        self.commands.send((cmd, tx)).unwrap();
        rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap();
    }

    /// The router's status once every worker has published what it did so far.
    fn status(&self) -> RouterStatus {
        std::thread::sleep(Duration::from_millis(500));
        self.board.merged()
    }
}

fn counter(status: &RouterStatus, name: &str) -> u64 {
    mechanism_counter(status, "hummingbird", name)
}

fn mechanism_counter(status: &RouterStatus, mechanism: &str, name: &str) -> u64 {
    let m = status.mechanisms.iter().find(|m| m.name == mechanism).unwrap();
    m.counters.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
}

/// `count` packets of each reservation (ResIDs `res_ids`, `bw` in the codec's units) as they
/// reach the transit AS, each stamped apart.
fn flyover_packets(chain: &Chain, res_ids: &[u32], bw: u16, count: usize) -> Vec<Vec<u8>> {
    let now = unix_ns();
    let now_s = (now / S) as u32;
    let mut out = Vec::new();
    for &res_id in res_ids {
        let res = chain.grant(TRANSIT, res_id, bw, now_s - 10, 600);
        let template = chain.hbird_packet(&[(TRANSIT, res)], now_s, 100).unwrap();
        let mut src = Source::new(&template, &[res]).unwrap();
        for _ in 0..count {
            let mut pkt = template.clone();
            src.stamp(&mut pkt, now).unwrap();
            chain.router(0, RouterParams::default()).process(&mut pkt, 0, now);
            out.push(pkt);
        }
    }
    out
}

fn chain() -> Chain {
    Chain::new(3, (unix_ns() / S) as u32 - 60)
}

/// Reserved packets of one reservation sent in one go: the policer's burst allows a few, the
/// rest go best effort (16 kbit/s: about 10 packets of 200 bytes in the burst's second). Returns
/// how many the router forwarded as reserved.
fn reserved_of_one_burst(workers: usize) -> u64 {
    let chain = chain();
    // A second of burst at a small rate: the refill during the test is about one packet.
    let r = run_router("policing", &chain, workers, 1000);
    let bw = RouterParams::default().codec.encode_floor(16_000);
    let pkts = flyover_packets(&chain, &[7], bw, 60);
    r.send(&pkts);
    let forwarded = r.drain_sink().len();
    assert_eq!(forwarded, pkts.len(), "over-rate packets still go, as best effort");
    let status = r.status();
    let reserved = counter(&status, "flyover_reserved_packets");
    assert_eq!(reserved + counter(&status, "flyover_over_rate_packets"), pkts.len() as u64);
    reserved
}

/// What one burst earns with one worker (within `alone`), and with 2 and 4 workers the same but
/// for `slack` packets (the refill while the tests run): a bucket split over workers would give
/// each worker its own burst.
fn the_same_with_any_workers(what: &str, burst: impl Fn(usize) -> u64, alone: RangeInclusive<u64>, slack: u64) {
    let one = burst(1);
    assert!(alone.contains(&one), "one worker: {one} {what}");
    for workers in [2, 4] {
        let many = burst(workers);
        assert!(many.abs_diff(one) <= slack, "{workers} workers: {many} {what}, one worker: {one}");
    }
}

#[test]
fn a_reservation_is_policed_once_whichever_worker_receives_it() {
    // 60 packets are sent.
    the_same_with_any_workers("reserved packets", reserved_of_one_burst, 3..=30, 2);
}

#[test]
fn every_packet_is_forwarded_once_with_several_workers() {
    let chain = chain();
    let r = run_router("forwarding", &chain, 2, 1000);
    // Many reservations at the largest rate: steered to both workers, none policed.
    let res_ids: Vec<u32> = (1..=16).collect();
    let pkts = flyover_packets(&chain, &res_ids, 1023, 8);
    for chunk in pkts.chunks(16) {
        r.send(chunk);
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut got: HashMap<Vec<u8>, usize> = HashMap::new();
    for p in r.drain_sink() {
        *got.entry(p).or_default() += 1;
    }
    assert!(got.values().all(|&n| n == 1), "a packet came out twice");
    assert_eq!(got.len(), pkts.len(), "every packet came out");
    let status = r.status();
    assert_eq!(status.interfaces.iter().map(|i| i.received_packets).sum::<u64>(), pkts.len() as u64);
    assert_eq!(counter(&status, "flyover_reserved_packets"), pkts.len() as u64, "summed over the workers");
    // Both workers forwarded some: their own counters add up to the total.
    let each: Vec<u64> = r.board.each().iter().map(|s| counter(s, "flyover_reserved_packets")).collect();
    assert!(each.iter().all(|&n| n > 0), "both workers took a share: {each:?}");
}

#[test]
fn key_rotation_and_mechanism_changes_reach_every_worker() {
    let old = chain();
    let new = Chain::with_key_generation(3, (unix_ns() / S) as u32 - 60, 1);
    let r = run_router("changes", &old, 2, 1000);
    let res_ids: Vec<u32> = (1..=16).collect();
    // Under the secret not yet in force: every packet fails the MAC check, on both workers.
    r.send(&flyover_packets(&new, &res_ids, 1023, 2));
    assert!(r.drain_sink().is_empty());
    let secret = new.ases[TRANSIT].master_secret.to_vec();
    r.command(Command::MasterSecret { secret, previous_until_ns: unix_ns() + 3600 * S, rotated_at_s: unix_ns() / S });
    let pkts = flyover_packets(&new, &res_ids, 1023, 2);
    r.send(&pkts);
    assert_eq!(r.drain_sink().len(), pkts.len(), "every worker verifies under the new secret");
    // The old secret still verifies within the overlap.
    let pkts = flyover_packets(&old, &res_ids, 1023, 2);
    r.send(&pkts);
    assert_eq!(r.drain_sink().len(), pkts.len(), "every worker keeps the previous secret");
    // A mechanism's setting is in force on every worker once the command returns.
    r.command(Command::Mechanism { name: "hummingbird".into(), request: serde_json::json!({ "burst_ms": 250 }) });
    for s in r.board.each() {
        let hb = s.mechanisms.iter().find(|m| m.name == "hummingbird").unwrap();
        assert_eq!(hb.settings["burst_ms"], 250.0, "{:?}", hb.settings);
    }
}

#[test]
fn a_key_rotation_sent_twice_through_the_management_api_keeps_the_previous_key() {
    let old = chain();
    let new = Chain::with_key_generation(3, (unix_ns() / S) as u32 - 60, 1);
    let r = run_router("keys-twice", &old, 2, 1000);
    let api = management::serve(
        "127.0.0.1:0".parse().unwrap(),
        r.commands.clone(),
        r.board.clone(),
        KeyOverlap::default(),
        None,
    )
    .unwrap();
    let body =
        format!(r#"{{"master_secret": "{}", "overlap_secs": 3600}}"#, hex::encode(new.ases[TRANSIT].master_secret));
    // An operator retrying after a timeout: the second request finds the rotation done.
    for _ in 0..2 {
        let reply = ureq::put(&format!("http://{}/v1/keys", api.addr())).send_string(&body).unwrap();
        assert_eq!(reply.status(), 200);
    }
    let res_ids: Vec<u32> = (1..=16).collect();
    for (chain, what) in [(&new, "the new secret"), (&old, "the previous secret")] {
        let pkts = flyover_packets(chain, &res_ids, 1023, 2);
        r.send(&pkts);
        assert_eq!(r.drain_sink().len(), pkts.len(), "every worker verifies under {what}");
    }
}

/// A UDP packet from `from` inside the transit AS to `to` in the same AS, on the empty path.
fn inside_packet(chain: &Chain, from: SocketAddr, to: SocketAddr) -> Vec<u8> {
    let ia = chain.ases[TRANSIT].ia;
    let header = ScionHeader {
        traffic_class: 0,
        flow_id: 1,
        next_hdr: udp::PROTOCOL_UDP,
        path_type: path_type::EMPTY,
        dst_ia: ia,
        src_ia: ia,
        dst_host: HostAddr::from(to.ip()),
        src_host: HostAddr::from(from.ip()),
        path: Vec::new(),
    };
    udp::packet_to_vec(&header, from.port(), to.port(), &[0; 32]).unwrap()
}

#[test]
fn a_packet_for_one_of_the_routers_own_sockets_is_dropped_not_delivered_to_itself() {
    let chain = chain();
    let r = run_router("own-socket", &chain, 1, 1000);
    let host = UdpSocket::bind("127.0.0.1:0").unwrap();
    host.set_read_timeout(Some(Duration::from_millis(400))).unwrap();
    let me = host.local_addr().unwrap();
    // A host of the AS gets what is addressed to it.
    host.send_to(&inside_packet(&chain, me, me), r.internal).unwrap();
    let mut buf = [0u8; 2048];
    assert!(host.recv(&mut buf).is_ok(), "delivered to a host of the AS");
    // Addressed to the router's internal socket, the packet would arrive again and be sent
    // again, forever; addressed to an interface's socket, it would enter as if from outside.
    host.send_to(&inside_packet(&chain, me, r.internal), r.internal).unwrap();
    host.send_to(&inside_packet(&chain, me, r.ingress), r.internal).unwrap();
    let status = r.status();
    let inside = &status.interfaces[0];
    assert_eq!(inside.received_packets, 3, "nothing came back to the router: {inside:?}");
    assert_eq!(inside.delivered_packets, 1);
    assert_eq!(inside.drops.get("to_router_socket"), Some(&2), "{:?}", inside.drops);
    assert!(status.interfaces.iter().all(|i| i.received_packets == 0 || i.id == 0), "{status:?}");
}

/// GLWP packets of one allocation (AID 7, β = 100 kbit/s) through the transit AS, from `hosts`
/// source hosts in turn, each stamped apart; one allocation, so one bucket at the transit AS.
fn glwp_packets(chain: &Chain, hosts: u8, count: usize) -> Vec<Vec<u8>> {
    let now = unix_ns();
    let path = [(0, IF_NEXT), (IF_PREV, IF_NEXT), (IF_PREV, 0)];
    let secrets = [as_secret(&chain.ases[TRANSIT].master_secret), as_secret(&chain.ases[2].master_secret)];
    let alloc = testbed::allocation(chain.ases[0].ia, &path, (7, 100, (now / S) as u32 + 3600), &secrets);
    let mut addresses = testbed::addresses(chain.ases[0].ia);
    addresses.dst_ia = chain.ases[2].ia;
    (0..count)
        .map(|i| {
            addresses.src_host = aviary_scion::HostAddr::V4([10, 0, 1, (i % usize::from(hosts)) as u8].into());
            alloc.packet(&addresses, now + i as u64, &[0; 100]).unwrap()
        })
        .collect()
}

/// GLWP packets of one allocation from six hosts sent in one go: the monitor's burst passes
/// a few, it drops the rest. Returns how many the router forwarded.
fn glwp_of_one_burst(workers: usize) -> u64 {
    let chain = chain();
    let r = run_router_with("glwp", &Transit::of(&chain), workers, "[glwp]\nmonitor_burst_bytes = 3000\n");
    let pkts = glwp_packets(&chain, 6, 60);
    r.send(&pkts);
    r.drain_sink().len() as u64
}

#[test]
fn a_glwp_allocation_is_policed_once_whichever_worker_receives_it() {
    // 3000 bytes of burst: about 13 packets of 228 bytes, and the refill of 100 kbit/s while
    // they arrive (a packet in 18 ms).
    the_same_with_any_workers("packets of one allocation forwarded", glwp_of_one_burst, 8..=20, 3);
}

/// Z-Lane packets of `sources` (`count` from each, interleaved) as their ASes' gateways
/// authorized them and their routers forwarded them, arriving at AS 1 of the Z-Lane testbed's
/// chain (whose ASes after the source are the same for every source).
fn zlane_packets(sources: &[IsdAsn], count: usize) -> Vec<Vec<u8>> {
    let now = unix_ns();
    let config = GatewayConfig {
        guarantee_bps: 1_000_000_000,
        burst_bytes: 60_000,
        over_rate: OverRatePolicy::Unflagged,
        drkey_protocol: zlane_testbed::PROTOCOL,
        suppress_duplicates: false,
        hosts: vec![HostRateConfig { prefix: "10.0.0.0/8".into(), rate_bps: None }],
    };
    let mut per_source: Vec<Vec<Vec<u8>>> = Vec::new();
    for &src in sources {
        let mut net = zlane_testbed::Net::new(3, now);
        net.ases[0].ia = src;
        let mut gateway = net.gateway(&config, now).unwrap();
        let mut router = net.forwarder(0);
        let pkts = (0..count)
            .map(|_| {
                let mut pkt = net.packet(zlane_testbed::Net::host(1), 100, now);
                let mut v = [GatewayVerdict::Unflagged];
                gateway.process_batch(&mut [&mut pkt[..]], now, &mut v);
                assert_eq!(v[0], GatewayVerdict::Authorized);
                let mut v = [Verdict::Deliver];
                router.process_batch(&mut [&mut pkt[..]], 0, now, &mut v);
                assert_eq!(v[0], Verdict::forward(zlane_testbed::IF_NEXT, Admission::AUTHENTICATED));
                pkt
            })
            .collect();
        per_source.push(pkts);
    }
    (0..count).flat_map(|i| per_source.iter().map(move |p| p[i].clone())).collect()
}

/// Packets of six ASes of ISD 2, which AS 1 (ISD 1) guarantees as one origin, sent in one go:
/// the ISD's bucket gives a few G, the rest go as A. Returns how many were G.
fn zlane_guaranteed_of_one_burst(workers: usize) -> u64 {
    let net = zlane_testbed::Net::new(3, unix_ns());
    let sources: Vec<IsdAsn> = (0..6).map(|i| IsdAsn::new(2, 0xff00_0000_0200 + i)).collect();
    let transit = Transit {
        ia: net.ases[1].ia,
        master_secret: net.ases[1].master_secret,
        neighbours: [sources[0], net.ases[2].ia],
    };
    let tables = format!(
        "[zlane]\ndrkey_protocol = {}\nisds = [2]\nrates = {{ \"2\" = 800000 }}\nburst_bytes = 3000\n",
        zlane_testbed::PROTOCOL
    );
    let r = run_router_with("zlane", &transit, workers, &tables);
    let pkts = zlane_packets(&sources, 10);
    r.send(&pkts);
    assert_eq!(r.drain_sink().len(), pkts.len(), "over its guarantee an origin's traffic still goes, as A");
    mechanism_counter(&r.status(), "zlane", "guaranteed_packets")
}

#[test]
fn a_zlane_isd_guarantee_is_enforced_once_whichever_worker_receives_it() {
    // 3000 bytes of burst: about 12 packets of 250 bytes, and the refill of 800 kbit/s while
    // they arrive.
    the_same_with_any_workers("packets given G", zlane_guaranteed_of_one_burst, 6..=24, 4);
}

/// `count` packets of reservations (at the largest rate: none is over it) whose policing slot
/// `worker` of two owns, as they reach the transit AS on `IF_PREV`.
fn flyover_packets_owned_by(chain: &Chain, worker: usize, count: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for res_id in 1..=1000 {
        let pkts = flyover_packets(chain, &[res_id], 1023, 8);
        if steering::owner(&pkts[0], IF_PREV, Spread::BySourceHost, 2) == Some(worker) {
            out.extend(pkts);
        }
        if out.len() >= count {
            out.truncate(count);
            return out;
        }
    }
    panic!("too few reservations owned by worker {worker}");
}

/// Flyover packets stay fresh while a test stalls a worker.
const LONG_FRESHNESS: &str = "[hummingbird]\nfreshness_past_ns = 60000000000\n";

/// Starts the transit router of `chain` with two workers and runs worker 1 only, which reads
/// the socket of `IF_PREV` (socket 1, the first interface's); worker 0, the leader, which reads
/// the internal socket, is returned not running.
fn router_with_stalled_leader(name: &str, chain: &Chain) -> (Running, Forwarder) {
    let (r, mut forwarders) = start_router_with(name, &Transit::of(chain), 2, LONG_FRESHNESS);
    let leader = forwarders.remove(0);
    for w in forwarders {
        std::thread::spawn(move || w.run());
    }
    (r, leader)
}

#[test]
fn packets_for_a_stalled_owner_queue_up_to_a_few_batches_and_the_rest_are_dropped_counted() {
    let chain = chain();
    let (r, owner) = router_with_stalled_leader("handoff-bound", &chain);
    let extra = 72;
    let pkts = flyover_packets_owned_by(&chain, 0, HANDOFF_CAPACITY + extra);
    // Slowly enough that the kernel keeps every datagram for worker 1.
    for chunk in pkts.chunks(16) {
        r.send(chunk);
        std::thread::sleep(Duration::from_millis(2));
    }
    let status = r.status();
    let link = status.interfaces.iter().find(|i| i.id == IF_PREV).unwrap();
    assert_eq!(link.received_packets, pkts.len() as u64, "{link:?}");
    assert_eq!(link.drops.get("handoff_queue_full"), Some(&(extra as u64)), "{:?}", link.drops);
    // Once it runs, the owner forwards what its queue held: a few batches, not the whole flood.
    std::thread::spawn(move || owner.run());
    assert_eq!(r.drain_sink().len(), HANDOFF_CAPACITY, "the queue held what it holds, no more");
}

#[test]
fn an_owner_with_a_full_queue_always_waiting_takes_a_round_of_it_and_serves_its_socket_and_commands() {
    let chain = chain();
    let (r, mut owner) = router_with_stalled_leader("handoff-flood", &chain);
    // A host of the AS whose packets worker 0 owns: they reach it on its own socket, the
    // internal one, and are not handed over.
    let (host, hello) = (1..=250u8)
        .find_map(|x| {
            let host = UdpSocket::bind((std::net::Ipv4Addr::new(127, 0, 0, x), 0)).ok()?;
            let me = host.local_addr().unwrap();
            let pkt = inside_packet(&chain, me, me);
            (steering::owner(&pkt, 0, Spread::BySourceHost, 2) == Some(0)).then_some((host, pkt))
        })
        .unwrap();
    host.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    // Other workers handing packets over as fast as the owner's queue takes them, as under a
    // flood steered to it: its queue is full whenever it looks. Never more than `LIMIT` (the
    // memory a queue that does not hold them back would take).
    const LIMIT: u64 = 200_000;
    let flood = flyover_packets_owned_by(&chain, 0, 64);
    let queue = owner.peers[0].handed.clone();
    let (stop, sent) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let (stopped, counted) = (stop.clone(), sent.clone());
    let injector = std::thread::spawn(move || {
        for p in flood.iter().cycle() {
            if stopped.load(Ordering::Relaxed) || counted.load(Ordering::Relaxed) == LIMIT {
                return;
            }
            queue.send(Handed { k: 1, buf: p.clone() }).unwrap();
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    while sent.load(Ordering::Relaxed) < HANDOFF_CAPACITY as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(50));
    // One round's turn of the queue takes what it held, a few batches, not what keeps coming.
    owner.process_handed(unix_ns());
    owner.publish();
    let each = r.board.each();
    let taken = counter(&each[0], "flyover_reserved_packets") + counter(&each[0], "flyover_over_rate_packets");
    assert!((1..=HANDOFF_CAPACITY as u64).contains(&taken), "took {taken} packets in one turn");
    // Running, with the queue refilled all the time, the owner still serves its own socket and
    // the management commands.
    std::thread::spawn(move || owner.run());
    host.send_to(&hello, r.internal).unwrap();
    let mut buf = [0u8; 2048];
    let delivered = host.recv(&mut buf);
    let (tx, rx) = mpsc::channel();
    r.commands.send((Command::Link { id: IF_NEXT, capacity_bps: None, delay_ms: Some(0.0) }, tx)).unwrap();
    let answered = rx.recv_timeout(Duration::from_secs(1));
    let still_flooding = sent.load(Ordering::Relaxed) < LIMIT;
    stop.store(true, Ordering::Relaxed);
    injector.join().unwrap();
    assert!(delivered.is_ok(), "the owner's own socket was served within a second: {delivered:?}");
    assert!(matches!(answered, Ok(Ok(()))), "a management command was answered within a second: {answered:?}");
    assert!(still_flooding, "the queue was full all along");
}
