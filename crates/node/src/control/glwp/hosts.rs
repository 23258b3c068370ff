//! Discovery for the AS's own hosts (`POST /v1/glwp/discover`): this AS as the source, the
//! request sent to the first on-path AS, retried on loss, and the answer checked and turned
//! into the allocation the host gets.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::Duration;

use aviary_glwp::allocation::prefix_guarantees;
use aviary_glwp::discovery::wire::{Message, MessageRepr};
use aviary_glwp::discovery::{DiscoveryDrop, RequestError, SourceError};
use aviary_glwp::{HopValues, InterfaceId};
use aviary_scion::IsdAsn;
use thiserror::Error;

use super::{lock, Cores, GlwpService};
use crate::api::{GlwpAllocationWire, GlwpHopWire};
use crate::clock::unix_ns;

/// How long the source waits for the answer to one request.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(1);
/// Requests the source sends for one discovery before it gives up.
pub const ATTEMPTS: u32 = 3;
/// Why a host's discovery gave no allocation.
#[derive(Debug, Error)]
pub enum DiscoverError {
    #[error("the path cannot be asked for: {0}")]
    BadPath(#[from] RequestError),
    #[error("no GLWP service is known for {0} (it has no [as.glwp] table?)")]
    NoService(IsdAsn),
    #[error("cannot send to {to}: {error}")]
    Send { to: SocketAddr, error: std::io::Error },
    #[error("no answer after {attempts} attempts of {timeout_ms} ms each (the first hop is {first_hop})")]
    Timeout { attempts: u32, timeout_ms: u128, first_hop: IsdAsn },
    #[error("{ia} (position {position} of the path) refused: the preliminary guarantee there is {preliminary_bps} bit/s, below its threshold")]
    Refused { position: usize, ia: IsdAsn, preliminary_bps: u64 },
    #[error("{ia} (position {position} of the path) brings the guarantee down to {preliminary_bps} bit/s, below the {min_bps} bit/s asked for")]
    BelowMinimum { position: usize, ia: IsdAsn, preliminary_bps: u64, min_bps: u64 },
    #[error("the answer was rejected: {}", .0.label())]
    Rejected(DiscoveryDrop),
}

impl DiscoverError {
    /// The HTTP status of the host API's reply.
    pub fn status(&self) -> u16 {
        match self {
            // The path is well formed but the source's own state refuses it for now.
            DiscoverError::BadPath(RequestError::HeldDown(_)) => 409,
            DiscoverError::BadPath(_) => 400,
            DiscoverError::Refused { .. } | DiscoverError::BelowMinimum { .. } => 409,
            DiscoverError::Timeout { .. } => 504,
            DiscoverError::NoService(_) | DiscoverError::Send { .. } | DiscoverError::Rejected(_) => 502,
        }
    }
}

impl GlwpService {
    /// Discovery for a host of this AS over the path through `ases` with interface pairs
    /// `pairs` (this AS first), retried on loss; refused below `min_bps`.
    pub fn discover(
        &self,
        ases: &[IsdAsn],
        pairs: &[(InterfaceId, InterfaceId)],
        min_bps: u64,
    ) -> Result<GlwpAllocationWire, DiscoverError> {
        let first_hop = *ases.get(1).ok_or(RequestError::Shape { ases: ases.len(), pairs: pairs.len() })?;
        let addr = *self.services.get(&first_hop).ok_or(DiscoverError::NoService(first_hop))?;
        for _ in 0..ATTEMPTS {
            let ts_pkt = unix_ns();
            let request = {
                let cores = lock(&self.cores);
                self.keys.select(ts_pkt);
                cores.source.request(&cores.on_path.neighbourhood, ases, pairs, ts_pkt)?
            };
            let aid = Message::new_checked(&request[..]).map(|m| m.aid()).unwrap_or_default();
            let (tx, rx) = mpsc::channel();
            lock(&self.waiting).insert((aid, ts_pkt), tx);
            if let Err(error) = self.socket.send_to(&request, addr) {
                lock(&self.waiting).remove(&(aid, ts_pkt));
                return Err(DiscoverError::Send { to: addr, error });
            }
            match rx.recv_timeout(ATTEMPT_TIMEOUT) {
                Ok(answer) => return self.finish(&answer, ts_pkt, min_bps),
                Err(_) => {
                    lock(&self.waiting).remove(&(aid, ts_pkt));
                    tracing::debug!(%first_hop, "GLWP discovery: no answer; trying again");
                }
            }
        }
        Err(DiscoverError::Timeout { attempts: ATTEMPTS, timeout_ms: ATTEMPT_TIMEOUT.as_millis(), first_hop })
    }

    /// The source's check of the answer, and the allocation for the host.
    fn finish(&self, answer: &[u8], ts_pkt: u64, min_bps: u64) -> Result<GlwpAllocationWire, DiscoverError> {
        let alloc = {
            let mut cores = lock(&self.cores);
            self.keys.select(ts_pkt);
            let Cores { on_path, source } = &mut *cores;
            source.finish(&mut on_path.neighbourhood, answer, unix_ns())
        }
        .map_err(|e| match e {
            SourceError::Drop(d) => DiscoverError::Rejected(d),
            SourceError::Refused { position, ia, preliminary_bps } => {
                DiscoverError::Refused { position, ia, preliminary_bps }
            }
        })?;
        // The source accepted it, so the message is well-formed and every hop value possible.
        let m = Message::new_checked(answer).map_err(|e| DiscoverError::Rejected(e.into()))?;
        let repr = MessageRepr::parse(&m);
        let hop_values: Vec<HopValues> = repr
            .hop_values
            .iter()
            .map(|a| HopValues::new(a.div_bps, a.m_bps, a.con_bps))
            .collect::<Result<_, _>>()
            .map_err(|_| DiscoverError::Rejected(DiscoveryDrop::ImpossibleHopValues))?;
        let prelim = prefix_guarantees(&hop_values);
        if let Some(position) = prelim.iter().position(|&g| g < min_bps) {
            return Err(DiscoverError::BelowMinimum {
                position,
                ia: repr.ases[position],
                preliminary_bps: prelim[position],
                min_bps,
            });
        }
        let hops = repr
            .ases
            .iter()
            .zip(&repr.path)
            .zip(&repr.hop_values)
            .enumerate()
            .map(|(k, ((&ia, &(ingress, egress)), hv))| GlwpHopWire {
                ia,
                ingress,
                egress,
                div_bps: hv.div_bps,
                m_bps: hv.m_bps,
                con_bps: hv.con_bps,
                hop_key: k.checked_sub(1).and_then(|a| alloc.hop_keys.get(a)).map(hex::encode),
            })
            .collect();
        Ok(GlwpAllocationWire {
            src: self.ia,
            aid: format!("{:016x}", alloc.aid),
            guarantee_bps: prelim.last().copied().unwrap_or(0),
            beta_kbps: alloc.beta,
            ts_exp: alloc.ts_exp,
            hops,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A malformed request is the host's mistake (400); a held-down first hop or a refusal on
    /// the path is the network's state (409), which may change without a new request.
    #[test]
    fn statuses_tell_a_malformed_request_from_a_refusal() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        assert_eq!(DiscoverError::BadPath(RequestError::Shape { ases: 1, pairs: 0 }).status(), 400);
        assert_eq!(DiscoverError::BadPath(RequestError::NotSource(ia)).status(), 400);
        assert_eq!(DiscoverError::BadPath(RequestError::HeldDown(ia)).status(), 409);
        assert_eq!(DiscoverError::Refused { position: 1, ia, preliminary_bps: 0 }.status(), 409);
    }
}
