//! Building the packets of one flow (sans-IO: the caller gives sequence numbers and times).
//!
//! A factory holds a template packet of the flow's exact size on its path; each packet is the
//! template with the payload header written, the SCION/UDP checksum set and, on a reserved
//! path, the Hummingbird path stamped. The checksum covers the pseudo header (ISD-ASes and
//! host addresses), the UDP header and the payload but not the path, so stamping after it
//! (and routers rewriting AggMACs in flight) leaves it valid.

use std::net::SocketAddr;

use anyhow::{bail, Context};
use aviary_glwp::SourceAllocation;
use aviary_hummingbird::{as_hops, build_path, HbirdPathView, ResInfo, Reservation, Source};
use aviary_scion::wire::epic::PktId;
use aviary_scion::wire::epic_per_as::PerAsPath;
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::udp::{self, UDP_HEADER_LEN};
use aviary_scion::{HostAddr, IsdAsn, ScionHeader, ScionView};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::payload::{PayloadHeader, MAX_FLOW_NAME};
use super::per_as_epic::PerAsSealer;
use super::ScionAddr;
use crate::api::PathWire;

/// Who sends what to whom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub name: String,
    pub src_ia: IsdAsn,
    /// The sender's socket: SCION source host and UDP source port.
    pub src: SocketAddr,
    pub dst: ScionAddr,
    /// Whole SCION packet length (header, path, UDP header, payload).
    pub size: usize,
}

/// How a forging attacker alters the flyovers of a valid reservation. Each alteration makes
/// the AggMAC fail at the reserved AS (BadMac), since A_K binds every reservation field and
/// the FlyoverMAC needs A_K.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forgery {
    /// Claims the largest BW code (or another one if the grant already has it).
    RaiseBw,
    /// Claims the reservation lasts an hour longer.
    ExtendDuration,
    /// Stamps with a random A_K, as someone who saw the path but never got the key.
    WrongKey,
    /// The three above in turn, packet by packet.
    Cycle,
}

impl Forgery {
    fn for_packet(self, seq: u64) -> Self {
        match self {
            Forgery::Cycle => [Forgery::RaiseBw, Forgery::ExtendDuration, Forgery::WrongKey][(seq % 3) as usize],
            f => f,
        }
    }
}

impl FlowSpec {
    /// The flow's name fits the payload header.
    fn check_name(&self) -> anyhow::Result<()> {
        if self.name.len() > MAX_FLOW_NAME {
            bail!("flow name {:?} is longer than {MAX_FLOW_NAME} bytes", self.name);
        }
        Ok(())
    }
}

struct Forger {
    forgery: Forgery,
    /// Stamps with random authentication keys.
    wrong_key: Source,
    /// Lines of the flyover hop fields in the packet's path.
    flyovers: Vec<usize>,
}

/// Builds the packets of one flow on one path.
pub struct PacketFactory {
    template: Vec<u8>,
    buf: Vec<u8>,
    payload_off: usize,
    name: String,
    stamp: Stamp,
}

/// What a flow's packets get after the payload: one mechanism's authentication, or nothing.
enum Stamp {
    /// A best-effort flow.
    Nothing,
    /// Hummingbird flyovers, forged if so configured.
    Flyovers {
        source: Source,
        forger: Option<Forger>,
    },
    /// Per-AS EPIC (Z-Lane).
    PerAsEpic(PerAsSealer),
    Glwp(GlwpStamper),
}

/// Stamps a GLWP flow's packets: each its own ts_pkt (the duplicate-suppression key), then the
/// hop authenticators.
struct GlwpStamper {
    allocation: SourceAllocation,
    last_ts_pkt: u64,
}

