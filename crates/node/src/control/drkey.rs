//! The DRKey service of an AS's control service, as SCION's control service runs it:
//!
//! - **Level 1, to other ASes** ([`level1`](super::level1)): over mutually authenticated
//!   TLS, AS A's service answers `K_{A→B}` only to the control service whose certificate
//!   certifies B. It derives every key from the AS's master secret on demand.
//! - **Level 2/3, to its own hosts** (`GET /v1/drkey/{as-host|host-as|host-host}` on the
//!   host-facing API): a host gets only keys in which it is the local host, i.e. whose host
//!   address in this AS equals the source IP of its connection. Keys that this AS issues
//!   are derived locally; keys that another AS issues (`K_{B→A:H}`, or host-host keys with
//!   the asking host at the destination) need `K_{B→A}`, fetched from B's service over TLS
//!   and cached per epoch (bounded).
//!
//! - **Level 1, to its own infrastructure** (`GET /v1/drkey/level1?issuer=..&protocol=..`
//!   on the same API, with the AS's operator token): `K_{B→A}` for the AS's Z-Lane gateway.
//!
//! Which keys are served when: the key of the epoch that contains the requested time, if
//! that epoch is the current one, the next one, or the previous one during the first
//! `grace_s` seconds of the current one ([`EpochSchedule::accepted_at`]).
//!
//! A key served once never changes: across a rotation of the master secret each epoch
//! derives from the secret [`RotatingSecret`] picks for it (the previous one for every epoch
//! that was servable before the rotation), from the record the routers keep beside
//! `master_secret_file` ([`crate::secret_rotation`]).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;

use aviary_scion::drkey::{
    Derivation, DrkeyError, Epoch, EpochSchedule, HostAddr, Level1Key, Protocol, RotatingSecret,
};
use aviary_scion::IsdAsn;
use thiserror::Error;

use super::tls::DrkeyTls;
use crate::api::{EpochWire, HostKeyKind, HostKeyReply, Level1Reply};
use crate::http::query_params;

/// Cached Level-1 keys of other ASes (entries expire with their epoch).
const MAX_CACHED: usize = 4096;

#[derive(Debug, Error)]
pub enum DrkeyServiceError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Drkey(#[from] DrkeyError),
}

impl DrkeyServiceError {
    pub fn status(&self) -> u16 {
        match self {
            DrkeyServiceError::BadRequest(_) | DrkeyServiceError::Drkey(_) => 400,
            DrkeyServiceError::Forbidden(_) => 403,
            DrkeyServiceError::NotFound(_) => 404,
            DrkeyServiceError::Upstream(_) => 502,
        }
    }
}

use DrkeyServiceError::{BadRequest, Forbidden};

/// A host's key request (the query of `GET /v1/drkey/<kind>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKeyRequest {
    pub kind: HostKeyKind,
    pub protocol: Protocol,
    pub src_ia: IsdAsn,
    pub dst_ia: IsdAsn,
    pub src_host: Option<HostAddr>,
    pub dst_host: Option<HostAddr>,
    /// Unix seconds; the current time if absent.
    pub at: Option<u64>,
}

fn parse<T: std::str::FromStr>(q: &BTreeMap<&str, &str>, name: &str) -> Result<Option<T>, DrkeyServiceError>
where
    T::Err: std::fmt::Display,
{
    q.get(name).map(|v| v.parse::<T>().map_err(|e| BadRequest(format!("{name}: {v:?}: {e}")))).transpose()
}

fn required<T>(v: Option<T>, name: &str) -> Result<T, DrkeyServiceError> {
    v.ok_or_else(|| BadRequest(format!("missing query parameter {name}")))
}

impl HostKeyRequest {
    /// Parses `protocol=N&src_ia=..&dst_ia=..&src_host=..&dst_host=..&at=..`; which hosts are
    /// required depends on the kind.
    pub fn parse(kind: HostKeyKind, query: &str) -> Result<Self, DrkeyServiceError> {
        let q =
            query_params(query, &["protocol", "src_ia", "dst_ia", "src_host", "dst_host", "at"]).map_err(BadRequest)?;
        let r = Self {
            kind,
            protocol: Protocol(required(parse(&q, "protocol")?, "protocol")?),
            src_ia: required(parse(&q, "src_ia")?, "src_ia")?,
            dst_ia: required(parse(&q, "dst_ia")?, "dst_ia")?,
            src_host: parse(&q, "src_host")?,
            dst_host: parse(&q, "dst_host")?,
            at: parse(&q, "at")?,
        };
        let (need_src, need_dst) = match kind {
            HostKeyKind::AsHost => (false, true),
            HostKeyKind::HostAs => (true, false),
            HostKeyKind::HostHost => (true, true),
        };
        for (need, given, name) in [(need_src, r.src_host, "src_host"), (need_dst, r.dst_host, "dst_host")] {
            match (need, given) {
                (true, None) => return Err(BadRequest(format!("a {} key needs {name}", kind.name()))),
                (false, Some(_)) => return Err(BadRequest(format!("a {} key has no {name}", kind.name()))),
                _ => {}
            }
        }
        Ok(r)
    }

