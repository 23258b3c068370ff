//! Which master secret an epoch's secret values derive from when the AS rotates its master
//! secret.
//!
//! SCION's DRKey treats a secret value as fixed for its epoch: other ASes fetch an AS's
//! Level-1 keys once per epoch and hosts hold Level-2/3 keys, so a key served for an epoch
//! must not change before the epoch ends, whatever the operator does to the master secret.
//! [`RotatingSecret`] therefore keeps the secret a rotation replaced and derives every epoch
//! that may have been served before the rotation from it; later epochs use the new secret.
//!
//! "May have been served" reaches one epoch beyond the one current at the rotation: the
//! DRKey service hands out the next epoch's keys too (so that keys can be fetched ahead of
//! a rollover), so at the rotation instant `r` the keys of the epoch beginning at the next
//! boundary are out already. The rule is `begin ≤ r + length` → previous secret. It is a
//! pure function of the epoch and of two persisted facts (the previous secret and `r`), so
//! every process of the AS that derives DRKey keys makes the same choice.

use super::{Derivation, DrkeyError, Epoch, EpochSchedule, IssuerKeys, Protocol, SecretValue};

/// The AS master secret as DRKey sees it: the current one, and the one the last rotation
/// replaced with the rotation's instant (Unix s).
///
/// `Debug` does not print the secrets; dropping it overwrites them.
#[derive(Clone)]
pub struct RotatingSecret {
    current: Vec<u8>,
    previous: Option<(Vec<u8>, u64)>,
}

impl std::fmt::Debug for RotatingSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RotatingSecret").field("rotated_at_s", &self.rotated_at_s()).finish_non_exhaustive()
    }
}

impl RotatingSecret {
    /// A secret never rotated (or whose previous secret is no longer needed): every epoch
    /// derives from `current`, exactly as [`SecretValue::derive`] does.
    pub fn new(current: &[u8]) -> Result<Self, DrkeyError> {
        if current.is_empty() {
            return Err(DrkeyError::EmptyMasterSecret);
        }
        Ok(Self { current: current.to_vec(), previous: None })
    }

    /// `current`, which replaced `previous` at `rotated_at_s`.
    pub fn rotated(current: &[u8], previous: &[u8], rotated_at_s: u64) -> Result<Self, DrkeyError> {
        let mut s = Self::new(previous)?;
        s.rotate(current, rotated_at_s)?;
        Ok(s)
    }

    /// `next` replaces the current secret at `rotated_at_s`; only one previous secret is
    /// kept. Rotating to the secret that is current already changes nothing (a process told
    /// twice of the same rotation keeps its first instant).
    pub fn rotate(&mut self, next: &[u8], rotated_at_s: u64) -> Result<(), DrkeyError> {
        if next.is_empty() {
            return Err(DrkeyError::EmptyMasterSecret);
        }
        if next != self.current.as_slice() {
            let old = std::mem::replace(&mut self.current, next.to_vec());
            if let Some((mut dropped, _)) = self.previous.replace((old, rotated_at_s)) {
                wipe(&mut dropped);
            }
        }
        Ok(())
    }

    /// The master secret in use now (for keys outside DRKey, such as the hop-field key).
    pub fn current(&self) -> &[u8] {
        &self.current
    }

    /// The instant of the last rotation, if its previous secret is kept.
    pub fn rotated_at_s(&self) -> Option<u64> {
        self.previous.as_ref().map(|(_, at)| *at)
    }

    /// The master secret `epoch`'s secret values derive from: the previous one if the epoch
    /// begins at most one epoch length after the rotation (its keys may have been served
    /// before it), else the current one.
    pub fn master_for(&self, epoch: Epoch) -> &[u8] {
        match &self.previous {
            Some((previous, at)) if u64::from(epoch.begin_s) <= at + u64::from(epoch.duration_s()) => previous,
            _ => &self.current,
        }
    }

    /// `SV` of `protocol` in `epoch`, from the master secret [`Self::master_for`] picks.
    pub fn secret_value(&self, protocol: Protocol, epoch: Epoch) -> Result<SecretValue, DrkeyError> {
        SecretValue::derive(self.master_for(epoch), protocol, epoch)
    }

    /// The keys of `protocol` in `epoch` under `derivation` (secret value of
    /// `derivation.sv_protocol(protocol)`).
    pub fn issuer_keys(
        &self,
        protocol: Protocol,
        derivation: Derivation,
        epoch: Epoch,
    ) -> Result<IssuerKeys, DrkeyError> {
        let sv = self.secret_value(derivation.sv_protocol(protocol), epoch)?;
        Ok(IssuerKeys::from_secret_value(sv, protocol, derivation, epoch))
    }

    /// Until when (Unix s) a secret replaced at `rotated_at_s` is needed under `schedule`:
    /// the end of the last epoch derived from it plus the grace period in which verifiers
    /// still accept that epoch's keys.
    pub fn previous_needed_until_s(rotated_at_s: u64, schedule: EpochSchedule) -> u64 {
        let d = u64::from(schedule.duration_s());
        (rotated_at_s / d + 2) * d + u64::from(schedule.grace_s())
    }
}

fn wipe(secret: &mut [u8]) {
    secret.fill(0);
    std::hint::black_box(secret);
}

