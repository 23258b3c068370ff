//! The router's management API (HTTP/JSON), served by threads of its own ([`crate::http::server`]). It never touches
//! forwarding state: reads come from the status copies the workers publish (summed), changes go
//! to the leading worker as [`Command`]s and wait for its answer, which comes once every worker
//! has the change in force.
//!
//! - `GET /metrics`: Prometheus text; `GET /v1/status`: the same as JSON.
//!
//! Changes (any request but a `GET`) need `Authorization: Bearer <token>` when the router has an operator token
//! (`operator_token_file`, required unless the API listens on a loopback address); without it
//! they are refused with 401 before their body is looked at.
//! - `PUT /v1/interfaces/{id}` `{"capacity_bps"?, "delay_ms"?}`: change a link.
//! - `PUT /v1/mechanisms/{name}` `{...}`: a mechanism's own runtime settings, passed through to it
//!   (e.g. `hummingbird`: `{"burst_ms": 100}`); a refused value is a 400 naming the field.
//! - `PUT /v1/policing` `{"burst_ms"}`: the same as `PUT /v1/mechanisms/hummingbird`.
//! - `PUT /v1/keys` `{"master_secret": hex, "overlap_secs"?: n}`: a new AS master secret; keys
//!   derived from the one it replaces keep verifying for `overlap_secs` (default
//!   [`DEFAULT_OVERLAP_SECS`], longer on a router with a `[glwp]` table, which also refuses
//!   overlaps shorter than its allocations live: [`KeyOverlap`]), see docs/operations.md.

use std::net::SocketAddr;
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde::Deserialize;

use crate::http::server::{Limits, Server, ServerStats};
use crate::http::{Request, Response};
use crate::metrics::{Exposition, CONTENT_TYPE};

use super::workers::StatusBoard;
use crate::clock::unix_ns;

/// A runtime change requested through the management API.
#[derive(Debug)]
pub enum Command {
    Link {
        id: u16,
        capacity_bps: Option<u64>,
        delay_ms: Option<f64>,
    },
    Mechanism {
        name: String,
        request: serde_json::Value,
    },
    /// Rotate to a new AS master secret at `rotated_at_s` (Unix s); the keys it replaces
    /// verify until `previous_until_ns`.
    MasterSecret {
        secret: Vec<u8>,
        previous_until_ns: u64,
        rotated_at_s: u64,
    },
}

/// Overlap of a key rotation unless the request says otherwise: the longest lifetime of a
/// SCION hop field (ExpTime 255: 24 h), so that every hop field the control service issued
/// under the old key until it switched (right after the routers) expires within the overlap.
/// A reservation lasts at most 65 535 s (ResDuration), less than that.
pub const DEFAULT_OVERLAP_SECS: u64 = 24 * 3600;
/// The longest overlap accepted: a week. Old keys are meant to go away.
pub const MAX_OVERLAP_SECS: u64 = 7 * 24 * 3600;
/// The overlaps `PUT /v1/keys` gives and accepts on one router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyOverlap {
    /// When the request names none.
    pub default_secs: u64,
    /// The shortest accepted: ΔT + L + ε of the router's `[glwp]` table (every allocation issued
    /// under the old `K_k` must pass until it expires), 0 without one.
    pub glwp_min_secs: u64,
}

impl Default for KeyOverlap {
    fn default() -> Self {
        Self { default_secs: DEFAULT_OVERLAP_SECS, glwp_min_secs: 0 }
    }
}

/// The shortest master secret accepted.
pub const MIN_SECRET_LEN: usize = 16;

/// Why a command was not applied; the HTTP status says whose fault it was.
#[derive(Debug, PartialEq, Eq)]
pub enum CommandError {
    /// The request is wrong (400).
    Invalid(String),
    /// It names something the router does not have (404).
    NotFound(String),
    /// Applied, but not every forwarding thread confirmed it in time (500): the router's
    /// fault, not the request's.
    Unconfirmed(String),
}

impl CommandError {
    fn status(&self) -> u16 {
        match self {
            CommandError::Invalid(_) => 400,
            CommandError::NotFound(_) => 404,
            CommandError::Unconfirmed(_) => 500,
        }
    }
    fn message(&self) -> &str {
        match self {
            CommandError::Invalid(m) | CommandError::NotFound(m) | CommandError::Unconfirmed(m) => m,
        }
    }
}

