//! A fixed-length array on 2 MiB pages, for per-key tables of megabytes that every packet
//! reads at a random place (a gateway's hosts).
//!
//! On 4 KiB pages a table of 4 MiB is 1024 pages, and a packet's random entry in it is a
//! TLB miss as well as a cache miss; in a virtual machine the page walk itself goes through
//! the host's tables too, and a prefetch does not hide it as well as a cache miss. With
//! transparent huge pages in `madvise` mode (the default of many distributions) only memory
//! that asks for them gets them: so the array maps its own memory, aligned to 2 MiB, and asks
//! before its first touch. Measured on the gateway's 5-AS row with 32 000 hosts: about 10 ns
//! of 120 per packet (docs/zlane.md). Where the kernel gives no huge pages the array is
//! still correct, on small pages.
//!
//! Arrays of less than a huge page are mapped on small pages as they are: one huge page
//! for a few kilobytes would waste memory and save little. A large array's length is rounded
//! up to whole huge pages (a 2.6 MB array takes 4 MiB). Unix only (`mmap`); the hint is
//! Linux's.

use std::alloc::{handle_alloc_error, Layout};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4 << 10;

/// `len` values of `T` in memory of their own, on 2 MiB pages where the kernel gives them.
pub struct HugeArray<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    /// Bytes mapped at `ptr` (0: nothing mapped, `ptr` dangling).
    mapped: usize,
}

// SAFETY: the array owns its memory as a `Box<[T]>` does; sharing or sending it shares or
// sends `T`s.
unsafe impl<T: Copy + Send> Send for HugeArray<T> {}
// SAFETY: as for `Send`: `&HugeArray<T>` gives only `&T`s.
unsafe impl<T: Copy + Sync> Sync for HugeArray<T> {}

impl<T: Copy> HugeArray<T> {
    /// `len` copies of `fill`.
    pub fn new(len: usize, fill: T) -> Self {
        let array = Self::uninit(len);
        for i in 0..len {
            debug_assert!(i < array.len);
            // SAFETY: `i < len`, and the mapping holds `len` values of `T`, aligned.
            unsafe { array.ptr.as_ptr().add(i).write(fill) };
        }
        array
    }

    /// Memory for `len` values, not yet written.
    fn uninit(len: usize) -> Self {
        let layout = Layout::array::<T>(len).unwrap_or_else(|_| panic!("HugeArray of {len} values: too large"));
        assert!(layout.align() <= PAGE, "HugeArray: values aligned beyond a page");
        if layout.size() == 0 {
            return Self { ptr: NonNull::dangling(), len, mapped: 0 };
        }
        let huge = layout.size() >= HUGE_PAGE;
        let (mapped, align) = if huge {
            (layout.size().next_multiple_of(HUGE_PAGE), HUGE_PAGE)
        } else {
            (layout.size().next_multiple_of(PAGE), PAGE)
        };
        // Map `align - PAGE` bytes more than needed, so that an aligned start lies within;
        // then unmap what lies before and after it.
        let extra = align - PAGE;
        // SAFETY: an anonymous private mapping of a non-zero length at an address of the
        // kernel's choice: it touches no memory of ours.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped + extra,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            handle_alloc_error(layout);
        }
        let head = (base as usize).next_multiple_of(align) - base as usize;
        debug_assert!(head <= extra && head.is_multiple_of(PAGE));
        // SAFETY: `head ≤ extra`, so `start..start + mapped` lies in the mapping.
        let start = unsafe { base.cast::<u8>().add(head) };
        let tail = extra - head;
        // SAFETY: the head `base..start` and the tail after `start + mapped` are parts of the
        // mapping just made, page-aligned, that nothing refers to; unmapping them cannot fail
        // but for arguments, which these are not.
        unsafe {
            if head > 0 {
                libc::munmap(base, head);
            }
            if tail > 0 {
                libc::munmap(start.add(mapped).cast(), tail);
            }
        }
        #[cfg(target_os = "linux")]
        if huge {
            // A hint, before the first touch so that the faults map huge pages: a kernel
            // without transparent huge pages refuses it, and the array stays on small pages.
            // SAFETY: `start..start + mapped` is our mapping, aligned to a huge page.
            unsafe { libc::madvise(start.cast(), mapped, libc::MADV_HUGEPAGE) };
        }
        let ptr = NonNull::new(start.cast::<T>()).expect("mmap returns no null mapping");
        Self { ptr, len, mapped }
    }
}

impl<T: Copy> Drop for HugeArray<T> {
    fn drop(&mut self) {
        if self.mapped > 0 {
            // SAFETY: `ptr..ptr + mapped` is the mapping `uninit` kept, not unmapped before;
            // `T: Copy` has no destructor to run first.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.mapped) };
        }
    }
}

impl<T: Copy> Deref for HugeArray<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `len` values written by `new` (or `clone`), aligned, in memory the array owns
        // (or dangling and aligned for an empty or zero-sized one).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HugeArray<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for HugeArray<T> {
    fn clone(&self) -> Self {
        let copy = Self::uninit(self.len);
        // SAFETY: two distinct mappings of `len` values each (or an empty copy); every value
        // of the new one is written here before it is read.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), copy.ptr.as_ptr(), self.len) };
        copy
    }
}

impl<T: Copy> fmt::Debug for HugeArray<T> {
    /// The length only: the arrays are tables of megabytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HugeArray").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_its_values_at_every_size() {
        for len in [0, 1, 7, PAGE / 8 + 1, HUGE_PAGE / 8 - 1, HUGE_PAGE / 8, HUGE_PAGE / 4 + 3] {
            let mut a = HugeArray::new(len, 0x5au64);
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|&v| v == 0x5a));
            for (i, v) in a.iter_mut().enumerate() {
                *v = i as u64;
            }
            let b = a.clone();
            drop(a);
            assert!(b.iter().enumerate().all(|(i, &v)| v == i as u64), "{len}");
            if len * 8 >= HUGE_PAGE {
                assert_eq!(b.as_ptr() as usize % HUGE_PAGE, 0, "aligned to a huge page");
            }
        }
    }

    #[test]
    fn aligns_its_values() {
        #[derive(Clone, Copy)]
        #[repr(align(64))]
        struct Line([u8; 64]);
        let a = HugeArray::new(100, Line([1; 64]));
        assert_eq!(a.as_ptr() as usize % 64, 0);
        assert!(a.iter().all(|l| l.0 == [1; 64]));
        let empty: HugeArray<()> = HugeArray::new(5, ());
        assert_eq!(empty.len(), 5);
    }
}
