//! The forwarder processes of the lab (the router, the bare relay): started from the `aviary`
//! binary with their output in a log file, stopped when dropped, and their CPU time read from
//! `/proc`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{bail, Context};

/// Clock ticks per second of the times in `/proc/PID/stat` (USER_HZ: 100 in Linux's ABI on
/// every architecture this runs on).
const USER_HZ: f64 = 100.0;

/// A running forwarder process; killed when dropped.
pub struct Forwarder {
    pub name: &'static str,
    child: Child,
    pub log: PathBuf,
}

impl Forwarder {
    /// Starts `exe args...` with stdout and stderr into `log`.
    pub fn start(name: &'static str, exe: &Path, args: &[String], log: PathBuf) -> anyhow::Result<Self> {
        let out = File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let child = Command::new(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("cannot start the {name} ({})", exe.display()))?;
        Ok(Self { name, child, log })
    }

    /// An error if the process has ended: its status, the last line of its log (where a
    /// process that refuses to start says why: a port in use, a config field) and the log.
    pub fn check_running(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let last = log.lines().map(str::trim).rfind(|l| !l.is_empty());
            let said = last.map(|l| format!(": {l}")).unwrap_or_default();
            bail!("the {} ended ({status}){said}; its log: {}", self.name, self.log.display());
        }
        Ok(())
    }

    /// CPU time (user and system, all threads) the process has used so far, seconds.
    pub fn cpu_seconds(&self) -> anyhow::Result<f64> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        cpu_seconds(&stat).with_context(|| format!("{path}: no utime and stime"))
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// utime + stime of a `/proc/PID/stat` line, seconds. The fields are counted after the command
/// name, which is in parentheses and may itself hold spaces and parentheses.
fn cpu_seconds(stat: &str) -> Option<f64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    // Fields 3 (state) to 13 come first; utime and stime are fields 14 and 15.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 120 0 0 0 250 37 0 0 20 0 3 0 99 1000 200";
        assert_eq!(cpu_seconds(stat), Some(2.87));
        assert_eq!(cpu_seconds("4242 (x) S 1 2"), None);
        assert_eq!(cpu_seconds("no parenthesis"), None);
    }

    #[test]
    fn an_ended_process_is_an_error_with_the_last_line_of_its_log() {
        let dir = aviary_scratch::ScratchDir::new("lab-forwarder-ended");
        let script = "echo starting; echo 'error: management: 127.0.0.1:29001 in use' >&2; echo; exit 3";
        let args = ["-c".to_string(), script.to_string()];
        let mut fwd = Forwarder::start("router", Path::new("/bin/sh"), &args, dir.join("router.log")).unwrap();
        let _ = fwd.child.wait();
        let e = fwd.check_running().unwrap_err().to_string();
        assert!(
            e.starts_with("the router ended (exit status: 3): error: management: 127.0.0.1:29001 in use; its log: "),
            "{e}"
        );
        assert!(e.ends_with("router.log"), "{e}");
    }

    #[test]
    fn a_running_process_is_not_an_error() {
        let dir = aviary_scratch::ScratchDir::new("lab-forwarder-running");
        let args = ["-c".to_string(), "sleep 30".to_string()];
        let mut fwd = Forwarder::start("relay", Path::new("/bin/sh"), &args, dir.join("relay.log")).unwrap();
        fwd.check_running().unwrap();
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(cpu_seconds(&stat).is_some(), "{stat}");
    }
}
