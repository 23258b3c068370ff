//! The `[glwp]` table of a control service (and `[as.glwp]` of a topology, which `aviary run`
//! turns into it): the AS's allocation matrix, the share of each interface's divergent its
//! neighbour may use for discovery requests, and the protocol parameters every AS shares.
//!
//! ```toml
//! [as.glwp]
//! matrix = [[0, 1, 4_000_000], [1, 0, 4_000_000], [1, 2, 6_000_000]]   # [in, out, bit/s]
//! rate_share_ppm = 10_000
//! ```

use std::net::SocketAddr;

use aviary_glwp::discovery::rate::RateLimit;
use aviary_glwp::discovery::wire::{message_len, MAX_ASES};
use aviary_glwp::discovery::{check_announceable, BlamePolicy, DiscoveryParams};
use aviary_glwp::{AllocationMatrix, Freshness, MatrixEntry, LOCAL_INTERFACE};
use serde::{Deserialize, Serialize};

use crate::http::client_limit::ClientRate;
use crate::topology::ConfigError;

const MS: u64 = 1_000_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlwpConfig {
    /// The UDP socket of the AS's GLWP service. A control service's `[glwp]` needs it; in a
    /// topology `aviary run` assigns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// The allocation matrix: `[ingress, egress, bit/s]` per interface pair (0: the AS itself).
    pub matrix: Vec<[u64; 3]>,
    /// Share of `DIV_i`, in millionths, that the neighbour at interface i may send as
    /// discovery requests.
    #[serde(default = "default_share")]
    pub rate_share_ppm: u32,
    /// Burst of each neighbour's token bucket, bytes; at least a request of the longest path.
    #[serde(default = "default_burst")]
    pub burst_bytes: u16,
    /// τ: requests whose preliminary guarantee falls below it here are refused.
    #[serde(default)]
    pub min_guarantee_bps: u64,
    /// L, the lifetime of a discovery message.
    #[serde(default = "default_second")]
    pub lifetime_ms: u64,
    /// ε, the clock skew tolerated between ASes.
    #[serde(default = "default_second")]
    pub skew_ms: u64,
    /// ΔT, how long an allocation lasts.
    #[serde(default = "default_validity")]
    pub validity_s: u32,
    /// Blames of one neighbour within `blame_window_s` that hold it down (0: never).
    #[serde(default = "default_blame_limit")]
    pub blame_limit: u32,
    /// The window over which blames count; older ones are forgotten.
    #[serde(default = "default_blame_window")]
    pub blame_window_s: u64,
    /// How long discoveries through a held-down neighbour are refused.
    #[serde(default = "default_hold_down")]
    pub hold_down_s: u64,
    /// Discoveries one host (an IPv4 address, an IPv6 /64) may ask for per second through
    /// `POST /v1/glwp/discover`, so that no host spends the AS's request budget at a neighbour
    /// (`rate_share_ppm` there) alone; 0: no limit.
    #[serde(default = "default_host_rate")]
    pub host_discoveries_per_s: u32,
    /// How many discoveries one host may ask for at once.
    #[serde(default = "default_host_burst")]
    pub host_discovery_burst: u32,
}

const S: u64 = 1_000_000_000;

fn default_blame_limit() -> u32 {
    BlamePolicy::default().blames
}

fn default_blame_window() -> u64 {
    BlamePolicy::default().window_ns / S
}

fn default_hold_down() -> u64 {
    BlamePolicy::default().hold_down_ns / S
}

fn default_host_rate() -> u32 {
    10
}

fn default_host_burst() -> u32 {
    20
}

fn default_share() -> u32 {
    50_000
}

fn default_burst() -> u16 {
    message_len(MAX_ASES) as u16
}

fn default_second() -> u64 {
    1000
}

fn default_validity() -> u32 {
    86_400
}

/// A checked `[glwp]` table.
#[derive(Clone, Debug)]
pub struct GlwpPlan {
    pub matrix: AllocationMatrix,
    pub rate: RateLimit,
    pub params: DiscoveryParams,
    pub blame: BlamePolicy,
    /// Discoveries per host through the host API (`None`: no limit).
    pub host_rate: Option<ClientRate>,
}

