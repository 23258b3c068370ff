//! A hint to the CPU that a value will be read soon.
//!
//! Per-packet state looked up in large tables (a gateway's hosts, their buckets) misses the
//! caches; asking for every packet of a batch before any is used lets those misses overlap
//! instead of stalling one packet at a time.

/// Starts loading the cache line holding `value` into all cache levels; no effect on what
/// the program computes, and a no-op where the target has no prefetch instruction.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and `value` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
