//! The GLWP transmission header (the GLWP paper, Table I), for a path of ℓ ASes with
//! λ = ℓ − 1 on-path ASes:
//!
//! ```text
//! | Src (8) | λ (1) | HP (1) | π: ℓ × (in (2) | out (2)) | β (4) | AID (8) | ts_pkt (8) | ts_exp (4) | HA: λ × 3 |
//! ```
//!
//! All integers big-endian. Src is the source's SCION ISD-AS (8 bytes, where Table I has a
//! 4-byte AS identifier: docs/glwp.md says why). The path π is variable, so the fields after
//! it are at fixed offsets from its end. Length: 38 + 7λ bytes.

use aviary_qos::DropReason;
use aviary_scion::IsdAsn;
use thiserror::Error;

use crate::matrix::InterfaceId;

/// Field offsets: the one place they are written down.
pub mod field {
    use std::ops::Range;
    pub const SRC: Range<usize> = 0..8;
    pub const LAMBDA: usize = 8;
    pub const HOP_POINTER: usize = 9;
    /// Start of π; each interface pair is `in (2) | out (2)`.
    pub const PATH: usize = 10;
    pub const PAIR_LEN: usize = 4;
    /// Within a pair: the interface the packet enters by, then the one it leaves by.
    pub const PAIR_IN: Range<usize> = 0..2;
    pub const PAIR_OUT: Range<usize> = 2..4;
    /// Offsets from the end of π.
    pub mod after_path {
        use std::ops::Range;
        pub const BETA: Range<usize> = 0..4;
        pub const AID: Range<usize> = 4..12;
        pub const TS_PKT: Range<usize> = 12..20;
        pub const TS_EXP: Range<usize> = 20..24;
        /// Start of the hop authenticators.
        pub const HA: usize = 24;
    }
    pub const HA_LEN: usize = 3;
    /// `pair` (0-based) of π, from the start of the header.
    pub const fn pair(k: usize) -> Range<usize> {
        PATH + PAIR_LEN * k..PATH + PAIR_LEN * (k + 1)
    }
}

/// Offset of the fields after π for λ on-path ASes.
pub(crate) const fn after_path(lambda: u8) -> usize {
    field::PATH + field::PAIR_LEN * (lambda as usize + 1)
}

/// The interfaces `(in, out)` of an interface pair of π as the header holds it.
pub(crate) fn split_pair(pair: [u8; field::PAIR_LEN]) -> (InterfaceId, InterfaceId) {
    let at = |r: std::ops::Range<usize>| u16::from_be_bytes([pair[r.start], pair[r.start + 1]]);
    (at(field::PAIR_IN), at(field::PAIR_OUT))
}

