//! DRKey: symmetric keys between an AS and end hosts that the AS's infrastructure
//! re-derives on the fly instead of storing, byte-compatible with scionproto
//! (`pkg/drkey`, `pkg/drkey/specific`, `pkg/drkey/generic`).
//!
//! As the appendix "DRKey" of *Zero-setup Intermediate-rate Communication Guarantees in a
//! Global Internet* puts it, AS A holds a secret and answers AS B with
//! `K_{A→B} = PRF_{K_A}(B)`; B derives keys for its hosts from that, and A's border routers
//! recompute any of them from the packet header alone: no per-host table. SCION fixes the
//! hierarchy and the bytes (docs.scion.org, "DRKey"):
//!
//! | level | key | derivation |
//! |---|---|---|
//! | 0 | `SV_A` | PBKDF2-HMAC-SHA256(`len(master)` (8 B) ‖ master ‖ protocol (2 B) ‖ epoch begin (4 B) ‖ epoch end (4 B), salt `"Derive DRKey Key"`, 1000 iterations, 16 B) |
//! | 1 | `K_{A→B}` | `PRF_SV(0x00 ‖ IA(B) (8 B))` |
//! | 2 | `K_{A→B:H_B}` | `PRF_{K_{A→B}}(0x01 ‖ [protocol (2 B)] ‖ type/len(H_B) ‖ H_B)` |
//! | 2 | `K_{A:H_A→B}` | `PRF_{K_{A→B}}(0x02 ‖ [protocol (2 B)] ‖ type/len(H_A) ‖ H_A)` |
//! | 3 | `K_{A:H_A→B:H_B}` | `PRF_{K_{A:H_A→B}}(0x03 ‖ type/len(H_B) ‖ H_B)` |
//!
//! The PRF is AES-128 CBC-MAC with a zero IV over the input zero-padded to whole blocks
//! (plain CBC-MAC, safe here because every input field has a fixed or prefixed length).
//! Integers are big-endian. The bracketed protocol is present only in the
//! [`Derivation::Generic`] scheme; see [`Derivation`] for which protocols use which.

mod epoch;
mod host;
mod issuer;
mod rotation;

pub use epoch::{Epoch, EpochSchedule};
pub use host::{svc, HostAddr};
pub use issuer::{IssuerKeyring, IssuerKeys};
pub use rotation::RotatingSecret;

use std::fmt;

use thiserror::Error;

use crate::aes::Aes128;
use crate::cpu::{Cpu, Detect};
use crate::wire::ia::IsdAsn;

/// PBKDF2 salt of the secret value derivation.
pub const SV_SALT: &[u8] = b"Derive DRKey Key";
/// PBKDF2 iterations of the secret value derivation.
pub const SV_ITERATIONS: u32 = 1000;
/// Length of every DRKey key.
pub const KEY_LEN: usize = 16;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum DrkeyError {
    /// scionproto refuses a zero-length master secret (`DeriveSV`): it would make every
    /// AS's secret values public.
    #[error("the master secret is empty")]
    EmptyMasterSecret,
    #[error("the host address is empty")]
    EmptyHost,
    #[error("host address {0:?} carries an IPv6 zone, which a SCION host address cannot hold")]
    ZonedHost(String),
    #[error("host address {0:?} is neither an SVC name (DS, CS, Wildcard, optionally _A or _M) nor an IP address")]
    BadHost(String),
    #[error("epoch [{begin_s}, {end_s}) does not begin before it ends")]
    BadEpoch { begin_s: u32, end_s: u32 },
    #[error("epoch schedule of {duration_s} s with {grace_s} s grace: the length must be positive and exceed the grace period")]
    BadSchedule { duration_s: u32, grace_s: u32 },
    #[error("no epoch with 32-bit Unix times contains time {0}")]
    EpochOutOfRange(u64),
}

/// A DRKey protocol identifier (the protobuf enum `drkey.v1.Protocol`, 16 bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Protocol(pub u16);

impl Protocol {
    /// The generic scheme's own id: its secret values and Level-1 keys serve every
    /// protocol without one of its own.
    pub const GENERIC: Self = Self(0);
    /// The SCION Control Message Protocol.
    pub const SCMP: Self = Self(1);

