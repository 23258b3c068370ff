//! Supervision of a run's processes: a process that exits is started again after a backoff
//! that doubles with every failure in a row (a process that ran for a while starts the count
//! afresh); by default the runner never gives up, and says loudly on its terminal, in
//! `logs/supervisor.log` and in its health report which processes are not running.
//!
//! [`Backoff`] is the sans-IO policy (durations in, decisions out); [`Supervised`] is one
//! process with its state; [`supervise`] is the thread that drives them.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use aviary_scion::IsdAsn;
use serde::Serialize;

use super::Role;

/// When to start a process again, and when to stop trying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Wait before the first restart after a failure.
    pub first_backoff: Duration,
    /// The wait doubles with each failure in a row up to this.
    pub max_backoff: Duration,
    /// A process that ran this long before exiting starts the count of failures afresh.
    pub healthy_after: Duration,
    /// Failures in a row after which the process is given up; `None`: never.
    pub give_up_after: Option<u32>,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            first_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(30),
            healthy_after: Duration::from_secs(10),
            give_up_after: None,
        }
    }
}

/// Failures in a row of one process and what follows from them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    /// The process exited after running for `ran_for`: the wait before its next start, or
    /// `None` if the policy gives it up.
    pub fn on_exit(&mut self, ran_for: Duration, policy: &RestartPolicy) -> Option<Duration> {
        self.failures = if ran_for >= policy.healthy_after { 1 } else { self.failures.saturating_add(1) };
        if policy.give_up_after.is_some_and(|n| self.failures >= n) {
            return None;
        }
        let doublings = self.failures.saturating_sub(1).min(31);
        Some(policy.first_backoff.saturating_mul(1 << doublings).min(policy.max_backoff))
    }

    /// Failures in a row so far (a start that failed outright counts as one too).
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

/// What a supervised process is doing.
#[derive(Debug)]
pub enum ProcState {
    Running {
        child: Child,
        since: Instant,
    },
    /// Exited; started again at `at`.
    Waiting {
        at: Instant,
    },
    /// Given up by the policy.
    GaveUp,
    /// Stopped with the run.
    Stopped,
}

/// One process of a run.
#[derive(Debug)]
pub struct Supervised {
    pub ia: IsdAsn,
    pub role: Role,
    pub args: Vec<String>,
    pub log: PathBuf,
    pub state: ProcState,
    pub backoff: Backoff,
    pub restarts: u32,
    pub last_exit: Option<String>,
}

/// What a process is doing, as the run reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProcessState {
    Running,
    /// Exited; waiting for its next start.
    Restarting,
    GivenUp,
    Stopped,
}

/// How one process stands, for people and programs (`/v1/status` of the run).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProcessHealth {
    pub ia: IsdAsn,
    pub role: &'static str,
    pub state: ProcessState,
    pub pid: Option<u32>,
    pub restarts: u32,
    pub failures_in_a_row: u32,
    pub last_exit: Option<String>,
    /// For a process waiting to restart: in how many ms.
    pub next_start_in_ms: Option<u64>,
    pub log: PathBuf,
}

impl Supervised {
    pub fn start(ia: IsdAsn, role: Role, args: Vec<String>, log: PathBuf, exe: &Path) -> anyhow::Result<Self> {
        let child = spawn_process(exe, &args, &log)?;
        let state = ProcState::Running { child, since: Instant::now() };
        Ok(Self { ia, role, args, log, state, backoff: Backoff::default(), restarts: 0, last_exit: None })
    }

    pub fn child(&self) -> Option<&Child> {
        match &self.state {
            ProcState::Running { child, .. } => Some(child),
            _ => None,
        }
    }

    pub fn child_mut(&mut self) -> Option<&mut Child> {
        match &mut self.state {
            ProcState::Running { child, .. } => Some(child),
            _ => None,
        }
    }

    pub fn health(&self, now: Instant) -> ProcessHealth {
        let (state, next) = match &self.state {
            ProcState::Running { .. } => (ProcessState::Running, None),
            ProcState::Waiting { at } => {
                (ProcessState::Restarting, Some(at.saturating_duration_since(now).as_millis() as u64))
            }
            ProcState::GaveUp => (ProcessState::GivenUp, None),
            ProcState::Stopped => (ProcessState::Stopped, None),
        };
        ProcessHealth {
            ia: self.ia,
            role: self.role.name(),
            state,
            pid: self.child().map(Child::id),
            restarts: self.restarts,
            failures_in_a_row: self.backoff.failures(),
            last_exit: self.last_exit.clone(),
            next_start_in_ms: next,
            log: self.log.clone(),
        }
    }

    /// One step of supervision at `now`: notices an exit, or starts the process again when
    /// its wait is over. Returns what to tell the operator.
    fn step(&mut self, now: Instant, exe: &Path, policy: &RestartPolicy) -> Option<String> {
        let name = format!("{} {}", self.role.name(), self.ia);
        match &mut self.state {
            ProcState::Running { child, since } => {
                let status = child.try_wait().ok().flatten()?;
                let ran_for = now.saturating_duration_since(*since);
                self.last_exit = Some(status.to_string());
                Some(self.after_failure(&name, &format!("exited ({status}) after {ran_for:.1?}"), ran_for, now, policy))
            }
            ProcState::Waiting { at } if now >= *at => match spawn_process(exe, &self.args, &self.log) {
                Ok(child) => {
                    self.state = ProcState::Running { child, since: now };
                    self.restarts += 1;
                    Some(format!("{name} started again (restart {})", self.restarts))
                }
                Err(e) => {
                    Some(self.after_failure(&name, &format!("cannot be started: {e:#}"), Duration::ZERO, now, policy))
                }
            },
            _ => None,
        }
    }

