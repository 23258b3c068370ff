//! The run's own endpoint (`aviary run --health ADDR`): `GET /v1/status` answers 200 when every
//! process of the run is up and 503 when one is restarting or given up, with every process's
//! state as JSON; `GET /metrics` has the same as Prometheus gauges and counters.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::http::server::{Limits, Server, ServerStats};
use crate::http::{Request, Response};

use super::supervisor::{ProcessState, Supervised};
use super::RunHealth;
use crate::metrics::{Exposition, Kind, CONTENT_TYPE};

/// Serves the run's health until dropped.
pub struct HealthServer {
    server: Server,
}

impl HealthServer {
    pub fn start(addr: SocketAddr, procs: Arc<Mutex<Vec<Supervised>>>) -> anyhow::Result<Self> {
        let handler = move |req: &Request, stats: &ServerStats| {
            let health = run_health(&procs);
            match req.path.as_str() {
                "/v1/status" => {
                    let code = if health.healthy { 200 } else { 503 };
                    Response::json(code, serde_json::to_string(&health).unwrap_or_default())
                }
                "/metrics" => {
                    let mut out = Exposition::new();
                    ServerStats::prometheus(&mut out, &[("health", stats)]);
                    Response::with_type(200, CONTENT_TYPE, prometheus(&health) + &out.finish())
                }
                other => Response::with_type(404, "text/plain", format!("no such endpoint: {other}\n")),
            }
        };
        let server = Server::http("health", addr, Limits::default(), Arc::new(handler))
            .map_err(|e| anyhow::anyhow!("--health: cannot listen on {addr}: {e}"))?;
        Ok(Self { server })
    }

    /// The address it serves on (the port the kernel chose, for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

pub(super) fn run_health(procs: &Mutex<Vec<Supervised>>) -> RunHealth {
    let now = Instant::now();
    let processes: Vec<_> = procs.lock().map(|p| p.iter().map(|s| s.health(now)).collect()).unwrap_or_default();
    RunHealth { healthy: processes.iter().all(|p| p.state == ProcessState::Running), processes }
}

fn prometheus(h: &RunHealth) -> String {
    let mut out = Exposition::new();
    let mut up = out.family("aviary_run_process_up", Kind::Gauge, "1 if the process is running.");
    for p in &h.processes {
        let ia = p.ia.to_string();
        up.sample(&[("role", p.role), ("ia", &ia)], u64::from(p.state == ProcessState::Running));
    }
    let mut restarts = out.family("aviary_run_process_restarts_total", Kind::Counter, "Restarts by the runner.");
    for p in &h.processes {
        let ia = p.ia.to_string();
        restarts.sample(&[("role", p.role), ("ia", &ia)], u64::from(p.restarts));
    }
    let mut failing =
        out.family("aviary_run_process_failures_in_a_row", Kind::Gauge, "Exits in a row without a healthy run.");
    for p in &h.processes {
        let ia = p.ia.to_string();
        failing.sample(&[("role", p.role), ("ia", &ia)], u64::from(p.failures_in_a_row));
    }
    out.single("aviary_run_healthy", Kind::Gauge, "1 if every process of the run is running.", u64::from(h.healthy));
    out.finish()
}
