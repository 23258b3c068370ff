//! The fast side of DRKey: an AS's router or control service that derives any key it
//! issues from its secret value on demand, with no table per peer AS or host.
//!
//! [`IssuerKeys`] holds one secret value with its AES key schedule already expanded, so a
//! Level-1 key costs one AES block and a Level-2 key one key expansion and one or two
//! blocks more. [`IssuerKeyring`] keeps the current and previous epoch's keys for the
//! rollover rule of [`EpochSchedule`].

use std::fmt;

use super::{
    level1_with, AsHostKey, Derivation, DrkeyError, Epoch, EpochSchedule, HostAddr, HostAsKey, HostHostKey, Level1Key,
    Protocol, RotatingSecret, SecretValue,
};
use crate::aes::Aes128;
use crate::wire::ia::IsdAsn;

/// The keys AS A issues for one protocol in one epoch.
#[derive(Clone)]
pub struct IssuerKeys {
    protocol: Protocol,
    derivation: Derivation,
    epoch: Epoch,
    sv: SecretValue,
    cipher: Aes128,
}

impl fmt::Debug for IssuerKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuerKeys")
            .field("protocol", &self.protocol)
            .field("derivation", &self.derivation)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl IssuerKeys {
    /// Keys for `protocol` in `epoch` under the scheme SCION's control service picks for it
    /// ([`Derivation::for_protocol`]).
    pub fn new(master_secret: &[u8], protocol: Protocol, epoch: Epoch) -> Result<Self, DrkeyError> {
        Self::with_derivation(master_secret, protocol, Derivation::for_protocol(protocol), epoch)
    }

    /// Keys under an explicitly chosen scheme; the secret value is that of
    /// `derivation.sv_protocol(protocol)`.
    pub fn with_derivation(
        master_secret: &[u8],
        protocol: Protocol,
        derivation: Derivation,
        epoch: Epoch,
    ) -> Result<Self, DrkeyError> {
        let sv = SecretValue::derive(master_secret, derivation.sv_protocol(protocol), epoch)?;
        Ok(Self::from_secret_value(sv, protocol, derivation, epoch))
    }

    /// Keys from a secret value handed out by the control service (a router never needs
    /// the master secret). `sv` must be the one of `derivation.sv_protocol(protocol)`.
    pub fn from_secret_value(sv: SecretValue, protocol: Protocol, derivation: Derivation, epoch: Epoch) -> Self {
        Self { protocol, derivation, epoch, cipher: Aes128::new(sv.as_bytes()), sv }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }
    pub fn derivation(&self) -> Derivation {
        self.derivation
    }
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }
    pub fn secret_value(&self) -> &SecretValue {
        &self.sv
    }

    /// `K_{A→B}`.
    #[inline]
    pub fn level1(&self, dst_ia: IsdAsn) -> Level1Key {
        self.level1_on(crate::cpu::Detect, dst_ia)
    }

    /// [`Self::level1`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
    #[inline(always)]
    pub fn level1_on(&self, cpu: impl crate::cpu::Cpu, dst_ia: IsdAsn) -> Level1Key {
        level1_with(cpu, &self.cipher, dst_ia)
    }

    /// `K_{A→B:H_B}`.
    #[inline]
    pub fn as_host(&self, dst_ia: IsdAsn, dst_host: &HostAddr) -> AsHostKey {
        self.as_host_on(crate::cpu::Detect, dst_ia, dst_host)
    }

    /// [`Self::as_host`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
    #[inline(always)]
    pub fn as_host_on(&self, cpu: impl crate::cpu::Cpu, dst_ia: IsdAsn, dst_host: &HostAddr) -> AsHostKey {
        level1_with(cpu, &self.cipher, dst_ia).as_host_on(cpu, self.derivation, self.protocol, dst_host)
    }

    /// `K_{A:H_A→B}` (H_A is a host of this AS, B the remote AS).
    pub fn host_as(&self, dst_ia: IsdAsn, src_host: &HostAddr) -> HostAsKey {
        self.level1(dst_ia).host_as(self.derivation, self.protocol, src_host)
    }

    /// `K_{A:H_A→B:H_B}`.
    pub fn host_host(&self, dst_ia: IsdAsn, src_host: &HostAddr, dst_host: &HostAddr) -> HostHostKey {
        self.host_as(dst_ia, src_host).host_host(dst_host)
    }
}

