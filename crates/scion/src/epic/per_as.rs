//! Z-Lane's per-AS validation fields (the Z-Lane paper, App. B and C) over the per-AS EPIC
//! path ([`crate::wire::epic_per_as`]): what the source writes, what each on-path AS checks
//! and writes back, and what the destination checks.
//!
//! - Source host H_S in AS A_0, for hop field i of AS A_i with full hop-field CMAC σ_i and
//!   the DRKey Level-2 key `K_i = K_{A_i→A_0:H_S}`:
//!   `V_i = CBC-MAC_{K_i}(MacInput | σ_i)`; HVF i = `V_i[0:4]`.
//! - Gateway of A_0 (QoS flag Q): HVF i = `CBC-MAC_{K_{A_i→A_0}}(V_i[0:4])[0:4]`, keyed with
//!   the Level-1 key no host knows.
//! - AS A_i recomputes `V_i` from the packet and its own secret value, compares HVF i (under
//!   Q, its gateway form), and overwrites HVF i with `V_i[4:8]`: proof that the packet
//!   passed A_i, which only A_i and H_S can compute.
//! - Destination H_D: the DVF is `CBC-MAC_{K_SD}(MacInput | V_0[4:8] | … | V_{n-1}[4:8])[0:4]`
//!   under the host-host key `K_SD` of H_S and H_D. Only a packet that every AS on the path
//!   updated carries the HVFs the source MACed, so a DVF that verifies tells H_D that its
//!   source sent the packet and that it followed the path.

use thiserror::Error;

use super::hvf::{cbc_mac, first_hvf, hvf_eq, MacInput};
use crate::aes::Aes128;
#[cfg(target_arch = "x86_64")]
use crate::cpu::AesNi;
use crate::cpu::{Cpu, Detect, Portable};
use crate::drkey::{prf, prf_on, AsHostKey, HostHostKey, Level1Key};
use crate::wire::epic::HVF_LEN;
use crate::wire::epic_per_as::PerAsPathView;
use crate::wire::path::MAX_HOPS;

/// The full MAC `V_i` of one hop field.
pub fn hop_validation(key: &AsHostKey, input: &MacInput, sigma: &[u8; 16]) -> [u8; 16] {
    cbc_mac(key.as_bytes(), &input.with_authenticator(sigma))
}

/// Packets whose CBC-MACs [`hop_validations`] runs side by side.
const LANES: usize = 8;

/// [`hop_validation`] of several packets at once: `out[j]` is the CBC-MAC of `inputs[j]` (σ
/// already appended) under `keys[j]`. Each chain is serial, but the chains of different
/// packets are independent, so their AES rounds overlap in the pipeline. `cpu` says which AES
/// code runs ([`crate::cpu::Cpu`]); forced inline, so that a caller compiled for AES-NI gets
/// the AES inlined.
#[inline(always)]
pub fn hop_validations(cpu: impl Cpu, keys: &[AsHostKey], inputs: &[MacInput], out: &mut [[u8; 16]]) {
    let n = keys.len().min(inputs.len()).min(out.len());
    for start in (0..n).step_by(LANES) {
        let r = start..(start + LANES).min(n);
        let (keys, inputs, out) = (&keys[r.clone()], &inputs[r.clone()], &mut out[r]);
        // As many lanes as there are packets, rounded up to a schedule's group of four (or
        // one alone): a lane expands its key whether it has a packet or not, and a lone
        // packet (a batch of one) would pay for eight schedules.
        match keys.len() {
            1 => chains::<1>(cpu, keys, inputs, out),
            2..=4 => chains::<4>(cpu, keys, inputs, out),
            _ => chains::<LANES>(cpu, keys, inputs, out),
        }
    }
}

/// The CBC-MACs of 1 to `L` packets, `L` key schedules expanded side by side (the lanes
/// beyond the packets repeat the last key, and are not run).
#[inline(always)]
fn chains<const L: usize>(cpu: impl Cpu, keys: &[AsHostKey], inputs: &[MacInput], out: &mut [[u8; 16]]) {
    let m = keys.len();
    debug_assert!((1..=L).contains(&m) && inputs.len() == m && out.len() == m);
    let lane = |j: usize| j.min(m - 1);
    // The keys differ per packet (each host's own), so their schedules are expanded here,
    // side by side; storing them per host would cost three cache lines a host.
    let ciphers = Aes128::new_each_on::<L>(cpu, &std::array::from_fn(|j| *keys[lane(j)].as_bytes()));
    let mut state = [[0u8; 16]; L];
    let blocks = inputs.iter().map(|i| i.as_bytes().len() / 16).max().unwrap_or(0);
    for r in 0..blocks {
        for ((st, c), input) in state.iter_mut().zip(&ciphers).zip(inputs) {
            let Some(block) = input.as_bytes().get(16 * r..16 * (r + 1)) else { continue };
            st.iter_mut().zip(block).for_each(|(s, b)| *s ^= b);
            *st = c.encrypt_on(cpu, st);
        }
    }
    out.copy_from_slice(&state[..m]);
}

