//! The sender: one flow of SCION/UDP packets at a given rate, best effort or on reservations,
//! honest or attacking.
//!
//! Pacing follows a deadline schedule: packet k is due at a fixed offset from the start, the
//! sender sleeps until then, and a sender that fell more than [`MAX_LAG_NS`] behind (a slow
//! path fetch, a descheduled process) skips the missed slots instead of catching up, so that
//! a policer with a 50 ms burst allowance never sees a catch-up burst. Skipped slots are
//! counted and take no sequence number.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::metrics::{serve_sender_metrics, SenderProgress};
use super::packet::{FlowSpec, Forgery, PacketFactory};
use super::per_as_epic::PerAsSealer;
use super::{unix_ns, write_json, ReservationFile, ScionAddr};
use crate::api::{fetch_paths, GlwpAllocationWire};
use crate::config::HostConfig;

const MS: u64 = 1_000_000;
const NS: u64 = 1_000_000_000;
/// How far behind its schedule a sender may fall before it skips slots.
pub const MAX_LAG_NS: u64 = 5 * MS;
/// Paths are fetched again this long before they expire.
const PATH_REFRESH_MARGIN_S: u64 = 60;

/// The label of a flow in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    Reserved,
    #[value(name = "best_effort")]
    BestEffort,
    Attack,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    /// Constant bit rate.
    Cbr,
    /// On for `--burst-ms` at twice the rate, then off as long: the same average rate.
    Bursty,
    /// Constant rate, each packet at a random point of its slot: the same average rate without
    /// the fixed phase that makes periodic senders lock each other out of a drop-tail queue.
    Jittered,
}

/// What an attacking sender does.
///
/// Replay models an on-path eavesdropper: it copies the packets a legitimate source stamps
/// and sends the copies again later. The attacker host produces the same bytes the source
/// would (it is given the reservation only to create them; the copies are never sent when
/// fresh), keeps them and sends each one `--replay-delay-ms` after it was stamped. Routers
/// accept the MACs but find the packet older than their maximum age (1 s, plus 0.5 s of
/// clock skew by default), so the copies get no priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attack {
    /// A best-effort stream at the rate: nothing special, just volume.
    Flood,
    /// A valid reservation used above its rate (set `--rate-bps` above the grant).
    Overuse,
    /// Flyover fields altered (see `--forge`): dropped with a bad MAC at the reserved ASes.
    Forge,
    /// Replays of stamped packets, `--replay-delay-ms` late.
    Replay,
}

/// `aviary host send`.
#[derive(Clone, Debug, clap::Args)]
pub struct SendOptions {
    /// Destination, ISD-AS,IP:PORT (e.g. 1-ff00:0:121,127.0.0.1:40000).
    #[arg(long)]
    pub dst: ScionAddr,
    /// Flow name carried in every packet (at most 32 bytes).
    #[arg(long)]
    pub flow: String,
    /// Label in reports [default: attack with --attack, reserved with --reservation, else best_effort].
    #[arg(long, value_enum)]
    pub kind: Option<FlowKind>,
    /// Average rate in bit/s, counting whole SCION packets (the unit reservations are policed in).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub rate_bps: u64,
    /// Whole SCION packet size in bytes (header, path, UDP header and payload).
    #[arg(long, default_value_t = 1000)]
    pub size: usize,
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub duration_ms: u64,
    #[arg(long, value_enum, default_value_t = Pattern::Cbr)]
    pub pattern: Pattern,
    /// Length of the on (and of the off) phase of the bursty pattern.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub burst_ms: u64,
    /// Reservation file (JSON): send on a path with flyovers on the reserved AS hops.
    #[arg(long)]
    pub reservation: Option<PathBuf>,
    /// Which of the control service's paths to use without a reservation.
    #[arg(long, conflicts_with = "reservation")]
    pub path_index: Option<usize>,
    /// Write the sender report (JSON) here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// UDP source port (0: any).
    #[arg(long, default_value_t = 0)]
    pub src_port: u16,
    #[arg(long, value_enum)]
    pub attack: Option<Attack>,
    /// The forgery of `--attack forge`.
    #[arg(long, value_enum, default_value_t = Forgery::Cycle)]
    pub forge: Forgery,
    /// How late `--attack replay` sends its copies.
    #[arg(long, default_value_t = 2000)]
    pub replay_delay_ms: u64,
    /// Serve Prometheus metrics on this address (`/metrics`) while sending.
    #[arg(long)]
    pub metrics: Option<SocketAddr>,
    /// Send per-AS EPIC (Z-Lane, path type 253), sealed with the host's DRKey keys and the
    /// path's hop authenticators from its AS's control service, to the AS's Z-Lane gateway
    /// (the router if the AS has none), QoS flag clear.
    #[arg(long, conflicts_with_all = ["reservation", "attack"])]
    pub epic: bool,
    /// The DRKey protocol of EPIC's keys (the routers' `zlane.drkey_protocol`).
    #[arg(long, default_value_t = 42, requires = "epic")]
    pub drkey_protocol: u16,
    /// Send EPIC straight to the router, past the AS's gateway.
    #[arg(long, requires = "epic")]
    pub via_router: bool,
    /// Set the QoS flag on EPIC packets, as only the gateway may (a host trying to get the
    /// guarantee without it; routers drop such packets).
    #[arg(long, requires = "epic")]
    pub epic_set_flag: bool,
    /// Send under a GLWP allocation (path type 252) from this file (`aviary glwp discover
    /// --out`): the header is the path; each packet gets its own ts_pkt and the hop
    /// authenticators of the allocation's hop keys.
    #[arg(long, conflicts_with_all = ["reservation", "path_index", "epic", "attack"])]
    pub glwp: Option<PathBuf>,
    /// Send every GLWP packet this many more times right after it, as an adversary replaying
    /// the source's packets would (the copies are not counted as sent): routers drop them as
    /// duplicates before the monitor, so they never use up the allocation (F8).
    #[arg(long, default_value_t = 0, requires = "glwp")]
    pub glwp_replays: u32,
}

