//! The GLWP service's DRKey keys (protocol [`PROTOCOL`]): its own Level-1 keys, derived per
//! epoch from the AS's master secret, and the Level-1 keys every other GLWP AS issued to it,
//! fetched over TLS from their DRKey services by the AS's own DRKey service (which caches
//! them), as the Z-Lane gateway's keys are. A thread keeps the current epoch's keys and
//! prefetches the next one's, retrying missing ones every second; a message for which a key
//! is still missing is dropped as `no_key`.
//!
//! The keys of a message are those of the DRKey epoch that contains its ts_pkt, so every AS
//! on the path uses the same epoch however the message straddles an epoch change.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aviary_glwp::discovery::{DiscoveryKeys, DrkeyKeys, PROTOCOL};
use aviary_scion::drkey::{Epoch, EpochSchedule, RotatingSecret};
use aviary_scion::IsdAsn;

use crate::clock::unix_s;
use crate::control::drkey::DrkeyService;

/// How often missing keys are asked for again.
const RETRY: Duration = Duration::from_secs(1);
/// How often the thread looks again once it has every key of both epochs.
const REFRESH: Duration = Duration::from_secs(30);

struct Store {
    secret: RotatingSecret,
    /// Keys by the start of their epoch.
    epochs: BTreeMap<u32, DrkeyKeys>,
}

impl Store {
    fn epoch(&mut self, epoch: Epoch) -> Option<&mut DrkeyKeys> {
        if !self.epochs.contains_key(&epoch.begin_s) {
            let keys = DrkeyKeys::with_secret(&self.secret, epoch).ok()?;
            self.epochs.insert(epoch.begin_s, keys);
        }
        self.epochs.get_mut(&epoch.begin_s)
    }
}

/// The keys, shared by the discovery cores (which read the selected epoch's) and the
/// fetching thread.
#[derive(Clone)]
pub struct SharedKeys {
    store: Arc<Mutex<Store>>,
    schedule: EpochSchedule,
    /// Start of the epoch the cores use now; set before each message ([`Self::select`]).
    selected: Arc<AtomicU32>,
    /// Failed fetches (one per AS, epoch and attempt).
    pub fetch_errors: Arc<AtomicU64>,
}

impl SharedKeys {
    /// Keys of each epoch from the master secret `secret` picks for it.
    pub fn new(secret: RotatingSecret, schedule: EpochSchedule) -> Self {
        let store = Store { secret, epochs: BTreeMap::new() };
        Self { store: Arc::new(Mutex::new(store)), schedule, selected: Arc::default(), fetch_errors: Arc::default() }
    }

