//! The Level-1 keys `K_{A_i→A_0}` the gateway re-authenticates packets with (the Z-Lane
//! paper, App. C): every AS A_i of the topology issued one to the gateway's AS A_0, per DRKey
//! epoch. The gateway is infrastructure of A_0, so it asks its own AS's control service
//! (`GET /v1/drkey/level1`, with the AS's operator token), which holds them from its Level-1
//! exchange with A_i over TLS, as SCION's DRKey does; no other process of A_0 needs them.
//!
//! A thread keeps the keys of the current epoch and prefetches the next one's, so that the
//! packet loop finds them in place when the epoch changes; it retries the keys it is missing
//! every second. The packet loop installs an epoch's keys in the gateway core when the epoch
//! begins, or when more of its keys arrive ([`KeyCache::install`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aviary_scion::drkey::{Epoch, EpochSchedule, Level1Key};
use aviary_scion::IsdAsn;
use aviary_zlane::gateway::Gateway;

use crate::api::fetch_infrastructure_level1;
use crate::clock::unix_s;

/// How often missing keys are asked for again.
const RETRY: Duration = Duration::from_secs(1);
/// How often the thread looks again once it has every key of both epochs.
const REFRESH: Duration = Duration::from_secs(30);

/// Keys by the start of their epoch, and a version that changes whenever one arrives.
#[derive(Default)]
struct Fetched {
    epochs: BTreeMap<u32, BTreeMap<IsdAsn, Level1Key>>,
    version: u64,
}

/// The keys fetched so far, shared by the fetching thread and the packet loop.
#[derive(Clone)]
pub struct KeyCache {
    fetched: Arc<Mutex<Fetched>>,
    /// Failed fetches (one per AS and attempt).
    pub errors: Arc<AtomicU64>,
    schedule: EpochSchedule,
    /// Set when the control service's epochs of the gateway's own AS are not `schedule`'s.
    mismatch: Arc<Mutex<Option<String>>>,
    mismatched: Arc<AtomicBool>,
}

/// What the packet loop installed last: the epoch and the cache's version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Installed {
    epoch: u32,
    version: u64,
}

/// Where and how the thread asks for keys.
pub struct KeySource {
    pub control: SocketAddr,
    pub token: String,
    pub subject: IsdAsn,
    pub protocol: u16,
    /// Every AS the gateway may forward through (the topology's, its own included).
    pub issuers: Vec<IsdAsn>,
}

impl KeyCache {
    pub fn new(schedule: EpochSchedule) -> Self {
        Self {
            fetched: Arc::default(),
            errors: Arc::default(),
            schedule,
            mismatch: Arc::default(),
            mismatched: Arc::default(),
        }
    }

    /// Why the gateway must not run on: the AS's control service derives the AS's keys in
    /// other epochs than the gateway's `[drkey_epochs]`, so every key the gateway derives
    /// itself differs from the one the DRKey service hands out.
    pub fn schedule_mismatch(&self) -> Option<String> {
        if !self.mismatched.load(Ordering::Relaxed) {
            return None;
        }
        self.mismatch.lock().expect("poisoned").clone()
    }

    /// Records that the control service served the gateway's own AS's key for `served`
    /// where the gateway's schedule has `expected`.
    fn mismatched(&self, control: SocketAddr, served: &crate::api::EpochWire, expected: Epoch) {
        let why = format!(
            "drkey_epochs: the AS's control service ({control}) serves its keys in the epoch [{}, {}) ({} s long), \
             but epoch_duration_s = {} and grace_s = {} here give [{}, {}): the control service's \
             [drkey] epoch_duration_s and grace_s must be this table's",
            served.begin,
            served.end,
            served.end.saturating_sub(served.begin),
            self.schedule.duration_s(),
            self.schedule.grace_s(),
            expected.begin_s,
            expected.end_s,
        );
        tracing::error!("zlane gateway: {why}");
        *self.mismatch.lock().expect("poisoned") = Some(why);
        self.mismatched.store(true, Ordering::Relaxed);
    }

    /// Starts the fetching thread; it ends when `stop` is set.
    pub fn spawn_fetcher(&self, source: KeySource, stop: &'static AtomicBool) {
        let cache = self.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let complete = cache.fetch_round(&source);
                let wait = if complete { REFRESH } else { RETRY };
                let until = std::time::Instant::now() + wait;
                while std::time::Instant::now() < until && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
    }

