//! The AS control service (`aviary control`): issues this AS's hop fields with its own key,
//! assembles complete paths for its hosts by having every AS on a route add its hop field
//! (no process holds another AS's secret), and grants Hummingbird reservations to the AS
//! operator (the out-of-band control plane of the Hummingbird paper, §4.2), and runs the AS's DRKey
//! service ([`drkey`], [`level1`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, bail, Context};
use aviary_hummingbird::{BwCodec, ResInfo, Reservation, SecretValue};
use aviary_scion::mac::mac_input;
use aviary_scion::wire::path::hop_expiry_ns;
use aviary_scion::{combine_from, HopMacKey, IsdAsn, Prefix};

pub mod drkey;
pub mod glwp;
pub mod level1;
pub mod tls;

use crate::api::HostKeyKind;
use crate::api::{
    self, ExtendRequest, GlwpDiscoverRequest, GlwpHoldDownReply, GlwpMatrixReply, GlwpMatrixRequest, Grant, HopWire,
    PathWire, PathsReply, ReservationRequest, SegmentWire,
};
use crate::clock::{unix_ns, unix_s};
use crate::config::{ControlConfig, DrkeyConfig};
use crate::http::client_limit::RetryAfter;
use crate::http::server::{self as http_server, Server, ServerStats};
use crate::http::{Request, Response};
use crate::resid_store::{Direction, Holder, Leg, Limits, ResIdStore, StoreError};
use crate::routes::{routes, HopPlan, SegmentPlan};
use crate::secret_rotation;
use crate::topology::{IfRef, Neighbor, Topology};
use aviary_scion::drkey::RotatingSecret;
use drkey::{DrkeyService, HostKeyRequest};
use glwp::GlwpService;
use level1::TlsFetcher;
use tls::DrkeyTls;

pub mod grant_error;
pub mod metrics;

pub use grant_error::GrantError;
use metrics::ControlMetrics;

/// The operator's endpoint that ends a GLWP hold-down, followed by the neighbour's ISD-AS.
const GLWP_HOLD_DOWN: &str = "/v1/glwp/hold-down/";
/// The hosts' GLWP discovery, limited per host.
const GLWP_DISCOVER: &str = "/v1/glwp/discover";
/// Routes offered per destination.
const MAX_PATHS: usize = 8;
/// How far a segment's timestamp may lie in the past or future when an AS extends it.
const MAX_SEGMENT_AGE_S: u64 = 3600;
const MAX_FUTURE_S: u64 = 60;

/// An HTTP error: status and message for the reply.
#[derive(Debug)]
struct Failure(u16, String);

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(400, e.to_string())
    }
}

pub struct ControlService {
    ia: IsdAsn,
    mac_key: HopMacKey,
    sv: SecretValue,
    exp_time: u8,
    codec: BwCodec,
    topology: Topology,
    peers: HashMap<IsdAsn, SocketAddr>,
    operator_token: String,
    /// The AS's one ResID allocator, shared with its AS reservation service.
    resids: ResIdStore,
    /// Reservable bandwidth per interface; admission is decided in `resids`.
    limits: Limits,
    /// Built segments by their hops, with the Unix time after which they are rebuilt.
    segments: Mutex<HashMap<Vec<HopPlan>, (SegmentWire, u64)>>,
    /// The DRKey service and the socket of its Level-1 (TLS) side, if configured.
    drkey: Option<(Arc<DrkeyService>, SocketAddr)>,
    /// The networks of the AS's hosts, the only requesters of host-level DRKey keys.
    host_networks: Vec<Prefix>,
    /// The AS's GLWP service, if configured (it uses the DRKey service's Level-1 keys).
    glwp: Option<Arc<GlwpService>>,
    metrics: ControlMetrics,
}

