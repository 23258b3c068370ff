//! Verdict profiles: the parameters that decide whether a valid flyover packet gets priority.
//!
//! Two deployed readings of Hummingbird differ in them: the Hummingbird paper (`paper`, the
//! default) and SCION's Go border router (`scionproto`), so that aviary's routers can run beside
//! SCION's own and give the same verdicts. An operator names a profile in the router config's
//! `[hummingbird]` table; any other field of that table set explicitly overrides the profile's
//! value for it, whatever the order of the lines (see [`RouterParams`]).
//!
//! | parameter | `paper` | `scionproto` |
//! |---|---|---|
//! | `codec` | [`BwCodec::Paper`] (float, kbit/s) | [`BwCodec::Linear`] (`BW × 64` B/s) |
//! | `burst_ns` | 50 ms | 1 s |
//! | `freshness_past_ns` / `freshness_future_ns` | 1.5 s / 0.5 s | 1 s / 1 s |
//! | `start` | inclusive (`now ≥ ResStart`) | strict (`now > ResStart`) |
//! | `policed_length` | whole SCION packet | payload length |
//! | `duplicate_suppression` | off (optional in the paper) | off |

use serde::{Deserialize, Serialize};

use crate::bw::BwCodec;

const NS: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// Largest packet, bytes, that a reservation's burst must always admit at the reserved rate:
/// an Ethernet MTU. The Hummingbird paper notes that a 50 ms burst caps packets below 1500 B for
/// reservations under 240 kbit/s; the floor removes that cap up to this size.
pub const DEFAULT_MAX_PACKET_LEN: u16 = 1500;

/// Flyover packets per freshness window for which the duplicate filter is sized by default.
pub const DEFAULT_DUPLICATES_PER_WINDOW: u64 = 100_000;

/// A named set of verdict parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The Hummingbird paper's parameters.
    #[default]
    Paper,
    /// The parameters of SCION's Go Hummingbird border router.
    Scionproto,
}

/// Whether a reservation is active at exactly its ResStart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartBound {
    /// `now ∈ [ResStart, ResStart + ResDuration)` (the paper, Alg. 3).
    #[default]
    Inclusive,
    /// `now ∈ (ResStart, ResStart + ResDuration)`.
    Strict,
}

/// The length Alg. 1 charges a packet for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicedLength {
    /// The whole SCION packet, the length the FlyoverMAC authenticates (the paper).
    #[default]
    Packet,
    /// The common header's PayloadLen: headers ride free.
    Payload,
}

/// How the policer computes a packet's transmission time. Both give the same cost, so the same
/// verdicts: the table is exact ([`aviary_qos::InverseRateTable`]). The table is the default of
/// both profiles: a few instructions fewer and no 64-bit division in a flyover's dependency
/// chain (docs/performance.md, 2026-11-26).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicingMode {
    /// `PktLen / BW`, the bandwidth code decoded and one division per packet (Alg. 1 as
    /// written; the reference the table is tested against).
    Division,
    /// A 1024-entry table per codec of exact reciprocals: a multiplication and a shift, no
    /// division and no decoding of the bandwidth code.
    #[default]
    Table,
}

/// Data-plane parameters of a Hummingbird AS, resolved: a profile's values with the explicit
/// overrides applied.
///
/// Deserialising starts from the values of `profile` (default `paper`) and replaces each one the
/// input names; so `profile = "scionproto"` with `burst_ns = 50000000` is scionproto with a 50 ms
/// burst. Serialising writes every resolved value, which reads back as the same parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ParamsInput")]
pub struct RouterParams {
    /// The profile the other values started from (informational once resolved).
    pub profile: Profile,
    /// A packet is fresh if it was sent at most this long before now (paper: Δ + δ).
    pub freshness_past_ns: u64,
    /// A packet is fresh if it was sent at most this long after now (paper: δ, the clock skew).
    pub freshness_future_ns: u64,
    /// BurstTime of Alg. 1; raised per reservation to the time `max_packet_len` bytes take.
    pub burst_ns: u64,
    /// Largest packet the burst always admits at the reserved rate, bytes.
    pub max_packet_len: u16,
    /// Largest ResID policed per ingress interface (the array has max_res_id + 1 slots).
    pub max_res_id: u32,
    pub codec: BwCodec,
    pub start: StartBound,
    pub policed_length: PolicedLength,
    pub policing: PolicingMode,
    /// Replays of a valid flyover packet within the freshness window get no priority and do
    /// not charge the reservation.
    pub duplicate_suppression: bool,
    /// Flyover packets per freshness window the duplicate filter is sized for (its memory).
    pub duplicates_per_window: u64,
}