/// The field a source writes: `V_i[0:4]`.
pub fn source_hvf(v: &[u8; 16]) -> [u8; HVF_LEN] {
    first_hvf(v)
}

/// The field the source AS's gateway writes over `V_i[0:4]` (App. C).
pub fn gateway_hvf(as_key: &Level1Key, source_hvf: &[u8; HVF_LEN]) -> [u8; HVF_LEN] {
    first_hvf(&prf(as_key.as_bytes(), source_hvf))
}

/// [`gateway_hvf`] on the code `cpu` says the CPU runs.
#[inline(always)]
fn gateway_hvf_on(cpu: impl Cpu, as_key: &Level1Key, source_hvf: &[u8; HVF_LEN]) -> [u8; HVF_LEN] {
    first_hvf(&prf_on(cpu, as_key.as_bytes(), source_hvf))
}

/// A gateway's Level-1 key `K_{A_i→A_0}` for one on-path AS, expanded once: the gateway
/// writes [`gateway_hvf`] for every hop of every authorized packet, so the key schedule
/// stays off the per-packet path.
#[derive(Clone)]
pub struct GatewayKey(Aes128);

impl GatewayKey {
    pub fn new(as_key: &Level1Key) -> Self {
        Self(Aes128::new(as_key.as_bytes()))
    }

    /// [`gateway_hvf`] under this key: the CBC-MAC of one zero-padded block is its cipher.
    pub fn hvf(&self, source_hvf: &[u8; HVF_LEN]) -> [u8; HVF_LEN] {
        self.hvf_on(Detect, source_hvf)
    }

    /// [`Self::hvf`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
    #[inline(always)]
    pub fn hvf_on(&self, cpu: impl Cpu, source_hvf: &[u8; HVF_LEN]) -> [u8; HVF_LEN] {
        let mut block = [0u8; 16];
        block[..HVF_LEN].copy_from_slice(source_hvf);
        first_hvf(&self.0.encrypt_on(cpu, &block))
    }
}

impl std::fmt::Debug for GatewayKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GatewayKey(..)")
    }
}

/// The field an AS writes back once it verified HVF i: `V_i[4:8]`.
pub fn proof(v: &[u8; 16]) -> [u8; HVF_LEN] {
    v[HVF_LEN..2 * HVF_LEN].try_into().expect("a MAC holds two HVFs")
}

/// Checks HVF i at AS A_i: `field` against `V_i[0:4]`, or under Q against its gateway form.
/// `cpu` says which AES code runs ([`crate::cpu::Cpu`]).
#[inline(always)]
pub fn hvf_matches(
    cpu: impl Cpu,
    field: &[u8; HVF_LEN],
    v: &[u8; 16],
    qos: bool,
    as_key: impl FnOnce() -> Level1Key,
) -> bool {
    let expected = if qos { gateway_hvf_on(cpu, &as_key(), &source_hvf(v)) } else { source_hvf(v) };
    hvf_eq(field, &expected)
}

/// Bytes of the longest DVF input: the header fields and one proof per hop field.
const MAX_DVF_INPUT: usize = 48 + HVF_LEN * MAX_HOPS;

/// The destination validation field over the proofs the packet carries on arrival (or the
/// source expects): `proofs` is HVF 0 … n−1, 4 bytes each.
pub fn dvf(key: &HostHostKey, input: &MacInput, proofs: &[u8]) -> [u8; HVF_LEN] {
    #[cfg(target_arch = "x86_64")]
    if let Some(ni) = AesNi::detect() {
        // SAFETY: `ni` proves the CPU has the features `dvf_aes_ni` is compiled for.
        return unsafe { dvf_aes_ni(ni, key, input, proofs) };
    }
    dvf_on(Portable, key, input, proofs)
}

