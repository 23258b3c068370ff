//! The traffic generator and the sink: threads of the lab process with batched I/O
//! (`sendmmsg`, `recvmmsg`) on loopback UDP sockets.
//!
//! The generator offers load open-loop: it sends batches of [`BATCH`] pre-built packets as fast
//! as its socket takes them, whatever the forwarder does with them. The sink counts what
//! arrives and checks every packet: a SCION packet whose path meta word (CurrINF, CurrHF) is the
//! one the forwarder under test must leave there. Counters are atomics that the lab reads at the
//! start and end of a measurement window.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use aviary_node::underlay::{wait_readable, BatchSocket, RecvBatch, DEFAULT_BATCH, DEFAULT_BUF_SIZE};

use super::packets::{meta_word, Kind, Testbed};
use crate::forward::unix_ns;

/// Datagrams per `sendmmsg`/`recvmmsg`, as the router's batch.
pub const BATCH: usize = DEFAULT_BATCH;
/// How often the generator re-stamps its flyover packets: well inside the router's freshness
/// window (1.5 s in the past by default).
const RESTAMP_EVERY: Duration = Duration::from_millis(200);
/// No check: the sink's expectation between measurements.
const NO_EXPECTATION: u64 = u64::MAX;

/// What the sink has received since it started.
#[derive(Debug, Default)]
pub struct SinkCounters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// Packets that are not SCION packets with the expected meta word.
    pub invalid: AtomicU64,
    /// The expected meta word (`NO_EXPECTATION`: none).
    expected: AtomicU64,
}

/// The sink's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SinkSnapshot {
    pub packets: u64,
    pub bytes: u64,
    pub invalid: u64,
}

impl SinkSnapshot {
    pub fn since(&self, earlier: &SinkSnapshot) -> SinkSnapshot {
        SinkSnapshot {
            packets: self.packets - earlier.packets,
            bytes: self.bytes - earlier.bytes,
            invalid: self.invalid - earlier.invalid,
        }
    }
}

impl SinkCounters {
    pub fn new() -> Self {
        Self { expected: AtomicU64::new(NO_EXPECTATION), ..Default::default() }
    }

    /// From now on, packets must carry this meta word (`None`: anything counts as valid).
    pub fn expect(&self, word: Option<u32>) {
        self.expected.store(word.map_or(NO_EXPECTATION, u64::from), Relaxed);
    }

    pub fn snapshot(&self) -> SinkSnapshot {
        SinkSnapshot {
            packets: self.packets.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            invalid: self.invalid.load(Relaxed),
        }
    }

    fn count(&self, pkt: &[u8], expected: u64) -> bool {
        expected == NO_EXPECTATION || meta_word(pkt).map(u64::from) == Some(expected)
    }
}

/// Receives on `sock` until `stop`, counting into `counters`.
pub fn sink(sock: &BatchSocket, counters: &SinkCounters, stop: &AtomicBool) -> std::io::Result<()> {
    let mut rx = RecvBatch::new(BATCH, DEFAULT_BUF_SIZE);
    let mut ready = [false];
    while !stop.load(Relaxed) {
        let n = sock.recv_batch(&mut rx)?;
        if n == 0 {
            wait_readable(&[sock], Some(Duration::from_millis(20)), &mut ready)?;
            continue;
        }
        let expected = counters.expected.load(Relaxed);
        let (mut bytes, mut invalid) = (0, 0);
        for (pkt, meta) in rx.iter().take(n) {
            bytes += pkt.len() as u64;
            if meta.truncated || !counters.count(pkt, expected) {
                invalid += 1;
            }
        }
        counters.packets.fetch_add(n as u64, Relaxed);
        counters.bytes.fetch_add(bytes, Relaxed);
        counters.invalid.fetch_add(invalid, Relaxed);
    }
    Ok(())
}

/// What the generator sends: one kind and payload size, re-stamped as time passes.
pub struct Offer {
    pub kind: Kind,
    pub payload: usize,
}

/// Sends `offer`'s packets from `sock` to `to` as fast as the socket takes them until `stop`;
/// counts the datagrams handed to the kernel into `sent`.
pub fn generate(
    sock: &BatchSocket,
    to: SocketAddr,
    offer: &Offer,
    sent: &AtomicU64,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let now = unix_ns();
    let mut bed = Testbed::new(now);
    let mut pool = bed.pool(offer.kind, offer.payload, now);
    let mut restamp_at = Instant::now() + RESTAMP_EVERY;
    let mut next = 0;
    while !stop.load(Relaxed) {
        if Instant::now() >= restamp_at {
            bed.restamp(offer.kind, &mut pool, unix_ns());
            restamp_at += RESTAMP_EVERY;
        }
        let items: [(&[u8], SocketAddr); BATCH] = std::array::from_fn(|k| (&pool[(next + k) % pool.len()][..], to));
        let n = sock.send_batch(&items)?;
        sent.fetch_add(n as u64, Relaxed);
        next = (next + n) % pool.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn loopback() -> BatchSocket {
        BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap()
    }

    /// The generator's packets straight into the sink (no forwarder): they arrive, are counted
    /// with their bytes, and fail a check for an advanced CurrHF.
    #[test]
    fn the_sink_counts_the_generators_packets_and_checks_their_hop() {
        let (gen, rx) = (loopback(), loopback());
        let counters = SinkCounters::new();
        let mut bed = Testbed::new(unix_ns());
        let sample = bed.pool(Kind::Flyover, 100, unix_ns()).remove(0);
        let unchanged = meta_word(&sample).unwrap();
        let (stop_sink, stop_gen) = (AtomicBool::new(false), AtomicBool::new(false));
        let sent = AtomicU64::new(0);
        let offer = Offer { kind: Kind::Flyover, payload: 100 };
        std::thread::scope(|s| {
            let sink_thread = s.spawn(|| sink(&rx, &counters, &stop_sink));
            let gen_thread = s.spawn(|| generate(&gen, rx.local_addr(), &offer, &sent, &stop_gen));
            let wait_for = |n: u64| {
                let t = Instant::now();
                while counters.snapshot().packets < n && t.elapsed() < Duration::from_secs(10) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            };
            counters.expect(Some(unchanged));
            wait_for(1000);
            let a = counters.snapshot();
            counters.expect(Some(unchanged ^ 1));
            // A batch the sink began under the old expectation is counted by now.
            std::thread::sleep(Duration::from_millis(20));
            let a2 = counters.snapshot();
            wait_for(a2.packets + 2000);
            stop_gen.store(true, Relaxed);
            gen_thread.join().unwrap().unwrap();
            std::thread::sleep(Duration::from_millis(50));
            stop_sink.store(true, Relaxed);
            sink_thread.join().unwrap().unwrap();
            let b = counters.snapshot();
            assert!(a.packets >= 1000 && a.invalid == 0, "{a:?}");
            assert_eq!(a.bytes, a.packets * sample.len() as u64);
            let d = b.since(&a2);
            assert!(d.packets >= 2000 && d.invalid == d.packets, "{d:?}");
            assert!(b.packets <= sent.load(Relaxed));
        });
    }
}