    /// Makes the keys of the epoch that contains `ts_pkt_ns` the ones the cores use. They are
    /// derived when a core first asks for them, which it does only for a message that passed
    /// its freshness check: derived here, any datagram naming a new epoch in its timestamp
    /// cost a PBKDF2 run and a map entry that lasted (for a future epoch) until that epoch.
    pub fn select(&self, ts_pkt_ns: u64) {
        if let Ok(epoch) = self.schedule.epoch_at(ts_pkt_ns / 1_000_000_000) {
            self.selected.store(epoch.begin_s, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Store> {
        // The store stays consistent whatever panicked while holding it: every change is one insert.
        self.store.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `f` of the selected epoch's keys, made if need be.
    fn with<T>(&self, f: impl FnOnce(&DrkeyKeys) -> T) -> Option<T> {
        let epoch = self.schedule.epoch_at(u64::from(self.selected.load(Ordering::Relaxed))).ok()?;
        self.lock().epoch(epoch).map(|k| f(k))
    }

    /// Starts the thread that fetches `K_{issuer→subject}` from every issuer of `issuers`.
    pub fn spawn_fetcher(&self, drkey: Arc<DrkeyService>, subject: IsdAsn, issuers: Vec<IsdAsn>) {
        let keys = self.clone();
        std::thread::spawn(move || loop {
            let complete = keys.fetch_round(&drkey, subject, &issuers);
            std::thread::sleep(if complete { REFRESH } else { RETRY });
        });
    }

    /// Asks for every missing key of the current and the next epoch; whether none is missing.
    fn fetch_round(&self, drkey: &DrkeyService, subject: IsdAsn, issuers: &[IsdAsn]) -> bool {
        let now = unix_s();
        let Ok(current) = self.schedule.epoch_at(now) else { return false };
        let Ok(next) = self.schedule.next(current) else { return false };
        let mut complete = true;
        for (epoch, at) in [(current, now), (next, u64::from(next.begin_s))] {
            let missing: Vec<IsdAsn> = {
                let mut s = self.lock();
                // Epochs before the current one are of no use any more.
                s.epochs.retain(|&begin, _| begin >= current.begin_s);
                let Some(have) = s.epoch(epoch) else { return false };
                issuers.iter().copied().filter(|&ia| ia != subject && have.key_from(ia).is_none()).collect()
            };
            for issuer in missing {
                match drkey.level1_to_self(issuer, subject, PROTOCOL, at, now) {
                    Ok((key, e)) if e == epoch => {
                        if let Some(k) = self.lock().epoch(epoch) {
                            k.insert_fetched(issuer, key);
                        }
                    }
                    Ok((_, e)) => {
                        tracing::warn!(%issuer, "GLWP Level-1 key for epoch {} came for epoch {}", epoch.begin_s, e.begin_s);
                        self.failed();
                        complete = false;
                    }
                    Err(e) => {
                        tracing::debug!(%issuer, "GLWP Level-1 key: {e}");
                        self.failed();
                        complete = false;
                    }
                }
            }
        }
        complete
    }

    fn failed(&self) {
        self.fetch_errors.fetch_add(1, Ordering::Relaxed);
    }
}

impl DiscoveryKeys for SharedKeys {
    fn key_to(&self, to: IsdAsn) -> [u8; 16] {
        // Some: the selected epoch is one `epoch_at` gave, and the master secret is not empty.
        self.with(|k| k.key_to(to)).unwrap_or_else(|| unreachable!("the selected epoch's own keys can be derived"))
    }
    fn key_from(&self, from: IsdAsn) -> Option<[u8; 16]> {
        self.with(|k| k.key_from(from)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_epoch_of_the_message() {
        let schedule = EpochSchedule::new(100, 5).unwrap();
        let keys = SharedKeys::new(RotatingSecret::new(b"master secret of a").unwrap(), schedule);
        let b = IsdAsn::new(1, 2);
        keys.select(150 * 1_000_000_000);
        let first = keys.key_to(b);
        let e1 = schedule.epoch_at(150).unwrap();
        assert_eq!(first, DrkeyKeys::new(b"master secret of a", e1).unwrap().key_to(b));
        keys.select(250 * 1_000_000_000);
        assert_ne!(keys.key_to(b), first);
        assert_eq!(keys.key_from(b), None, "nothing fetched, no key");
    }

    /// Selecting an epoch derives nothing: only a message whose keys are asked for (one that
    /// passed the freshness check) makes its epoch's keys, so timestamps from anywhere cost
    /// neither key derivations nor memory.
    #[test]
    fn selecting_an_epoch_derives_nothing_until_its_keys_are_used() {
        let schedule = EpochSchedule::new(100, 5).unwrap();
        let keys = SharedKeys::new(RotatingSecret::new(b"master secret of a").unwrap(), schedule);
        for e in 1..200u64 {
            keys.select(e * 1_000 * 1_000_000_000);
        }
        assert!(keys.lock().epochs.is_empty());
        keys.key_to(IsdAsn::new(1, 2));
        assert_eq!(
            keys.lock().epochs.keys().copied().collect::<Vec<_>>(),
            [schedule.epoch_at(199_000).unwrap().begin_s]
        );
    }
}
