//! The run's own endpoint (`aviary run --health ADDR`): `GET /v1/status` answers 200 when every
//! process of the run is up and 503 when one is restarting or given up, with every process's
//! state as JSON; `GET /metrics` has the same as Prometheus gauges and counters.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use tiny_http::{Header, Response, Server};

use super::supervisor::{ProcessState, Supervised};
use super::RunHealth;
use crate::metrics::{Exposition, Kind, CONTENT_TYPE};

/// Serves the run's health until dropped.
pub struct HealthServer {
    server: Arc<Server>,
    thread: Option<JoinHandle<()>>,
}

impl HealthServer {
    pub fn start(addr: SocketAddr, procs: Arc<Mutex<Vec<Supervised>>>) -> anyhow::Result<Self> {
        let server =
            Server::http(addr).map(Arc::new).map_err(|e| anyhow::anyhow!("--health: cannot listen on {addr}: {e}"))?;
        let s = server.clone();
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let health = run_health(&procs);
                let (code, body, ctype) = match req.url().split('?').next().unwrap_or("") {
                    "/v1/status" => {
                        let code = if health.healthy { 200 } else { 503 };
                        (code, serde_json::to_string(&health).unwrap_or_default(), "application/json")
                    }
                    "/metrics" => (200, prometheus(&health), CONTENT_TYPE),
                    other => (404, format!("no such endpoint: {other}\n"), "text/plain"),
                };
                let header = Header::from_bytes("Content-Type", ctype).expect("static header");
                let _ = req.respond(Response::from_string(body).with_status_code(code).with_header(header));
            }
        });
        Ok(Self { server, thread: Some(thread) })
    }
}

impl Drop for HealthServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
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
