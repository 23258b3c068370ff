//! Reservations on a path: which hop field of a standard path belongs to which AS, and
//! how a Hummingbird path with flyovers on any subset of the ASes is built (A.5: at a
//! segment crossover the flyover goes on the AS's hop field in the first segment).

use aviary_scion::StandardPath;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::crypto::ResInfo;
use crate::path::{Flyover, HbirdPath, HbirdPathError};

/// A reservation as the source holds it: what was granted and its authentication key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub info: ResInfo,
    #[serde(with = "hex16")]
    pub ak: [u8; 16],
}

mod hex16 {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &[u8; 16], s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}", v.iter().map(|b| format!("{b:02x}")).collect::<String>()))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 16], D::Error> {
        let s = String::deserialize(d)?;
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(D::Error::custom("expected 32 hex digits"));
        }
        let mut out = [0u8; 16];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(D::Error::custom)?;
        }
        Ok(out)
    }
}

/// One AS on a path: the hop field that carries its flyover and its interfaces in the
/// direction of travel (at a crossover, the ingress of the first hop field and the
/// egress of the second).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsHop {
    /// Index of the hop field, in path order, that carries this AS's flyover.
    pub hop_index: usize,
    pub ingress: u16,
    pub egress: u16,
}

/// The ASes of a standard path in travel order.
pub fn as_hops(p: &StandardPath) -> Vec<AsHop> {
    let mut out: Vec<AsHop> = Vec::new();
    let mut idx = 0;
    for (s, len) in p.seg_len.iter().take(p.info.len()).enumerate() {
        let info = &p.info[s];
        for j in 0..usize::from(*len) {
            let (ingress, egress) = p.hops[idx].travel_interfaces(info.cons_dir);
            if s > 0 && j == 0 && !info.peering && !out.is_empty() {
                out.last_mut().unwrap().egress = egress;
            } else {
                out.push(AsHop { hop_index: idx, ingress, egress });
            }
            idx += 1;
        }
    }
    out
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum BuildError {
    #[error("AS hop {0} is not on the path")]
    NoSuchHop(usize),
    #[error("reservation for AS hop {hop} is for interfaces {res_in}->{res_eg}, the path uses {path_in}->{path_eg}")]
    InterfaceMismatch { hop: usize, res_in: u16, res_eg: u16, path_in: u16, path_eg: u16 },
    #[error("two reservations for AS hop {0}")]
    Duplicate(usize),
    #[error("reservation starts at {start}, after the base timestamp {base}")]
    NotStarted { start: u32, base: u32 },
    #[error("reservation started more than 65535 s before the base timestamp")]
    OffsetTooLarge,
    #[error(transparent)]
    Path(#[from] HbirdPathError),
}

/// `BaseTimestamp − ResStart` as the 16-bit ResStartOffset.
pub fn res_start_offset(base_ts: u32, start: u32) -> Result<u16, BuildError> {
    let off = base_ts.checked_sub(start).ok_or(BuildError::NotStarted { start, base: base_ts })?;
    u16::try_from(off).map_err(|_| BuildError::OffsetTooLarge)
}

/// Builds a Hummingbird path from `p` with a flyover on each AS hop named in
/// `reservations` (index into [`as_hops`]). MAC fields keep the plain hop-field MACs; a
/// source turns them into AggMACs per packet.
pub fn build_path(p: &StandardPath, reservations: &[(usize, ResInfo)], base_ts: u32) -> Result<HbirdPath, BuildError> {
    let hops = as_hops(p);
    let mut path = HbirdPath::from_standard(p);
    path.base_ts = base_ts;
    let mut flyovers: Vec<Option<Flyover>> = vec![None; p.hops.len()];
    for (as_hop, res) in reservations {
        let h = hops.get(*as_hop).ok_or(BuildError::NoSuchHop(*as_hop))?;
        if (h.ingress, h.egress) != (res.ingress, res.egress) {
            return Err(BuildError::InterfaceMismatch {
                hop: *as_hop,
                res_in: res.ingress,
                res_eg: res.egress,
                path_in: h.ingress,
                path_eg: h.egress,
            });
        }
        let slot = &mut flyovers[h.hop_index];
        if slot.is_some() {
            return Err(BuildError::Duplicate(*as_hop));
        }
        *slot = Some(Flyover {
            res_id: res.res_id,
            bw: res.bw,
            res_start_offset: res_start_offset(base_ts, res.start)?,
            res_duration: res.duration,
        });
    }
    for (h, f) in path.segments.iter_mut().flatten().zip(flyovers) {
        h.flyover = f;
    }
    // CurrHF counts lines: recompute it for the hop it pointed at.
    let curr = usize::from(p.curr_hf);
    path.curr_hf = path.hops().take(curr).map(|h| h.lines()).sum::<usize>() as u8;
    path.validate()?;
    Ok(path)
}