    fn after_failure(&mut self, name: &str, what: &str, ran_for: Duration, now: Instant, p: &RestartPolicy) -> String {
        match self.backoff.on_exit(ran_for, p) {
            Some(wait) => {
                self.state = ProcState::Waiting { at: now + wait };
                let n = self.backoff.failures();
                let again =
                    if n > 1 { format!("; {n} failures in a row, see {}", self.log.display()) } else { String::new() };
                format!("{name} {what}; restarting in {wait:.1?}{again}")
            }
            None => {
                self.state = ProcState::GaveUp;
                format!(
                    "{name} {what}; GIVING UP after {} failures in a row, see {}",
                    self.backoff.failures(),
                    self.log.display()
                )
            }
        }
    }
}

/// Starts `exe args`, its output appended to `log`; the child is killed when the thread
/// that started it ends (PR_SET_PDEATHSIG), so nothing outlives a crashed supervisor.
pub fn spawn_process(exe: &Path, args: &[String], log: &Path) -> anyhow::Result<Child> {
    let out = OpenOptions::new().create(true).append(true).open(log)?;
    let mut cmd = Command::new(exe);
    cmd.args(args).stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    // SAFETY: prctl is async-signal-safe; it makes the kernel kill the child when the
    // supervisor dies, however it dies, so that no process outlives its run.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().with_context(|| format!("cannot start {}", exe.display()))
}

/// The supervision thread: every 100 ms, one step per process. Everything it does is logged
/// at warning level (the terminal of `aviary run`) and in `log`; a process that fails again and
/// again is an error there.
pub fn supervise(
    procs: Arc<Mutex<Vec<Supervised>>>,
    stopping: Arc<AtomicBool>,
    exe: PathBuf,
    log: PathBuf,
    policy: RestartPolicy,
) {
    let mut log: Option<File> = File::options().create(true).append(true).open(log).ok();
    while !stopping.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        let Ok(mut procs) = procs.lock() else { return };
        for p in procs.iter_mut() {
            if stopping.load(Ordering::SeqCst) {
                break;
            }
            let Some(msg) = p.step(Instant::now(), &exe, &policy) else { continue };
            if p.backoff.failures() >= 3 || matches!(p.state, ProcState::GaveUp) {
                tracing::error!("{msg}");
            } else {
                tracing::warn!("{msg}");
            }
            if let Some(f) = log.as_mut() {
                let _ = writeln!(f, "{msg}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_wait_doubles_with_failures_in_a_row_up_to_the_cap() {
        let p = RestartPolicy { first_backoff: ms(100), max_backoff: ms(1000), ..Default::default() };
        let mut b = Backoff::default();
        let waits: Vec<_> = (0..7).map(|_| b.on_exit(ms(5), &p).unwrap()).collect();
        assert_eq!(waits, [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000), ms(1000)]);
        assert_eq!(b.failures(), 7);
        // Never gives up by default, however long it fails.
        for _ in 0..100 {
            assert_eq!(b.on_exit(Duration::ZERO, &p), Some(ms(1000)));
        }
    }

    #[test]
    fn a_process_that_ran_a_while_starts_the_count_afresh() {
        let p = RestartPolicy { first_backoff: ms(100), healthy_after: Duration::from_secs(10), ..Default::default() };
        let mut b = Backoff::default();
        b.on_exit(ms(1), &p);
        b.on_exit(ms(1), &p);
        assert_eq!(b.on_exit(Duration::from_secs(10), &p), Some(ms(100)));
        assert_eq!(b.failures(), 1);
        assert_eq!(b.on_exit(ms(1), &p), Some(ms(200)));
    }

    #[test]
    fn a_policy_with_a_limit_gives_up_exactly_there() {
        let p = RestartPolicy { give_up_after: Some(3), ..Default::default() };
        let mut b = Backoff::default();
        assert!(b.on_exit(ms(1), &p).is_some());
        assert!(b.on_exit(ms(1), &p).is_some());
        assert_eq!(b.on_exit(ms(1), &p), None);
    }

    #[test]
    fn a_process_that_exits_is_restarted_after_its_backoff_and_reported() {
        let p = RestartPolicy { first_backoff: ms(200), ..Default::default() };
        let dir = aviary_scratch::ScratchDir::new("supervisor");
        let exe = Path::new("/bin/sh");
        let args = vec!["-c".to_string(), "exit 3".to_string()];
        let mut s =
            Supervised::start("1-ff00:0:110".parse().unwrap(), Role::Router, args, dir.join("p.log"), exe).unwrap();
        let t0 = Instant::now();
        let msg = loop {
            if let Some(m) = s.step(Instant::now(), exe, &p) {
                break m;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "the child did not exit");
            std::thread::sleep(ms(5));
        };
        assert!(msg.contains("router 1-ff00:0:110 exited") && msg.contains("restarting in"), "{msg}");
        let now = Instant::now();
        let h = s.health(now);
        assert_eq!((h.state, h.failures_in_a_row, h.restarts), (ProcessState::Restarting, 1, 0));
        assert!(h.next_start_in_ms.unwrap() <= 200 && h.last_exit.as_deref().unwrap().contains('3'), "{h:?}");
        // Not before its wait is over, then started again.
        assert!(s.step(now, exe, &p).is_none());
        let msg = s.step(now + ms(200), exe, &p).unwrap();
        assert!(msg.contains("started again (restart 1)"), "{msg}");
        assert_eq!(s.health(now).state, ProcessState::Running);
        if let Some(c) = s.child_mut() {
            let _ = c.wait();
        }
    }
}