pub type CommandMsg = (Command, Sender<Result<(), CommandError>>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkChange {
    capacity_bps: Option<u64>,
    delay_ms: Option<f64>,
}

/// Serves the management API on `addr` until the returned server is dropped.
pub fn serve(
    addr: SocketAddr,
    commands: Sender<CommandMsg>,
    status: Arc<StatusBoard>,
    overlap: KeyOverlap,
    operator_token: Option<String>,
) -> anyhow::Result<Server> {
    let handler = move |req: &Request, stats: &ServerStats| match &operator_token {
        // Only reads go without the token.
        Some(token) if req.method != "GET" && !req.bears(token) => {
            Response::error(401, "operator token missing or wrong")
        }
        _ => answer(req, &commands, &status, overlap, stats),
    };
    let server = Server::http("management", addr, Limits::default(), Arc::new(handler))
        .map_err(|e| anyhow!("management API cannot listen on {addr}: {e}"))?;
    Ok(server)
}

fn answer(
    req: &Request,
    commands: &Sender<CommandMsg>,
    status: &StatusBoard,
    overlap: KeyOverlap,
    http: &ServerStats,
) -> Response {
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/metrics") => {
            let mut out = Exposition::new();
            ServerStats::prometheus(&mut out, &[("management", http)]);
            Response::with_type(200, CONTENT_TYPE, status.merged().prometheus() + &out.finish())
        }
        ("GET", "/v1/status") => {
            Response::json(200, serde_json::to_string_pretty(&status.merged()).unwrap_or_default())
        }
        ("PUT", path) => {
            let reply = req
                .body_text()
                .map_err(|e| CommandError::Invalid(e.to_string()))
                .and_then(|body| parse_command(path, body, unix_ns(), overlap))
                .and_then(|cmd| {
                    let (tx, rx) = mpsc::channel();
                    commands
                        .send((cmd, tx))
                        .map_err(|_| CommandError::Invalid("router stopped".into()))
                        .and_then(|_| {
                            rx.recv_timeout(Duration::from_secs(2))
                                .map_err(|_| CommandError::Invalid("no reply".into()))
                        })
                        .and_then(|r| r)
                });
            match reply {
                Ok(()) => Response::json(200, "{\"ok\":true}".into()),
                Err(e) => Response::error(e.status(), e.message()),
            }
        }
        (_, path) => {
            let target = if req.query.is_empty() { path.to_string() } else { format!("{path}?{}", req.query) };
            Response::error(404, &format!("no such endpoint: {target}"))
        }
    }
}

/// The command a `PUT` to `path` asks for, received at `now_ns` (Unix ns).
fn parse_command(path: &str, body: &str, now_ns: u64, overlap: KeyOverlap) -> Result<Command, CommandError> {
    let bad = |e: serde_json::Error| CommandError::Invalid(format!("bad request body: {e}"));
    if let Some(id) = path.strip_prefix("/v1/interfaces/") {
        let id: u16 = id.parse().map_err(|_| CommandError::NotFound(format!("`{id}` is not an interface id")))?;
        let c: LinkChange = serde_json::from_str(body).map_err(bad)?;
        return Ok(Command::Link { id, capacity_bps: c.capacity_bps, delay_ms: c.delay_ms });
    }
    if let Some(name) = path.strip_prefix("/v1/mechanisms/") {
        let request: serde_json::Value = serde_json::from_str(body).map_err(bad)?;
        return Ok(Command::Mechanism { name: name.to_owned(), request });
    }
    match path {
        "/v1/policing" => {
            let request: serde_json::Value = serde_json::from_str(body).map_err(bad)?;
            Ok(Command::Mechanism { name: "hummingbird".into(), request })
        }
        "/v1/keys" => {
            let request: serde_json::Map<String, serde_json::Value> = serde_json::from_str(body).map_err(bad)?;
            key_rotation(&request, now_ns, overlap)
        }
        _ => Err(CommandError::NotFound(format!("no such endpoint: PUT {path}"))),
    }
}

