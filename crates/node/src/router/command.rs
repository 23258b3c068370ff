//! Runtime changes on a running router and what it publishes. The leader (worker 0) takes the
//! management commands: it changes the shared links itself, applies a pipeline change (a
//! mechanism's settings, a new master secret) to its own pipeline first, so that a refused
//! change is refused before any worker has it, then passes it to every other worker and
//! answers only once all have it in force. Every worker publishes its own counters.

use std::sync::mpsc;
use std::time::Duration;

use super::end_overlap;
use super::management::{Command, CommandError};
use super::metrics::{ClassSnapshot, IoDrop, RouterStatus};
use super::output::recycle;
use super::pipeline;
use super::runtime_state::{self, RuntimeState};
use super::worker::Forwarder;
use super::workers::PipelineChange;
use crate::clock::unix_ns;
use crate::secret_rotation;
use aviary_qos::ClassId;

/// How long the leader waits for the other workers to take a change.
const CHANGE_TIMEOUT: Duration = Duration::from_millis(1500);

impl Forwarder {
    /// Applies waiting management commands (the leader) and pipeline changes (the others).
    pub(super) fn take_commands(&mut self) {
        while let Some((cmd, reply)) = self.commands.as_ref().and_then(|c| c.try_recv().ok()) {
            let _ = reply.send(self.apply_and_keep(cmd));
        }
        while let Ok((change, done)) = self.inbox.changes.try_recv() {
            self.change(change);
            let _ = done.send(());
        }
    }

    /// Applies a management command on every worker and keeps it for the next start of the
    /// router. A change that cannot be kept is still in force; the failure is logged as an
    /// error. A change another worker does not confirm in time is in force on the leader and
    /// kept all the same (that worker takes it when it next runs), and the reply says so.
    pub(super) fn apply_and_keep(&mut self, mut cmd: Command) -> Result<(), CommandError> {
        if matches!(&cmd, Command::MasterSecret { secret, .. } if *secret == self.secret) {
            // The secret in force already: the same rotation again, typically an operator
            // retrying after a timeout whose first request got through. Taken, it would make
            // the secret its own previous one, on disk too, and refuse at once everything
            // still issued under the real previous one within its overlap.
            tracing::info!("management command: key rotation to the secret in force, nothing to do");
            return Ok(());
        }
        let replaced = self.secret.clone();
        let rotated_to = match &mut cmd {
            Command::MasterSecret { secret, rotated_at_s, .. } => {
                // A router sharing the secret files took this rotation already: its instant is
                // the AS's, which every process's DRKey keys depend on.
                let master_file = &self.cfg.master_secret_file;
                if let Some(at) = secret_rotation::recorded_instant(master_file, &replaced, secret) {
                    *rotated_at_s = at;
                }
                Some((secret.clone(), *rotated_at_s))
            }
            _ => None,
        };
        let mut next = self.runtime.clone();
        next.record(&cmd);
        let passed = match self.apply_here(cmd)? {
            Some(change) => self.pass_on(change),
            None => Ok(()),
        };
        self.publish();
        let kept = match rotated_to {
            // In this order: a crash between two writes leaves either no record of the rotation
            // or one whose previous secret is on disk, never a new secret without the old one.
            Some((s, at)) => secret_rotation::keep(&self.cfg.master_secret_file, &replaced, at)
                .and_then(|()| next.save(&self.runtime_file))
                .and_then(|()| runtime_state::write_secret(&self.cfg.master_secret_file, &s)),
            None => next.save(&self.runtime_file),
        };
        match kept {
            Ok(()) => self.runtime = next,
            Err(e) => tracing::error!("runtime change in force but not kept for a restart: {e}"),
        }
        passed
    }

    /// The runtime state the router started from, replayed already.
    pub(super) fn keep_runtime(&mut self, runtime: RuntimeState) {
        self.runtime = runtime;
    }

    /// Passes a change the leader made to every other worker and waits until all have it.
    fn pass_on(&mut self, change: PipelineChange) -> Result<(), CommandError> {
        let (done_tx, done) = mpsc::channel();
        let others = self.peers.iter().enumerate().filter(|(w, _)| *w != self.index);
        let mut count = 0;
        for (_, peer) in others {
            if peer.changes.send((change.clone(), done_tx.clone())).is_ok() {
                peer.waker.wake();
                count += 1;
            }
        }
        for _ in 0..count {
            done.recv_timeout(CHANGE_TIMEOUT).map_err(|_| {
                tracing::error!("a forwarding thread did not confirm a change in time");
                CommandError::Unconfirmed(format!(
                    "the change is in force on the leading forwarding thread and kept for a restart, but another \
                     did not confirm it within {} ms; it takes the change when it next runs",
                    CHANGE_TIMEOUT.as_millis()
                ))
            })?;
        }
        Ok(())
    }

    /// Once neither a rotation's overlap nor DRKey needs it, the previous secret leaves the disk (the leader's
    /// task: only it keeps the runtime state).
    pub(super) fn retire_previous_secret(&mut self, now: u64) {
        if self.commands.is_none() {
            return;
        }
        // Validated when the config was loaded; were it not, keeping the secret is the safe side.
        let Ok(schedule) = self.cfg.drkey_epochs.schedule("router config", "drkey_epochs") else { return };
        if self.runtime.key_rotation.is_some_and(|r| now >= r.keep_until_ns(schedule)) {
            if let Err(e) = end_overlap(&mut self.runtime, &self.runtime_file, &self.cfg.master_secret_file) {
                tracing::error!("previous secret of the key rotation no longer needed, but not removed: {e}");
            }
        }
    }

