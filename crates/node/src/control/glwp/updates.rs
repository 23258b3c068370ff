//! Matrix updates on the network (the GLWP paper, §V-C): the service announces its schedule
//! to the GLWP service of every neighbour over its UDP socket (kind 4 on the same socket as
//! discovery), checks and stores the neighbours' announcements, and changes its matrix when
//! the operator asks (`POST /v1/glwp/matrix`).
//!
//! Announcements go out at the start (an AS joining), right after a change, and again every
//! [`ANNOUNCE_EVERY`]: a lost datagram, or one the neighbour dropped as `no_key` while it was
//! still fetching this AS's key, is made good within a second. A re-sent announcement with
//! the same schedule only refreshes the neighbour's record.

use std::net::SocketAddr;
use std::time::Duration;

use aviary_glwp::discovery::announcement::Announcement;
use aviary_glwp::{ChangeWindow, ScheduleError};
use thiserror::Error;

use super::metrics::TransportDrop;
use super::{lock, persist, GlwpService};
use crate::clock::unix_ns;
use crate::topology::{glwp_within_capacity, ConfigError};

/// How often the service announces its schedule to every neighbour again.
pub const ANNOUNCE_EVERY: Duration = Duration::from_secs(1);

/// Why a matrix change was refused.
#[derive(Debug, Error)]
pub enum MatrixChangeError {
    #[error(transparent)]
    Invalid(#[from] ConfigError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("the schedule cannot be persisted ({path}): {error}; the change is not made")]
    Persist { path: String, error: std::io::Error },
}

impl MatrixChangeError {
    /// The HTTP status of the management API's reply.
    pub fn status(&self) -> u16 {
        match self {
            MatrixChangeError::Invalid(_) | MatrixChangeError::Schedule(ScheduleError::TooManyInterfaces { .. }) => 400,
            MatrixChangeError::Schedule(_) => 409,
            MatrixChangeError::Persist { .. } => 500,
        }
    }
}

impl GlwpService {
    /// Announces again every [`ANNOUNCE_EVERY`] (the first one goes out at the start).
    pub(super) fn announce_loop(&self) {
        loop {
            std::thread::sleep(ANNOUNCE_EVERY);
            self.announce();
        }
    }

    /// Step 1: the schedule to every neighbour, each for the link it is at.
    pub(super) fn announce(&self) {
        let now = unix_ns();
        let sent = {
            let mut cores = lock(&self.cores);
            self.keys.select(now);
            cores.on_path.neighbourhood.announcements(&self.keys, now)
        };
        for (to, _, bytes) in sent {
            let Some(&addr) = self.services.get(&to) else {
                self.counters.transport(TransportDrop::NoService);
                continue;
            };
            match self.socket.send_to(&bytes, addr) {
                Ok(_) => self.counters.announced(),
                Err(e) => {
                    tracing::debug!(%to, %addr, "GLWP announcement: {e}");
                    self.counters.transport(TransportDrop::SendError);
                }
            }
        }
    }

    /// Step 2: an announcement from `addr`, checked (with the keys of the epoch of its
    /// timestamp) and stored; a drop counted under its reason.
    pub(super) fn receive_announcement(&self, msg: &[u8], addr: SocketAddr, now: u64) {
        let ts = match Announcement::new_checked(msg) {
            Ok(a) => a.ts_ns(),
            Err(e) => {
                lock(&self.cores).on_path.stats.count(e.into());
                return;
            }
        };
        let Some(from) = self.sender(addr) else { return };
        let mut cores = lock(&self.cores);
        self.keys.select(ts);
        match cores.on_path.neighbourhood.receive(msg, from, &self.keys, now) {
            Ok(()) => self.counters.announcement_accepted(),
            Err(d) => {
                tracing::debug!(%from, reason = d.label(), "GLWP announcement dropped");
                cores.on_path.stats.count(d);
            }
        }
    }

    /// A new matrix (`[in, out, bit/s]` entries), checked as the `[glwp]` table's would be:
    /// temporary values from `L + ε` on, the new ones ΔT later, announced at once.
    pub fn change_matrix(&self, matrix: Vec<[u64; 3]>) -> Result<ChangeWindow, MatrixChangeError> {
        const SOURCE: &str = "POST /v1/glwp/matrix";
        let table = super::config::GlwpConfig { matrix, ..self.table.clone() };
        let ids: Vec<u16> = self.links.iter().map(|l| l.0).collect();
        let plan = table.plan(SOURCE, "body", &ids)?;
        glwp_within_capacity(SOURCE, "body.matrix", &plan.matrix, &self.links)?;
        let window = {
            let mut cores = lock(&self.cores);
            // On a copy, so that a schedule that cannot be persisted is not announced either: a
            // restart would otherwise contradict it.
            let mut changed = cores.on_path.neighbourhood.clone();
            let window = changed.change_matrix(plan.matrix, unix_ns())?;
            persist::save(&self.schedule_file, changed.schedule()).map_err(|error| MatrixChangeError::Persist {
                path: self.schedule_file.display().to_string(),
                error,
            })?;
            cores.on_path.neighbourhood = changed;
            window
        };
        tracing::info!(t1_ns = window.t1_ns, t2_ns = window.t2_ns, "GLWP matrix change scheduled");
        self.announce();
        Ok(window)
    }
}