impl ControlService {
    pub fn from_config(cfg: &ControlConfig, cfg_path: &std::path::Path) -> anyhow::Result<Self> {
        // DRKey needs the record of the last rotation too, to keep every key it served.
        let drkey_secret = secret_rotation::load(cfg_path, "master_secret_file", &cfg.master_secret_file)?;
        let secret = drkey_secret.current().to_vec();
        let token = crate::config::read_operator_token(&cfg_path.display().to_string(), &cfg.operator_token_file)?;
        let topology = Topology::load(&cfg.topology)?;
        if topology.as_entry(cfg.ia).is_none() {
            bail!("{}: ia: {} is not in the topology {}", cfg_path.display(), cfg.ia, cfg.topology.display());
        }
        std::fs::create_dir_all(&cfg.state_dir)
            .with_context(|| format!("{}: state_dir: cannot create {}", cfg_path.display(), cfg.state_dir.display()))?;
        let links = topology.links_of(cfg.ia).map(|(l, _, _, link)| (l.ifid, link.capacity_bps));
        let limits =
            crate::reservable::control_limits(&cfg_path.display().to_string(), &cfg.hummingbird.interfaces, links)?;
        let resids = ResIdStore::new(cfg.resid_store(), cfg.hummingbird.max_res_id);
        // A corrupt store stops the service at start, naming the file, not at the first grant.
        resids.snapshot().with_context(|| format!("{}: resid_store", cfg_path.display()))?;
        let drkey = match &cfg.drkey {
            Some(d) => Some((Arc::new(drkey_service(cfg, d, &drkey_secret, cfg_path)?), d.listen)),
            None => None,
        };
        let glwp = match (&cfg.glwp, &drkey) {
            (Some(g), Some((d, _))) => {
                Some(Arc::new(GlwpService::from_config(cfg, g, &topology, &drkey_secret, d.schedule(), cfg_path)?))
            }
            _ => None,
        };
        Ok(Self {
            ia: cfg.ia,
            mac_key: HopMacKey::from_master_secret(&secret),
            sv: SecretValue::from_master_secret(&secret),
            exp_time: cfg.hop_exp_time,
            codec: cfg.hummingbird.codec,
            topology,
            peers: cfg.peers.iter().map(|p| (p.ia, p.control)).collect(),
            operator_token: token,
            resids,
            limits,
            segments: Mutex::new(HashMap::new()),
            drkey,
            host_networks: cfg.host_networks.clone(),
            glwp,
            metrics: ControlMetrics::default(),
        })
    }

    /// Serves the API on `listen` until the process ends.
    pub fn serve(self, listen: SocketAddr) -> anyhow::Result<()> {
        // Kept for as long as the API is served; its refusals go to the API's `/metrics`.
        let level1 = match &self.drkey {
            Some((svc, addr)) => {
                let server = level1::spawn(svc.clone(), *addr)
                    .map_err(|e| anyhow!("control service cannot listen on {addr} (drkey.listen): {e}"))?;
                tracing::info!(ia = %self.ia, bound = %server.addr(), "DRKey Level-1 service up");
                if let Some(g) = &self.glwp {
                    g.start(svc.clone());
                    tracing::info!(ia = %self.ia, listen = ?g.local_addr(), "GLWP service up");
                }
                Some(server)
            }
            None => None,
        };
        let level1_stats = level1.as_ref().map(|l| l.stats().clone());
        let (ia, svc) = (self.ia, self);
        let handler = move |req: &Request, stats: &ServerStats| {
            let servers: Vec<_> = std::iter::once(("control", stats))
                .chain(level1_stats.as_deref().map(|s| ("drkey_level1", s)))
                .collect();
            svc.handle(req, &servers)
        };
        let server = Server::http("control", listen, http_server::Limits::default(), Arc::new(handler))
            .map_err(|e| anyhow!("control service cannot listen on {listen}: {e}"))?;
        tracing::info!(%ia, %listen, "control service up");
        server.wait();
        Ok(())
    }