    /// Asks for every missing key of the current and the next epoch; whether none is missing.
    pub(super) fn fetch_round(&self, s: &KeySource) -> bool {
        let now = unix_s();
        let Ok(current) = self.schedule.epoch_at(now) else { return false };
        let Ok(next) = self.schedule.next(current) else { return false };
        let mut complete = true;
        for (epoch, at) in [(current, now), (next, u64::from(next.begin_s))] {
            let missing: Vec<IsdAsn> = {
                let f = self.fetched.lock().expect("poisoned");
                let have = f.epochs.get(&epoch.begin_s);
                s.issuers.iter().copied().filter(|ia| !have.is_some_and(|h| h.contains_key(ia))).collect()
            };
            for issuer in missing {
                match fetch_infrastructure_level1(s.control, &s.token, issuer, s.protocol, at) {
                    Ok(r)
                        if r.epoch.begin == epoch.begin_s
                            && (issuer != s.subject || r.epoch.end == epoch.end_s)
                            && r.subject == s.subject
                            && r.issuer == issuer =>
                    {
                        let Some(key) = hex::decode(&r.key).ok().and_then(|k| <[u8; 16]>::try_from(k).ok()) else {
                            self.failed(&format!("Level-1 key of {issuer}: not 16 bytes of hex"));
                            complete = false;
                            continue;
                        };
                        let mut f = self.fetched.lock().expect("poisoned");
                        f.epochs.entry(epoch.begin_s).or_default().insert(issuer, Level1Key::from_bytes(key));
                        f.version += 1;
                    }
                    Ok(r)
                        if issuer == s.subject
                            && r.issuer == issuer
                            && r.subject == s.subject
                            && (r.epoch.begin, r.epoch.end) != (epoch.begin_s, epoch.end_s) =>
                    {
                        self.mismatched(s.control, &r.epoch, epoch);
                        complete = false;
                    }
                    Ok(r) => {
                        self.failed(&format!(
                            "Level-1 key of {issuer}: the reply is for {}→{} in epoch [{}, {}), not [{}, {})",
                            r.issuer, r.subject, r.epoch.begin, r.epoch.end, epoch.begin_s, epoch.end_s
                        ));
                        complete = false;
                    }
                    Err(e) => {
                        self.failed(&format!("{e:#}"));
                        complete = false;
                    }
                }
            }
        }
        self.fetched.lock().expect("poisoned").epochs.retain(|begin, _| *begin >= current.begin_s);
        complete
    }

    fn failed(&self, why: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!("zlane gateway: {why}");
    }

    /// Puts the keys of the epoch of `now_s` into `gw` if they changed since `installed`:
    /// all of them at once, and none of the previous epoch's.
    pub fn install(&self, gw: &mut Gateway, now_s: u64, installed: &mut Installed) {
        let Ok(epoch) = self.schedule.epoch_at(now_s) else { return };
        let f = self.fetched.lock().expect("poisoned");
        let want = Installed { epoch: epoch.begin_s, version: f.version };
        if want == *installed {
            return;
        }
        let keys = gw.path_keys_mut();
        if want.epoch != installed.epoch {
            keys.clear_keys();
        }
        for (ia, key) in f.epochs.get(&epoch.begin_s).into_iter().flatten() {
            keys.set_key(*ia, key);
        }
        *installed = want;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aviary_scion::drkey::Epoch;
    use aviary_zlane::gateway::GatewayConfig;

    fn gateway(now_s: u64) -> Gateway {
        let config = GatewayConfig {
            guarantee_bps: 1_000_000,
            burst_bytes: 15_000,
            over_rate: Default::default(),
            drkey_protocol: 42,
            suppress_duplicates: false,
            hosts: Vec::new(),
        };
        Gateway::new(
            IsdAsn::new(1, 0x111),
            &aviary_scion::drkey::RotatingSecret::new(&[9; 16]).unwrap(),
            EpochSchedule::SCION_DEFAULT,
            &config,
            now_s * 1_000_000_000,
        )
        .unwrap()
    }

    fn put(cache: &KeyCache, epoch: Epoch, ia: IsdAsn) {
        let mut f = cache.fetched.lock().unwrap();
        f.epochs.entry(epoch.begin_s).or_default().insert(ia, Level1Key::from_bytes([ia.asn() as u8; 16]));
        f.version += 1;
    }

    #[test]
    fn an_epochs_keys_are_installed_when_it_begins_and_as_they_arrive() {
        let schedule = EpochSchedule::SCION_DEFAULT;
        let now = 1_700_000_000;
        let e = schedule.epoch_at(now).unwrap();
        let next = schedule.next(e).unwrap();
        let cache = KeyCache::new(schedule);
        let mut gw = gateway(now);
        let mut installed = Installed::default();
        let (a, b) = (IsdAsn::new(1, 0x110), IsdAsn::new(1, 0x112));
        // Only the gateway's own key until any arrive: the first install clears it too.
        cache.install(&mut gw, now, &mut installed);
        assert_eq!(gw.path_keys().keyed_ases(), 0);
        put(&cache, e, a);
        put(&cache, next, a);
        put(&cache, next, b);
        cache.install(&mut gw, now, &mut installed);
        assert_eq!(gw.path_keys().keyed_ases(), 1);
        put(&cache, e, b);
        cache.install(&mut gw, now + 1, &mut installed);
        assert_eq!(gw.path_keys().keyed_ases(), 2);
        // The next epoch: its prefetched keys, and none of this one's.
        cache.install(&mut gw, u64::from(next.begin_s), &mut installed);
        assert_eq!(gw.path_keys().keyed_ases(), 2);
        let later = schedule.next(next).unwrap();
        cache.install(&mut gw, u64::from(later.begin_s), &mut installed);
        assert_eq!(gw.path_keys().keyed_ases(), 0, "no keys of an epoch nothing was fetched for");
    }
}
