//! Per-AS EPIC (path type 253, Z-Lane) from a test network's traffic generator, which holds
//! the master secrets of every AS on its path (`--epic-secrets`), as the generator of the Z-Lane
//! paper's router measurements did. A real host would get each hop field's σ with the path and
//! its DRKey keys from its AS; aviary's path service carries no σ yet, so only a generator that
//! can compute them sends EPIC.
//!
//! With `--gateway-rate-bps` the packets pass the source AS's Z-Lane gateway (the sans-IO core
//! of `aviary_zlane::gateway`, run in the sender's process, with the host's rate as its
//! guarantee): within the rate they leave with the QoS flag and AS-level validation fields
//! (class G at Z-Lane routers, up to the origin's guarantee), above it without (class A).
//! Without it they keep the host's own fields and no flag (class A).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use aviary_hummingbird::as_hops;
use aviary_scion::drkey::{AsHostKey, EpochSchedule, HostAddr as DrkeyHost, HostHostKey, IssuerKeys, Protocol};
use aviary_scion::epic::hvf::MacInput;
use aviary_scion::epic::per_as::seal;
use aviary_scion::epic::timestamp::epic_timestamp;
use aviary_scion::mac::{mac_input, HopMacKey};
use aviary_scion::wire::epic::PktId;
use aviary_scion::wire::epic_per_as::PerAsPathView;
use aviary_scion::wire::path::chain_seg_id;
use aviary_scion::{HostAddr, IsdAsn, ScionView, StandardPath};
use aviary_zlane::gateway::config::HostRateConfig;
use aviary_zlane::gateway::{Gateway, GatewayConfig, GatewayVerdict};
use serde::{Deserialize, Serialize};

use crate::api::PathWire;
use crate::config::read_secret;

/// The `--epic-secrets` file (JSON).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpicSecretsFile {
    /// The DRKey protocol the routers' `zlane.drkey_protocol` names.
    pub drkey_protocol: u16,
    /// Master secret file (hex, as `aviary run` writes them) by ISD-AS (`"1-ff00:0:110"`).
    pub ases: BTreeMap<String, PathBuf>,
}

impl EpicSecretsFile {
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
    }

    fn secret(&self, file: &Path, ia: IsdAsn) -> anyhow::Result<Vec<u8>> {
        let secret =
            self.ases.get(&ia.to_string()).with_context(|| format!("{}: no secret of {ia}", file.display()))?;
        Ok(read_secret(file, &format!("ases.{ia}"), secret)?)
    }
}

/// Seals each packet of one flow on one path.
pub struct EpicSealer {
    src_ia: IsdAsn,
    src_host: HostAddr,
    /// The first info field's timestamp, which EPIC timestamps count from.
    timestamp: u32,
    keys: Vec<AsHostKey>,
    sigmas: Vec<[u8; 16]>,
    dst_key: HostHostKey,
    gateway: Option<Gateway>,
    counter: u32,
}

impl EpicSealer {
    /// The sealer of packets from `src` to `dst` on `path`, with the keys of the DRKey epoch of
    /// `now_ns` (a flow that outlives its epoch is sealed with stale keys and dropped).
    pub fn new(
        secrets_file: &Path,
        path: &PathWire,
        (src_ia, src): (IsdAsn, IpAddr),
        (dst_ia, dst): (IsdAsn, IpAddr),
        gateway_rate_bps: Option<u64>,
        now_ns: u64,
    ) -> anyhow::Result<Self> {
        let secrets = EpicSecretsFile::load(secrets_file)?;
        let sp = path.standard_path()?.context("per-AS EPIC needs a path with at least one AS hop")?;
        let protocol = Protocol(secrets.drkey_protocol);
        let epoch = EpochSchedule::SCION_DEFAULT.epoch_at(now_ns / 1_000_000_000)?;
        let issuer = |ia: IsdAsn| -> anyhow::Result<IssuerKeys> {
            Ok(IssuerKeys::new(&secrets.secret(secrets_file, ia)?, protocol, epoch)?)
        };
        let (src_host, dst_host) = (host_addr(src), host_addr(dst));
        let (h_src, h_dst) = (DrkeyHost::from(&src_host), DrkeyHost::from(&dst_host));
        let owners = hop_owners(&sp, path)?;
        let mut keys = Vec::with_capacity(owners.len());
        let mut sigmas = Vec::with_capacity(owners.len());
        for (ia, block) in &owners {
            let secret = secrets.secret(secrets_file, *ia)?;
            keys.push(issuer(*ia)?.as_host(src_ia, &h_src));
            sigmas.push(HopMacKey::from_master_secret(&secret).cmac_block(block));
        }
        let dst_key = issuer(dst_ia)?.host_host(src_ia, &h_src, &h_dst);
        let gateway = match gateway_rate_bps {
            None => None,
            Some(rate) => {
                let config = GatewayConfig {
                    guarantee_bps: rate,
                    burst_bytes: aviary_zlane::gateway::config::DEFAULT_BURST_BYTES,
                    over_rate: Default::default(),
                    drkey_protocol: secrets.drkey_protocol,
                    // Every packet reaches this gateway once, fresh from the sealer.
                    suppress_duplicates: false,
                    hosts: vec![HostRateConfig { prefix: src.to_string(), rate_bps: Some(rate) }],
                };
                let mut gw = Gateway::new(src_ia, &secrets.secret(secrets_file, src_ia)?, &config, now_ns)?;
                let keys = gw.path_keys_mut();
                for (k, hop) in path.ases.iter().enumerate() {
                    keys.set_key(hop.ia, &issuer(hop.ia)?.level1(src_ia));
                    if let Some(next) = path.ases.get(k + 1) {
                        keys.add_link(hop.ia, hop.egress, next.ia);
                    }
                }
                Some(gw)
            }
        };
        Ok(Self { src_ia, src_host, timestamp: sp.info[0].timestamp, keys, sigmas, dst_key, gateway, counter: 0 })
    }