    /// The query string of this request.
    pub fn to_query(&self) -> String {
        let mut q = format!("protocol={}&src_ia={}&dst_ia={}", self.protocol.0, self.src_ia, self.dst_ia);
        for (name, h) in [("src_host", self.src_host), ("dst_host", self.dst_host)] {
            if let Some(h) = h {
                q += &format!("&{name}={h}");
            }
        }
        if let Some(at) = self.at {
            q += &format!("&at={at}");
        }
        q
    }
}

/// Fetches `K_{issuer→subject}` from the issuer's Level-1 service (the TLS client of
/// [`super::level1`]); a trait so the service logic can be tested without sockets.
pub trait Level1Fetch: Send + Sync {
    fn fetch(&self, issuer: IsdAsn, protocol: Protocol, at: u64) -> Result<Level1Reply, String>;
}

/// The DRKey service of one AS.
pub struct DrkeyService {
    ia: IsdAsn,
    secret: RotatingSecret,
    schedule: EpochSchedule,
    pub(super) tls: DrkeyTls,
    fetcher: Box<dyn Level1Fetch>,
    cache: Mutex<HashMap<(IsdAsn, Protocol, Epoch), Level1Key>>,
}

impl DrkeyService {
    pub fn new(
        ia: IsdAsn,
        secret: RotatingSecret,
        schedule: EpochSchedule,
        tls: DrkeyTls,
        fetcher: Box<dyn Level1Fetch>,
    ) -> Result<Self, DrkeyServiceError> {
        Ok(Self { ia, secret, schedule, tls, fetcher, cache: Mutex::new(HashMap::new()) })
    }

    pub fn ia(&self) -> IsdAsn {
        self.ia
    }

    pub fn schedule(&self) -> EpochSchedule {
        self.schedule
    }

    /// The epoch of this AS's keys for time `at`, if this service serves it at `now`.
    pub fn servable_epoch(&self, at: u64, now: u64) -> Result<Epoch, DrkeyServiceError> {
        let (current, previous) = self.schedule.accepted_at(now)?;
        let next = self.schedule.next(current)?;
        let e = self.schedule.epoch_at(at)?;
        if e == current || e == next || Some(e) == previous {
            return Ok(e);
        }
        Err(BadRequest(format!(
            "time {at} lies in epoch [{}, {}); at {now} this service serves the current epoch [{}, {}), the next one, \
             and the previous one only during the first {} s of the current one",
            e.begin_s,
            e.end_s,
            current.begin_s,
            current.end_s,
            self.schedule.grace_s()
        )))
    }

    /// `K_{self→subject}` for `protocol` at `at`, as the Level-1 service answers it. Only
    /// protocols with protocol-specific keys (and 0, the generic scheme's) have Level-1 keys.
    pub fn issue_level1(
        &self,
        subject: IsdAsn,
        protocol: Protocol,
        at: u64,
        now: u64,
    ) -> Result<Level1Reply, DrkeyServiceError> {
        if !has_specific_keys(protocol) {
            return Err(BadRequest(format!(
                "protocol {protocol} has no protocol-specific keys; its keys derive from the Level-1 keys of protocol 0"
            )));
        }
        let epoch = self.servable_epoch(at, now)?;
        let key = self.secret.secret_value(protocol, epoch)?.level1(subject);
        Ok(Level1Reply {
            issuer: self.ia,
            subject,
            protocol: protocol.0,
            epoch: EpochWire { begin: epoch.begin_s, end: epoch.end_s },
            key: hex::encode(key.as_bytes()),
        })
    }

    /// `K_{issuer→self}` (local if `issuer` is this AS): from the cache, or fetched.
    pub(crate) fn level1_to_self(
        &self,
        issuer: IsdAsn,
        subject: IsdAsn,
        protocol: Protocol,
        at: u64,
        now: u64,
    ) -> Result<(Level1Key, Epoch), DrkeyServiceError> {
        if issuer == self.ia {
            let epoch = self.servable_epoch(at, now)?;
            return Ok((self.secret.secret_value(protocol, epoch)?.level1(subject), epoch));
        }
        debug_assert_eq!(subject, self.ia, "only keys issued to this AS can be fetched");
        {
            let cache = self.cache.lock().expect("poisoned");
            let hit = cache.iter().find(|((i, p, e), _)| *i == issuer && *p == protocol && e.contains(at));
            if let Some(((_, _, e), k)) = hit {
                return Ok((*k, *e));
            }
        }
        let r = self
            .fetcher
            .fetch(issuer, protocol, at)
            .map_err(|e| DrkeyServiceError::Upstream(format!("Level-1 key from {issuer}: {e}")))?;
        let bad = |why: &str| DrkeyServiceError::Upstream(format!("Level-1 key from {issuer}: {why}"));
        let epoch = Epoch::new(r.epoch.begin, r.epoch.end).map_err(|e| bad(&e.to_string()))?;
        if r.issuer != issuer || r.subject != self.ia || r.protocol != protocol.0 {
            return Err(bad("the reply is for another issuer, subject or protocol"));
        }
        if !epoch.contains(at) {
            return Err(bad(&format!("its epoch [{}, {}) does not contain {at}", epoch.begin_s, epoch.end_s)));
        }
        let key: [u8; 16] = hex::decode(&r.key)
            .ok()
            .and_then(|k| k.try_into().ok())
            .ok_or_else(|| bad("the key is not 16 bytes of hex"))?;
        let key = Level1Key::from_bytes(key);
        let mut cache = self.cache.lock().expect("poisoned");
        let grace = u64::from(self.schedule.grace_s());
        cache.retain(|(_, _, e), _| u64::from(e.end_s) + grace > now);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert((issuer, protocol, epoch), key);
        Ok((key, epoch))
    }

