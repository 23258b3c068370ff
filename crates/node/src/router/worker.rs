//! One forwarding thread of the router. It receives from its share of the sockets (socket `k`
//! goes to worker `k mod workers`), keeps the packets it owns ([`super::steering`]) and hands
//! the others to their owners; it processes what it owns with its own pipeline (policers,
//! duplicate filters, keys: nothing of the per-packet state is shared) and queues what it
//! forwards in the links' shared schedulers, a lock per batch and link. With one worker it
//! owns every packet and nothing is handed over.

use std::mem;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use aviary_qos::{Context, LinkState, Verdict};
use aviary_scion::wire::header::src_ia_of;
use aviary_scion::wire::scmp::PROTOCOL_SCMP;
use aviary_scion::IsdAsn;

use super::management::CommandMsg;
use super::metrics::{IngressCounters, InterfaceStats, IoDrop};
use super::output::{recycle, Staged};
use super::pipeline::Pipeline;
use super::runtime_state::RuntimeState;
use super::scmp::{Out, Responder, Trouble};
use super::steering::{self, Spread};
use super::workers::{Handed, Inbox, Peer, StatusBoard};
use super::{local_destination, send_all, Links, OsSeededRandom, OwnSockets};
use super::{BATCH, BUF_LEN, HANDOFF_CAPACITY, MAX_SLEEP, NEXT_HDR, PUBLISH_EVERY_NS};
use crate::clock::unix_ns;
use crate::config::{RouterConfig, ScmpConfig};
use crate::underlay::{wait_readable_fds, RecvBatch};

/// What [`super::start`] gives a worker.
pub(super) struct Setup<'a> {
    pub index: usize,
    pub cfg: &'a RouterConfig,
    pub pipeline: Pipeline,
    pub shared: Arc<Links>,
    pub stats: Vec<InterfaceStats>,
    pub peers: Arc<[Peer]>,
    pub inbox: Inbox,
    pub spread: Spread,
    pub board: Arc<StatusBoard>,
    pub commands: Option<Receiver<CommandMsg>>,
    pub runtime_file: PathBuf,
    pub secret: Vec<u8>,
    pub scmp: ScmpConfig,
}

/// One forwarding thread's state.
pub struct Forwarder {
    pub(super) index: usize,
    pub(super) ia: IsdAsn,
    pub(super) cfg: RouterConfig,
    pub(super) pipeline: Pipeline,
    pub(super) shared: Arc<Links>,
    /// The sockets this worker receives from (0: internal, else link `k - 1`).
    own: Vec<usize>,
    /// What processors see of the links; refreshed before every batch.
    pub(super) link_states: Vec<LinkState>,
    pub(super) random: OsSeededRandom,
    /// `stats[0]`: inside; `stats[i + 1]`: link `i`: what this worker publishes.
    pub(super) stats: Vec<InterfaceStats>,
    /// The counters behind `stats`, as the forwarding path keeps them.
    pub(super) counters: Vec<IngressCounters>,
    pub(super) pool: Vec<Vec<u8>>,
    /// The receive buffers; out of the struct (`None`) while their packets are processed.
    rx: Option<RecvBatch>,
    /// What the loop waits on: its sockets, then its wake-up.
    poll_fds: Vec<RawFd>,
    ready: Vec<bool>,
    /// Packets for hosts of this AS, sent at the end of every round; emptied, never freed.
    pub(super) deliveries: Vec<(Vec<u8>, SocketAddr)>,
    /// Where no packet is delivered to: the router's own sockets.
    own_sockets: OwnSockets,
    /// What a link's scheduler released, on its way to the socket.
    pub(super) released: Vec<(Vec<u8>, SocketAddr)>,
    /// SCMP replies and errors of a batch.
    pub(super) originated: Vec<(Vec<u8>, Out)>,
    pub(super) staged: Vec<Staged>,
    pub(super) peers: Arc<[Peer]>,
    pub(super) inbox: Inbox,
    /// Packets other workers handed over, a batch at a time.
    handed: Vec<Handed>,
    /// Workers this one handed packets to since it last woke them.
    to_wake: Vec<bool>,
    spread: Spread,
    pub(super) board: Arc<StatusBoard>,
    /// The management commands (the leader only).
    pub(super) commands: Option<Receiver<CommandMsg>>,
    pub(super) started_unix_s: u64,
    /// The operator's runtime changes and where they are kept (the leader's).
    pub(super) runtime: RuntimeState,
    pub(super) runtime_file: PathBuf,
    /// The AS master secret in force, kept as the previous one at the next rotation.
    pub(super) secret: Vec<u8>,
    /// SCMP replies and errors: the slow path.
    pub(super) scmp: Responder,
}