impl Drop for RotatingSecret {
    fn drop(&mut self) {
        wipe(&mut self.current);
        if let Some((previous, _)) = &mut self.previous {
            wipe(previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u32 = 1000;
    const OLD: &[u8] = b"old master secret";
    const NEW: &[u8] = b"new master secret";

    fn epoch(i: u32) -> Epoch {
        Epoch::new(i * D, (i + 1) * D).unwrap()
    }

    fn sv(master: &[u8], e: Epoch) -> SecretValue {
        SecretValue::derive(master, Protocol::SCMP, e).unwrap()
    }

    #[test]
    fn without_a_rotation_every_epoch_derives_from_the_one_secret() {
        let s = RotatingSecret::new(NEW).unwrap();
        for i in [0, 1, 7] {
            assert_eq!(s.secret_value(Protocol::SCMP, epoch(i)).unwrap(), sv(NEW, epoch(i)));
        }
        assert_eq!(s.rotated_at_s(), None);
        assert!(matches!(RotatingSecret::new(b""), Err(DrkeyError::EmptyMasterSecret)));
    }

    #[test]
    fn epochs_served_before_the_rotation_keep_the_previous_secret_later_ones_take_the_new() {
        // Rotated within epoch 5: epoch 5 is current and epoch 6 servable ahead of time.
        let s = RotatingSecret::rotated(NEW, OLD, 5 * u64::from(D) + 400).unwrap();
        let got = |i| s.secret_value(Protocol::SCMP, epoch(i)).unwrap();
        assert_eq!(got(4), sv(OLD, epoch(4)));
        assert_eq!(got(5), sv(OLD, epoch(5)));
        assert_eq!(got(6), sv(OLD, epoch(6)));
        assert_eq!(got(7), sv(NEW, epoch(7)));
        assert_ne!(sv(OLD, epoch(7)), sv(NEW, epoch(7)));
    }

    #[test]
    fn a_rotation_exactly_at_an_epoch_start_keeps_the_previous_secret_for_the_epoch_after() {
        let at = 5 * u64::from(D);
        let s = RotatingSecret::rotated(NEW, OLD, at).unwrap();
        assert_eq!(s.master_for(epoch(5)), OLD);
        // Epoch 6 became servable the second the rotation happened.
        assert_eq!(s.master_for(epoch(6)), OLD);
        assert_eq!(s.master_for(epoch(7)), NEW);
        // Rotated a second before epoch 5 began: epoch 5 was servable already, epoch 6 not.
        let s = RotatingSecret::rotated(NEW, OLD, at - 1).unwrap();
        assert_eq!((s.master_for(epoch(5)), s.master_for(epoch(6))), (OLD, NEW));
    }

    #[test]
    fn rotating_to_the_current_secret_changes_nothing_and_a_second_rotation_drops_the_first() {
        let mut s = RotatingSecret::rotated(NEW, OLD, 5 * u64::from(D)).unwrap();
        s.rotate(NEW, 9 * u64::from(D)).unwrap();
        assert_eq!((s.rotated_at_s(), s.master_for(epoch(6))), (Some(5 * u64::from(D)), OLD));
        s.rotate(b"third", 9 * u64::from(D)).unwrap();
        assert_eq!((s.master_for(epoch(6)), s.master_for(epoch(11))), (NEW, b"third".as_slice()));
        assert!(matches!(s.rotate(b"", 0), Err(DrkeyError::EmptyMasterSecret)));
    }

    #[test]
    fn issuer_keys_follow_the_choice() {
        let s = RotatingSecret::rotated(NEW, OLD, 5 * u64::from(D) + 1).unwrap();
        let p = Protocol(0x7076);
        let k = s.issuer_keys(p, Derivation::Specific, epoch(6)).unwrap();
        let want = IssuerKeys::with_derivation(OLD, p, Derivation::Specific, epoch(6)).unwrap();
        assert_eq!(k.secret_value(), want.secret_value());
    }

    #[test]
    fn the_previous_secret_is_needed_until_the_last_epoch_it_derives_ends_plus_grace() {
        let schedule = EpochSchedule::new(D, 5).unwrap();
        for at in [5 * u64::from(D), 5 * u64::from(D) + 999] {
            let until = RotatingSecret::previous_needed_until_s(at, schedule);
            assert_eq!(until, 7 * u64::from(D) + 5);
            let s = RotatingSecret::rotated(NEW, OLD, at).unwrap();
            let last = schedule.epoch_at(until - 6).unwrap();
            assert_eq!(s.master_for(last), OLD);
            assert_eq!(s.master_for(schedule.next(last).unwrap()), NEW);
        }
    }

    #[test]
    fn a_keyring_keeps_its_keys_across_a_rotation_and_takes_the_new_secret_two_epochs_on() {
        use crate::drkey::IssuerKeyring;
        let schedule = EpochSchedule::new(D, 5).unwrap();
        let at = 5 * u64::from(D) + 300;
        let mut ring = IssuerKeyring::new(OLD, Protocol::SCMP, schedule, at).unwrap();
        ring.rotate(NEW, at).unwrap();
        assert_eq!(*ring.current().secret_value(), sv(OLD, epoch(5)));
        ring.advance(6 * u64::from(D)).unwrap();
        assert_eq!(*ring.current().secret_value(), sv(OLD, epoch(6)));
        ring.advance(7 * u64::from(D)).unwrap();
        assert_eq!(*ring.current().secret_value(), sv(NEW, epoch(7)));
        // A keyring built from the previous secret after the rotation, told of it late.
        let mut late = IssuerKeyring::new(OLD, Protocol::SCMP, schedule, 7 * u64::from(D) + 2).unwrap();
        late.rotate(NEW, at).unwrap();
        let accepted: Vec<_> = late.accepted(7 * u64::from(D) + 2).map(|k| *k.secret_value()).collect();
        assert_eq!(accepted, [sv(NEW, epoch(7)), sv(OLD, epoch(6))]);
    }
}