    /// `K_{issuer→self}` for `protocol`'s keys at `at`, for this AS's own infrastructure (its
    /// Z-Lane gateway re-authenticates packets with it, the Z-Lane paper's App. C). The caller
    /// must have checked that the asker is infrastructure: hosts must never see it. The key
    /// is of the protocol whose secret value `protocol`'s keys derive from (0 for protocols
    /// without their own).
    pub fn level1_for_infrastructure(
        &self,
        issuer: IsdAsn,
        protocol: Protocol,
        at: u64,
        now: u64,
    ) -> Result<Level1Reply, DrkeyServiceError> {
        let sv_protocol = Derivation::for_protocol(protocol).sv_protocol(protocol);
        let (key, epoch) = self.level1_to_self(issuer, self.ia, sv_protocol, at, now)?;
        Ok(Level1Reply {
            issuer,
            subject: self.ia,
            protocol: sv_protocol.0,
            epoch: EpochWire { begin: epoch.begin_s, end: epoch.end_s },
            key: hex::encode(key.as_bytes()),
        })
    }

    /// Number of cached Level-1 keys of other ASes.
    pub fn cached(&self) -> usize {
        self.cache.lock().expect("poisoned").len()
    }

    /// The key a host at `requester` asks for, if it is the local host of that key.
    pub fn host_key(&self, r: &HostKeyRequest, requester: IpAddr, now: u64) -> Result<HostKeyReply, DrkeyServiceError> {
        let me = HostAddr::from_ip(requester);
        let is_src = r.src_ia == self.ia && r.src_host == Some(me);
        let is_dst = r.dst_ia == self.ia && r.dst_host == Some(me);
        let allowed = match r.kind {
            HostKeyKind::AsHost => is_dst,
            HostKeyKind::HostAs => is_src,
            HostKeyKind::HostHost => is_src || is_dst,
        };
        if !allowed {
            let side = match r.kind {
                HostKeyKind::AsHost => "dst_host in dst_ia",
                HostKeyKind::HostAs => "src_host in src_ia",
                HostKeyKind::HostHost => "src_host in src_ia or dst_host in dst_ia",
            };
            return Err(Forbidden(format!(
                "a host gets only its own {} keys: {side} must be the asking host {me} in {}",
                r.kind.name(),
                self.ia
            )));
        }
        let at = r.at.unwrap_or(now);
        let derivation = Derivation::for_protocol(r.protocol);
        let (l1, epoch) = self.level1_to_self(r.src_ia, r.dst_ia, derivation.sv_protocol(r.protocol), at, now)?;
        let host = |h: Option<HostAddr>| h.expect("checked by authorisation");
        let key = match r.kind {
            HostKeyKind::AsHost => *l1.as_host(derivation, r.protocol, &host(r.dst_host)).as_bytes(),
            HostKeyKind::HostAs => *l1.host_as(derivation, r.protocol, &host(r.src_host)).as_bytes(),
            HostKeyKind::HostHost => {
                *l1.host_as(derivation, r.protocol, &host(r.src_host)).host_host(&host(r.dst_host)).as_bytes()
            }
        };
        Ok(HostKeyReply {
            kind: r.kind,
            protocol: r.protocol.0,
            src_ia: r.src_ia,
            dst_ia: r.dst_ia,
            src_host: r.src_host.map(|h| h.to_string()),
            dst_host: r.dst_host.map(|h| h.to_string()),
            epoch: EpochWire { begin: epoch.begin_s, end: epoch.end_s },
            key: hex::encode(key),
        })
    }
}

/// Whether `protocol` has Level-1 keys of its own: SCION's predefined protocols, and those of
/// the mechanisms whose services exchange Level-1 keys between ASes (GLWP discovery).
pub fn has_specific_keys(protocol: Protocol) -> bool {
    protocol.is_predefined() || protocol == aviary_glwp::discovery::PROTOCOL
}

/// The DRKey Level-1 addresses of the peers of a control service.
pub type PeerAddrs = BTreeMap<IsdAsn, SocketAddr>;
