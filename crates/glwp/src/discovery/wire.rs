//! The discovery message (Alg. 1): one layout for the request on the forward path, the
//! response on the return path and the refusal sent to the source, for a path of ℓ ASes
//! (position 0 the source, 1 … ℓ−1 the on-path ASes). Every section has room for all ℓ ASes
//! from the start, so an AS fills its slots in place and the length never changes:
//!
//! ```text
//! | kind (1) | ℓ (1) | HP (1) | reserved (1) | ts_pkt (8) | AID (8) |
//! | NId: ℓ × 8 | π: ℓ × (in (2) | out (2)) | Auth: ℓ × 16 | HV: ℓ × (DIV | M | CON, 8 each) |
//! | sealed hop keys: (ℓ − 1) × 16 |
//! ```
//!
//! All integers big-endian; length `4 + 68ℓ` bytes. docs/glwp.md has the field diagram and
//! what each kind carries.

use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::matrix::InterfaceId;

/// The most ASes a discovery path may have (source included): the transmission header counts
/// on-path ASes in one byte, and 64 keeps a message within 4.4 kB.
pub const MAX_ASES: usize = 64;

/// Field offsets: the one place they are written down. Sections after the fixed part start at
/// offsets that depend on ℓ.
pub mod field {
    use std::ops::Range;
    pub const KIND: usize = 0;
    pub const ASES: usize = 1;
    pub const HOP_POINTER: usize = 2;
    pub const RESERVED: usize = 3;
    pub const TS_PKT: Range<usize> = 4..12;
    pub const AID: Range<usize> = 12..20;
    /// Start of the AS identifiers `NId_0 … NId_{ℓ−1}` (`NId_0` = Src).
    pub const NID: usize = 20;
    pub const NID_LEN: usize = 8;
    pub const PAIR_LEN: usize = 4;
    pub const AUTH_LEN: usize = 16;
    /// One AS's hop values: `DIV (8) | M (8) | CON (8)`, bit/s.
    pub const HV_LEN: usize = 24;
    pub const SEALED_LEN: usize = 16;

    pub const fn nid(k: usize) -> Range<usize> {
        NID + NID_LEN * k..NID + NID_LEN * (k + 1)
    }
    pub const fn pair(l: usize, k: usize) -> Range<usize> {
        let at = NID + NID_LEN * l + PAIR_LEN * k;
        at..at + PAIR_LEN
    }
    pub const fn auth(l: usize, k: usize) -> Range<usize> {
        let at = NID + (NID_LEN + PAIR_LEN) * l + AUTH_LEN * k;
        at..at + AUTH_LEN
    }
    pub const fn hop_values(l: usize, k: usize) -> Range<usize> {
        let at = NID + (NID_LEN + PAIR_LEN + AUTH_LEN) * l + HV_LEN * k;
        at..at + HV_LEN
    }
    /// Sealed hop key of on-path AS `k` (`1 ≤ k < ℓ`).
    pub const fn sealed(l: usize, k: usize) -> Range<usize> {
        let at = NID + (NID_LEN + PAIR_LEN + AUTH_LEN + HV_LEN) * l + SEALED_LEN * (k - 1);
        at..at + SEALED_LEN
    }
}

/// Length of a message for a path of `l` ASes.
pub const fn message_len(l: usize) -> usize {
    field::sealed(l, 1).start + field::SEALED_LEN * (l - 1)
}

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Forward path: HP is the on-path AS it is for, hop values `0 … HP−1` are filled.
    Request = 1,
    /// Return path: all hop values are filled, HP is the AS it is for (0: the source), the
    /// sealed hop keys of ASes `HP+1 … ℓ−1` are filled.
    Response = 2,
    /// To the source: AS HP refused the request, its preliminary guarantee below τ; hop values
    /// `0 … HP` are filled.
    Refusal = 3,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Self> {
        match b {
            1 => Some(Kind::Request),
            2 => Some(Kind::Response),
            3 => Some(Kind::Refusal),
            _ => None,
        }
    }
}

/// Hop values as announced on the wire, before the check `M ≤ DIV`, `M ≤ CON`
/// ([`crate::HopValues::new`]) that blames the AS announcing them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Announced {
    pub div_bps: u64,
    pub m_bps: u64,
    pub con_bps: u64,
}