/// An issuer's keys across epochs: the current epoch's, and the previous epoch's for as long
/// as the grace period lets verifiers accept them.
///
/// Call [`IssuerKeyring::advance`] with the clock now and then (at least once per epoch); it
/// runs the PBKDF2 of a new secret value only at a rollover. Verification then tries every
/// key of [`IssuerKeyring::accepted`] (at most two). Each epoch's keys derive from the master
/// secret [`RotatingSecret`] picks for it.
pub struct IssuerKeyring {
    secret: RotatingSecret,
    protocol: Protocol,
    derivation: Derivation,
    schedule: EpochSchedule,
    current: IssuerKeys,
    previous: Option<IssuerKeys>,
}

impl fmt::Debug for IssuerKeyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuerKeyring")
            .field("schedule", &self.schedule)
            .field("current", &self.current)
            .field("previous", &self.previous)
            .finish_non_exhaustive()
    }
}

impl IssuerKeyring {
    /// A keyring at time `now` (Unix s) for `protocol` under SCION's scheme choice.
    pub fn new(
        master_secret: &[u8],
        protocol: Protocol,
        schedule: EpochSchedule,
        now: u64,
    ) -> Result<Self, DrkeyError> {
        Self::with_secret(RotatingSecret::new(master_secret)?, protocol, schedule, now)
    }

    /// [`IssuerKeyring::new`] for a master secret that may have been rotated.
    pub fn with_secret(
        secret: RotatingSecret,
        protocol: Protocol,
        schedule: EpochSchedule,
        now: u64,
    ) -> Result<Self, DrkeyError> {
        let derivation = Derivation::for_protocol(protocol);
        let (current, previous) = schedule.accepted_at(now)?;
        let keys = |e| secret.issuer_keys(protocol, derivation, e);
        Ok(Self {
            current: keys(current)?,
            previous: previous.map(keys).transpose()?,
            secret,
            protocol,
            derivation,
            schedule,
        })
    }

    /// The master secret is now `next`, since `rotated_at_s`. The keys in hand are derived
    /// again under [`RotatingSecret`]'s choice: for a rotation just made they stay what they
    /// were (their epochs began before it); a keyring built from the previous secret when the
    /// rotation was older takes the new one's where the choice says so.
    pub fn rotate(&mut self, next: &[u8], rotated_at_s: u64) -> Result<(), DrkeyError> {
        self.secret.rotate(next, rotated_at_s)?;
        let keys = |k: &IssuerKeys| self.secret.issuer_keys(self.protocol, self.derivation, k.epoch);
        let current = keys(&self.current)?;
        let previous = self.previous.as_ref().map(keys).transpose()?;
        (self.current, self.previous) = (current, previous);
        Ok(())
    }

    /// Moves to the epoch current at `now`; returns whether it changed. The old current
    /// keys become the previous ones if their epoch directly precedes the new one.
    pub fn advance(&mut self, now: u64) -> Result<bool, DrkeyError> {
        let epoch = self.schedule.epoch_at(now)?;
        if epoch == self.current.epoch {
            return Ok(false);
        }
        let next = self.secret.issuer_keys(self.protocol, self.derivation, epoch)?;
        let old = std::mem::replace(&mut self.current, next);
        self.previous = (old.epoch.end_s == epoch.begin_s).then_some(old);
        Ok(true)
    }

    pub fn schedule(&self) -> EpochSchedule {
        self.schedule
    }

    /// The keys senders use (as of the last [`IssuerKeyring::advance`]).
    pub fn current(&self) -> &IssuerKeys {
        &self.current
    }

    /// The keys a verifier accepts at `t`: those whose epoch contains `t` or ended less than
    /// the grace period before it. Empty if `t` lies outside what the keyring holds.
    pub fn accepted(&self, t: u64) -> impl Iterator<Item = &IssuerKeys> {
        let grace = self.schedule.grace_s();
        std::iter::once(&self.current).chain(self.previous.as_ref()).filter(move |k| k.epoch.accepts(t, grace))
    }
}
