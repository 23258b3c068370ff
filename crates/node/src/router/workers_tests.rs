//! A router with several workers on real sockets: the transit AS of a three-AS chain, a
//! neighbour socket sending into its interface towards AS 0 and a sink behind its interface
//! towards AS 2. Policing is exact whichever worker receives, every packet is forwarded once,
//! and management changes reach every worker.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use aviary_glwp::hop_key::as_secret;
use aviary_glwp::testbed;
use aviary_hummingbird::source::Source;
use aviary_hummingbird::testbed::{Chain, IF_NEXT, IF_PREV};
use aviary_hummingbird::RouterParams;

use super::management::{Command, CommandMsg};
use super::metrics::RouterStatus;
use super::start;
use super::workers::StatusBoard;
use crate::clock::unix_ns;
use crate::config::RouterConfig;

const S: u64 = 1_000_000_000;
const TRANSIT: usize = 1;

struct Running {
    commands: Sender<CommandMsg>,
    board: Arc<StatusBoard>,
    /// The router's socket of the interface towards AS 0.
    ingress: SocketAddr,
    neighbor: UdpSocket,
    sink: UdpSocket,
    dir: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the transit router of `chain` with `workers` workers (and a policing burst of
/// `burst_ms`), every worker on a thread of its own.
fn run_router(name: &str, chain: &Chain, workers: usize, burst_ms: u64) -> Running {
    run_router_with(name, chain, workers, &format!("[hummingbird]\nburst_ns = {}\n", burst_ms * 1_000_000))
}

/// [`run_router`] with the mechanism tables `tables` in its config.
fn run_router_with(name: &str, chain: &Chain, workers: usize, tables: &str) -> Running {
    let dir = std::env::temp_dir().join(format!("aviary-workers-{name}-{workers}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("secret.hex"), hex::encode(chain.ases[TRANSIT].master_secret)).unwrap();
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
        chain.ases[TRANSIT].ia,
        neighbor.local_addr().unwrap(),
        chain.ases[0].ia,
        sink.local_addr().unwrap(),
        chain.ases[2].ia,
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
    for w in forwarders {
        std::thread::spawn(move || w.run());
    }
    Running { commands, board, ingress, neighbor, sink, dir }
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
    let hb = status.mechanisms.iter().find(|m| m.name == "hummingbird").unwrap();
    hb.counters.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
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
/// rest go best effort. Returns how many the router forwarded as reserved.
fn reserved_of_one_burst(workers: usize) -> (u64, u64) {
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
    (reserved, RouterParams::default().codec.decode_bps(bw))
}

#[test]
fn a_reservation_is_policed_once_whichever_worker_receives_it() {
    let (one, bps) = reserved_of_one_burst(1);
    // The burst allows bps/8 bytes in its second: ~10 packets of ~200 bytes; 60 are sent.
    assert!((3..=30).contains(&one), "one worker forwarded {one} reserved packets at {bps} bit/s");
    for workers in [2, 4] {
        let (many, _) = reserved_of_one_burst(workers);
        // Exactly as with one worker, but for the refill while the tests ran (a packet or two);
        // a policer split over workers would give each its own burst.
        assert!(many.abs_diff(one) <= 2, "{workers} workers: {many} reserved, one worker: {one}");
    }
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
fn glwp_of_one_burst(workers: usize) -> usize {
    let chain = chain();
    let r = run_router_with("glwp", &chain, workers, "[glwp]\nmonitor_burst_bytes = 3000\n");
    let pkts = glwp_packets(&chain, 6, 60);
    r.send(&pkts);
    r.drain_sink().len()
}

#[test]
fn a_glwp_allocation_is_policed_once_whichever_worker_receives_it() {
    let one = glwp_of_one_burst(1);
    // 3000 bytes of burst: about 13 packets of 228 bytes, and the refill of 100 kbit/s while
    // they arrive (a packet in 18 ms).
    assert!((8..=20).contains(&one), "one worker forwarded {one} of an allocation's packets");
    for workers in [2, 4] {
        let many = glwp_of_one_burst(workers);
        // A monitor split over workers would give each its own burst: with the hosts spread
        // over two workers, about twice as many.
        assert!(many.abs_diff(one) <= 3, "{workers} workers forwarded {many}, one worker {one}");
    }
}