impl SendOptions {
    /// Checks the combination of options; returns the flow's label.
    fn check(&self, reservation: Option<&ReservationFile>) -> anyhow::Result<FlowKind> {
        if let Some(r) = reservation {
            if r.dst != self.dst.ia {
                bail!("the reservation file is for {}, the destination is {}", r.dst, self.dst.ia);
            }
        }
        match (self.attack, reservation) {
            (Some(Attack::Flood), Some(_)) => bail!("--attack flood sends best effort: drop --reservation"),
            (Some(Attack::Overuse | Attack::Forge | Attack::Replay), None) => {
                bail!("an overuse, forge or replay attack needs --reservation")
            }
            (Some(Attack::Overuse), Some(r)) if r.reserved_bps().is_some_and(|b| self.rate_bps <= b) => {
                tracing::warn!("--attack overuse at {} bit/s does not exceed the reservation", self.rate_bps);
            }
            (Some(Attack::Replay), _) if self.replay_delay_ms >= self.duration_ms => {
                bail!("--replay-delay-ms must be shorter than --duration-ms")
            }
            _ => {}
        }
        Ok(self.kind.unwrap_or(match (self.attack, reservation) {
            (Some(_), _) => FlowKind::Attack,
            (None, Some(_)) => FlowKind::Reserved,
            (None, None) if self.glwp.is_some() => FlowKind::Reserved,
            (None, None) => FlowKind::BestEffort,
        }))
    }
}

/// What a sender did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SenderReport {
    pub flow: String,
    pub kind: FlowKind,
    pub attack: Option<Attack>,
    pub sent_packets: u64,
    /// Whole SCION packet bytes.
    pub sent_bytes: u64,
    /// Send slots skipped because the sender fell behind its schedule.
    pub skipped_packets: u64,
    /// Packets the socket refused (e.g. no buffer space).
    pub send_errors: u64,
    /// The scheduled duration, or the time taken if longer (or if a signal cut it short).
    pub duration_s: f64,
    /// `sent_bytes · 8 / duration_s`.
    pub offered_bps: u64,
    /// The smallest granted bandwidth of the reservations used (a GLWP allocation's G(π)).
    pub reserved_bps: Option<u64>,
    /// Replayed copies sent besides the flow (`--glwp-replays`).
    #[serde(default)]
    pub replayed_packets: u64,
}

/// Due times of the packets of a flow, relative to its start.
#[derive(Clone, Copy, Debug)]
struct Schedule {
    /// Bits per packet × 10⁹.
    bit_ns: u128,
    rate_bps: u128,
    /// Bursty: the period (on and off phase).
    period_ns: Option<u64>,
    /// Jittered: the seed of each packet's offset in its slot.
    jitter_seed: Option<u64>,
}

impl Schedule {
    fn new(size: usize, rate_bps: u64, pattern: Pattern, burst_ms: u64, seed: u64) -> Self {
        let period_ns = (pattern == Pattern::Bursty).then_some(2 * burst_ms * MS);
        let jitter_seed = (pattern == Pattern::Jittered).then_some(seed);
        Self { bit_ns: size as u128 * 8 * u128::from(NS), rate_bps: u128::from(rate_bps), period_ns, jitter_seed }
    }