impl Announced {
    pub fn bytes(&self) -> [u8; field::HV_LEN] {
        let mut b = [0u8; field::HV_LEN];
        b[0..8].copy_from_slice(&self.div_bps.to_be_bytes());
        b[8..16].copy_from_slice(&self.m_bps.to_be_bytes());
        b[16..24].copy_from_slice(&self.con_bps.to_be_bytes());
        b
    }
    fn from_bytes(b: &[u8]) -> Self {
        let u = |r: std::ops::Range<usize>| u64::from_be_bytes(b[r].try_into().unwrap_or_default());
        Announced { div_bps: u(0..8), m_bps: u(8..16), con_bps: u(16..24) }
    }
}

impl From<crate::HopValues> for Announced {
    fn from(hv: crate::HopValues) -> Self {
        Announced { div_bps: hv.divergent_bps(), m_bps: hv.entry_bps(), con_bps: hv.convergent_bps() }
    }
}

/// Why bytes are no discovery message.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("{actual} bytes are shorter than the {needed} the message needs")]
    Truncated { needed: usize, actual: usize },
    #[error("unknown message kind {0}")]
    UnknownKind(u8),
    #[error("a path of {0} ASes: discovery needs 2 to {MAX_ASES}")]
    PathLength(u8),
    #[error("a message for {ases} ASes is {needed} bytes, not {actual}")]
    LengthMismatch { ases: u8, needed: usize, actual: usize },
    #[error("hop pointer {hop_pointer} is beyond the {ases} ASes")]
    HopPointer { hop_pointer: u8, ases: u8 },
    #[error("the reserved byte is {0}, not 0")]
    Reserved(u8),
}

/// A checked zero-copy view of a discovery message that fills its buffer exactly.
#[derive(Debug)]
pub struct Message<T: AsRef<[u8]>> {
    buf: T,
}

