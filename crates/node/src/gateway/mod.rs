//! `aviary zlane-gateway`: the Z-Lane gateway of one AS as a process (the Z-Lane paper, §4.4).
//! The AS's hosts send their per-AS EPIC packets to its UDP socket; the sans-IO core
//! (`aviary_zlane::gateway`) verifies each source, charges the host's rate and authorizes what
//! is within it; every packet it does not drop goes on to the AS's border router.
//!
//! - [`config`]: the config file.
//! - [`keys`]: the Level-1 keys of the on-path ASes, from the AS's control service.
//! - [`metrics`]: `/metrics` with the per-host counters and the drop reasons.
//!
//! Batches of up to [`DEFAULT_BATCH`] datagrams are received and sent with one system call
//! each, as the router does. SIGTERM or SIGINT stops the loop after the batch in hand.

pub mod config;
pub mod keys;
pub mod metrics;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use aviary_zlane::gateway::{Gateway, GatewayVerdict};

use crate::clock::unix_ns;
use crate::underlay::{wait_readable, BatchSocket, RecvBatch, DEFAULT_BATCH, DEFAULT_BUF_SIZE};
use config::ZlaneGatewayConfig;
use keys::{Installed, KeyCache, KeySource};
use metrics::{GatewayState, IoCounters};

/// Longest wait for a datagram, so that keys and the stop flag are looked at regularly.
const MAX_SLEEP: Duration = Duration::from_millis(100);
/// Attempts to hand a batch to the kernel when its send buffer is full.
const SEND_ATTEMPTS: usize = 16;

/// Runs a gateway from its config file until SIGTERM or SIGINT.
pub fn run(cfg_path: &Path) -> anyhow::Result<()> {
    let loaded = ZlaneGatewayConfig::load(cfg_path)?;
    let cfg = &loaded.config;
    let now = unix_ns();
    let mut gw = Gateway::new(cfg.ia, &loaded.master_secret, loaded.schedule, &cfg.zlane_gateway, now)
        .with_context(|| format!("{}: zlane_gateway", cfg_path.display()))?;
    for link in &loaded.topology.links {
        gw.path_keys_mut().add_link(link.a.ia, link.a.ifid, link.b.ia);
        gw.path_keys_mut().add_link(link.b.ia, link.b.ifid, link.a.ia);
    }
    let stop = crate::signals::stop_flag();
    let keys = KeyCache::new(loaded.schedule);
    keys.spawn_fetcher(
        KeySource {
            control: cfg.control,
            token: loaded.operator_token.clone(),
            subject: cfg.ia,
            protocol: cfg.zlane_gateway.drkey_protocol,
            issuers: loaded.topology.ases.iter().map(|a| a.ia).collect(),
        },
        stop,
    );
    let sock = BatchSocket::bind(cfg.listen).with_context(|| format!("{}: listen", cfg_path.display()))?;
    let state = Arc::new(Mutex::new(GatewayState::new(gw, keys.errors.clone())));
    let _metrics = metrics::serve(cfg.metrics, cfg.ia, state.clone())
        .with_context(|| format!("{}: metrics", cfg_path.display()))?;
    tracing::info!(ia = %cfg.ia, listen = %cfg.listen, router = %cfg.router, "zlane gateway up");

    let mut batch = RecvBatch::new(DEFAULT_BATCH, DEFAULT_BUF_SIZE);
    let mut verdicts = [GatewayVerdict::Unflagged; DEFAULT_BATCH];
    let mut installed = Installed::default();
    let mut ready = [false];
    while !stop.load(Ordering::Relaxed) {
        wait_readable(&[&sock], Some(MAX_SLEEP), &mut ready)?;
        let now = unix_ns();
        if let Some(why) = keys.schedule_mismatch() {
            anyhow::bail!("{}: {why}", cfg_path.display());
        }
        let mut st = state.lock().expect("poisoned");
        keys.install(&mut st.gateway, now / 1_000_000_000, &mut installed);
        if !ready[0] {
            continue;
        }
        let n = sock.recv_batch(&mut batch)?;
        if n == 0 {
            continue;
        }
        let mut pkts: Vec<&mut [u8]> = Vec::with_capacity(n);
        for (pkt, meta) in batch.iter_mut() {
            if meta.truncated {
                st.io.truncated += 1;
            } else {
                pkts.push(pkt);
            }
        }
        let verdicts = &mut verdicts[..pkts.len()];
        st.gateway.process_batch(&mut pkts, now, verdicts);
        let out: Vec<(&[u8], std::net::SocketAddr)> = pkts
            .iter()
            .zip(verdicts.iter())
            .filter(|(_, v)| !matches!(v, GatewayVerdict::Drop(_)))
            .map(|(p, _)| (&**p, cfg.router))
            .collect();
        for v in verdicts.iter() {
            match v {
                GatewayVerdict::Authorized => st.io.forwarded_flagged += 1,
                GatewayVerdict::Unflagged => st.io.forwarded_unflagged += 1,
                GatewayVerdict::Drop(_) => {}
            }
        }
        send_all(&sock, &out, &mut st.io)?;
    }
    tracing::info!(ia = %cfg.ia, "zlane gateway stopped");
    Ok(())
}

/// Hands `out` to the kernel, retrying briefly while its buffer is full; what still does not
/// fit, or what the kernel refuses, is counted as a send error.
fn send_all(sock: &BatchSocket, out: &[(&[u8], std::net::SocketAddr)], io: &mut IoCounters) -> anyhow::Result<()> {
    let mut done = 0;
    for _ in 0..SEND_ATTEMPTS {
        if done == out.len() {
            return Ok(());
        }
        let o = sock.send_batch_outcome(&out[done..])?;
        io.send_errors += o.dropped as u64;
        done += o.consumed();
        if done < out.len() {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    io.send_errors += (out.len() - done) as u64;
    Ok(())
}
