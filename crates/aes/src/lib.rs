//! AES-128 and AES-CMAC (RFC 4493) for the per-packet work of every mechanism: the
//! Hummingbird router's fresh key per flyover, the hop-field MACs of SCION and EPIC, GLWP's hop
//! keys and authenticators, the duplicate filters' keyed hash. Batches interleave their AES
//! rounds, and take four blocks to an instruction where the CPU has VAES with AVX-512.
//!
//! The bottom of the crate graph, so that every crate above shares one implementation
//! (aviary-qos's duplicate filter included, which aviary-scion depends on).

pub mod aes;
pub mod cmac;
pub mod cpu;

/// `a ⊕ b`, a block at a time.
#[inline(always)]
pub(crate) fn xor(a: [u8; 16], b: &[u8; 16]) -> [u8; 16] {
    (u128::from_ne_bytes(a) ^ u128::from_ne_bytes(*b)).to_ne_bytes()
}