    /// Answers `req`; `servers` are the HTTP servers whose refusals `/metrics` shows.
    fn handle(&self, req: &Request, servers: &[(&str, &ServerStats)]) -> Response {
        let (path, query) = (req.path.as_str(), req.query.as_str());
        if (req.method.as_str(), path) == ("POST", GLWP_DISCOVER) {
            if let Err(retry) = self.admit_discovery(req) {
                self.metrics.request(path, 429);
                let msg = format!("too many discoveries from this host: ask again in {} s", retry.secs());
                return Response::too_many_requests(retry, &msg);
            }
        }
        let result = req.body_text().map_err(|e| Failure(e.status(), e.to_string())).and_then(|body| {
            match (req.method.as_str(), path) {
                ("POST", "/v1/segments/extend") => {
                    let extended = serde_json::from_str(body).map_err(Failure::from).and_then(|r| self.extend(r));
                    self.metrics.extension_served(extended.is_ok());
                    Ok(serde_json::to_string(&extended?)?)
                }
                ("GET", "/v1/paths") => {
                    let dst = query
                        .split('&')
                        .find_map(|kv| kv.strip_prefix("dst="))
                        .ok_or_else(|| Failure(400, "missing query parameter dst".into()))?;
                    let paths = dst.parse::<IsdAsn>().map_err(Failure::from).and_then(|dst| self.paths(dst));
                    self.metrics.path_lookup(paths.as_ref().map_or_else(|Failure(code, _)| *code, |_| 200));
                    Ok(serde_json::to_string(&PathsReply { paths: paths? })?)
                }
                ("POST", "/v1/reservations") => {
                    let granted = self
                        .authorise(req)
                        .map_err(|_| GrantError::Unauthorised)
                        .and_then(|_| serde_json::from_str(body).map_err(|e| GrantError::BadRequest(e.to_string())))
                        .and_then(|r: ReservationRequest| self.grant(&r));
                    self.metrics.grant(&granted);
                    let grant = granted.map_err(|e| Failure(e.status(), e.to_string()))?;
                    Ok(serde_json::to_string(&grant)?)
                }
                ("GET", "/v1/drkey/level1") => self.authorise(req).and_then(|_| self.infrastructure_level1(query)),
                ("GET", p) if p.starts_with("/v1/drkey/") => self.host_drkey(req, p, query),
                ("POST", GLWP_DISCOVER) => self.glwp_discover(body),
                ("POST", "/v1/glwp/matrix") => self.authorise(req).and_then(|_| self.glwp_matrix(body)),
                ("DELETE", p) if p.starts_with(GLWP_HOLD_DOWN) => {
                    self.authorise(req).and_then(|_| self.glwp_clear_hold_down(&p[GLWP_HOLD_DOWN.len()..]))
                }
                ("GET", "/metrics") => Ok(self.metrics_text(servers)),
                ("GET", "/v1/status") => Ok(serde_json::json!({ "ia": self.ia }).to_string()),
                (method, _) => Err(Failure(404, format!("no such endpoint: {method} {path}"))),
            }
        });
        let ctype = if path == "/metrics" { crate::metrics::CONTENT_TYPE } else { "application/json" };
        self.metrics.request(path, result.as_ref().map_or_else(|Failure(code, _)| *code, |_| 200));
        match result {
            Ok(body) => Response::with_type(200, ctype, body),
            Err(Failure(code, msg)) => {
                tracing::debug!(code, %msg, %path, "request refused");
                Response::error(code, &msg)
            }
        }
    }

    /// `GET /metrics`: the counters, and the reservations the ResID store holds per ingress.
    fn metrics_text(&self, servers: &[(&str, &ServerStats)]) -> String {
        let held = match self.resids.peek() {
            Ok(a) => Some(
                self.topology
                    .links_of(self.ia)
                    .map(|(l, ..)| (l.ifid, a.resids.held(l.ifid).len()))
                    .collect::<Vec<_>>(),
            ),
            Err(e) => {
                tracing::warn!("metrics: {e}");
                self.metrics.error("resid_store");
                None
            }
        };
        let mut text = self.metrics.prometheus(self.ia, held.as_deref());
        let mut out = crate::metrics::Exposition::new();
        if let Some(g) = &self.glwp {
            g.prometheus(&mut out);
        }
        ServerStats::prometheus(&mut out, servers);
        text += &out.finish();
        text
    }