impl GlwpConfig {
    /// A table with `matrix` and every other field at its default.
    pub fn with_matrix(matrix: Vec<[u64; 3]>) -> Self {
        Self {
            listen: None,
            matrix,
            rate_share_ppm: default_share(),
            burst_bytes: default_burst(),
            min_guarantee_bps: 0,
            lifetime_ms: default_second(),
            skew_ms: default_second(),
            validity_s: default_validity(),
            blame_limit: default_blame_limit(),
            blame_window_s: default_blame_window(),
            hold_down_s: default_hold_down(),
            host_discoveries_per_s: default_host_rate(),
            host_discovery_burst: default_host_burst(),
        }
    }

    /// Checks the table at `prefix` (`glwp`, or `as[3].glwp` in a topology) of `file` for an AS
    /// whose inter-AS interfaces are `links`; errors name the field.
    pub fn plan(&self, file: &str, prefix: &str, links: &[u16]) -> Result<GlwpPlan, ConfigError> {
        let err = |field: String, msg: String| ConfigError::new(file, format!("{prefix}.{field}"), msg);
        let mut entries = Vec::with_capacity(self.matrix.len());
        for (n, &[i, j, bps]) in self.matrix.iter().enumerate() {
            let mut pair = [0u16; 2];
            for (slot, iface) in pair.iter_mut().zip([i, j]) {
                *slot = u16::try_from(iface).ok().filter(|&f| f == LOCAL_INTERFACE || links.contains(&f)).ok_or_else(
                    || err(format!("matrix[{n}]"), format!("interface {iface} is not a link of this AS")),
                )?;
            }
            entries.push(MatrixEntry { ingress: pair[0], egress: pair[1], bps });
        }
        let matrix =
            AllocationMatrix::new(entries).map_err(|e| err(format!("matrix[{}]", e.index()), e.to_string()))?;
        check_announceable(&[&matrix], links.iter().copied()).map_err(|e| err("matrix".into(), e.to_string()))?;
        if self.rate_share_ppm == 0 || self.rate_share_ppm > 1_000_000 {
            return Err(err("rate_share_ppm".into(), "must be 1 … 1000000 (millionths of a divergent)".into()));
        }
        let needed = message_len(MAX_ASES);
        if usize::from(self.burst_bytes) < needed {
            return Err(err("burst_bytes".into(), format!("must hold a request of the longest path, {needed} bytes")));
        }
        if self.lifetime_ms == 0 {
            return Err(err("lifetime_ms".into(), "must be positive".into()));
        }
        if self.validity_s == 0 {
            return Err(err("validity_s".into(), "must be positive".into()));
        }
        // A neighbour whose bucket rounds down to no rate could send one burst and then nothing.
        for i in matrix.interfaces().filter(|&i| i != LOCAL_INTERFACE) {
            let bps = u128::from(matrix.divergent_bps(i)) * u128::from(self.rate_share_ppm) / 1_000_000;
            if (1..u128::from(aviary_qos::RATE_UNIT_BPS)).contains(&bps) {
                let msg = format!(
                    "the neighbour at interface {i} would get {bps} bit/s of requests, below the token buckets' unit of {} bit/s",
                    aviary_qos::RATE_UNIT_BPS
                );
                return Err(err("rate_share_ppm".into(), msg));
            }
        }
        let ns = |ms: u64, field: &str| ms.checked_mul(MS).ok_or_else(|| err(field.into(), "too large".into()));
        let seconds = |s: u64, field: &str| match s.checked_mul(S) {
            Some(0) if self.blame_limit > 0 => Err(err(field.into(), "must be positive".into())),
            Some(ns) => Ok(ns),
            None => Err(err(field.into(), "too large".into())),
        };
        let blame = BlamePolicy {
            blames: self.blame_limit,
            window_ns: seconds(self.blame_window_s, "blame_window_s")?,
            hold_down_ns: seconds(self.hold_down_s, "hold_down_s")?,
        };
        let freshness =
            Freshness { lifetime_ns: ns(self.lifetime_ms, "lifetime_ms")?, skew_ns: ns(self.skew_ms, "skew_ms")? };
        let host_rate = match (self.host_discoveries_per_s, self.host_discovery_burst) {
            (0, _) => None,
            (_, 0) => return Err(err("host_discovery_burst".into(), "must be at least 1".into())),
            (per_s, burst) => Some(ClientRate { per_s, burst }),
        };
        Ok(GlwpPlan {
            matrix,
            rate: RateLimit { share_ppm: self.rate_share_ppm, burst_bytes: self.burst_bytes },
            params: DiscoveryParams {
                freshness,
                validity_s: self.validity_s,
                min_guarantee_bps: self.min_guarantee_bps,
            },
            blame,
            host_rate,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GlwpPlan, ConfigError> {
        let c: GlwpConfig = toml::from_str(text).map_err(|e| ConfigError::new("c.toml", "(toml)", e.to_string()))?;
        c.plan("c.toml", "glwp", &[1, 2])
    }

    #[test]
    fn a_matrix_and_defaults() {
        let p = parse("matrix = [[0, 1, 1_000_000], [1, 2, 2_000_000], [2, 0, 5_000_000]]").unwrap();
        assert_eq!(p.matrix.divergent_bps(1), 2_000_000);
        assert_eq!(p.matrix.convergent_bps(0), 5_000_000);
        assert_eq!(p.rate.share_ppm, 50_000);
        assert_eq!(p.params.freshness.lifetime_ns, 1_000_000_000);
        assert_eq!(p.params.validity_s, 86_400);
        assert_eq!(p.host_rate, Some(ClientRate { per_s: 10, burst: 20 }));
        let unlimited = parse("matrix = []\nhost_discoveries_per_s = 0\nhost_discovery_burst = 0").unwrap();
        assert_eq!(unlimited.host_rate, None);
    }

    #[test]
    fn errors_name_file_and_field() {
        let cases = [
            ("matrix = [[0, 1, 1], [0, 3, 1]]", "glwp.matrix[1]", "not a link"),
            ("matrix = [[0, 70000, 1]]", "glwp.matrix[0]", "not a link"),
            ("matrix = [[0, 1, 1], [0, 1, 2]]", "glwp.matrix[1]", "twice"),
            ("matrix = [[1, 1, 1]]", "glwp.matrix[0]", ""),
            ("matrix = []\nrate_share_ppm = 0", "glwp.rate_share_ppm", "must be"),
            ("matrix = []\nburst_bytes = 100", "glwp.burst_bytes", "longest path"),
            ("matrix = []\nlifetime_ms = 0", "glwp.lifetime_ms", "positive"),
            ("matrix = []\nvalidity_s = 0", "glwp.validity_s", "positive"),
            ("matrix = [[1, 0, 1_000_000]]", "glwp.rate_share_ppm", "interface 1 would get 50000 bit/s"),
            ("matrix = []\nblame_window_s = 0", "glwp.blame_window_s", "positive"),
            ("matrix = []\nhold_down_s = 0", "glwp.hold_down_s", "positive"),
            ("matrix = []\nhost_discovery_burst = 0", "glwp.host_discovery_burst", "at least 1"),
        ];
        for (text, field, msg) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!((e.file.as_str(), e.field.as_str()), ("c.toml", field), "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
        let e = parse("matrix = [[0, 1]]").unwrap_err();
        assert_eq!(e.field, "(toml)", "{e}");
        assert_eq!(parse("matrix = []\nblame_limit = 0\nhold_down_s = 0").unwrap().blame.blames, 0, "off");
    }

    #[test]
    fn the_blame_policy_defaults_to_the_cores_conservative_one() {
        assert_eq!(parse("matrix = []").unwrap().blame, BlamePolicy::default());
        let p = parse("matrix = []\nblame_limit = 3\nblame_window_s = 5\nhold_down_s = 7").unwrap();
        assert_eq!(p.blame, BlamePolicy { blames: 3, window_ns: 5 * S, hold_down_ns: 7 * S });
    }

    #[test]
    fn more_interfaces_than_an_announcement_lists_is_an_error_not_a_silent_skip() {
        // An AS with 70 links: the announcement for a link the matrix leaves out lists every
        // interface of the matrix, so 0 … 63 fit and 0 … 64 do not.
        let links: Vec<u16> = (1..=70).collect();
        let text = |n: u16| {
            let rows: Vec<String> = (1..=n).map(|i| format!("[0, {i}, 1_000_000_000]")).collect();
            format!("matrix = [{}]", rows.join(", "))
        };
        let plan = |n| toml::from_str::<GlwpConfig>(&text(n)).unwrap().plan("c.toml", "glwp", &links);
        assert!(plan(63).is_ok());
        let e = plan(64).unwrap_err();
        assert_eq!((e.file.as_str(), e.field.as_str()), ("c.toml", "glwp.matrix"), "{e}");
        assert!(e.message.contains("at most 64"), "{e}");
    }
}