impl Forwarder {
    pub(super) fn new(s: Setup<'_>) -> anyhow::Result<Self> {
        let workers = s.peers.len();
        let sockets = s.shared.links.len() + 1;
        let own: Vec<usize> = (0..sockets).filter(|k| k % workers == s.index).collect();
        let fd_of = |k: usize| match k {
            0 => s.shared.internal.as_raw_fd(),
            k => s.shared.links[k - 1].sock.as_raw_fd(),
        };
        let poll_fds: Vec<RawFd> = own.iter().map(|&k| fd_of(k)).chain([s.peers[s.index].waker.as_raw_fd()]).collect();
        let counters = vec![IngressCounters::new(&s.pipeline); s.stats.len()];
        let own_sockets = OwnSockets::new(
            [s.shared.internal.local_addr(), s.cfg.management]
                .into_iter()
                .chain(s.shared.links.iter().map(|l| l.sock.local_addr())),
        );
        Ok(Self {
            index: s.index,
            ia: s.cfg.ia,
            cfg: s.cfg.clone(),
            pipeline: s.pipeline,
            link_states: s.shared.links.iter().map(|l| l.state()).collect(),
            shared: s.shared,
            own,
            random: OsSeededRandom::new()?,
            stats: s.stats,
            counters,
            pool: Vec::new(),
            rx: Some(RecvBatch::new(BATCH, BUF_LEN)),
            ready: vec![false; poll_fds.len()],
            poll_fds,
            deliveries: Vec::new(),
            own_sockets,
            released: Vec::new(),
            originated: Vec::new(),
            staged: Vec::with_capacity(BATCH),
            peers: s.peers,
            inbox: s.inbox,
            handed: Vec::with_capacity(BATCH),
            to_wake: vec![false; workers],
            spread: s.spread,
            board: s.board,
            commands: s.commands,
            started_unix_s: unix_ns() / 1_000_000_000,
            runtime: RuntimeState::default(),
            runtime_file: s.runtime_file,
            secret: s.secret,
            scmp: Responder::new(s.cfg.ia, s.cfg.internal.ip(), s.scmp),
        })
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// Forwards until the process ends.
    pub fn run(mut self) -> anyhow::Result<()> {
        let mut last_publish = 0;
        let mut first = 0;
        let sockets = self.own.len();
        // Handed-over packets left for the next round: it only looks at the sockets, without
        // waiting.
        let mut backlog = false;
        loop {
            self.take_commands();
            let now = unix_ns();
            let wake = self.shared.links.iter().filter_map(|l| l.next_wakeup()).min();
            let sleep = match backlog {
                true => Duration::ZERO,
                false => wake.map_or(MAX_SLEEP, |w| Duration::from_nanos(w.saturating_sub(now)).min(MAX_SLEEP)),
            };
            wait_readable_fds(&self.poll_fds, Some(sleep), &mut self.ready)?;
            let now = unix_ns();
            if self.ready[sockets] {
                self.peers[self.index].waker.clear();
            }
            // Start with a different socket each round: queue space freed since the last
            // round must not always go to the same ingress.
            if sockets > 0 {
                first = (first + 1) % sockets;
            }
            for j in (first..sockets).chain(0..first) {
                if self.ready[j] {
                    self.receive(self.own[j], now)?;
                }
            }
            self.wake_owners();
            backlog = self.process_handed(now);
            self.send_deliveries();
            self.release(now);
            if now >= last_publish + PUBLISH_EVERY_NS {
                self.retire_previous_secret(now);
                self.publish();
                last_publish = now;
            }
        }
    }

    /// Receives one batch from socket `k` (0: internal, else link `k - 1`), hands the packets
    /// other workers own to them and processes the rest.
    fn receive(&mut self, k: usize, now: u64) -> anyhow::Result<()> {
        let mut rx = self.rx.take().expect("the receive buffers are back after every batch");
        let result = self.receive_into(k, now, &mut rx);
        self.rx = Some(rx);
        result
    }

    fn receive_into(&mut self, k: usize, now: u64, rx: &mut RecvBatch) -> anyhow::Result<()> {
        let shared = self.shared.clone();
        let sock = if k == 0 { &shared.internal } else { &shared.links[k - 1].sock };
        let ingress = if k == 0 { 0 } else { shared.links[k - 1].id };
        let n = match sock.recv_batch(rx) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e).context("receive"),
        };
        // Borrowed views into the receive buffers, on the stack.
        let mut pkts: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
        let mut traceroutes: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
        let (mut n_pkts, mut n_traceroutes) = (0, 0);
        let counters = &mut self.counters[k];
        let workers = self.peers.len();
        // An inter-AS socket takes packets from its neighbour's socket only: anyone else
        // (a host injecting into a transit AS) is dropped before any processing.
        let neighbor = if k == 0 { None } else { Some(shared.links[k - 1].remote) };
        for (buf, meta) in rx.iter_mut().take(n) {
            counters.received_packets += 1;
            counters.received_bytes += buf.len() as u64;
            if meta.truncated {
                counters.count_io_drop(IoDrop::Oversized);
            } else if neighbor.is_some_and(|r| r != meta.from) {
                counters.count_io_drop(IoDrop::NotNeighbor);
            } else if buf.get(NEXT_HDR) == Some(&PROTOCOL_SCMP) && Responder::is_traceroute_here(buf) {
                // Traceroute requests this AS answers leave the batch (one byte compared per
                // packet); they touch no per-packet state, so the receiver answers them.
                traceroutes[n_traceroutes] = buf;
                n_traceroutes += 1;
            } else {
                let owner = match workers {
                    1 => self.index,
                    _ => steering::owner(buf, ingress, self.spread, workers).unwrap_or(self.index),
                };
                if owner == self.index {
                    pkts[n_pkts] = buf;
                    n_pkts += 1;
                } else {
                    let mut copy = self.pool.pop().unwrap_or_default();
                    copy.clear();
                    copy.extend_from_slice(buf);
                    // Never waits: a full queue drops the packet here. Taking it on this
                    // worker instead would split its policing state over two workers.
                    // (A closed queue, which never happens, would be counted the same.)
                    if let Err(TrySendError::Full(h) | TrySendError::Disconnected(h)) =
                        self.peers[owner].handed.try_send(Handed { k, buf: copy })
                    {
                        counters.count_io_drop(IoDrop::HandoffQueueFull);
                        recycle(&mut self.pool, h.buf);
                    }
                    self.to_wake[owner] = true;
                }
            }
        }
        for original in &traceroutes[..n_traceroutes] {
            self.answer_traceroute(k, ingress, original, now);
        }
        self.process(k, now, &mut pkts[..n_pkts]);
        Ok(())
    }

    /// Answers a traceroute request if this AS would have forwarded it.
    fn answer_traceroute(&mut self, k: usize, ingress: u16, original: &[u8], now: u64) {
        self.refresh_link_states();
        let mut copy = self.pool.pop().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(original);
        let mut v = [Verdict::Deliver];
        let mut ctx = Context { now_ns: now, ingress, links: &self.link_states, random: &mut self.random };
        self.pipeline.process_batch(&mut ctx, &mut [&mut copy[..]], &mut v);
        match v[0] {
            Verdict::Drop(reason) => self.counters[k].count_drop(self.pipeline.processor_of(&copy), reason),
            _ => self.originated.extend(self.scmp.traceroute_reply(original, ingress)),
        }
        recycle(&mut self.pool, copy);
    }

    fn refresh_link_states(&mut self) {
        for (state, link) in self.link_states.iter_mut().zip(&self.shared.links) {
            *state = link.state();
        }
    }

    /// Wakes the workers this one handed packets to.
    fn wake_owners(&mut self) {
        for (w, wake) in self.to_wake.iter_mut().enumerate() {
            if mem::take(wake) {
                self.peers[w].waker.wake();
            }
        }
    }

    /// Processes what other workers handed over, a batch at a time, grouped by the socket
    /// the packets arrived on: at most [`HANDOFF_CAPACITY`] packets, what a full queue holds.
    /// Others may refill the queue as fast as this worker empties it (a flood steered to it);
    /// taking only this much leaves every round to its own sockets, commands and publishing.
    /// Returns whether more may be waiting (the last batch was full).
    pub(super) fn process_handed(&mut self, now: u64) -> bool {
        let mut left = HANDOFF_CAPACITY;
        while left > 0 {
            let mut handed = mem::take(&mut self.handed);
            let want = BATCH.min(left);
            handed.extend(std::iter::from_fn(|| self.inbox.handed.try_recv().ok()).take(want));
            let taken = handed.len();
            if taken == 0 {
                self.handed = handed;
                return false;
            }
            left -= taken;
            // Stable insertion sort by socket (a batch is small; no allocation).
            for i in 1..handed.len() {
                let mut j = i;
                while j > 0 && handed[j - 1].k > handed[j].k {
                    handed.swap(j - 1, j);
                    j -= 1;
                }
            }
            let mut start = 0;
            while start < handed.len() {
                let k = handed[start].k;
                let end = start + handed[start..].iter().take_while(|h| h.k == k).count();
                let mut pkts: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
                for (slot, h) in pkts.iter_mut().zip(&mut handed[start..end]) {
                    *slot = &mut h.buf[..];
                }
                self.process(k, now, &mut pkts[..end - start]);
                start = end;
            }
            for h in handed.drain(..) {
                recycle(&mut self.pool, h.buf);
            }
            self.handed = handed;
            if taken < want {
                return false;
            }
        }
        true
    }

    /// Runs this worker's packets of one socket through the pipeline and acts on the verdicts.
    /// Also sends the SCMP replies and errors waiting (traceroute replies of the batch).
    fn process(&mut self, k: usize, now: u64, pkts: &mut [&mut [u8]]) {
        let ingress = if k == 0 { 0 } else { self.shared.links[k - 1].id };
        let mut verdicts = [Verdict::Deliver; BATCH];
        let verdicts = &mut verdicts[..pkts.len()];
        self.refresh_link_states();
        let mut ctx = Context { now_ns: now, ingress, links: &self.link_states, random: &mut self.random };
        self.pipeline.process_batch(&mut ctx, pkts, verdicts);
        for (pkt, v) in pkts.iter().zip(verdicts.iter()) {
            match *v {
                Verdict::Forward { egress, admission } => {
                    let Some(l) = self.shared.index_of(egress) else {
                        self.counters[k].count_io_drop(IoDrop::NoLink);
                        continue;
                    };
                    // Whether the link is up is decided under its lock (`enqueue_staged`).
                    let link = &self.shared.links[l];
                    let class = link.classifier.classify(admission);
                    let source = src_ia_of(pkt).map_or(0, |ia| u64::from_be_bytes(ia.to_bytes()));
                    let mut buf = self.pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(pkt);
                    self.staged.push(Staged { link: l, class, source, buf });
                }
                Verdict::Deliver if self.scmp.is_for_router(pkt) => match self.scmp.echo_reply(pkt, ingress) {
                    Some(reply) => self.originated.push(reply),
                    None => self.counters[k].count_io_drop(IoDrop::Undeliverable),
                },
                Verdict::Deliver => match local_destination(pkt) {
                    Some(addr) if self.own_sockets.reached_by(addr) => {
                        self.counters[k].count_io_drop(IoDrop::ToRouterSocket)
                    }
                    Some(addr) => {
                        let mut buf = self.pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(pkt);
                        self.deliveries.push((buf, addr));
                    }
                    None => self.counters[k].count_io_drop(IoDrop::Undeliverable),
                },
                Verdict::Drop(reason) => {
                    self.counters[k].count_drop(self.pipeline.processor_of(pkt), reason);
                    self.originated.extend(self.scmp.error(pkt, ingress, Trouble::Dropped(reason), now));
                }
            }
        }
        self.enqueue_staged(k, ingress, now);
        for (bytes, out) in self.originated.drain(..) {
            match out {
                Out::Host(addr) => self.deliveries.push((bytes, addr)),
                Out::Interface(id) => {
                    // Straight out, past the egress queue: SCMP is rare and rate-limited, and
                    // must reach a source whose packets that queue would drop.
                    if let Some(link) = self.shared.get(id) {
                        send_all(&link.sock, &[(&bytes[..], link.remote)]);
                    }
                }
            }
        }
    }
}