/// [`dvf`] on the code `cpu` says the CPU runs ([`crate::cpu::Cpu`]).
#[inline(always)]
fn dvf_on(cpu: impl Cpu, key: &HostHostKey, input: &MacInput, proofs: &[u8]) -> [u8; HVF_LEN] {
    let mut buf = [0u8; MAX_DVF_INPUT];
    let head = input.as_bytes();
    let len = head.len() + proofs.len().min(HVF_LEN * MAX_HOPS);
    buf[..head.len()].copy_from_slice(head);
    buf[head.len()..len].copy_from_slice(&proofs[..len - head.len()]);
    first_hvf(&prf_on(cpu, key.as_bytes(), &buf[..len]))
}

/// Fills the HVFs and the DVF of a per-AS path: `keys[i]` and `sigmas[i]` are K_i and σ_i of
/// hop field i (its AS's Level-2 key for this host and the full CMAC of the hop field).
pub fn seal<T: AsRef<[u8]> + AsMut<[u8]>>(
    path: &mut PerAsPathView<T>,
    input: &MacInput,
    keys: &[AsHostKey],
    sigmas: &[[u8; 16]],
    dst_key: &HostHostKey,
) -> Result<(), SealError> {
    let n = path.num_hvfs();
    if keys.len() != n || sigmas.len() != n {
        return Err(SealError::KeyCount { hops: n, keys: keys.len(), sigmas: sigmas.len() });
    }
    let mut proofs = [0u8; HVF_LEN * MAX_HOPS];
    for (i, (k, s)) in keys.iter().zip(sigmas).enumerate() {
        let v = hop_validation(k, input, s);
        path.set_hvf(i, source_hvf(&v));
        proofs[HVF_LEN * i..HVF_LEN * (i + 1)].copy_from_slice(&proof(&v));
    }
    path.set_dvf(dvf(dst_key, input, &proofs[..HVF_LEN * n]));
    Ok(())
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum SealError {
    #[error("a path of {hops} hop fields needs as many keys and authenticators, got {keys} and {sigmas}")]
    KeyCount { hops: usize, keys: usize, sigmas: usize },
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum DestinationError {
    #[error("the destination validation field does not match: wrong source, or an AS on the path did not validate the packet")]
    BadDvf,
}

/// The destination's check of a packet that arrived.
pub fn verify_at_destination<T: AsRef<[u8]>>(
    path: &PerAsPathView<T>,
    input: &MacInput,
    key: &HostHostKey,
) -> Result<(), DestinationError> {
    if hvf_eq(&path.dvf(), &dvf(key, input, path.hvfs())) {
        Ok(())
    } else {
        Err(DestinationError::BadDvf)
    }
}

/// [`dvf_on`] compiled with AES-NI enabled: its CBC chain's blocks inlined (called one by one
/// from the baseline build, a destination check of 5 ASes took 107 ns instead of 89).
///
/// # Safety
/// The CPU has the features of `crate::cpu::AES_NI_FEATURES` (`ni` proves it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "aes,pclmulqdq,sse2,ssse3,sse4.1")] // cpu::AES_NI_FEATURES
fn dvf_aes_ni(ni: AesNi, key: &HostHostKey, input: &MacInput, proofs: &[u8]) -> [u8; HVF_LEN] {
    dvf_on(ni, key, input, proofs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_validations_are_the_single_ones() {
        use crate::wire::epic::PktId;
        use crate::wire::header::HostAddr;
        use std::net::{Ipv4Addr, Ipv6Addr};
        for n in [0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 20] {
            let keys: Vec<_> = (0..n).map(|j| AsHostKey::from_bytes([j as u8 * 13 + 1; 16])).collect();
            let inputs: Vec<_> = (0..n)
                .map(|j| {
                    let host = if j % 3 == 0 {
                        HostAddr::V6(Ipv6Addr::LOCALHOST)
                    } else {
                        HostAddr::V4(Ipv4Addr::new(10, 0, 0, j as u8))
                    };
                    let id = PktId { epic_ts: j as u32, counter: 7 };
                    MacInput::new(5, id, crate::IsdAsn::new(1, 1), &host, 100).with_authenticator(&[j as u8; 16])
                })
                .collect();
            let mut out = vec![[0u8; 16]; n];
            hop_validations(Detect, &keys, &inputs, &mut out);
            for j in 0..n {
                assert_eq!(out[j], cbc_mac(keys[j].as_bytes(), &inputs[j]), "packet {j} of {n}");
            }
        }
    }

    #[test]
    fn an_expanded_gateway_key_writes_the_gateway_field() {
        for seed in 0..16u8 {
            let key = Level1Key::from_bytes([seed.wrapping_mul(37); 16]);
            let hvf = [seed, 1, 2, seed ^ 0xff];
            assert_eq!(GatewayKey::new(&key).hvf(&hvf), gateway_hvf(&key, &hvf));
        }
    }
}
