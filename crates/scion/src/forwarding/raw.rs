//! Big-endian loads of the path's words at offsets a checked view has already proven to lie
//! within the buffer, without checking them again, and where each field sits in such a word.
//! Every caller states the proof (`// SAFETY:`); a debug build checks it as well.

use crate::wire::path::field;

/// Reads `N` bytes at `off`.
///
/// # Safety
/// `off + N <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    debug_assert!(off + N <= b.len(), "{N} bytes at {off} of {}", b.len());
    // SAFETY: the caller proves `off..off + N` within `b`; `[u8; N]` has alignment 1.
    unsafe { b.as_ptr().add(off).cast::<[u8; N]>().read_unaligned() }
}

/// The big-endian `u64` at `off`.
///
/// # Safety
/// `off + 8 <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn be_u64(b: &[u8], off: usize) -> u64 {
    // SAFETY: passed on from the caller.
    u64::from_be_bytes(unsafe { bytes(b, off) })
}

/// The big-endian `u32` at `off`.
///
/// # Safety
/// `off + 4 <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn be_u32(b: &[u8], off: usize) -> u32 {
    // SAFETY: passed on from the caller.
    u32::from_be_bytes(unsafe { bytes(b, off) })
}

/// The big-endian `u16` at `off`.
///
/// # Safety
/// `off + 2 <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn be_u16(b: &[u8], off: usize) -> u16 {
    // SAFETY: passed on from the caller.
    u16::from_be_bytes(unsafe { bytes(b, off) })
}

/// The byte at `off`.
///
/// # Safety
/// `off < b.len()`.
#[inline(always)]
pub(crate) unsafe fn byte(b: &[u8], off: usize) -> u8 {
    debug_assert!(off < b.len(), "byte {off} of {}", b.len());
    // SAFETY: passed on from the caller.
    unsafe { *b.get_unchecked(off) }
}

/// The shift that brings the big-endian field ending at byte `end` of an 8-byte word to the
/// low bits.
const fn shift(end: usize) -> u32 {
    (8 * (8 - end)) as u32
}

/// An info field (8 bytes) as one big-endian word.
#[derive(Clone, Copy)]
pub(crate) struct InfoWord(pub u64);

impl InfoWord {
    #[inline(always)]
    pub fn flags(self) -> u8 {
        (self.0 >> shift(field::info::FLAGS + 1)) as u8
    }
    #[inline(always)]
    pub fn cons_dir(self) -> bool {
        self.flags() & field::info::CONS_DIR != 0
    }
    #[inline(always)]
    pub fn peering(self) -> bool {
        self.flags() & field::info::PEERING != 0
    }
    #[inline(always)]
    pub fn seg_id(self) -> u16 {
        (self.0 >> shift(field::info::SEG_ID.end)) as u16
    }
    #[inline(always)]
    pub fn timestamp(self) -> u32 {
        (self.0 >> shift(field::info::TIMESTAMP.end)) as u32
    }
}

/// The first 8 bytes of a hop field (flags, ExpTime, both interfaces, the MAC's first two
/// bytes) as one big-endian word.
#[derive(Clone, Copy)]
pub(crate) struct HopWord(pub u64);

impl HopWord {
    #[inline(always)]
    pub fn exp_time(self) -> u8 {
        (self.0 >> shift(field::hop::EXP_TIME + 1)) as u8
    }
    #[inline(always)]
    pub fn cons_ingress(self) -> u16 {
        (self.0 >> shift(field::hop::CONS_INGRESS.end)) as u16
    }
    #[inline(always)]
    pub fn cons_egress(self) -> u16 {
        (self.0 >> shift(field::hop::CONS_EGRESS.end)) as u16
    }
    /// Ingress and egress in the direction of travel.
    #[inline(always)]
    pub fn travel_interfaces(self, cons_dir: bool) -> (u16, u16) {
        if cons_dir {
            (self.cons_ingress(), self.cons_egress())
        } else {
            (self.cons_egress(), self.cons_ingress())
        }
    }
    /// ExpTime through ConsEgress, the hop field's part of its MAC input, in the low bits.
    #[inline(always)]
    pub fn mac_input_part(self) -> u64 {
        let bits = 8 * (field::hop::CONS_EGRESS.end - field::hop::EXP_TIME);
        (self.0 >> shift(field::hop::CONS_EGRESS.end)) & ((1 << bits) - 1)
    }
}

/// Writes `v` at `off`.
///
/// # Safety
/// `off + N <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn put<const N: usize>(b: &mut [u8], off: usize, v: [u8; N]) {
    debug_assert!(off + N <= b.len(), "{N} bytes at {off} of {}", b.len());
    // SAFETY: the caller proves `off..off + N` within `b`; `[u8; N]` has alignment 1.
    unsafe { b.as_mut_ptr().add(off).cast::<[u8; N]>().write_unaligned(v) }
}