    /// Whether scionproto predefines this id (its protobuf enum names it); only those get
    /// protocol-specific secret values.
    pub const fn is_predefined(self) -> bool {
        matches!(self, Self::GENERIC | Self::SCMP)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::GENERIC => f.write_str("GENERIC"),
            Self::SCMP => f.write_str("SCMP"),
            Self(p) => write!(f, "{p}"),
        }
    }
}

/// The two derivation schemes of SCION's DRKey.
///
/// * `Specific`: the protocol enters only the secret value; Level 1 and 2 inputs do not
///   name it. An AS keeps one secret value per such protocol, so it can hand exactly that
///   one to a service (e.g. a router verifying SCMP) without exposing other protocols.
/// * `Generic`: secret value and Level-1 key are those of [`Protocol::GENERIC`], and the
///   protocol enters the Level-2 input. This lets applications define "niche" protocols
///   without the AS knowing them in advance.
///
/// Level 3 (host-host) is the same in both: derived from the host-AS key, with no protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Derivation {
    Specific,
    Generic,
}

impl Derivation {
    /// scionproto's control service rule: `Specific` for predefined protocols (0, 1),
    /// `Generic` for every other id.
    pub const fn for_protocol(p: Protocol) -> Self {
        if p.is_predefined() {
            Derivation::Specific
        } else {
            Derivation::Generic
        }
    }

    /// The protocol whose secret value (and Level-1 key) this scheme uses for `p`.
    pub const fn sv_protocol(self, p: Protocol) -> Protocol {
        match self {
            Derivation::Specific => p,
            Derivation::Generic => Protocol::GENERIC,
        }
    }
}

/// The first input byte of every PRF derivation: it separates the key types, so that
/// e.g. `K_{A:H→B} ≠ K_{A→B:H}` for the same host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum KeyType {
    AsAs = 0,
    AsHost = 1,
    HostAs = 2,
    HostHost = 3,
}

macro_rules! key_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// `Debug` does not print the key.
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name([u8; KEY_LEN]);

        impl $name {
            pub const fn from_bytes(b: [u8; KEY_LEN]) -> Self {
                Self(b)
            }
            pub const fn as_bytes(&self) -> &[u8; KEY_LEN] {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(concat!(stringify!($name), "(..)"))
            }
        }
    };
}

key_newtype!(
    /// Level 0: an AS's secret value for one protocol and epoch.
    SecretValue
);
key_newtype!(
    /// Level 1: `K_{A→B}`, issued by AS A to AS B.
    Level1Key
);
key_newtype!(
    /// Level 2: `K_{A→B:H_B}`, between AS A and host H_B in AS B.
    AsHostKey
);
key_newtype!(
    /// Level 2: `K_{A:H_A→B}`, between host H_A in AS A and AS B; the intermediate key from
    /// which H_A derives host-host keys.
    HostAsKey
);
key_newtype!(
    /// Level 3: `K_{A:H_A→B:H_B}`, between host H_A in AS A and host H_B in AS B.
    HostHostKey
);

/// DRKey's PRF: AES-128 CBC-MAC with a zero IV over `input` zero-padded to a multiple of
/// 16 bytes; the output is the last cipher block.
#[inline]
pub fn prf(key: &[u8; KEY_LEN], input: &[u8]) -> [u8; KEY_LEN] {
    prf_on(Detect, key, input)
}

/// [`prf`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
#[inline(always)]
pub fn prf_on(cpu: impl Cpu, key: &[u8; KEY_LEN], input: &[u8]) -> [u8; KEY_LEN] {
    cbc_mac(cpu, &Aes128::new_on(cpu, key), input)
}

#[inline(always)]
fn cbc_mac(cpu: impl Cpu, cipher: &Aes128, input: &[u8]) -> [u8; KEY_LEN] {
    let mut state = [0u8; KEY_LEN];
    // A short last chunk XORs only its bytes: the same as XORing a zero-padded block.
    for chunk in input.chunks(KEY_LEN) {
        state.iter_mut().zip(chunk).for_each(|(s, b)| *s ^= b);
        state = cipher.encrypt_on(cpu, &state);
    }
    state
}