    /// A host's discovery against its rate (before its body is read: every request costs).
    fn admit_discovery(&self, req: &Request) -> Result<(), RetryAfter> {
        match (&self.glwp, req.peer) {
            (Some(glwp), Some(peer)) => glwp.admit_host(peer.ip(), unix_ns()),
            _ => Ok(()),
        }
    }

    /// `POST /v1/glwp/discover`: a GLWP discovery over one of this AS's paths, with this AS's
    /// GLWP service as the source.
    fn glwp_discover(&self, body: &str) -> Result<String, Failure> {
        let glwp = self.glwp.as_ref().ok_or_else(|| Failure(503, "this AS runs no GLWP service".into()))?;
        let r: GlwpDiscoverRequest = serde_json::from_str(body)?;
        let paths = self.paths(r.dst)?;
        let n = paths.len();
        let path = paths
            .into_iter()
            .nth(r.path_index)
            .ok_or_else(|| Failure(400, format!("path_index {}: there are {n} paths to {}", r.path_index, r.dst)))?;
        let ases: Vec<IsdAsn> = path.ases.iter().map(|a| a.ia).collect();
        let pairs: Vec<(u16, u16)> = path.ases.iter().map(|a| (a.ingress, a.egress)).collect();
        let alloc = glwp.discover(&ases, &pairs, r.min_bps).map_err(|e| Failure(e.status(), e.to_string()))?;
        Ok(serde_json::to_string(&alloc)?)
    }

    /// `POST /v1/glwp/matrix` (operator token): changes the AS's GLWP matrix through the
    /// update subprotocol (temporary values during ΔT, announced to the neighbours).
    fn glwp_matrix(&self, body: &str) -> Result<String, Failure> {
        let glwp = self.glwp.as_ref().ok_or_else(|| Failure(503, "this AS runs no GLWP service".into()))?;
        let r: GlwpMatrixRequest = serde_json::from_str(body)?;
        let w = glwp.change_matrix(r.matrix).map_err(|e| Failure(e.status(), e.to_string()))?;
        Ok(serde_json::to_string(&GlwpMatrixReply { t1_ns: w.t1_ns, t2_ns: w.t2_ns })?)
    }

    /// `DELETE /v1/glwp/hold-down/<ISD-AS>` (operator token): ends the blame policy's
    /// hold-down of a neighbour.
    fn glwp_clear_hold_down(&self, neighbour: &str) -> Result<String, Failure> {
        let glwp = self.glwp.as_ref().ok_or_else(|| Failure(503, "this AS runs no GLWP service".into()))?;
        let n: IsdAsn = neighbour.parse().map_err(|e| Failure(400, format!("{GLWP_HOLD_DOWN}{neighbour}: {e}")))?;
        let was_held_down = glwp.clear_hold_down(n);
        Ok(serde_json::to_string(&GlwpHoldDownReply { neighbour: n, was_held_down })?)
    }

    /// `GET /v1/drkey/<kind>?...`: a Level-2/3 key for the asking host (see [`drkey`]).
    fn host_drkey(&self, req: &Request, path: &str, query: &str) -> Result<String, Failure> {
        let (svc, _) = self.drkey.as_ref().ok_or_else(|| Failure(503, "this AS runs no DRKey service".into()))?;
        let kind = path
            .strip_prefix("/v1/drkey/")
            .and_then(HostKeyKind::from_name)
            .ok_or_else(|| Failure(404, format!("no such DRKey key kind: {path} (as-host, host-as, host-host)")))?;
        let from = req.peer.ok_or_else(|| Failure(400, "the connection has no peer address".into()))?;
        if !self.host_networks.iter().any(|n| n.contains_ip(from.ip())) {
            let why = format!(
                "host keys are served to {}'s hosts only: {} is in none of its host_networks",
                self.ia,
                from.ip()
            );
            return Err(Failure(403, why));
        }
        let r = HostKeyRequest::parse(kind, query).map_err(|e| Failure(e.status(), e.to_string()))?;
        let reply = svc.host_key(&r, from.ip(), unix_s()).map_err(|e| Failure(e.status(), e.to_string()))?;
        Ok(serde_json::to_string(&reply)?)
    }