    /// Applies a command to what this worker changes itself: the shared links and its own
    /// pipeline. Returns the change every other worker's pipeline needs too.
    pub(super) fn apply_here(&mut self, cmd: Command) -> Result<Option<PipelineChange>, CommandError> {
        match &cmd {
            // No secret in the log.
            Command::MasterSecret { previous_until_ns, .. } => {
                tracing::info!(previous_until_ns, "management command: key rotation")
            }
            _ => tracing::info!(?cmd, "management command"),
        }
        match cmd {
            Command::Link { id, capacity_bps, delay_ms } => {
                self.change_link(id, capacity_bps, delay_ms)?;
                Ok(None)
            }
            Command::Mechanism { name, request } => {
                let change = PipelineChange::Mechanism { name, request };
                self.try_change(&change)?;
                Ok(Some(change))
            }
            Command::MasterSecret { secret, previous_until_ns, rotated_at_s } => {
                let change = PipelineChange::MasterSecret { secret, previous_until_ns, rotated_at_s };
                self.try_change(&change)?;
                Ok(Some(change))
            }
        }
    }

    /// A change the leader's pipeline took already: another worker's pipeline takes it too.
    pub(super) fn change(&mut self, change: PipelineChange) {
        if let Err(e) = self.try_change(&change) {
            tracing::error!(worker = self.index, "a pipeline change the leader took was refused: {e:?}");
        }
        self.publish();
    }

    fn try_change(&mut self, change: &PipelineChange) -> Result<(), CommandError> {
        match change {
            PipelineChange::Mechanism { name, request } => {
                self.pipeline.control(name, request).map_err(|e| match e {
                    pipeline::ControlFailure::NoMechanism(_) => CommandError::NotFound(e.to_string()),
                    pipeline::ControlFailure::Refused { .. } => CommandError::Invalid(e.to_string()),
                })?;
                if let Some(ms) = request.get("burst_ms").and_then(|v| v.as_f64()).filter(|_| name == "hummingbird") {
                    self.cfg.hummingbird.burst_ns = (ms * 1e6) as u64;
                }
                // Kept in the config too, so that a rebuilt pipeline (new master secret) has it.
                if let Some(z) = self.cfg.zlane.as_mut().filter(|_| name == "zlane") {
                    *z = z.changed(request).map_err(|e| CommandError::Invalid(e.to_string()))?;
                }
            }
            PipelineChange::MasterSecret { secret, previous_until_ns, rotated_at_s } => {
                // Keys swapped in place: policers and duplicate filters carry on.
                self.pipeline.rotate_secret(secret, *previous_until_ns, *rotated_at_s);
                self.secret = secret.clone();
            }
        }
        Ok(())
    }

    fn change_link(&mut self, id: u16, capacity_bps: Option<u64>, delay_ms: Option<f64>) -> Result<(), CommandError> {
        let k = self.shared.index_of(id).ok_or_else(|| CommandError::NotFound(format!("no interface {id}")))?;
        let shared = self.shared.clone();
        let mut sched = shared.links[k].lock();
        let mut p = *sched.params();
        if let Some(d) = delay_ms {
            if !(0.0..=10_000.0).contains(&d) {
                return Err(CommandError::Invalid("delay_ms must be between 0 and 10000".into()));
            }
            p.delay_ns = (d * 1e6) as u64;
            self.stats[k + 1].delay_ms = d;
        }
        if let Some(c) = capacity_bps {
            p.rate_bps = c;
            self.stats[k + 1].capacity_bps = c;
        }
        // A link taken down loses what waits in its queues, counted.
        let (counters, pool) = (&mut self.counters[k + 1], &mut self.pool);
        sched.change(p, unix_ns(), &mut |b| {
            counters.count_io_drop(IoDrop::LinkDown);
            recycle(pool, b);
        });
        Ok(())
    }

    /// Publishes this worker's counters; the leader adds what belongs to the links.
    pub(super) fn publish(&mut self) {
        for (counters, stats) in self.counters.iter().zip(&mut self.stats) {
            counters.publish(&self.pipeline, stats);
        }
        let mut classes_read_unix_ns = 0;
        if self.index == 0 {
            classes_read_unix_ns = unix_ns();
            self.stats[0].kernel_receive_drops = self.shared.internal.kernel_receive_drops();
            for (i, link) in self.shared.links.iter().enumerate() {
                self.stats[i + 1].kernel_receive_drops = link.sock.kernel_receive_drops();
                let sched = link.lock();
                let s = sched.stats();
                self.stats[i + 1].classes = sched
                    .table()
                    .classes()
                    .iter()
                    .enumerate()
                    .map(|(c, spec)| ClassSnapshot::new(&spec.name, s.class(ClassId(c as u8))))
                    .collect();
            }
        }
        let status = RouterStatus {
            ia: Some(self.ia),
            started_unix_s: self.started_unix_s,
            burst_ms: self.cfg.hummingbird.burst_ns as f64 / 1e6,
            interfaces: self.stats.clone(),
            mechanisms: self.pipeline.report(),
            scmp: self.scmp.counters,
            classes_read_unix_ns,
        };
        self.board.publish(self.index, status);
    }
}