impl Profile {
    /// The profile's parameters.
    pub const fn params(self) -> RouterParams {
        let paper = RouterParams {
            profile: Profile::Paper,
            freshness_past_ns: 1_500 * MS,
            freshness_future_ns: 500 * MS,
            burst_ns: 50 * MS,
            max_packet_len: DEFAULT_MAX_PACKET_LEN,
            max_res_id: 100_000,
            codec: BwCodec::Paper,
            start: StartBound::Inclusive,
            policed_length: PolicedLength::Packet,
            policing: PolicingMode::Table,
            duplicate_suppression: false,
            duplicates_per_window: DEFAULT_DUPLICATES_PER_WINDOW,
        };
        match self {
            Profile::Paper => paper,
            Profile::Scionproto => RouterParams {
                profile: Profile::Scionproto,
                freshness_past_ns: NS,
                freshness_future_ns: NS,
                burst_ns: NS,
                codec: BwCodec::Linear,
                start: StartBound::Strict,
                policed_length: PolicedLength::Payload,
                ..paper
            },
        }
    }
}

impl Default for RouterParams {
    fn default() -> Self {
        Profile::Paper.params()
    }
}

impl RouterParams {
    /// The span of times at which one packet passes the freshness check: a replay that passes it
    /// arrives at most this long after the original.
    pub fn freshness_window_ns(&self) -> u64 {
        self.freshness_past_ns.saturating_add(self.freshness_future_ns)
    }
}

/// The `[hummingbird]` table as written: a profile and the fields it overrides.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamsInput {
    #[serde(default)]
    profile: Profile,
    freshness_past_ns: Option<u64>,
    freshness_future_ns: Option<u64>,
    burst_ns: Option<u64>,
    max_packet_len: Option<u16>,
    max_res_id: Option<u32>,
    codec: Option<BwCodec>,
    start: Option<StartBound>,
    policed_length: Option<PolicedLength>,
    policing: Option<PolicingMode>,
    duplicate_suppression: Option<bool>,
    duplicates_per_window: Option<u64>,
}

impl From<ParamsInput> for RouterParams {
    fn from(i: ParamsInput) -> Self {
        let p = i.profile.params();
        RouterParams {
            profile: i.profile,
            freshness_past_ns: i.freshness_past_ns.unwrap_or(p.freshness_past_ns),
            freshness_future_ns: i.freshness_future_ns.unwrap_or(p.freshness_future_ns),
            burst_ns: i.burst_ns.unwrap_or(p.burst_ns),
            max_packet_len: i.max_packet_len.unwrap_or(p.max_packet_len),
            max_res_id: i.max_res_id.unwrap_or(p.max_res_id),
            codec: i.codec.unwrap_or(p.codec),
            start: i.start.unwrap_or(p.start),
            policed_length: i.policed_length.unwrap_or(p.policed_length),
            policing: i.policing.unwrap_or(p.policing),
            duplicate_suppression: i.duplicate_suppression.unwrap_or(p.duplicate_suppression),
            duplicates_per_window: i.duplicates_per_window.unwrap_or(p.duplicates_per_window),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> RouterParams {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn empty_table_is_the_paper_profile() {
        assert_eq!(parse("{}"), Profile::Paper.params());
        assert_eq!(parse(r#"{"profile": "paper"}"#), RouterParams::default());
    }

    #[test]
    fn explicit_fields_override_the_profile_in_any_order() {
        let a = parse(r#"{"burst_ns": 50000000, "profile": "scionproto"}"#);
        let b = parse(r#"{"profile": "scionproto", "burst_ns": 50000000}"#);
        assert_eq!(a, b);
        assert_eq!(a, RouterParams { burst_ns: 50 * MS, ..Profile::Scionproto.params() });
        assert_eq!(parse(r#"{"codec": "linear"}"#).codec, BwCodec::Linear);
        assert_eq!(parse(r#"{"codec": "linear"}"#).burst_ns, 50 * MS);
    }

    #[test]
    fn serialised_params_read_back_unchanged() {
        for profile in [Profile::Paper, Profile::Scionproto] {
            let p = RouterParams { duplicate_suppression: true, max_res_id: 7, ..profile.params() };
            assert_eq!(parse(&serde_json::to_string(&p).unwrap()), p);
        }
    }

    #[test]
    fn unknown_fields_are_refused() {
        assert!(serde_json::from_str::<RouterParams>(r#"{"burst_ms": 3}"#).is_err());
        assert!(serde_json::from_str::<RouterParams>(r#"{"profile": "go"}"#).is_err());
    }
}