    /// `GET /v1/drkey/level1?issuer=ISD-AS&protocol=N[&at=UNIX_S]` (operator token): the
    /// Level-1 key `issuer` issued to this AS, for the AS's infrastructure (its gateway).
    fn infrastructure_level1(&self, query: &str) -> Result<String, Failure> {
        let (svc, _) = self.drkey.as_ref().ok_or_else(|| Failure(503, "this AS runs no DRKey service".into()))?;
        let q = crate::http::query_params(query, &["issuer", "protocol", "at"]).map_err(|e| Failure(400, e))?;
        let get = |name: &str| q.get(name).ok_or_else(|| Failure(400, format!("missing query parameter {name}")));
        let issuer: IsdAsn = get("issuer")?.parse().map_err(|e| Failure(400, format!("issuer: {e}")))?;
        let protocol: u16 = get("protocol")?.parse().map_err(|e| Failure(400, format!("protocol: {e}")))?;
        let now = unix_s();
        let at = match q.get("at") {
            Some(t) => t.parse().map_err(|e| Failure(400, format!("at: {e}")))?,
            None => now,
        };
        let reply = svc
            .level1_for_infrastructure(issuer, aviary_scion::drkey::Protocol(protocol), at, now)
            .map_err(|e| Failure(e.status(), e.to_string()))?;
        Ok(serde_json::to_string(&reply)?)
    }

    fn authorise(&self, req: &Request) -> Result<(), Failure> {
        if req.bears(&self.operator_token) {
            Ok(())
        } else {
            Err(Failure(401, "operator token missing or wrong".into()))
        }
    }

    /// Appends this AS's hop field, as beaconing would when the segment passes through.
    fn extend(&self, r: ExtendRequest) -> Result<SegmentWire, Failure> {
        let now = unix_s();
        let ts = u64::from(r.segment.timestamp);
        if ts + MAX_SEGMENT_AGE_S < now || ts > now + MAX_FUTURE_S {
            return Err(Failure(400, format!("segment timestamp {ts} is not current")));
        }
        let link = |ifid: u16| self.topology.neighbor(IfRef { ia: self.ia, ifid });
        match r.segment.hops.last() {
            None if r.cons_ingress != 0 => return Err(Failure(400, "a segment starts with ingress 0".into())),
            None => {}
            Some(prev) => {
                let up = IfRef { ia: prev.ia, ifid: prev.cons_egress };
                match link(r.cons_ingress) {
                    Some((remote, n)) if remote == up && n != Neighbor::Child => {}
                    _ => {
                        return Err(Failure(
                            400,
                            format!("interface {} is not linked to {up} upstream", r.cons_ingress),
                        ))
                    }
                }
            }
        }
        if r.cons_egress != 0 && !matches!(link(r.cons_egress), Some((_, Neighbor::Child | Neighbor::Core))) {
            return Err(Failure(400, format!("interface {} does not lead downstream", r.cons_egress)));
        }
        let mut seg = r.segment.to_segment()?;
        let beta = seg.beta(seg.hops.len());
        let hop = *seg.push_hop(&self.mac_key, self.exp_time, r.cons_ingress, r.cons_egress);
        // σ: the full CMAC whose first bytes are the hop field's MAC, as this AS's routers
        // recompute it from the hop field (under the SegID β of its position).
        let sigma =
            self.mac_key.cmac_block(&mac_input(beta, seg.timestamp, hop.exp_time, hop.cons_ingress, hop.cons_egress));
        let mut out = r.segment;
        out.hops.push(HopWire {
            ia: self.ia,
            exp_time: hop.exp_time,
            cons_ingress: hop.cons_ingress,
            cons_egress: hop.cons_egress,
            mac: hex::encode(hop.mac),
            sigma: hex::encode(sigma),
        });
        Ok(out)
    }

