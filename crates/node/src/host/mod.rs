//! The host agent: a traffic sender and a sink, both speaking SCION/UDP without a dispatcher.
//!
//! As in SCION's dispatcher-less end-host model, a host sends each SCION packet as one UDP
//! datagram to the internal socket of its AS's border router, and the router of the
//! destination AS delivers a packet to `dst_host:dst_port` (the SCION/UDP destination port).
//! Paths come from the AS's control service; a reserved flow turns its path into a
//! Hummingbird path with a flyover on every reserved AS hop and stamps each packet.
//!
//! - [`payload`]: the header every payload starts with (flow, sequence, send time).
//! - [`packet`]: sans-IO packet building for one flow, on a chosen path, honest or forged.
//! - [`send`]: the sender (paced CBR or bursty, attack modes) and its report.
//! - [`sink`]: the receiver and its per-flow report (goodput, loss, one-way delay).
//! - [`drkey`]: DRKey Level-2/3 keys of this host from the AS's control service.
//! - [`pathval`]: pathval packets routed by destination, for the routers to validate.
//! - [`scmp`]: ping and traceroute (SCMP echo and traceroute).
//! - [`metrics`]: what either shows on `--metrics ADDR` while it runs (Prometheus text).

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context};
use aviary_hummingbird::Reservation;
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use crate::api::{Grant, PathWire};

pub mod drkey;
pub mod metrics;
pub mod packet;
pub mod pathval;
pub mod payload;
pub mod per_as_epic;
pub mod scmp;
pub mod send;
pub mod sink;

pub use crate::clock::unix_ns;

pub use packet::{FlowSpec, Forgery, PacketFactory};
pub use send::{run_sender, Attack, FlowKind, Generator, Pattern, SendOptions, SenderReport};
pub use sink::{run_sink, FlowReport, Sink, SinkOptions, SinkReport};

/// A SCION host address with a UDP port, written `ISD-AS,IP:PORT` (`1-ff00:0:121,127.0.0.1:40000`,
/// `1-ff00:0:121,[::1]:40000`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScionAddr {
    pub ia: IsdAsn,
    pub host: SocketAddr,
}

impl FromStr for ScionAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (ia, host) = s.split_once(',').ok_or_else(|| format!("{s:?} is not ISD-AS,IP:PORT"))?;
        Ok(Self {
            ia: ia.parse().map_err(|e| format!("{s:?}: {e}"))?,
            host: host.parse().map_err(|e| format!("{s:?}: host {host:?}: {e}"))?,
        })
    }
}

impl fmt::Display for ScionAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{}", self.ia, self.host)
    }
}

/// One granted reservation of a flow. The fields are those of the control service's
/// [`Grant`], so a grant can be written as it came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HopReservation {
    pub ia: IsdAsn,
    /// The granted bandwidth as the AS decodes it (the BW code means nothing to anyone else).
    pub bandwidth_bps: u64,
    /// ResInfo (interfaces in the direction of travel) and A_K.
    pub reservation: Reservation,
}

impl From<Grant> for HopReservation {
    fn from(g: Grant) -> Self {
        Self { ia: g.ia, bandwidth_bps: g.bandwidth_bps, reservation: g.reservation }
    }
}

/// The reservations a source holds for a flow to `dst`, as the demo and the market client
/// write them (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservationFile {
    pub dst: IsdAsn,
    pub reservations: Vec<HopReservation>,
}

impl ReservationFile {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let file: Self = serde_json::from_str(&text).with_context(|| format!("{}", path.display()))?;
        if file.reservations.is_empty() {
            bail!("{}: no reservations", path.display());
        }
        Ok(file)
    }

    /// Writes the file (mode 0600: it holds each hop's A_K).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        crate::files::write_secret(path, &serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The bandwidth the flow may use end to end: the smallest grant.
    pub fn reserved_bps(&self) -> Option<u64> {
        self.reservations.iter().map(|r| r.bandwidth_bps).min()
    }

    /// The first path that crosses every reserved AS on the reserved interfaces, with the
    /// reservations as `(AS hop index, reservation)` in path order, as
    /// [`aviary_hummingbird::build_path`] and [`aviary_hummingbird::Source`] want them.
    pub fn select_path<'a>(&self, paths: &'a [PathWire]) -> anyhow::Result<(&'a PathWire, Vec<(usize, Reservation)>)> {
        'paths: for p in paths {
            let mut on_path = Vec::with_capacity(self.reservations.len());
            for r in &self.reservations {
                let info = &r.reservation.info;
                let Some(k) =
                    p.ases.iter().position(|a| a.ia == r.ia && (a.ingress, a.egress) == (info.ingress, info.egress))
                else {
                    continue 'paths;
                };
                on_path.push((k, r.reservation));
            }
            on_path.sort_by_key(|(k, _)| *k);
            if on_path.windows(2).any(|w| w[0].0 == w[1].0) {
                bail!("two reservations for the same AS hop");
            }
            return Ok((p, on_path));
        }
        let wanted: Vec<String> = self
            .reservations
            .iter()
            .map(|r| format!("{} {}->{}", r.ia, r.reservation.info.ingress, r.reservation.info.egress))
            .collect();
        let offered: Vec<String> = paths
            .iter()
            .map(|p| {
                p.ases.iter().map(|a| format!("{} {}->{}", a.ia, a.ingress, a.egress)).collect::<Vec<_>>().join(", ")
            })
            .map(|s| format!("[{s}]"))
            .collect();
        bail!(
            "no path to {} crosses every reserved hop [{}]; the control service offered {}",
            self.dst,
            wanted.join(", "),
            if offered.is_empty() { "no path".into() } else { offered.join(" ") }
        )
    }
}

/// Writes `value` as pretty JSON, through a temporary file so that a reader never sees half
/// a report.
pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(value)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}