/// `PUT /v1/keys`, checked field by field so that every refusal names its field (serde's
/// messages for a wrong type do not).
fn key_rotation(
    request: &serde_json::Map<String, serde_json::Value>,
    now_ns: u64,
    overlap: KeyOverlap,
) -> Result<Command, CommandError> {
    let invalid = |field: &str, why: String| CommandError::Invalid(format!("{field}: {why}"));
    if let Some(other) = request.keys().find(|k| !["master_secret", "overlap_secs"].contains(&k.as_str())) {
        return Err(invalid(other, "unknown field, expected `master_secret` or `overlap_secs`".into()));
    }
    let hex_text = request
        .get("master_secret")
        .and_then(|v| v.as_str())
        .ok_or_else(|| invalid("master_secret", "required, as a hex string".into()))?;
    let secret = hex::decode(hex_text.trim()).map_err(|e| invalid("master_secret", e.to_string()))?;
    if secret.len() < MIN_SECRET_LEN {
        return Err(invalid("master_secret", format!("needs at least {MIN_SECRET_LEN} bytes")));
    }
    let overlap_secs = match request.get("overlap_secs") {
        None => overlap.default_secs,
        Some(v) => v
            .as_u64()
            .filter(|s| *s <= MAX_OVERLAP_SECS)
            .ok_or_else(|| invalid("overlap_secs", format!("whole seconds from 0 to {MAX_OVERLAP_SECS}")))?,
    };
    if overlap_secs < overlap.glwp_min_secs {
        let min = overlap.glwp_min_secs;
        return Err(invalid(
            "overlap_secs",
            format!(
                "{overlap_secs} s is too short on this router: at least {min} s, ΔT + L + ε of its [glwp] \
                 table (validity_s + lifetime_ms + skew_ms), so that every GLWP allocation issued under \
                 the old secret passes until it expires"
            ),
        ));
    }
    let previous_until_ns = now_ns + overlap_secs * 1_000_000_000;
    Ok(Command::MasterSecret { secret, previous_until_ns, rotated_at_s: now_ns / 1_000_000_000 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_bad_ones_say_why() {
        let parse_command = |path: &str, body: &str| parse_command(path, body, 0, KeyOverlap::default());
        match parse_command("/v1/mechanisms/hummingbird", r#"{"burst_ms": 5}"#).unwrap() {
            Command::Mechanism { name, request } => {
                assert_eq!(name, "hummingbird");
                assert_eq!(request["burst_ms"], 5);
            }
            c => panic!("{c:?}"),
        }
        assert!(matches!(parse_command("/v1/policing", r#"{"burst_ms": 5}"#), Ok(Command::Mechanism { .. })));
        assert!(matches!(parse_command("/v1/interfaces/x", "{}"), Err(CommandError::NotFound(_))));
        assert!(matches!(parse_command("/v1/interfaces/2", r#"{"rate": 1}"#), Err(CommandError::Invalid(_))));
        assert!(matches!(parse_command("/v1/keys", r#"{"master_secret": "zz"}"#), Err(CommandError::Invalid(_))));
        assert!(matches!(parse_command("/v1/nothing", "{}"), Err(CommandError::NotFound(_))));
    }

    #[test]
    fn a_rotation_has_an_overlap_and_bad_ones_name_their_field() {
        const S: u64 = 1_000_000_000;
        let secret = "ab".repeat(16);
        let put = |body: String| parse_command("/v1/keys", &body, 1000 * S, KeyOverlap::default());
        let cmd = put(format!(r#"{{"master_secret": "{secret}", "overlap_secs": 60}}"#)).unwrap();
        let Command::MasterSecret { secret: s, previous_until_ns, .. } = cmd else { panic!("{cmd:?}") };
        assert_eq!((s, previous_until_ns), (vec![0xab; 16], 1060 * S));
        let cmd = put(format!(r#"{{"master_secret": "{secret}"}}"#)).unwrap();
        assert!(matches!(cmd, Command::MasterSecret { previous_until_ns, .. }
            if previous_until_ns == (1000 + DEFAULT_OVERLAP_SECS) * S));
        let refused = |body: String| match put(body) {
            Err(CommandError::Invalid(m)) => m,
            r => panic!("{r:?}"),
        };
        assert!(refused(format!(r#"{{"master_secret": "{}"}}"#, "ab".repeat(15))).starts_with("master_secret:"));
        assert!(refused(r#"{"master_secret": "zz"}"#.into()).starts_with("master_secret:"));
        let too_long = MAX_OVERLAP_SECS + 1;
        let m = refused(format!(r#"{{"master_secret": "{secret}", "overlap_secs": {too_long}}}"#));
        assert!(m.starts_with("overlap_secs:"), "{m}");
        let m = refused(format!(r#"{{"master_secret": "{secret}", "overlap_secs": -1}}"#));
        assert!(m.starts_with("overlap_secs:"), "{m}");
        let m = refused(format!(r#"{{"master_secret": "{secret}", "overlap": 5}}"#));
        assert!(m.starts_with("overlap:"), "{m}");
        assert!(refused(r#"{"master_secret": 5}"#.into()).starts_with("master_secret:"));
    }

    #[test]
    fn a_glwp_router_refuses_an_overlap_shorter_than_its_allocations_live_and_defaults_to_a_longer_one() {
        const S: u64 = 1_000_000_000;
        let overlap = KeyOverlap { default_secs: 90_002, glwp_min_secs: 86_402 };
        let secret = "ab".repeat(16);
        let put = |body: String| parse_command("/v1/keys", &body, 1000 * S, overlap);
        let m = match put(format!(r#"{{"master_secret": "{secret}", "overlap_secs": 86401}}"#)) {
            Err(CommandError::Invalid(m)) => m,
            r => panic!("{r:?}"),
        };
        assert!(m.starts_with("overlap_secs:") && m.contains("86402") && m.contains("[glwp]"), "{m}");
        let at_min = put(format!(r#"{{"master_secret": "{secret}", "overlap_secs": 86402}}"#)).unwrap();
        assert!(matches!(at_min, Command::MasterSecret { previous_until_ns, .. }
            if previous_until_ns == (1000 + 86_402) * S));
        let default = put(format!(r#"{{"master_secret": "{secret}"}}"#)).unwrap();
        assert!(matches!(default, Command::MasterSecret { previous_until_ns, .. }
            if previous_until_ns == (1000 + 90_002) * S));
    }
}