    /// Packet `k` of the constant-rate stream is due at `k · interval`; the bursty pattern
    /// moves the packets of each period into its first half at twice the rate; the jittered
    /// one moves packet `k` to a random point of `[k, k + 1) · interval`, so due times still
    /// increase and the rate is the same over any whole number of slots.
    fn due(&self, k: u64) -> u64 {
        let offset = self.jitter_seed.map_or(0, |seed| (self.bit_ns * u128::from(mix(seed ^ k) >> 32)) >> 32);
        let t = u64::try_from((u128::from(k) * self.bit_ns + offset) / self.rate_bps).unwrap_or(u64::MAX);
        match self.period_ns {
            None => t,
            Some(p) => t / p * p + t % p / 2,
        }
    }
}

/// SplitMix64's finaliser: a well-spread 64-bit value for each input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The packets of a flow at each send slot (sans-IO: the caller gives the time and sends).
pub struct Generator {
    factory: PacketFactory,
    next_seq: u64,
    replay: Option<Replay>,
}

/// The replay attacker's capture buffer.
struct Replay {
    delay_ns: u64,
    /// Captured packets with the time each is due.
    captured: VecDeque<(u64, Vec<u8>)>,
}

impl Generator {
    /// With `replay_delay_ns`, each slot's packet is captured and sent that much later
    /// instead of now (see [`Attack::Replay`]); captures still pending at the end are dropped.
    pub fn new(factory: PacketFactory, replay_delay_ns: Option<u64>) -> Self {
        Self {
            factory,
            next_seq: 0,
            replay: replay_delay_ns.map(|delay_ns| Replay { delay_ns, captured: VecDeque::new() }),
        }
    }

    /// Continues the flow on a new path (sequence numbers go on).
    pub fn set_factory(&mut self, factory: PacketFactory) {
        self.factory = factory;
    }

    /// The slot at `now_ns` (Unix ns): calls `send` with each packet to send now.
    pub fn slot(&mut self, now_ns: u64, mut send: impl FnMut(&[u8])) -> anyhow::Result<()> {
        let pkt = self.factory.fill(self.next_seq, now_ns)?;
        self.next_seq += 1;
        match &mut self.replay {
            None => send(pkt),
            Some(Replay { delay_ns, captured }) => {
                captured.push_back((now_ns + *delay_ns, pkt.to_vec()));
                while captured.front().is_some_and(|(due, _)| *due <= now_ns) {
                    let (_, p) = captured.pop_front().unwrap();
                    send(&p);
                }
            }
        }
        Ok(())
    }
}

/// Fetches paths and builds the flow's packet factory; returns it with the path's expiry.
fn plan(
    cfg: &HostConfig,
    opts: &SendOptions,
    spec: &FlowSpec,
    reservation: Option<&ReservationFile>,
) -> anyhow::Result<(PacketFactory, u64)> {
    if let Some(file) = &opts.glwp {
        let allocation = GlwpAllocationWire::load(file)?;
        if allocation.src != cfg.ia || allocation.dst() != Some(opts.dst.ia) {
            bail!(
                "{}: the allocation is from {} to {:?}, not from {} to {}",
                file.display(),
                allocation.src,
                allocation.dst(),
                cfg.ia,
                opts.dst.ia
            );
        }
        let source = allocation.source_allocation().with_context(|| format!("{}", file.display()))?;
        tracing::info!(flow = %spec.name, aid = %allocation.aid, beta_kbps = allocation.beta_kbps, "GLWP allocation");
        // Nothing to refresh before the allocation expires.
        return Ok((PacketFactory::glwp(spec, source)?, u64::from(allocation.ts_exp)));
    }
    let paths = fetch_paths(cfg.control, opts.dst.ia)?;
    let (path, on_path) = match reservation {
        Some(r) => r.select_path(&paths)?,
        None => {
            let i = opts.path_index.unwrap_or(0);
            let p = paths.get(i).with_context(|| format!("{} paths to {}, no path {i}", paths.len(), opts.dst.ia))?;
            (p, Vec::new())
        }
    };
    let forgery = (opts.attack == Some(Attack::Forge)).then_some(opts.forge);
    let ases: Vec<String> = path.ases.iter().map(|a| a.ia.to_string()).collect();
    tracing::info!(flow = %spec.name, path = %ases.join(" > "), reserved_hops = on_path.len(), "path chosen");
    if opts.epic {
        let dst = (opts.dst.ia, opts.dst.host.ip());
        let sealer = PerAsSealer::fetch(cfg, path, dst, opts.drkey_protocol, opts.epic_set_flag)?;
        // Paths and keys are fetched again before either expires.
        let expiry = path.expiry.min(sealer.keys_expire() + PATH_REFRESH_MARGIN_S);
        return Ok((PacketFactory::per_as_epic(spec, path, sealer)?, expiry));
    }
    Ok((PacketFactory::new(spec, path, &on_path, forgery)?, path.expiry))
}

