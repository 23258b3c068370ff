//! The HTTP/JSON API of the AS control service: messages and a blocking client.
//!
//! - `POST /v1/segments/extend` (control service to control service): append this AS's
//!   hop field to a segment under construction, like a beacon passing through the AS.
//! - `GET /v1/paths?dst=ISD-AS` (host to its own AS): complete standard paths.
//! - `POST /v1/reservations` (AS operator, bearer token): grant a Hummingbird reservation.
//! - `GET /v1/drkey/level1?issuer=..` (the AS's infrastructure, bearer token): a Level-1 key
//!   another AS issued to this one, for the AS's Z-Lane gateway.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context};
use aviary_hummingbird::Reservation;
use aviary_scion::{HopField, IsdAsn, Segment, StandardPath};
use serde::{Deserialize, Serialize};

use crate::routes::AsOnRoute;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopWire {
    pub ia: IsdAsn,
    pub exp_time: u8,
    pub cons_ingress: u16,
    pub cons_egress: u16,
    /// 6 bytes, hex.
    pub mac: String,
    /// σ, the hop field's full 16-byte CMAC (its first 6 bytes are `mac`), hex: the
    /// authenticator EPIC's validation fields are keyed with, disseminated with the segment
    /// as SCION disseminates EPIC's hop authenticators. Empty from an AS that left it out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sigma: String,
}

/// A segment under construction: hop fields in construction order, each with its AS.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentWire {
    pub seg_id: u16,
    pub timestamp: u32,
    pub hops: Vec<HopWire>,
}

impl SegmentWire {
    pub fn to_segment(&self) -> anyhow::Result<Segment> {
        let mut seg = Segment::new(self.seg_id, self.timestamp);
        for h in &self.hops {
            let mac: [u8; 6] = hex::decode(&h.mac)
                .ok()
                .and_then(|m| m.try_into().ok())
                .with_context(|| format!("hop of {}: MAC must be 6 bytes of hex", h.ia))?;
            seg.hops.push(HopField {
                exp_time: h.exp_time,
                cons_ingress: h.cons_ingress,
                cons_egress: h.cons_egress,
                mac,
                ..Default::default()
            });
        }
        Ok(seg)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ExtendRequest {
    pub segment: SegmentWire,
    pub cons_ingress: u16,
    pub cons_egress: u16,
}

/// A complete path from the asking host's AS to `dst`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathWire {
    /// The ASes in travel order with their interfaces.
    pub ases: Vec<AsOnRoute>,
    /// The standard (type 1) path header, hex; empty for a path inside one AS.
    pub path: String,
    /// Unix seconds after which a hop field of the path has expired.
    pub expiry: u64,
    /// σ_i of every hop field of `path`, in the path's order, 16 bytes hex each (see
    /// [`HopWire::sigma`]); what a host needs for EPIC's validation fields.
    #[serde(default)]
    pub sigmas: Vec<String>,
}

impl PathWire {
    pub fn standard_path(&self) -> anyhow::Result<Option<StandardPath>> {
        if self.path.is_empty() {
            return Ok(None);
        }
        let raw = hex::decode(&self.path).context("path is not hex")?;
        Ok(Some(StandardPath::parse(&raw).map_err(|e| anyhow::anyhow!("bad path: {e}"))?))
    }

