//! Big-endian loads at offsets a check has already proven to lie within the buffer, without
//! checking them again: for the router's stage 1, which reads the SCION and GLWP headers as
//! words. Every caller states its proof (`// SAFETY:`); a debug build checks it as well.

/// The `N` bytes at `at`.
///
/// # Safety
/// `at + N <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    debug_assert!(at + N <= b.len(), "{N} bytes at {at} of {}", b.len());
    // SAFETY: the caller proves `at..at + N` within `b`; `[u8; N]` has alignment 1.
    unsafe { b.as_ptr().add(at).cast::<[u8; N]>().read_unaligned() }
}

/// The byte at `at`.
///
/// # Safety
/// `at < b.len()`.
#[inline(always)]
pub(crate) unsafe fn byte(b: &[u8], at: usize) -> u8 {
    debug_assert!(at < b.len(), "byte {at} of {}", b.len());
    // SAFETY: passed on from the caller.
    unsafe { *b.get_unchecked(at) }
}

/// The big-endian `u16` at `at`.
///
/// # Safety
/// `at + 2 <= b.len()`.
#[inline(always)]
pub(crate) unsafe fn be_u16(b: &[u8], at: usize) -> u16 {
    // SAFETY: passed on from the caller.
    u16::from_be_bytes(unsafe { bytes(b, at) })
}