    /// A segment for `plan`, built by asking every AS on it in construction order.
    fn build_segment(&self, plan: &SegmentPlan) -> anyhow::Result<SegmentWire> {
        let now = unix_s();
        if let Some((seg, rebuild_at)) = self.segments.lock().expect("poisoned").get(&plan.hops) {
            if now < *rebuild_at {
                return Ok(seg.clone());
            }
        }
        let mut id = [0u8; 2];
        getrandom::getrandom(&mut id).map_err(|e| anyhow!("no randomness: {e}"))?;
        let mut seg = SegmentWire { seg_id: u16::from_be_bytes(id), timestamp: now as u32, hops: Vec::new() };
        for hop in &plan.hops {
            let req = ExtendRequest { segment: seg, cons_ingress: hop.cons_ingress, cons_egress: hop.cons_egress };
            seg = if hop.ia == self.ia {
                self.extend(req).map_err(|Failure(_, m)| anyhow!("{m}"))?
            } else {
                let addr = self.peers.get(&hop.ia).ok_or_else(|| anyhow!("no control service known for {}", hop.ia))?;
                let extended = api::extend_segment(*addr, &req);
                self.metrics.extension_requested(hop.ia, extended.is_ok());
                extended?
            };
        }
        let lifetime = hop_expiry_ns(0, self.exp_time) / 1_000_000_000;
        self.segments.lock().expect("poisoned").insert(plan.hops.clone(), (seg.clone(), now + lifetime / 2));
        Ok(seg)
    }

    fn paths(&self, dst: IsdAsn) -> Result<Vec<PathWire>, Failure> {
        if self.topology.as_entry(dst).is_none() {
            return Err(Failure(404, format!("{dst} is not in the topology")));
        }
        let mut out = Vec::new();
        let mut last_err = None;
        for route in routes(&self.topology, self.ia, dst, MAX_PATHS) {
            let built: anyhow::Result<Vec<SegmentWire>> =
                route.segments.iter().map(|p| self.build_segment(p)).collect();
            let built = match built {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(%dst, "route skipped: {e:#}");
                    last_err = Some(e);
                    continue;
                }
            };
            let segs: Vec<_> = built.iter().map(SegmentWire::to_segment).collect::<anyhow::Result<_>>()?;
            let with_dir: Vec<_> = segs.iter().zip(&route.segments).map(|(s, p)| (s, p.cons_dir(), p.from)).collect();
            let (path, expiry) = if with_dir.is_empty() {
                (String::new(), u64::MAX)
            } else {
                let p = combine_from(&with_dir).map_err(|e| Failure(500, e.to_string()))?;
                let expiry = segs
                    .iter()
                    .flat_map(|s| s.hops.iter().map(move |h| hop_expiry_ns(s.timestamp, h.exp_time) / 1_000_000_000))
                    .min()
                    .unwrap_or(0);
                (hex::encode(p.to_bytes().map_err(|e| Failure(500, e.to_string()))?), expiry)
            };
            out.push(PathWire { ases: route.ases(), path, expiry, sigmas: path_sigmas(&built, &route.segments) });
        }
        if out.is_empty() {
            let why = last_err.map_or("no route in the topology".to_string(), |e| format!("{e:#}"));
            return Err(Failure(503, format!("no path to {dst}: {why}")));
        }
        Ok(out)
    }

    fn grant(&self, r: &ReservationRequest) -> Result<Grant, GrantError> {
        for (name, ifid) in [("ingress", r.ingress), ("egress", r.egress)] {
            if ifid != 0 && self.topology.neighbor(IfRef { ia: self.ia, ifid }).is_none() {
                return Err(GrantError::UnknownInterface(format!("{name}: {} has no interface {ifid}", self.ia)));
            }
        }
        if r.ingress == r.egress {
            return Err(GrantError::SameInterface);
        }
        if r.duration == 0 {
            return Err(GrantError::ZeroDuration);
        }
        let bw = self.codec.encode_ceil(r.bandwidth_bps).ok_or(GrantError::BandwidthTooLarge(r.bandwidth_bps))?;
        let start = u64::from(r.start);
        let now = unix_s();
        if start + u64::from(r.duration) <= now {
            return Err(GrantError::IntervalOver);
        }
        let end = start + u64::from(r.duration);
        // Admission counts what the routers will police: the bandwidth as the codec rounds it.
        let bps = self.codec.decode_bps(bw);
        let legs = [
            Leg { interface: r.ingress, direction: Direction::Ingress, bps, start, end },
            Leg { interface: r.egress, direction: Direction::Egress, bps, start, end },
        ];
        // One transaction: the ResID and the bandwidth are taken together or not at all, and a
        // market listing racing for the same interface waits for the lock.
        let res_id = self
            .resids
            .transact(|s| {
                s.expire(now);
                let res_id = s.resids.assign(r.ingress, start, end).map_err(|e| GrantError::NoResId(e.to_string()))?;
                s.bandwidth.admit(&self.limits, &legs, &Holder::Grant { res_id }).map_err(GrantError::NoBandwidth)?;
                Ok(res_id)
            })
            .map_err(|e| match e {
                StoreError::Refused(e) => e,
                e => GrantError::Store(e.to_string()),
            })?;
        let info = ResInfo { ingress: r.ingress, egress: r.egress, res_id, bw, start: r.start, duration: r.duration };
        let ak = self.sv.auth_key(&info);
        tracing::info!(res_id, bw, ingress = r.ingress, egress = r.egress, "reservation granted");
        Ok(Grant { ia: self.ia, bandwidth_bps: self.codec.decode_bps(bw), reservation: Reservation { info, ak } })
    }
}