/// When to fetch paths again: before the path expires, and not sooner than in a second.
fn refresh_time(expiry_s: u64, now_s: u64) -> u64 {
    expiry_s.saturating_sub(PATH_REFRESH_MARGIN_S).max(now_s + 1)
}

/// Sends one flow from the host `cfg` through its AS's border router (per-AS EPIC through its
/// Z-Lane gateway); writes the report to
/// `--report` if given. A SIGTERM or SIGINT ends the flow early, with its report.
pub fn run_sender(cfg: &HostConfig, opts: &SendOptions) -> anyhow::Result<SenderReport> {
    let reservation = opts.reservation.as_deref().map(ReservationFile::load).transpose()?;
    let kind = opts.check(reservation.as_ref())?;
    let glwp_bps = opts.glwp.as_deref().map(GlwpAllocationWire::load).transpose()?.map(|a| a.guarantee_bps);
    let now_s = unix_ns() / NS;
    for r in reservation.iter().flat_map(|f| &f.reservations) {
        let info = &r.reservation.info;
        let (start, end) = (u64::from(info.start), u64::from(info.start) + u64::from(info.duration));
        if start > now_s {
            bail!("the reservation at {} starts at {start}, {} s from now", r.ia, start - now_s);
        }
        if end < now_s + opts.duration_ms / 1000 {
            tracing::warn!("the reservation at {} ends at {end}, before the flow does", r.ia);
        }
    }
    let socket = UdpSocket::bind((cfg.addr, opts.src_port))
        .with_context(|| format!("cannot bind {}:{}", cfg.addr, opts.src_port))?;
    let spec =
        FlowSpec { name: opts.flow.clone(), src_ia: cfg.ia, src: socket.local_addr()?, dst: opts.dst, size: opts.size };
    let (factory, expiry) = plan(cfg, opts, &spec, reservation.as_ref())?;
    let mut refresh_at = refresh_time(expiry, now_s);
    let mut gen = Generator::new(factory, (opts.attack == Some(Attack::Replay)).then_some(opts.replay_delay_ms * MS));
    // Each flow its own jitter (flows of one name on two hosts still differ by source port).
    let seed = opts.flow.bytes().fold(u64::from(spec.src.port()), |h, b| mix(h ^ u64::from(b)));
    let schedule = Schedule::new(opts.size, opts.rate_bps, opts.pattern, opts.burst_ms, seed);
    let end = opts.duration_ms * MS;
    let progress = Arc::new(SenderProgress::default());
    let _metrics = opts
        .metrics
        .map(|addr| serve_sender_metrics(addr, &cfg.name, &opts.flow, kind, progress.clone()))
        .transpose()?;

    // Per-AS EPIC goes through the AS's Z-Lane gateway, if it has one.
    let next_hop = match cfg.zlane_gateway {
        Some(gw) if opts.epic && !opts.via_router => gw,
        _ => cfg.router,
    };
    let stop = crate::signals::stop_flag();
    let start = Instant::now();
    let mut k = 0;
    let mut replayed = 0;
    while schedule.due(k) < end && !stop.load(Ordering::Relaxed) {
        let due = schedule.due(k);
        let elapsed = start.elapsed().as_nanos() as u64;
        if due > elapsed {
            // In slices, so that a signal during a long gap is noticed.
            std::thread::sleep(Duration::from_nanos((due - elapsed).min(50 * MS)));
            continue;
        }
        if elapsed - due > MAX_LAG_NS {
            while schedule.due(k + 1) <= elapsed && schedule.due(k + 1) < end {
                k += 1;
                progress.skipped_packets.fetch_add(1, Ordering::Relaxed);
            }
        }
        let now = unix_ns();
        if now / NS >= refresh_at {
            match plan(cfg, opts, &spec, reservation.as_ref()) {
                Ok((f, expiry)) => {
                    gen.set_factory(f);
                    refresh_at = refresh_time(expiry, now / NS);
                }
                Err(e) => {
                    tracing::warn!("path refresh failed, keeping the old path: {e:#}");
                    refresh_at = now / NS + 1;
                }
            }
        }
        let lateness_ns = (start.elapsed().as_nanos() as u64).saturating_sub(schedule.due(k));
        gen.slot(now, |pkt| {
            match socket.send_to(pkt, next_hop) {
                Ok(_) => progress.sent(pkt.len(), lateness_ns),
                Err(e) => {
                    if progress.send_errors.fetch_add(1, Ordering::Relaxed) == 0 {
                        tracing::warn!("sending to {next_hop}: {e}");
                    }
                }
            }
            for _ in 0..opts.glwp_replays {
                if socket.send_to(pkt, next_hop).is_ok() {
                    replayed += 1;
                }
            }
        })?;
        k += 1;
    }

    let scheduled_s = if stop.load(Ordering::Relaxed) { 0.0 } else { opts.duration_ms as f64 / 1e3 };
    let duration_s = start.elapsed().as_secs_f64().max(scheduled_s);
    let get = SenderProgress::get;
    let (sent_packets, sent_bytes) = (get(&progress.sent_packets), get(&progress.sent_bytes));
    let (skipped_packets, send_errors) = (get(&progress.skipped_packets), get(&progress.send_errors));
    let report = SenderReport {
        flow: opts.flow.clone(),
        kind,
        attack: opts.attack,
        sent_packets,
        sent_bytes,
        skipped_packets,
        send_errors,
        duration_s,
        offered_bps: (sent_bytes as f64 * 8.0 / duration_s) as u64,
        reserved_bps: reservation.as_ref().and_then(ReservationFile::reserved_bps).or(glwp_bps),
        replayed_packets: replayed,
    };
    if let Some(path) = &opts.report {
        write_json(path, &report)?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_schedule_is_exact() {
        // 1000-byte packets at 8 Mbit/s: one per millisecond, without drift.
        let s = Schedule::new(1000, 8_000_000, Pattern::Cbr, 100, 0);
        assert_eq!(s.due(0), 0);
        assert_eq!(s.due(1), MS);
        assert_eq!(s.due(1_000_000), 1_000_000 * MS);
        // 3 packets per 10 ms: 3333333.3 ns apart, rounded down per packet.
        let s = Schedule::new(1000, 2_400_000, Pattern::Cbr, 100, 0);
        assert_eq!((s.due(1), s.due(3)), (3_333_333, 10 * MS));
    }

    #[test]
    fn jittered_schedule_keeps_the_rate_and_leaves_no_fixed_phase() {
        // One packet per ms on average: packet k somewhere in [k, k + 1) ms, increasing.
        let s = Schedule::new(1000, 8_000_000, Pattern::Jittered, 100, 7);
        let times: Vec<u64> = (0..10_000).map(|k| s.due(k)).collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        assert!(times.iter().enumerate().all(|(k, t)| (k as u64 * MS..(k as u64 + 1) * MS).contains(t)));
        // The phase within the slot is spread evenly: each tenth of a slot gets about 1000.
        let mut tenths = [0u32; 10];
        for t in &times {
            tenths[(t % MS * 10 / MS) as usize] += 1;
        }
        assert!(tenths.iter().all(|n| (850..1150).contains(n)), "{tenths:?}");
        // Another seed, another phase.
        let other = Schedule::new(1000, 8_000_000, Pattern::Jittered, 100, 8);
        assert!((0..100).filter(|k| other.due(*k) == s.due(*k)).count() < 5);
    }

    #[test]
    fn bursty_schedule_keeps_the_average_rate() {
        // One packet per ms on average, 100 ms on at two per ms, 100 ms off.
        let s = Schedule::new(1000, 8_000_000, Pattern::Bursty, 100, 0);
        let times: Vec<u64> = (0..1000).map(|k| s.due(k)).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        for p in 0..5 {
            let in_period = |a: u64, b: u64| times.iter().filter(|t| (a..b).contains(t)).count();
            assert_eq!(in_period(p * 200 * MS, p * 200 * MS + 100 * MS), 200, "on phase {p}");
            assert_eq!(in_period(p * 200 * MS + 100 * MS, (p + 1) * 200 * MS), 0, "off phase {p}");
        }
        assert_eq!(s.due(200), 200 * MS);
        assert_eq!(s.due(1), MS / 2);
    }

    #[test]
    fn refresh_before_expiry_but_not_in_a_loop() {
        assert_eq!(refresh_time(10_000, 1_000), 10_000 - PATH_REFRESH_MARGIN_S);
        assert_eq!(refresh_time(1_030, 1_000), 1_001);
    }
}