/// Header length for λ on-path ASes.
pub const fn header_len(lambda: u8) -> usize {
    after_path(lambda) + field::after_path::HA + field::HA_LEN * lambda as usize
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum HeaderError {
    #[error("buffer of {actual} bytes is shorter than the {needed} the header needs")]
    Truncated { needed: usize, actual: usize },
    #[error("a GLWP path has at least one on-path AS (λ = 0)")]
    NoOnPathAs,
    #[error("hop pointer {hop_pointer} is beyond the {lambda} on-path ASes")]
    HopPointerOutOfRange { hop_pointer: u8, lambda: u8 },
}

impl From<HeaderError> for DropReason {
    fn from(e: HeaderError) -> Self {
        match e {
            HeaderError::Truncated { .. } => DropReason::Truncated,
            HeaderError::NoOnPathAs => DropReason::MalformedPath,
            HeaderError::HopPointerOutOfRange { .. } => DropReason::PathIndexOutOfRange,
        }
    }
}

/// A checked zero-copy view of a transmission header at the start of a buffer.
#[derive(Debug)]
pub struct Header<T: AsRef<[u8]>> {
    buf: T,
    /// Offset of the fields after π, found once by [`Self::new_checked`] (λ is fixed).
    after_path: usize,
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Checks that λ ≥ 1, that the buffer holds the whole header, and that HP ≤ λ (HP = λ: every
    /// on-path AS traversed, at the destination).
    pub fn new_checked(buf: T) -> Result<Self, HeaderError> {
        let b = buf.as_ref();
        if b.len() <= field::HOP_POINTER {
            return Err(HeaderError::Truncated { needed: field::PATH, actual: b.len() });
        }
        let (lambda, hop_pointer) = (b[field::LAMBDA], b[field::HOP_POINTER]);
        if lambda == 0 {
            return Err(HeaderError::NoOnPathAs);
        }
        let needed = header_len(lambda);
        if b.len() < needed {
            return Err(HeaderError::Truncated { needed, actual: b.len() });
        }
        if hop_pointer > lambda {
            return Err(HeaderError::HopPointerOutOfRange { hop_pointer, lambda });
        }
        Ok(Self { buf, after_path: after_path(lambda) })
    }

    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut a = [0; N];
        a.copy_from_slice(&self.b()[at..at + N]);
        a
    }

    pub fn src(&self) -> IsdAsn {
        IsdAsn::from_bytes(self.array(field::SRC.start))
    }
    pub fn lambda(&self) -> u8 {
        self.b()[field::LAMBDA]
    }
    pub fn hop_pointer(&self) -> u8 {
        self.b()[field::HOP_POINTER]
    }
    /// Interface pair `k` of π (0 = the source AS), `k ≤ λ`.
    pub fn pair(&self, k: usize) -> Option<(InterfaceId, InterfaceId)> {
        (k <= usize::from(self.lambda())).then(|| split_pair(self.array(field::pair(k).start)))
    }
    pub fn beta(&self) -> u32 {
        u32::from_be_bytes(self.array(self.after_path + field::after_path::BETA.start))
    }
    pub fn aid(&self) -> u64 {
        u64::from_be_bytes(self.array(self.after_path + field::after_path::AID.start))
    }
    pub fn ts_pkt(&self) -> u64 {
        u64::from_be_bytes(self.array(self.after_path + field::after_path::TS_PKT.start))
    }
    pub fn ts_exp(&self) -> u32 {
        u32::from_be_bytes(self.array(self.after_path + field::after_path::TS_EXP.start))
    }
    /// Hop authenticator of on-path AS `k` (1-based as in the paper: `1 ≤ k ≤ λ`).
    pub fn hop_authenticator(&self, k: usize) -> Option<[u8; field::HA_LEN]> {
        (1..=usize::from(self.lambda()))
            .contains(&k)
            .then(|| self.array(self.after_path + field::after_path::HA + field::HA_LEN * (k - 1)))
    }
    /// Header length (38 + 7λ); the GLWP payload follows.
    pub fn header_len(&self) -> usize {
        header_len(self.lambda())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Advances HP by one on-path AS (a border router after validating), saturating at λ.
    pub fn advance_hop_pointer(&mut self) {
        let hp = self.hop_pointer().saturating_add(1).min(self.lambda());
        self.buf.as_mut()[field::HOP_POINTER] = hp;
    }
    /// Sets ts_pkt (a source giving each packet of a template its own timestamp).
    pub fn set_ts_pkt(&mut self, ts_pkt: u64) {
        let at = self.after_path + field::after_path::TS_PKT.start;
        self.buf.as_mut()[at..at + 8].copy_from_slice(&ts_pkt.to_be_bytes());
    }
    /// Sets the hop authenticator of on-path AS `k` (`1 ≤ k ≤ λ`; others are ignored).
    pub fn set_hop_authenticator(&mut self, k: usize, ha: &[u8; field::HA_LEN]) {
        if (1..=usize::from(self.lambda())).contains(&k) {
            let at = self.after_path + field::after_path::HA + field::HA_LEN * (k - 1);
            self.buf.as_mut()[at..at + field::HA_LEN].copy_from_slice(ha);
        }
    }
}

/// Sets HP of the header at `header_at` in `pkt`: for a router that checked that header in an
/// earlier stage and kept only its offset, so that advancing HP checks nothing a second time
/// (the bounds check was 3 instructions a packet: GLWP router at λ = 8, callgrind, 2026-11-26,
/// 568 → 563 in batches of 32; one packet unchanged at 741).
///
/// # Safety
///
/// A whole GLWP header starts at `header_at` within `pkt` (`header_at + header_len(λ) ≤
/// pkt.len()`), as the earlier stage proved.
#[inline(always)]
pub(crate) unsafe fn set_hop_pointer(pkt: &mut [u8], header_at: usize, hop_pointer: u8) {
    debug_assert!(header_at + field::HOP_POINTER < pkt.len());
    // SAFETY: HP lies within the header, which lies within `pkt` (the caller's promise).
    unsafe { *pkt.get_unchecked_mut(header_at + field::HOP_POINTER) = hop_pointer };
}

/// The header as values. `path` has ℓ = λ + 1 pairs, `hop_authenticators` λ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderRepr {
    pub src: IsdAsn,
    pub hop_pointer: u8,
    pub path: Vec<(InterfaceId, InterfaceId)>,
    pub beta: u32,
    pub aid: u64,
    pub ts_pkt: u64,
    pub ts_exp: u32,
    pub hop_authenticators: Vec<[u8; field::HA_LEN]>,
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum EmitError {
    #[error("a path of {pairs} interface pairs needs {pairs} - 1 hop authenticators, not {has}, and 2 to 256 pairs")]
    Shape { pairs: usize, has: usize },
    #[error("hop pointer {hop_pointer} is beyond the {lambda} on-path ASes")]
    HopPointerOutOfRange { hop_pointer: u8, lambda: u8 },
    #[error("buffer of {actual} bytes is shorter than the {needed} the header needs")]
    BufferTooShort { needed: usize, actual: usize },
}

impl HeaderRepr {
    pub fn parse<T: AsRef<[u8]>>(h: &Header<T>) -> Self {
        let lambda = usize::from(h.lambda());
        HeaderRepr {
            src: h.src(),
            hop_pointer: h.hop_pointer(),
            path: (0..=lambda).filter_map(|k| h.pair(k)).collect(),
            beta: h.beta(),
            aid: h.aid(),
            ts_pkt: h.ts_pkt(),
            ts_exp: h.ts_exp(),
            hop_authenticators: (1..=lambda).filter_map(|k| h.hop_authenticator(k)).collect(),
        }
    }

    fn lambda(&self) -> Result<u8, EmitError> {
        let shape = EmitError::Shape { pairs: self.path.len(), has: self.hop_authenticators.len() };
        let lambda = u8::try_from(self.hop_authenticators.len()).map_err(|_| shape)?;
        if lambda == 0 || self.path.len() != usize::from(lambda) + 1 {
            return Err(shape);
        }
        if self.hop_pointer > lambda {
            return Err(EmitError::HopPointerOutOfRange { hop_pointer: self.hop_pointer, lambda });
        }
        Ok(lambda)
    }

    /// Header length, if the shape is valid.
    pub fn emitted_len(&self) -> Result<usize, EmitError> {
        Ok(header_len(self.lambda()?))
    }

    /// Writes the header to the start of `buf` and returns its length.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, EmitError> {
        let lambda = self.lambda()?;
        let len = header_len(lambda);
        if buf.len() < len {
            return Err(EmitError::BufferTooShort { needed: len, actual: buf.len() });
        }
        let b = &mut buf[..len];
        b[field::SRC].copy_from_slice(&self.src.to_bytes());
        b[field::LAMBDA] = lambda;
        b[field::HOP_POINTER] = self.hop_pointer;
        for (k, (i, j)) in self.path.iter().enumerate() {
            let p = field::pair(k);
            b[p.start + field::PAIR_IN.start..p.start + field::PAIR_IN.end].copy_from_slice(&i.to_be_bytes());
            b[p.start + field::PAIR_OUT.start..p.start + field::PAIR_OUT.end].copy_from_slice(&j.to_be_bytes());
        }
        let base = field::pair(self.path.len()).start;
        let at = |r: std::ops::Range<usize>| base + r.start..base + r.end;
        b[at(field::after_path::BETA)].copy_from_slice(&self.beta.to_be_bytes());
        b[at(field::after_path::AID)].copy_from_slice(&self.aid.to_be_bytes());
        b[at(field::after_path::TS_PKT)].copy_from_slice(&self.ts_pkt.to_be_bytes());
        b[at(field::after_path::TS_EXP)].copy_from_slice(&self.ts_exp.to_be_bytes());
        for (k, ha) in self.hop_authenticators.iter().enumerate() {
            let s = base + field::after_path::HA + field::HA_LEN * k;
            b[s..s + field::HA_LEN].copy_from_slice(ha);
        }
        Ok(len)
    }
}