/// σ of every hop field of a path made of `segments` as `plans` traverse them, in the
/// path's order (as `combine_from` lays out the hop fields); empty if an AS left σ out.
fn path_sigmas(segments: &[SegmentWire], plans: &[SegmentPlan]) -> Vec<String> {
    let mut out = Vec::new();
    for (seg, plan) in segments.iter().zip(plans) {
        let mut hops: Vec<_> = seg.hops.get(plan.from..).unwrap_or_default().iter().map(|h| h.sigma.clone()).collect();
        if !plan.cons_dir() {
            hops.reverse();
        }
        out.extend(hops);
    }
    if out.iter().any(String::is_empty) {
        return Vec::new();
    }
    out
}

/// The DRKey service of a `[drkey]` table: its TLS identity and trust, and a Level-1
/// client for the peers that have a DRKey address.
fn drkey_service(
    cfg: &ControlConfig,
    d: &DrkeyConfig,
    secret: &RotatingSecret,
    cfg_path: &std::path::Path,
) -> anyhow::Result<DrkeyService> {
    let file = cfg_path.display().to_string();
    let schedule = d.schedule(&file)?;
    let roots: Vec<_> = d.trust_roots.iter().map(|r| (r.isd, r.cert_file.clone())).collect();
    let tls = DrkeyTls::load(&d.cert_file, &d.key_file, &roots).with_context(|| format!("{file}: drkey"))?;
    let fetcher = TlsFetcher {
        subject: cfg.ia,
        peers: cfg.peers.iter().filter_map(|p| Some((p.ia, p.drkey?))).collect(),
        configs: tls.client_configs(),
    };
    Ok(DrkeyService::new(cfg.ia, secret.clone(), schedule, tls, Box::new(fetcher))?)
}

/// Runs a control service from its config file until the process is stopped.
pub fn run(cfg_path: &std::path::Path) -> anyhow::Result<()> {
    let cfg = ControlConfig::load(cfg_path)?;
    let svc = ControlService::from_config(&cfg, cfg_path)?;
    svc.serve(cfg.listen)
}

#[cfg(test)]
mod admission_tests;
#[cfg(test)]
mod tests;