impl PacketFactory {
    /// `reservations` are `(AS hop index, reservation)` in path order (see
    /// [`super::ReservationFile::select_path`]); empty for a best-effort flow. `forgery` needs
    /// reservations to forge.
    pub fn new(
        spec: &FlowSpec,
        path: &PathWire,
        reservations: &[(usize, Reservation)],
        forgery: Option<Forgery>,
    ) -> anyhow::Result<Self> {
        spec.check_name()?;
        if forgery.is_some() && reservations.is_empty() {
            bail!("forging flyovers needs a reservation to start from");
        }
        let (ptype, path_bytes) = match path.standard_path()? {
            None if reservations.is_empty() => (path_type::EMPTY, Vec::new()),
            None => bail!("the destination is in the source AS: there is no AS hop to reserve"),
            Some(sp) if reservations.is_empty() => (path_type::SCION, sp.to_bytes()?),
            Some(sp) => {
                let hops = as_hops(&sp).len();
                if hops != path.ases.len() {
                    bail!("the path's hop fields cross {hops} ASes but its AS list has {}", path.ases.len());
                }
                let infos: Vec<(usize, ResInfo)> = reservations.iter().map(|(k, r)| (*k, r.info)).collect();
                // Any base no earlier than every start will do: stamping rewrites it per packet.
                let base = infos.iter().map(|(_, r)| r.start).max().unwrap_or(0);
                (path_type::HUMMINGBIRD, build_path(&sp, &infos, base)?.to_bytes()?)
            }
        };
        let (template, payload_off) = template(spec, ptype, path_bytes)?;
        let ordered: Vec<Reservation> = reservations.iter().map(|(_, r)| *r).collect();
        if ordered.is_empty() {
            return Self::build(spec, template, payload_off, Stamp::Nothing);
        }
        let source = Source::new(&template, &ordered)?;
        let forger = match forgery {
            None => None,
            Some(forgery) => {
                let mut fake = ordered.clone();
                for r in &mut fake {
                    getrandom::getrandom(&mut r.ak)
                        .map_err(|e| anyhow::anyhow!("no randomness for a forged key: {e}"))?;
                }
                Some(Forger { forgery, wrong_key: Source::new(&template, &fake)?, flyovers: flyover_lines(&template) })
            }
        };
        Self::build(spec, template, payload_off, Stamp::Flyovers { source, forger })
    }

    /// The factory of a flow under a GLWP allocation (path type 252): the header is the path.
    pub fn glwp(spec: &FlowSpec, allocation: SourceAllocation) -> anyhow::Result<Self> {
        spec.check_name()?;
        let path = allocation.unstamped_path(spec.src_ia, 0).context("the allocation's GLWP header")?;
        let (template, payload_off) = template(spec, aviary_glwp::PATH_TYPE, path)?;
        Self::build(spec, template, payload_off, Stamp::Glwp(GlwpStamper { allocation, last_ts_pkt: 0 }))
    }

    /// The factory of a per-AS EPIC flow (Z-Lane) on `path`, sealed by `sealer`.
    pub fn per_as_epic(spec: &FlowSpec, path: &PathWire, sealer: PerAsSealer) -> anyhow::Result<Self> {
        spec.check_name()?;
        let sp = path.standard_path()?.context("per-AS EPIC needs a path with at least one AS hop")?;
        let unsealed = PerAsPath::unsealed(PktId::default(), sp).to_bytes()?;
        let (template, payload_off) = template(spec, path_type::EPIC_PER_AS, unsealed)?;
        Self::build(spec, template, payload_off, Stamp::PerAsEpic(sealer))
    }

    fn build(spec: &FlowSpec, template: Vec<u8>, payload_off: usize, stamp: Stamp) -> anyhow::Result<Self> {
        Ok(Self { buf: template.clone(), payload_off, template, name: spec.name.clone(), stamp })
    }

    /// The packet with sequence number `seq`, sent at `now_ns` (Unix ns): payload header,
    /// checksum and, on a reserved path, the Hummingbird stamp (forged if so configured).
    pub fn fill(&mut self, seq: u64, now_ns: u64) -> anyhow::Result<&[u8]> {
        let buf = &mut self.buf;
        buf.copy_from_slice(&self.template);
        PayloadHeader { flow: &self.name, seq, sent_ns: now_ns }.emit(&mut buf[self.payload_off..])?;
        udp::set_checksum(buf)?;
        match &mut self.stamp {
            Stamp::Nothing => {}
            Stamp::Flyovers { source, forger: None } => {
                source.stamp(buf, now_ns).context("cannot stamp the reserved path")?
            }
            Stamp::Flyovers { source, forger: Some(f) } => f.stamp(source, buf, seq, now_ns)?,
            Stamp::PerAsEpic(sealer) => sealer.seal(buf, now_ns)?,
            Stamp::Glwp(g) => {
                // Never the same ts_pkt twice, even within one clock tick: a repeat is a replay.
                g.last_ts_pkt = now_ns.max(g.last_ts_pkt + 1);
                g.allocation.restamp(buf, g.last_ts_pkt).context("cannot stamp the GLWP header")?;
            }
        }
        Ok(buf)
    }
}

impl Forger {
    /// Stamps `pkt` with forged flyovers.
    fn stamp(&mut self, honest: &mut Source, pkt: &mut [u8], seq: u64, now_ns: u64) -> anyhow::Result<()> {
        let forgery = self.forgery.for_packet(seq);
        if forgery == Forgery::WrongKey {
            return Ok(self.wrong_key.stamp(pkt, now_ns)?);
        }
        honest.stamp(pkt, now_ns)?;
        let mut view = ScionView::new_checked(&mut *pkt).context("stamped packet")?;
        let mut path = HbirdPathView::new_checked(view.path_mut()).context("stamped path")?;
        for &line in &self.flyovers {
            let mut f = path.flyover(line).context("flyover of the template")?;
            if forgery == Forgery::RaiseBw {
                f.bw = if f.bw == 0x3ff { 0x3fe } else { 0x3ff };
            } else {
                f.res_duration = f.res_duration.wrapping_add(3600);
            }
            path.set_flyover(line, &f);
        }
        Ok(())
    }
}

