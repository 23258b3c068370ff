//! The DRKey Level-1 service on the wire: `GET /v1/drkey/level1?protocol=N&subject=ISD-AS
//! [&at=UNIX_S]` as HTTP/1.1 inside TLS 1.2/1.3 with client certificates required, one
//! request per connection, a thread per connection (at most [`MAX_CONNECTIONS`] at once),
//! bounded heads, and one deadline for the handshake and the request ([`crate::http::server`]).
//! `subject` is the asking AS; its certificate must certify it
//! ([`DrkeyTls::check_subject`](super::tls::DrkeyTls::check_subject)), so an AS gets only
//! keys issued to itself. The reply is a [`Level1Reply`]; errors are `{"error": "..."}`.
//!
//! [`TlsFetcher`] is the client side: how a control service fetches `K_{B→A}` from B.

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use aviary_scion::drkey::Protocol;
use aviary_scion::IsdAsn;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, ServerConnection, StreamOwned};

use super::drkey::{DrkeyService, DrkeyServiceError, Level1Fetch, PeerAddrs};
use super::tls::cs_name;
use crate::api::{ErrorReply, Level1Reply};
use crate::clock::unix_s;
use crate::http::server::{linger, DeadlineStream, Limits, Server, ServerStats};
use crate::http::{self, query_params, Response};

/// Connections served at once; more are refused at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The time a connection has for its handshake and request, and a client for each read and
/// write.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds `listen` and serves Level-1 requests until the server is dropped.
pub fn spawn(svc: Arc<DrkeyService>, listen: SocketAddr) -> std::io::Result<Server> {
    let limits = Limits {
        max_connections: MAX_CONNECTIONS,
        request_deadline: IO_TIMEOUT,
        write_timeout: IO_TIMEOUT,
        max_body: 0,
    };
    Server::connections(
        "drkey-level1",
        listen,
        limits,
        Arc::new(move |stream: DeadlineStream, peer: SocketAddr, stats: &ServerStats| {
            if let Err(e) = serve_connection(&svc, stream, stats) {
                tracing::debug!(%peer, "DRKey connection ended: {e}");
            }
        }),
    )
}

fn serve_connection(svc: &DrkeyService, stream: DeadlineStream, stats: &ServerStats) -> Result<(), String> {
    let conn = ServerConnection::new(svc.tls.server_config()).map_err(|e| e.to_string())?;
    let mut tls = StreamOwned::new(conn, stream);
    while tls.conn.is_handshaking() {
        if let Err(e) = tls.conn.complete_io(&mut tls.sock) {
            stats.count_refusal(&e.into());
            return Err("handshake: the TLS handshake did not complete".into());
        }
    }
    let request = http::read_request(&mut tls, 0).inspect_err(|e| stats.count_refusal(e));
    let reply = match request.map_err(|e| (e.status(), e.to_string())).and_then(|head| answer(svc, &tls, &head)) {
        Ok(reply) => Response::json(200, serde_json::to_string(&reply).expect("serialisable")),
        Err((status, msg)) => {
            tracing::debug!(status, %msg, "Level-1 request refused");
            Response::error(status, &msg)
        }
    };
    http::write(&mut tls, &reply).map_err(|e| e.to_string())?;
    tls.conn.send_close_notify();
    let _ = tls.conn.complete_io(&mut tls.sock);
    linger(tls.sock.tcp);
    Ok(())
}

fn answer(
    svc: &DrkeyService,
    tls: &StreamOwned<ServerConnection, DeadlineStream>,
    head: &http::Request,
) -> Result<Level1Reply, (u16, String)> {
    if head.method != "GET" || head.path != "/v1/drkey/level1" {
        return Err((404, format!("no such endpoint: {} {}", head.method, head.path)));
    }
    let q = query_params(&head.query, &["protocol", "subject", "at"]).map_err(|e| (400, e))?;
    let get = |name: &str| q.get(name).ok_or((400, format!("missing query parameter {name}")));
    let protocol: u16 = get("protocol")?.parse().map_err(|e| (400, format!("protocol: {e}")))?;
    let subject: IsdAsn = get("subject")?.parse().map_err(|e| (400, format!("subject: {e}")))?;
    let now = unix_s();
    let at = match q.get("at") {
        Some(t) => t.parse().map_err(|e| (400, format!("at: {e}")))?,
        None => now,
    };
    let chain = tls.conn.peer_certificates().unwrap_or_default();
    svc.tls.check_subject(chain, subject).map_err(|e| (403, e))?;
    svc.issue_level1(subject, Protocol(protocol), at, now).map_err(|e: DrkeyServiceError| (e.status(), e.to_string()))
}

/// One Level-1 request as a client: `K_{issuer→subject}` from the service at `addr`, whose
/// certificate must name `issuer` under `config`'s roots.
pub fn fetch_level1(
    config: Arc<ClientConfig>,
    addr: SocketAddr,
    issuer: IsdAsn,
    subject: IsdAsn,
    protocol: Protocol,
    at: Option<u64>,
) -> Result<Level1Reply, String> {
    let name = ServerName::try_from(cs_name(issuer)).map_err(|e| e.to_string())?;
    let conn = ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    tcp.set_read_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(IO_TIMEOUT)).map_err(|e| e.to_string())?;
    let mut tls = StreamOwned::new(conn, tcp);
    let mut target = format!("/v1/drkey/level1?protocol={}&subject={subject}", protocol.0);
    if let Some(at) = at {
        target += &format!("&at={at}");
    }
    http::write_get(&mut tls, &cs_name(issuer), &target).map_err(|e| format!("{addr}: {e}"))?;
    let (status, body) = http::read_response(&mut tls).map_err(|e| format!("{addr}: {e}"))?;
    if status != 200 {
        let msg = serde_json::from_slice::<ErrorReply>(&body).map(|e| e.error).unwrap_or_default();
        return Err(format!("{addr}: HTTP {status}: {msg}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("{addr}: bad reply: {e}"))
}

/// Fetches Level-1 keys issued to `subject` from the peers' services over TLS.
pub struct TlsFetcher {
    pub subject: IsdAsn,
    pub peers: PeerAddrs,
    /// Client configs per ISD (the roots a peer of that ISD must chain to).
    pub configs: std::collections::BTreeMap<u16, Arc<ClientConfig>>,
}

impl Level1Fetch for TlsFetcher {
    fn fetch(&self, issuer: IsdAsn, protocol: Protocol, at: u64) -> Result<Level1Reply, String> {
        let addr = self.peers.get(&issuer).ok_or_else(|| format!("no DRKey service known for {issuer}"))?;
        let config =
            self.configs.get(&issuer.isd()).ok_or_else(|| format!("no trust root for ISD {}", issuer.isd()))?;
        fetch_level1(config.clone(), *addr, issuer, self.subject, protocol, Some(at))
    }
}
