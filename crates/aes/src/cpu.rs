//! Which AES code this CPU runs, chosen once at run time: the build needs no AES-NI, and one
//! binary runs on every x86-64 CPU (and elsewhere) at the best speed the CPU allows.
//!
//! Per-packet code that wants the AES-NI functions inlined into it compiles a copy of itself
//! with [`AES_NI_FEATURES`] enabled and calls it when [`aes_ni`] says yes (see the routers'
//! stages); everything else calls this crate's functions, which choose on every call (a load
//! and a predicted branch).
//!
//! The environment variable `AVIARY_AES` caps the choice, for measurements and to test the
//! slower paths on a fast CPU: `portable`, `aes-ni` or `vaes` (the default is the best the CPU
//! has; a cap above it changes nothing). [`check_env`] says whether its value is one of these;
//! the `aviary` command calls it at start and refuses to run otherwise.
//!
//! [`clock_ghz`] reads the core's clock, so that what this code costs can be stated in cycles as
//! well as in ns.

use std::sync::atomic::{AtomicU8, Ordering};

/// The instruction sets the AES code can use, slowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// No AES instructions: the RustCrypto `aes` crate's rounds (constant time).
    Portable = 1,
    /// AES-NI with SSSE3, SSE4.1 and PCLMULQDQ ([`AES_NI_FEATURES`]): one block a register.
    AesNi = 2,
    /// AES-NI and VAES with AVX-512 (F, BW) and VPCLMULQDQ: four blocks a register, for batches.
    Vaes = 3,
}

/// The target features of [`Level::AesNi`], as a `#[target_feature(enable = ...)]` takes them
/// (an attribute needs the literal; every copy names this constant in a comment).
pub const AES_NI_FEATURES: &str = "aes,pclmulqdq,sse2,ssse3,sse4.1";

/// The environment variable that caps the [`Level`].
pub const ENV: &str = "AVIARY_AES";

/// The level, once chosen (0: not yet).
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The level this process runs at: the best the CPU has, capped by `AVIARY_AES`.
#[inline(always)]
pub fn level() -> Level {
    match LEVEL.load(Ordering::Relaxed) {
        1 => Level::Portable,
        2 => Level::AesNi,
        3 => Level::Vaes,
        _ => choose(),
    }
}

/// Whether the AES-NI code runs ([`Level::AesNi`] or better): the CPU has every feature of
/// [`AES_NI_FEATURES`]. One compare once chosen (a single packet asks a few times).
#[inline(always)]
pub fn aes_ni() -> bool {
    let l = LEVEL.load(Ordering::Relaxed);
    if l >= Level::AesNi as u8 {
        return true;
    }
    l == 0 && choose() >= Level::AesNi
}

/// Whether batches go four blocks to a register ([`Level::Vaes`]).
#[inline(always)]
pub(crate) fn vaes() -> bool {
    let l = LEVEL.load(Ordering::Relaxed);
    if l != 0 {
        return l == Level::Vaes as u8;
    }
    choose() == Level::Vaes
}

/// What code knows about the CPU without asking again. Per-packet stages built twice, for
/// AES-NI and portable, pass [`AesNi`] or [`Portable`] down to the AES calls inside, which then
/// compile to one path with no check; code built once passes [`Detect`], which asks at each
/// call. (A check inside the AES-NI copy costs more than its compare: its other branch is a
/// call, around which the compiler saves the vector registers the AES chain lives in. A single
/// flyover ran 45 instructions and 10 ns more with one check per AES call.)
pub trait Cpu: Copy {
    /// `Some` where the AES-NI code may run.
    fn aes_ni(self) -> Option<AesNi>;
}

/// Proof that the CPU runs the AES-NI code ([`AES_NI_FEATURES`]): made only where [`aes_ni`]
/// said yes.
#[derive(Clone, Copy, Debug)]
pub struct AesNi(());

impl AesNi {
    #[inline(always)]
    pub fn detect() -> Option<Self> {
        aes_ni().then_some(AesNi(()))
    }
}

impl Cpu for AesNi {
    #[inline(always)]
    fn aes_ni(self) -> Option<AesNi> {
        Some(self)
    }
}