    /// [`Self::sigmas`] as bytes, one per hop field of a path of `hops` hop fields.
    pub fn sigma_bytes(&self, hops: usize) -> anyhow::Result<Vec<[u8; 16]>> {
        if self.sigmas.len() != hops {
            bail!("the path has {hops} hop fields but {} hop authenticators (sigmas)", self.sigmas.len());
        }
        self.sigmas
            .iter()
            .enumerate()
            .map(|(i, s)| {
                hex::decode(s)
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .with_context(|| format!("sigmas[{i}]: not 16 bytes of hex"))
            })
            .collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PathsReply {
    pub paths: Vec<PathWire>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReservationRequest {
    /// Interfaces in the direction of travel (0: the AS's inside).
    pub ingress: u16,
    pub egress: u16,
    pub bandwidth_bps: u64,
    /// Unix seconds.
    pub start: u32,
    /// Seconds.
    pub duration: u16,
}

/// A granted reservation as the AS returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub ia: IsdAsn,
    /// The granted bandwidth (the codec rounds the request up).
    pub bandwidth_bps: u64,
    pub reservation: Reservation,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorReply {
    pub error: String,
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(Duration::from_secs(5)).build()
}

fn check<T: serde::de::DeserializeOwned>(what: &str, r: Result<ureq::Response, ureq::Error>) -> anyhow::Result<T> {
    match r {
        Ok(resp) => resp.into_json().with_context(|| format!("{what}: bad reply")),
        Err(ureq::Error::Status(code, resp)) => {
            let msg = resp.into_json::<ErrorReply>().map(|e| e.error).unwrap_or_default();
            bail!("{what}: HTTP {code}: {msg}")
        }
        Err(e) => bail!("{what}: {e}"),
    }
}

pub fn extend_segment(control: SocketAddr, req: &ExtendRequest) -> anyhow::Result<SegmentWire> {
    let url = format!("http://{control}/v1/segments/extend");
    check(&format!("extend segment at {control}"), agent().post(&url).send_json(req))
}

pub fn fetch_paths(control: SocketAddr, dst: IsdAsn) -> anyhow::Result<Vec<PathWire>> {
    let url = format!("http://{control}/v1/paths?dst={dst}");
    let reply: PathsReply = check(&format!("paths to {dst} from {control}"), agent().get(&url).call())?;
    Ok(reply.paths)
}

pub fn request_reservation(control: SocketAddr, token: &str, req: &ReservationRequest) -> anyhow::Result<Grant> {
    let url = format!("http://{control}/v1/reservations");
    let r = agent().post(&url).set("Authorization", &format!("Bearer {token}")).send_json(req);
    check(&format!("reservation at {control}"), r)
}

/// `K_{issuer→A}` from AS A's own control service, for A's infrastructure (its Z-Lane
/// gateway): `GET /v1/drkey/level1?issuer=..&protocol=..&at=..` with the operator token.
pub fn fetch_infrastructure_level1(
    control: SocketAddr,
    token: &str,
    issuer: IsdAsn,
    protocol: u16,
    at: u64,
) -> anyhow::Result<Level1Reply> {
    let url = format!("http://{control}/v1/drkey/level1?issuer={issuer}&protocol={protocol}&at={at}");
    let r = agent().get(&url).set("Authorization", &format!("Bearer {token}")).call();
    check(&format!("Level-1 key of {issuer} from {control}"), r)
}

/// A DRKey epoch, `[begin, end)` in Unix seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochWire {
    pub begin: u32,
    pub end: u32,
}

/// `GET /v1/drkey/level1?protocol=N&subject=ISD-AS[&at=UNIX_S]` over TLS: `K_{issuer→subject}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Level1Reply {
    pub issuer: IsdAsn,
    pub subject: IsdAsn,
    pub protocol: u16,
    pub epoch: EpochWire,
    /// 16 bytes, hex.
    pub key: String,
}

/// The Level-2/3 key kinds a host asks its control service for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyKind {
    /// `K_{src→dst:dst_host}` (Level 2): the asking host is `dst_host` in `dst_ia`.
    AsHost,
    /// `K_{src:src_host→dst}` (Level 2): the asking host is `src_host` in `src_ia`.
    HostAs,
    /// `K_{src:src_host→dst:dst_host}` (Level 3): the asking host is either end.
    HostHost,
}

impl HostKeyKind {
    pub fn name(self) -> &'static str {
        match self {
            HostKeyKind::AsHost => "as-host",
            HostKeyKind::HostAs => "host-as",
            HostKeyKind::HostHost => "host-host",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        [HostKeyKind::AsHost, HostKeyKind::HostAs, HostKeyKind::HostHost].into_iter().find(|k| k.name() == s)
    }
}

/// `GET /v1/drkey/{as-host|host-as|host-host}?...` (host to its own control service).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostKeyReply {
    pub kind: HostKeyKind,
    pub protocol: u16,
    pub src_ia: IsdAsn,
    pub dst_ia: IsdAsn,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_host: Option<String>,
    pub epoch: EpochWire,
    /// 16 bytes, hex.
    pub key: String,
}

/// `POST /v1/glwp/discover` on the host API: a GLWP allocation on one of the AS's paths to
/// `dst` (`path_index` in the order of `/v1/paths`), refused if below `min_bps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlwpDiscoverRequest {
    pub dst: IsdAsn,
    #[serde(default)]
    pub path_index: usize,
    #[serde(default)]
    pub min_bps: u64,
}