/// The flow's packet of its exact size on a path of type `ptype`, and its payload offset.
fn template(spec: &FlowSpec, ptype: u8, path: Vec<u8>) -> anyhow::Result<(Vec<u8>, usize)> {
    let header = ScionHeader {
        traffic_class: 0,
        flow_id: u32::from(spec.src.port()),
        next_hdr: udp::PROTOCOL_UDP,
        path_type: ptype,
        dst_ia: spec.dst.ia,
        src_ia: spec.src_ia,
        dst_host: HostAddr::from(spec.dst.host.ip()),
        src_host: HostAddr::from(spec.src.ip()),
        path,
    };
    let need = header.len() + UDP_HEADER_LEN + PayloadHeader::len_for(&spec.name);
    if spec.size < need || spec.size > usize::from(u16::MAX) {
        bail!("packet size {} must be between {need} (the headers on this path) and 65535", spec.size);
    }
    let payload = vec![0; spec.size - header.len() - UDP_HEADER_LEN];
    let template = udp::packet_to_vec(&header, spec.src.port(), spec.dst.host.port(), &payload)?;
    Ok((template, header.len() + UDP_HEADER_LEN))
}

/// Lines of the flyover hop fields of `pkt`'s Hummingbird path.
fn flyover_lines(pkt: &[u8]) -> Vec<usize> {
    let Ok(view) = ScionView::new_checked(pkt) else { return Vec::new() };
    let Ok(path) = HbirdPathView::new_checked(view.path()) else { return Vec::new() };
    path.flyover_lines().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_glwp::{testbed, AidMonitor, Freshness, Router};
    use aviary_qos::{Admission, DropReason, DuplicateFilter, DuplicateFilterConfig, Verdict};

    const S: u64 = 1_000_000_000;

    #[test]
    fn glwp_packets_get_their_own_ts_pkt_and_pass_the_on_path_routers() {
        let now = 1_700_000_000 * S;
        let secrets = [[0x11; 16], [0x22; 16]];
        let path = [(0, 1), (2, 3), (4, 0)];
        let alloc = testbed::allocation(testbed::SRC_IA, &path, (7, 8_000, 1_700_003_600), &secrets);
        let spec = FlowSpec {
            name: "g".into(),
            src_ia: testbed::SRC_IA,
            src: "127.0.0.2:5000".parse().unwrap(),
            dst: ScionAddr { ia: testbed::DST_IA, host: "127.0.0.3:40000".parse().unwrap() },
            size: 500,
        };
        let mut factory = PacketFactory::glwp(&spec, alloc).unwrap();
        let fresh = Freshness { lifetime_ns: S, skew_ns: S };
        let dups = || {
            let cfg = DuplicateFilterConfig { window_ns: 3 * S, expected_per_window: 1000, false_positive_rate: 1e-9 };
            DuplicateFilter::new(cfg, [1; 16]).unwrap()
        };
        let mut source =
            Router::new(&[0x99; 16], fresh, AidMonitor::new(8, 9000, 1), dups()).with_source_as(spec.src_ia);
        let mut as1 = Router::new(&secrets[0], fresh, AidMonitor::new(8, 9000, 1), dups());
        let mut as2 = Router::new(&secrets[1], fresh, AidMonitor::new(8, 9000, 1), dups());
        // Two packets in the same nanosecond: distinct ts_pkt, so neither is taken for a replay.
        for seq in 0..2 {
            let mut pkt = factory.fill(seq, now).unwrap().to_vec();
            assert_eq!(pkt.len(), 500);
            assert_eq!(source.process(&mut pkt, 0, now), Verdict::forward(1, Admission::GUARANTEED), "{seq}");
            assert_eq!(as1.process(&mut pkt, 2, now), Verdict::forward(3, Admission::GUARANTEED), "{seq}");
            assert_eq!(as2.process(&mut pkt, 4, now), Verdict::Deliver, "{seq}");
            let udp = udp::ScionUdpView::new_checked(&pkt[..]);
            assert!(udp.is_ok(), "the sink reads it as SCION/UDP: {udp:?}");
        }
        // A copy of a sent packet is a replay.
        let mut pkt = factory.fill(2, now).unwrap().to_vec();
        let mut copy = pkt.clone();
        assert!(matches!(source.process(&mut pkt, 0, now), Verdict::Forward { .. }));
        assert_eq!(source.process(&mut copy, 0, now), Verdict::Drop(DropReason::Duplicate));
    }
}
