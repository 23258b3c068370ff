//! Heap use of the per-key state, counted by the allocator rather than by the types' own
//! accounting. Only the test's own thread is counted: the test harness allocates on its other
//! threads (output, slow-test notices) whenever it likes.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use aviary_qos::{DuplicateFilter, DuplicateFilterConfig, Rate, TokenBucketBank};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are counted (no destructor, no allocation: usable
    /// from inside the allocator).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counted() {
            LIVE.fetch_add(layout.size(), Relaxed);
            ALLOCATIONS.fetch_add(1, Relaxed);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if counted() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn per_key_state_is_what_the_docs_say() {
    COUNTED.with(|c| c.set(true));
    // A bank of N buckets: exactly 8·N bytes of heap, plus the bank value itself.
    const N: usize = 50_000;
    let before = LIVE.load(Relaxed);
    let mut bank = TokenBucketBank::with_capacity(1500, N);
    for i in 0..N {
        bank.push(Rate::from_units(i as u16));
    }
    assert_eq!(LIVE.load(Relaxed) - before, 8 * N);
    assert_eq!(bank.memory_bytes(), 8 * N + std::mem::size_of::<TokenBucketBank>());
    // Admitting never allocates.
    let calls = ALLOCATIONS.load(Relaxed);
    for i in 0..N {
        bank.admit(i, 1000, i as u64 * 1000);
    }
    assert_eq!(ALLOCATIONS.load(Relaxed), calls);
    drop(bank);

    // A duplicate filter: its two generations, mapped once (a `HugeArray`, not the heap),
    // whatever the traffic.
    let config =
        DuplicateFilterConfig { window_ns: 1_000_000_000, expected_per_window: 100_000, false_positive_rate: 1e-3 };
    let before = LIVE.load(Relaxed);
    let mut f = DuplicateFilter::new(config, [9; 16]).unwrap();
    let heap = LIVE.load(Relaxed) - before;
    assert_eq!(heap, 0, "heap {heap}");
    // Two generations of blocked Bloom filter, 18.86 bits per key at p_g ≈ p/2 (3 683 blocks
    // of 64 bytes each): 2 · 235 712 B.
    assert_eq!(f.memory_bytes(), std::mem::size_of::<DuplicateFilter>() + 2 * 3683 * 64);
    let calls = ALLOCATIONS.load(Relaxed);
    for i in 0..1_000_000u64 {
        f.check_and_insert(&i.to_be_bytes(), i * 10_000);
    }
    assert_eq!(ALLOCATIONS.load(Relaxed), calls, "checking allocated");
    assert_eq!(LIVE.load(Relaxed) - before, heap);
}
