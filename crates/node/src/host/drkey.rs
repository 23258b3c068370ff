//! `aviary host --config F drkey ...`: asks the AS's control service for a DRKey Level-2/3
//! key. The request leaves from the host's own address (`addr` in its config) because the
//! control service hands a host only keys for the address its connection comes from.

use std::fmt;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context};
use aviary_scion::drkey::{HostAddr, Protocol};
use aviary_scion::IsdAsn;
use socket2::{Domain, Socket, Type};

use crate::api::{ErrorReply, HostKeyKind, HostKeyReply};
use crate::config::HostConfig;
use crate::control::drkey::HostKeyRequest;
use crate::http;

const TIMEOUT: Duration = Duration::from_secs(10);

/// One end of a key: `ISD-AS` or `ISD-AS,HOST` (HOST an IP address or SVC name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyEnd {
    pub ia: IsdAsn,
    pub host: Option<HostAddr>,
}

impl FromStr for KeyEnd {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (ia, host) = match s.split_once(',') {
            Some((ia, h)) => (ia, Some(h.parse::<HostAddr>().map_err(|e| format!("{s:?}: {e}"))?)),
            None => (s, None),
        };
        Ok(Self { ia: ia.parse().map_err(|e| format!("{s:?}: {e}"))?, host })
    }
}

impl fmt::Display for KeyEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.host {
            Some(h) => write!(f, "{},{h}", self.ia),
            None => write!(f, "{}", self.ia),
        }
    }
}

#[derive(Clone, Debug, clap::Args)]
pub struct DrkeyOptions {
    /// as-host: K_{src→dst:host} with this host at dst; host-as: K_{src:host→dst} with this
    /// host at src; host-host: K_{src:host→dst:host} with this host at either end.
    #[arg(long, value_enum)]
    pub kind: HostKeyKind,
    /// DRKey protocol id (0 generic, 1 SCMP, others use the generic scheme).
    #[arg(long, default_value_t = 0)]
    pub protocol: u16,
    /// The source end, ISD-AS[,HOST]; default: this host.
    #[arg(long)]
    pub src: Option<KeyEnd>,
    /// The destination end, ISD-AS[,HOST]; default: this host.
    #[arg(long)]
    pub dst: Option<KeyEnd>,
    /// The time the key must be valid at (Unix s); default: now.
    #[arg(long)]
    pub at: Option<u64>,
    /// Print the reply as JSON.
    #[arg(long)]
    pub json: bool,
}

impl DrkeyOptions {
    /// The request this host sends; a missing end is this host, and the host address is
    /// dropped where the key kind has none (the AS end of a Level-2 key).
    pub fn request(&self, cfg: &HostConfig) -> anyhow::Result<HostKeyRequest> {
        let me = KeyEnd { ia: cfg.ia, host: Some(HostAddr::from_ip(cfg.addr)) };
        if self.src.is_none() && self.dst.is_none() {
            bail!("give --src or --dst: the other end of the key");
        }
        let (src, dst) = (self.src.unwrap_or(me), self.dst.unwrap_or(me));
        let (src_host, dst_host) = match self.kind {
            HostKeyKind::AsHost => (None, dst.host),
            HostKeyKind::HostAs => (src.host, None),
            HostKeyKind::HostHost => (src.host, dst.host),
        };
        Ok(HostKeyRequest {
            kind: self.kind,
            protocol: Protocol(self.protocol),
            src_ia: src.ia,
            dst_ia: dst.ia,
            src_host,
            dst_host,
            at: self.at,
        })
    }
}

/// A TCP connection to `server` from `src` (any port).
pub fn connect_from(src: IpAddr, server: SocketAddr) -> std::io::Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(server), Type::STREAM, None)?;
    sock.bind(&SocketAddr::new(src, 0).into())?;
    sock.connect_timeout(&server.into(), TIMEOUT)?;
    let tcp: TcpStream = sock.into();
    tcp.set_read_timeout(Some(TIMEOUT))?;
    tcp.set_write_timeout(Some(TIMEOUT))?;
    Ok(tcp)
}

/// Asks the control service of `cfg` for the key of `req`, from the host's address.
pub fn fetch_host_key(cfg: &HostConfig, req: &HostKeyRequest) -> anyhow::Result<HostKeyReply> {
    let what = format!("DRKey {} key from {}", req.kind.name(), cfg.control);
    let mut tcp = connect_from(cfg.addr, cfg.control)
        .with_context(|| format!("{what}: cannot connect from {} (the host's addr)", cfg.addr))?;
    let target = format!("/v1/drkey/{}?{}", req.kind.name(), req.to_query());
    http::write_get(&mut tcp, &cfg.control.to_string(), &target).with_context(|| what.clone())?;
    let (status, body) = http::read_response(&mut tcp).with_context(|| what.clone())?;
    if status != 200 {
        let msg = serde_json::from_slice::<ErrorReply>(&body).map(|e| e.error).unwrap_or_default();
        bail!("{what}: HTTP {status}: {msg}");
    }
    serde_json::from_slice(&body).with_context(|| format!("{what}: bad reply"))
}

/// The reply for a person.
pub fn describe(r: &HostKeyReply) -> String {
    let end = |ia: IsdAsn, h: &Option<String>| match h {
        Some(h) => format!("{ia},{h}"),
        None => ia.to_string(),
    };
    format!(
        "{} key {} -> {} (protocol {}), epoch [{}, {}): {}",
        r.kind.name(),
        end(r.src_ia, &r.src_host),
        end(r.dst_ia, &r.dst_host),
        r.protocol,
        r.epoch.begin,
        r.epoch.end,
        r.key
    )
}
