//! Per-AS EPIC (path type 253, the Z-Lane paper's App. B) from a host, with what a host
//! has: its path with every hop field's σ_i (from its AS's control service, `/v1/paths`) and
//! its DRKey keys, all asked of its own AS's control service from its own address:
//! - `K_{A_i→A_0:H_S}` (as-host) of every AS A_i on the path, which the control service derives
//!   from the Level-1 key `K_{A_i→A_0}` it fetched from A_i over TLS (or from its own secret);
//! - `K_{A_D:H_D→A_0:H_S}` (host-host), the destination's key for the DVF.
//!
//! The QoS flag stays clear: the AS's Z-Lane gateway sets it on what is within the host's rate
//! (`--epic-set-flag` sets it anyway, as a host trying to skip the gateway would; routers drop
//! such packets, since the fields are not the gateway's).

use std::net::IpAddr;

use anyhow::{bail, Context};
use aviary_hummingbird::as_hops;
use aviary_scion::drkey::{AsHostKey, HostAddr as DrkeyHost, HostHostKey, Protocol};
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::seal;
use aviary_scion::epic::timestamp::epic_timestamp;
use aviary_scion::wire::epic::PktId;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::{HostAddr, IsdAsn, ScionView};

use super::drkey::fetch_host_key;
use crate::api::{HostKeyKind, PathWire};
use crate::config::HostConfig;
use crate::control::drkey::HostKeyRequest;

/// Seals every packet of one flow on one path.
pub struct PerAsSealer {
    src_ia: IsdAsn,
    src_host: HostAddr,
    /// The first info field's timestamp, which EPIC timestamps count from.
    timestamp: u32,
    /// Per hop field: its AS's key for this host, and σ.
    keys: Vec<AsHostKey>,
    sigmas: Vec<[u8; 16]>,
    dst_key: HostHostKey,
    counter: u32,
    set_flag: bool,
    /// Unix seconds at which the first of the keys' DRKey epochs ends.
    keys_expire: u64,
}

impl PerAsSealer {
    /// Asks `cfg`'s control service for the keys of `path` to `dst` under DRKey `protocol`
    /// (the routers' `zlane.drkey_protocol`), valid now.
    pub fn fetch(
        cfg: &HostConfig,
        path: &PathWire,
        (dst_ia, dst): (IsdAsn, IpAddr),
        protocol: u16,
        set_flag: bool,
    ) -> anyhow::Result<Self> {
        let sp = path.standard_path()?.context("per-AS EPIC needs a path with at least one AS hop")?;
        let sigmas = path.sigma_bytes(sp.hops.len()).context("the control service's path")?;
        let owners = hop_owners(&sp, path)?;
        let me = DrkeyHost::from_ip(cfg.addr);
        let mut keys_expire = u64::MAX;
        let mut key = |kind, src_ia, dst_ia, src_host, dst_host| -> anyhow::Result<[u8; 16]> {
            let req =
                HostKeyRequest { kind, protocol: Protocol(protocol), src_ia, dst_ia, src_host, dst_host, at: None };
            let reply = fetch_host_key(cfg, &req)?;
            keys_expire = keys_expire.min(u64::from(reply.epoch.end));
            hex::decode(&reply.key).ok().and_then(|k| k.try_into().ok()).context("a DRKey key is not 16 bytes of hex")
        };
        let mut by_as: Vec<(IsdAsn, AsHostKey)> = Vec::new();
        let mut keys = Vec::with_capacity(owners.len());
        for ia in owners {
            let k = match by_as.iter().find(|(a, _)| *a == ia) {
                Some((_, k)) => *k,
                None => {
                    let k = AsHostKey::from_bytes(key(HostKeyKind::AsHost, ia, cfg.ia, None, Some(me))?);
                    by_as.push((ia, k));
                    k
                }
            };
            keys.push(k);
        }
        let dst_host = DrkeyHost::from_ip(dst);
        let dst_key = HostHostKey::from_bytes(key(HostKeyKind::HostHost, dst_ia, cfg.ia, Some(dst_host), Some(me))?);
        Ok(Self {
            src_ia: cfg.ia,
            src_host: HostAddr::from(cfg.addr),
            timestamp: sp.info[0].timestamp,
            keys,
            sigmas,
            dst_key,
            counter: 0,
            set_flag,
            keys_expire,
        })
    }

    /// Unix seconds at which a key's DRKey epoch ends: the flow needs new keys then.
    pub fn keys_expire(&self) -> u64 {
        self.keys_expire
    }

    /// Stamps a fresh packet ID into `pkt` (per-AS EPIC, payload final) and seals it.
    pub fn seal(&mut self, pkt: &mut [u8], now_ns: u64) -> anyhow::Result<()> {
        self.counter = self.counter.wrapping_add(1);
        let id = PktId { epic_ts: epic_timestamp(self.timestamp, now_ns)?, counter: self.counter };
        let view = ScionView::new_checked(&*pkt).context("per-AS EPIC packet")?;
        let (range, payload_len) = (view.path_range(), view.payload_len());
        let mut path = PerAsPathView::new_checked(&mut pkt[range]).context("per-AS EPIC path")?;
        path.set_pkt_id(id);
        path.set_qos(self.set_flag);
        let input = MacInput::new(self.timestamp, id, self.src_ia, &self.src_host, payload_len);
        seal(&mut path, &input, &self.keys, &self.sigmas, &self.dst_key)?;
        Ok(())
    }
}

/// The AS of every hop field of `path`, in path order: a segment crossover gives one AS two
/// hop fields.
fn hop_owners(sp: &aviary_scion::StandardPath, path: &PathWire) -> anyhow::Result<Vec<IsdAsn>> {
    let starts: Vec<usize> = as_hops(sp).iter().map(|h| h.hop_index).collect();
    if starts.len() != path.ases.len() {
        bail!("the path's hop fields cross {} ASes but its AS list has {}", starts.len(), path.ases.len());
    }
    Ok((0..sp.hops.len()).map(|i| path.ases[starts.iter().rposition(|&s| s <= i).unwrap_or(0)].ia).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::AsOnRoute;
    use aviary_scion::{combine, HopMacKey, Segment};

    #[test]
    fn a_crossover_gives_its_as_two_hop_fields() {
        let key = HopMacKey::from_master_secret(&[7; 16]);
        let seg = |hops: &[(u16, u16)]| {
            let mut s = Segment::new(1, 1000);
            for (i, e) in hops {
                s.push_hop(&key, 63, *i, *e);
            }
            s
        };
        // Up from A (ingress 0 → 1) to B, down from B to C.
        let (up, down) = (seg(&[(2, 0), (0, 1)]), seg(&[(0, 3), (4, 0)]));
        let sp = combine(&[(&up, false), (&down, true)]).unwrap();
        let ia = |n: u64| IsdAsn::new(1, n);
        let on = |n, ingress, egress| AsOnRoute { ia: ia(n), ingress, egress };
        let path = PathWire {
            ases: vec![on(1, 0, 1), on(2, 2, 3), on(3, 4, 0)],
            path: String::new(),
            expiry: 0,
            sigmas: vec![],
        };
        assert_eq!(hop_owners(&sp, &path).unwrap(), vec![ia(1), ia(2), ia(2), ia(3)]);
        let short = PathWire { ases: vec![on(1, 0, 1)], ..path };
        assert!(hop_owners(&sp, &short).is_err());
    }
}