/// The portable code, whatever the CPU has (the copy of the stages for CPUs without AES-NI).
#[derive(Clone, Copy, Debug)]
pub struct Portable;

impl Cpu for Portable {
    #[inline(always)]
    fn aes_ni(self) -> Option<AesNi> {
        None
    }
}

/// Asks at each call ([`aes_ni`]).
#[derive(Clone, Copy, Debug)]
pub struct Detect;

impl Cpu for Detect {
    #[inline(always)]
    fn aes_ni(self) -> Option<AesNi> {
        AesNi::detect()
    }
}

/// An `AVIARY_AES` value that is not a level.
#[derive(Debug, thiserror::Error)]
#[error("{ENV}={value:?}: expected portable, aes-ni or vaes (or unset, for the best the CPU has)")]
pub struct EnvError {
    pub value: String,
}

/// The cap `AVIARY_AES` sets, `None` where it is unset or empty.
pub fn check_env() -> Result<Option<Level>, EnvError> {
    match std::env::var(ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(EnvError { value: v.to_string_lossy().into_owned() }),
        Ok(v) => match v.as_str() {
            "" => Ok(None),
            "portable" => Ok(Some(Level::Portable)),
            "aes-ni" => Ok(Some(Level::AesNi)),
            "vaes" => Ok(Some(Level::Vaes)),
            _ => Err(EnvError { value: v }),
        },
    }
}

/// The best level of this CPU.
pub(crate) fn hardware() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        // Keep in step with AES_NI_FEATURES (SSE2 is every x86-64's).
        if !(has!("aes") && has!("pclmulqdq") && has!("ssse3") && has!("sse4.1")) {
            return Level::Portable;
        }
        if has!("vaes") && has!("vpclmulqdq") && has!("avx512f") && has!("avx512bw") {
            return Level::Vaes;
        }
        Level::AesNi
    }
    #[cfg(not(target_arch = "x86_64"))]
    Level::Portable
}

/// Chooses the level on first use. An invalid `AVIARY_AES` caps nothing here (the command
/// line has refused it already, see [`check_env`]). Threads racing here choose the same.
#[cold]
#[inline(never)]
fn choose() -> Level {
    let cap = check_env().ok().flatten().unwrap_or(Level::Vaes);
    let level = hardware().min(cap);
    LEVEL.store(level as u8, Ordering::Relaxed);
    level
}

/// Dependent register additions in one timed chain of [`clock_ghz`].
const CLOCK_CHAIN: u64 = 1_000_000;

/// The core's clock in GHz, as dependent register additions per ns (one a cycle on every x86-64
/// core): the fastest of 20 chains of a million, ≈ 6 ms in all, so that a chain the VM's host
/// interrupted does not count. A yardstick, not the frequency a VM reports (a guest's
/// `/proc/cpuinfo` gives the host's nominal one). `None` on other architectures.
pub fn clock_ghz() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let fastest = (0..20).map(|_| additions_ns(CLOCK_CHAIN / 10)).min().expect("20 chains");
        Some(CLOCK_CHAIN as f64 / fastest.max(1) as f64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// The time in ns of `rounds` rounds of ten dependent additions (and a loop branch beside them).
#[cfg(target_arch = "x86_64")]
fn additions_ns(rounds: u64) -> u128 {
    assert!(rounds > 0, "the loop counts down to zero");
    let t = std::time::Instant::now();
    let mut x = 0u64;
    // SAFETY: registers only (`x`, the counter, the addend), no memory, no stack; the counter
    // counts down from `rounds > 0` to zero, so the loop ends.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}", "add {x}, {one}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) rounds => _,
            one = in(reg) 1u64,
            options(nomem, nostack),
        );
    }
    std::hint::black_box(x);
    t.elapsed().as_nanos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The level honours `AVIARY_AES` (the CI runs these tests under each value) and never
    /// exceeds what the CPU has.
    #[test]
    fn level_is_the_hardware_capped_by_the_environment() {
        let cap = check_env().expect("AVIARY_AES is valid in tests");
        assert_eq!(level(), hardware().min(cap.unwrap_or(Level::Vaes)));
        assert!(level() <= hardware());
    }
}