/// `POST /v1/glwp/matrix` on the control service (operator token): the AS's new GLWP
/// allocation matrix, `[ingress, egress, bit/s]` per interface pair, as in `[glwp] matrix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlwpMatrixRequest {
    pub matrix: Vec<[u64; 3]>,
}

/// The answer to a matrix change: temporary hop values from `t1_ns`, the new ones from
/// `t2_ns` (ns since the Unix epoch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlwpMatrixReply {
    pub t1_ns: u64,
    pub t2_ns: u64,
}

/// The answer to `DELETE /v1/glwp/hold-down/<ISD-AS>`: whether the neighbour was held down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlwpHoldDownReply {
    pub neighbour: IsdAsn,
    pub was_held_down: bool,
}

/// One AS of a GLWP allocation's path: its interface pair, its hop values and, for the
/// on-path ASes, its hop key (hex; the source's position has none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlwpHopWire {
    pub ia: IsdAsn,
    pub ingress: u16,
    pub egress: u16,
    pub div_bps: u64,
    pub m_bps: u64,
    pub con_bps: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop_key: Option<String>,
}

/// A discovered GLWP allocation, as the source's service hands it to the host: what a data
/// sender needs (AID, β, ts_exp, the path's ASes and interface pairs, the hop keys).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GlwpAllocationWire {
    pub src: IsdAsn,
    /// AID, 16 hex digits.
    pub aid: String,
    /// G(π) in bit/s, from the hop values.
    pub guarantee_bps: u64,
    /// β as the transmission header carries it: ⌊G(π) / 1000⌋ kbit/s.
    pub beta_kbps: u32,
    /// Unix seconds at which the allocation expires.
    pub ts_exp: u32,
    pub hops: Vec<GlwpHopWire>,
}

impl GlwpAllocationWire {
    /// An allocation file as `aviary glwp discover --out` writes it.
    pub fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{}", path.display()))
    }

    /// The destination AS: the last of the path.
    pub fn dst(&self) -> Option<IsdAsn> {
        self.hops.last().map(|h| h.ia)
    }

    /// What a data sender needs: the path's interface pairs, AID, β, ts_exp and the hop keys of
    /// on-path ASes 1 … λ; errors name the field.
    pub fn source_allocation(&self) -> anyhow::Result<aviary_glwp::SourceAllocation> {
        let aid =
            u64::from_str_radix(&self.aid, 16).with_context(|| format!("aid {:?} is not 16 hex digits", self.aid))?;
        if self.hops.len() < 2 {
            bail!("hops: a path has at least the source and one on-path AS");
        }
        let hop_keys = self.hops[1..]
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let key = h.hop_key.as_deref().with_context(|| format!("hops[{}].hop_key: missing", i + 1))?;
                hex::decode(key)
                    .ok()
                    .and_then(|k| k.try_into().ok())
                    .with_context(|| format!("hops[{}].hop_key: not 16 bytes of hex", i + 1))
            })
            .collect::<anyhow::Result<Vec<[u8; 16]>>>()?;
        Ok(aviary_glwp::SourceAllocation {
            path: self.hops.iter().map(|h| (h.ingress, h.egress)).collect(),
            aid,
            beta: self.beta_kbps,
            ts_exp: self.ts_exp,
            hop_keys,
        })
    }
}

/// Times a host asks again for a discovery the control service refused for the host's rate.
const DISCOVERY_RATE_RETRIES: u32 = 3;
/// The longest `Retry-After` a host waits out.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Runs a GLWP discovery at the control service `control` of the host's AS; a refusal for the
/// host's rate (429) is waited out, as its `Retry-After` says, a few times.
pub fn glwp_discover(control: SocketAddr, req: &GlwpDiscoverRequest) -> anyhow::Result<GlwpAllocationWire> {
    let url = format!("http://{control}/v1/glwp/discover");
    // The service retries lost messages for up to about 3 s.
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(15)).build();
    let mut reply = agent.post(&url).send_json(req);
    for _ in 0..DISCOVERY_RATE_RETRIES {
        let Err(ureq::Error::Status(429, resp)) = &reply else { break };
        let wait =
            resp.header("Retry-After").and_then(|s| s.parse().ok()).map_or(Duration::from_secs(1), Duration::from_secs);
        std::thread::sleep(wait.min(MAX_RETRY_AFTER));
        reply = agent.post(&url).send_json(req);
    }
    check(&format!("GLWP discovery to {}", req.dst), reply)
}