impl<T: AsRef<[u8]>> Message<T> {
    /// Checks the kind, `2 ≤ ℓ ≤ MAX_ASES`, the exact length and `HP < ℓ`.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < field::NID {
            return Err(WireError::Truncated { needed: field::NID, actual: b.len() });
        }
        Kind::from_u8(b[field::KIND]).ok_or(WireError::UnknownKind(b[field::KIND]))?;
        let ases = b[field::ASES];
        if !(2..=MAX_ASES).contains(&usize::from(ases)) {
            return Err(WireError::PathLength(ases));
        }
        let needed = message_len(usize::from(ases));
        if b.len() < needed {
            return Err(WireError::Truncated { needed, actual: b.len() });
        }
        if b.len() != needed {
            return Err(WireError::LengthMismatch { ases, needed, actual: b.len() });
        }
        if b[field::HOP_POINTER] >= ases {
            return Err(WireError::HopPointer { hop_pointer: b[field::HOP_POINTER], ases });
        }
        if b[field::RESERVED] != 0 {
            return Err(WireError::Reserved(b[field::RESERVED]));
        }
        Ok(Self { buf })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    fn array<const N: usize>(&self, r: std::ops::Range<usize>) -> [u8; N] {
        let mut a = [0; N];
        a.copy_from_slice(&self.b()[r.start..r.start + N]);
        a
    }
    fn l(&self) -> usize {
        usize::from(self.ases())
    }

    pub fn kind(&self) -> Kind {
        // Checked by `new_checked`; the setter writes only kinds.
        Kind::from_u8(self.b()[field::KIND]).unwrap_or(Kind::Request)
    }
    /// ℓ: the ASes on the path, the source included.
    pub fn ases(&self) -> u8 {
        self.b()[field::ASES]
    }
    pub fn hop_pointer(&self) -> usize {
        usize::from(self.b()[field::HOP_POINTER])
    }
    pub fn ts_pkt(&self) -> u64 {
        u64::from_be_bytes(self.array(field::TS_PKT))
    }
    pub fn aid(&self) -> u64 {
        u64::from_be_bytes(self.array(field::AID))
    }
    /// `NId_k`, `k < ℓ` (callers index within [`Self::ases`]).
    pub fn nid(&self, k: usize) -> IsdAsn {
        IsdAsn::from_bytes(self.array(field::nid(k)))
    }
    pub fn src(&self) -> IsdAsn {
        self.nid(0)
    }
    /// Interface pair `(i_k, j_k)` of π.
    pub fn pair(&self, k: usize) -> (InterfaceId, InterfaceId) {
        let p: [u8; 4] = self.array(field::pair(self.l(), k));
        (u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]]))
    }
    pub fn auth(&self, k: usize) -> [u8; 16] {
        self.array(field::auth(self.l(), k))
    }
    pub fn hop_values(&self, k: usize) -> Announced {
        Announced::from_bytes(&self.b()[field::hop_values(self.l(), k)])
    }
    /// Sealed hop key of on-path AS `k`, `1 ≤ k < ℓ`.
    pub fn sealed(&self, k: usize) -> [u8; 16] {
        self.array(field::sealed(self.l(), k))
    }
    pub fn ases_list(&self) -> Vec<IsdAsn> {
        (0..self.l()).map(|k| self.nid(k)).collect()
    }
    pub fn path(&self) -> Vec<(InterfaceId, InterfaceId)> {
        (0..self.l()).map(|k| self.pair(k)).collect()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Message<T> {
    fn put(&mut self, r: std::ops::Range<usize>, v: &[u8]) {
        self.buf.as_mut()[r].copy_from_slice(v);
    }
    pub fn set_kind(&mut self, kind: Kind) {
        self.buf.as_mut()[field::KIND] = kind as u8;
    }
    /// Sets HP; values `≥ ℓ` are ignored (a view stays checked).
    pub fn set_hop_pointer(&mut self, k: usize) {
        if let Ok(hp) = u8::try_from(k) {
            if hp < self.ases() {
                self.buf.as_mut()[field::HOP_POINTER] = hp;
            }
        }
    }
    pub fn set_auth(&mut self, k: usize, auth: &[u8; 16]) {
        let l = self.l();
        self.put(field::auth(l, k), auth);
    }
    pub fn set_hop_values(&mut self, k: usize, hv: Announced) {
        let l = self.l();
        self.put(field::hop_values(l, k), &hv.bytes());
    }
    pub fn set_sealed(&mut self, k: usize, sealed: &[u8; 16]) {
        let l = self.l();
        self.put(field::sealed(l, k), sealed);
    }
}

/// A message as values: `ases`, `path`, `auths` and `hop_values` have ℓ entries, `sealed`
/// ℓ − 1 (on-path ASes 1 … ℓ−1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageRepr {
    pub kind: Kind,
    pub hop_pointer: u8,
    pub ts_pkt: u64,
    pub aid: u64,
    pub ases: Vec<IsdAsn>,
    pub path: Vec<(InterfaceId, InterfaceId)>,
    pub auths: Vec<[u8; 16]>,
    pub hop_values: Vec<Announced>,
    pub sealed: Vec<[u8; 16]>,
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum EmitError {
    #[error("sections of {ases} ASes, {pairs} pairs, {auths} authenticators, {hop_values} hop values and {sealed} sealed keys do not describe one path of 2 to {MAX_ASES} ASes")]
    Shape { ases: usize, pairs: usize, auths: usize, hop_values: usize, sealed: usize },
    #[error("hop pointer {hop_pointer} is beyond the {ases} ASes")]
    HopPointer { hop_pointer: u8, ases: usize },
}

impl MessageRepr {
    pub fn parse<T: AsRef<[u8]>>(m: &Message<T>) -> Self {
        let l = usize::from(m.ases());
        MessageRepr {
            kind: m.kind(),
            hop_pointer: m.b()[field::HOP_POINTER],
            ts_pkt: m.ts_pkt(),
            aid: m.aid(),
            ases: m.ases_list(),
            path: m.path(),
            auths: (0..l).map(|k| m.auth(k)).collect(),
            hop_values: (0..l).map(|k| m.hop_values(k)).collect(),
            sealed: (1..l).map(|k| m.sealed(k)).collect(),
        }
    }

    fn checked_len(&self) -> Result<usize, EmitError> {
        let l = self.ases.len();
        let shape = EmitError::Shape {
            ases: l,
            pairs: self.path.len(),
            auths: self.auths.len(),
            hop_values: self.hop_values.len(),
            sealed: self.sealed.len(),
        };
        if !(2..=MAX_ASES).contains(&l)
            || self.path.len() != l
            || self.auths.len() != l
            || self.hop_values.len() != l
            || self.sealed.len() != l - 1
        {
            return Err(shape);
        }
        if usize::from(self.hop_pointer) >= l {
            return Err(EmitError::HopPointer { hop_pointer: self.hop_pointer, ases: l });
        }
        Ok(message_len(l))
    }

    /// The message's length, if its shape is valid.
    pub fn emitted_len(&self) -> Result<usize, EmitError> {
        self.checked_len()
    }

    /// The message's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, EmitError> {
        let len = self.checked_len()?;
        let l = self.ases.len();
        let mut b = vec![0u8; len];
        b[field::KIND] = self.kind as u8;
        // `checked_len` bounds ℓ by MAX_ASES.
        b[field::ASES] = l as u8;
        b[field::HOP_POINTER] = self.hop_pointer;
        b[field::TS_PKT].copy_from_slice(&self.ts_pkt.to_be_bytes());
        b[field::AID].copy_from_slice(&self.aid.to_be_bytes());
        for k in 0..l {
            b[field::nid(k)].copy_from_slice(&self.ases[k].to_bytes());
            let (i, j) = self.path[k];
            let p = field::pair(l, k);
            b[p.start..p.start + 2].copy_from_slice(&i.to_be_bytes());
            b[p.start + 2..p.end].copy_from_slice(&j.to_be_bytes());
            b[field::auth(l, k)].copy_from_slice(&self.auths[k]);
            b[field::hop_values(l, k)].copy_from_slice(&self.hop_values[k].bytes());
        }
        for k in 1..l {
            b[field::sealed(l, k)].copy_from_slice(&self.sealed[k - 1]);
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(l: usize) -> MessageRepr {
        MessageRepr {
            kind: Kind::Response,
            hop_pointer: 1,
            ts_pkt: 0x0102_0304_0506_0708,
            aid: 0x1112_1314_1516_1718,
            ases: (0..l as u64).map(|k| IsdAsn::new(1, 0xff00_0000_0110 + k)).collect(),
            path: (0..l as u16).map(|k| (k, k + 100)).collect(),
            auths: (0..l as u8).map(|k| [k; 16]).collect(),
            hop_values: (0..l as u64).map(|k| Announced { div_bps: k, m_bps: k + 1, con_bps: k + 2 }).collect(),
            sealed: (1..l as u8).map(|k| [0xa0 | k; 16]).collect(),
        }
    }

    #[test]
    fn the_layout_for_three_ases() {
        assert_eq!(message_len(3), 4 + 68 * 3);
        assert_eq!(field::pair(3, 0), 44..48);
        assert_eq!(field::auth(3, 0), 56..72);
        assert_eq!(field::hop_values(3, 0), 104..128);
        assert_eq!(field::sealed(3, 1), 176..192);
        let bytes = sample(3).to_bytes().unwrap();
        assert_eq!(&bytes[..4], &[2, 3, 1, 0]);
        assert_eq!(&bytes[field::hop_values(3, 1)][..8], &1u64.to_be_bytes());
        assert_eq!(&bytes[field::sealed(3, 2)], &[0xa2; 16]);
    }

    #[test]
    fn parse_and_emit_round_trip() {
        for l in [2, 5, MAX_ASES] {
            let repr = sample(l);
            let bytes = repr.to_bytes().unwrap();
            assert_eq!(bytes.len(), message_len(l));
            let m = Message::new_checked(&bytes[..]).unwrap();
            assert_eq!(MessageRepr::parse(&m), repr);
        }
    }

    #[test]
    fn malformed_messages_are_named() {
        let good = sample(3).to_bytes().unwrap();
        assert_eq!(Message::new_checked(&good[..5]).unwrap_err(), WireError::Truncated { needed: 20, actual: 5 });
        assert_eq!(
            Message::new_checked(&good[..100]).unwrap_err(),
            WireError::Truncated { needed: message_len(3), actual: 100 }
        );
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(Message::new_checked(&long[..]), Err(WireError::LengthMismatch { .. })));
        let with = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            Message::new_checked(b).unwrap_err()
        };
        assert_eq!(with(field::KIND, 9), WireError::UnknownKind(9));
        assert_eq!(with(field::ASES, 1), WireError::PathLength(1));
        assert_eq!(with(field::ASES, 65), WireError::PathLength(65));
        assert_eq!(with(field::HOP_POINTER, 3), WireError::HopPointer { hop_pointer: 3, ases: 3 });
        assert_eq!(with(field::RESERVED, 1), WireError::Reserved(1));
        let mut bad = sample(3);
        bad.sealed.pop();
        assert!(matches!(bad.to_bytes(), Err(EmitError::Shape { .. })));
    }
}