    /// Stamps a fresh packet ID into `pkt` (per-AS EPIC, payload final) and seals it; through
    /// the gateway if there is one. Returns whether it carries the QoS flag.
    pub fn seal(&mut self, pkt: &mut [u8], now_ns: u64) -> anyhow::Result<bool> {
        self.counter = self.counter.wrapping_add(1);
        let id = PktId { epic_ts: epic_timestamp(self.timestamp, now_ns)?, counter: self.counter };
        let view = ScionView::new_checked(&*pkt).context("per-AS EPIC template")?;
        let (range, payload_len) = (view.path_range(), view.payload_len());
        let mut path = PerAsPathView::new_checked(&mut pkt[range]).context("per-AS EPIC template")?;
        path.set_pkt_id(id);
        let input = MacInput::new(self.timestamp, id, self.src_ia, &self.src_host, payload_len);
        seal(&mut path, &input, &self.keys, &self.sigmas, &self.dst_key)?;
        let Some(gw) = &mut self.gateway else { return Ok(false) };
        let mut verdict = [GatewayVerdict::Unflagged];
        gw.process_batch(&mut [pkt], now_ns, &mut verdict);
        match verdict[0] {
            GatewayVerdict::Authorized => Ok(true),
            GatewayVerdict::Unflagged => Ok(false),
            GatewayVerdict::Drop(reason) => bail!("the gateway dropped a packet: {}", reason.label()),
        }
    }
}

/// Per hop field of `sp` (in path order): the AS that owns it and its MAC input block, the
/// SegID chained as routers chain it (in construction direction after each hop field, against
/// it before every hop field but a segment's first).
fn hop_owners(sp: &StandardPath, path: &PathWire) -> anyhow::Result<Vec<(IsdAsn, [u8; 16])>> {
    let starts: Vec<usize> = as_hops(sp).iter().map(|h| h.hop_index).collect();
    if starts.len() != path.ases.len() {
        bail!("the path's hop fields cross {} ASes but its AS list has {}", starts.len(), path.ases.len());
    }
    let mut out = Vec::with_capacity(sp.hops.len());
    let mut idx = 0;
    for (s, &len) in sp.seg_len.iter().take(sp.info.len()).enumerate() {
        let info = &sp.info[s];
        let mut seg_id = info.seg_id;
        for j in 0..usize::from(len) {
            let hop = &sp.hops[idx];
            if !info.cons_dir && j > 0 {
                seg_id = chain_seg_id(seg_id, &hop.mac);
            }
            let owner = starts.iter().rposition(|&start| start <= idx).context("hop field before the first AS")?;
            let block = mac_input(seg_id, info.timestamp, hop.exp_time, hop.cons_ingress, hop.cons_egress);
            out.push((path.ases[owner].ia, block));
            if info.cons_dir {
                seg_id = chain_seg_id(seg_id, &hop.mac);
            }
            idx += 1;
        }
    }
    Ok(out)
}

pub(crate) fn host_addr(ip: IpAddr) -> HostAddr {
    match ip {
        IpAddr::V4(a) => HostAddr::V4(a),
        IpAddr::V6(a) => HostAddr::V6(a),
    }
}
