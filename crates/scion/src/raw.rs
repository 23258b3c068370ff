//! Loads and stores at offsets a check has already proven to lie within the buffer, without
//! checking them again: for the routers' stage 1 and the stages after it, which read and write
//! the headers as words (the forwarder here, GLWP's router). Every caller states its proof
//! (`// SAFETY:`); a debug build checks it as well.

/// Reads `N` bytes at `off`.
///
/// # Safety
/// `off + N <= b.len()`.
#[inline(always)]
pub unsafe fn bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    debug_assert!(off + N <= b.len(), "{N} bytes at {off} of {}", b.len());
    // SAFETY: the caller proves `off..off + N` within `b`; `[u8; N]` has alignment 1.
    unsafe { b.as_ptr().add(off).cast::<[u8; N]>().read_unaligned() }
}

/// The big-endian `u64` at `off`.
///
/// # Safety
/// `off + 8 <= b.len()`.
#[inline(always)]
pub unsafe fn be_u64(b: &[u8], off: usize) -> u64 {
    // SAFETY: passed on from the caller.
    u64::from_be_bytes(unsafe { bytes(b, off) })
}

/// The big-endian `u32` at `off`.
///
/// # Safety
/// `off + 4 <= b.len()`.
#[inline(always)]
pub unsafe fn be_u32(b: &[u8], off: usize) -> u32 {
    // SAFETY: passed on from the caller.
    u32::from_be_bytes(unsafe { bytes(b, off) })
}

/// The big-endian `u16` at `off`.
///
/// # Safety
/// `off + 2 <= b.len()`.
#[inline(always)]
pub unsafe fn be_u16(b: &[u8], off: usize) -> u16 {
    // SAFETY: passed on from the caller.
    u16::from_be_bytes(unsafe { bytes(b, off) })
}

/// The byte at `off`.
///
/// # Safety
/// `off < b.len()`.
#[inline(always)]
pub unsafe fn byte(b: &[u8], off: usize) -> u8 {
    debug_assert!(off < b.len(), "byte {off} of {}", b.len());
    // SAFETY: passed on from the caller.
    unsafe { *b.get_unchecked(off) }
}

/// Writes `v` at `off`.
///
/// # Safety
/// `off + N <= b.len()`.
#[inline(always)]
pub unsafe fn put<const N: usize>(b: &mut [u8], off: usize, v: [u8; N]) {
    debug_assert!(off + N <= b.len(), "{N} bytes at {off} of {}", b.len());
    // SAFETY: the caller proves `off..off + N` within `b`; `[u8; N]` has alignment 1.
    unsafe { b.as_mut_ptr().add(off).cast::<[u8; N]>().write_unaligned(v) }
}