impl SecretValue {
    /// `SV = PBKDF2-HMAC-SHA256(len(master) ‖ master ‖ protocol ‖ begin ‖ end)`; the master
    /// secret may have any non-zero length (HMAC hashes long ones first).
    pub fn derive(master_secret: &[u8], protocol: Protocol, epoch: Epoch) -> Result<Self, DrkeyError> {
        if master_secret.is_empty() {
            return Err(DrkeyError::EmptyMasterSecret);
        }
        let mut password = Vec::with_capacity(8 + master_secret.len() + 10);
        password.extend_from_slice(&(master_secret.len() as u64).to_be_bytes());
        password.extend_from_slice(master_secret);
        password.extend_from_slice(&protocol.0.to_be_bytes());
        password.extend_from_slice(&epoch.begin_s.to_be_bytes());
        password.extend_from_slice(&epoch.end_s.to_be_bytes());
        let mut sv = [0u8; KEY_LEN];
        pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&password, SV_SALT, SV_ITERATIONS, &mut sv);
        // The buffer holds the master secret; do not leave it in freed memory.
        password.fill(0);
        std::hint::black_box(&password);
        Ok(Self(sv))
    }

    /// `K_{A→B}`; the secret value is AS A's.
    #[inline]
    pub fn level1(&self, dst_ia: IsdAsn) -> Level1Key {
        level1_with(Detect, &Aes128::new(&self.0), dst_ia)
    }
}

/// Level-1 input: `0x00 ‖ IA(B)`, padded to one block.
#[inline(always)]
pub(crate) fn level1_with(cpu: impl Cpu, sv: &Aes128, dst_ia: IsdAsn) -> Level1Key {
    let mut input = [0u8; KEY_LEN];
    input[0] = KeyType::AsAs as u8;
    input[1..9].copy_from_slice(&dst_ia.to_bytes());
    Level1Key(sv.encrypt_on(cpu, &input))
}

/// Level-2/3 input: `type ‖ [protocol] ‖ type/len(host) ‖ host`, zero-padded to whole
/// blocks (at most 1 + 2 + 1 + 16 bytes, so two blocks). Returns the buffer and its length.
fn host_input(key_type: KeyType, protocol: Option<Protocol>, host: &HostAddr) -> ([u8; 2 * KEY_LEN], usize) {
    let mut input = [0u8; 2 * KEY_LEN];
    input[0] = key_type as u8;
    let mut at = 1;
    if let Some(p) = protocol {
        input[1..3].copy_from_slice(&p.0.to_be_bytes());
        at = 3;
    }
    input[at] = host.type_len();
    let (raw, len) = host.encode();
    input[at + 1..at + 1 + len].copy_from_slice(&raw[..len]);
    let used = at + 1 + len;
    (input, used.div_ceil(KEY_LEN) * KEY_LEN)
}

#[inline(always)]
fn level2(
    cpu: impl Cpu,
    l1: &Level1Key,
    key_type: KeyType,
    derivation: Derivation,
    protocol: Protocol,
    host: &HostAddr,
) -> [u8; KEY_LEN] {
    let protocol = (derivation == Derivation::Generic).then_some(protocol);
    let (input, len) = host_input(key_type, protocol, host);
    prf_on(cpu, &l1.0, &input[..len])
}

impl Level1Key {
    /// `K_{A→B:H_B}`. Under [`Derivation::Specific`] `protocol` is not used: it is already
    /// in the secret value this key descends from.
    #[inline]
    pub fn as_host(&self, derivation: Derivation, protocol: Protocol, dst_host: &HostAddr) -> AsHostKey {
        self.as_host_on(Detect, derivation, protocol, dst_host)
    }

    /// [`Self::as_host`] on the code `cpu` says the CPU runs.
    #[inline(always)]
    pub fn as_host_on(
        &self,
        cpu: impl Cpu,
        derivation: Derivation,
        protocol: Protocol,
        dst_host: &HostAddr,
    ) -> AsHostKey {
        AsHostKey(level2(cpu, self, KeyType::AsHost, derivation, protocol, dst_host))
    }

    /// `K_{A:H_A→B}`; `protocol` as for [`Level1Key::as_host`].
    pub fn host_as(&self, derivation: Derivation, protocol: Protocol, src_host: &HostAddr) -> HostAsKey {
        HostAsKey(level2(Detect, self, KeyType::HostAs, derivation, protocol, src_host))
    }
}

impl HostAsKey {
    /// `K_{A:H_A→B:H_B}` from `K_{A:H_A→B}`, the same in both schemes.
    pub fn host_host(&self, dst_host: &HostAddr) -> HostHostKey {
        let (input, len) = host_input(KeyType::HostHost, None, dst_host);
        HostHostKey(prf(&self.0, &input[..len]))
    }
}
