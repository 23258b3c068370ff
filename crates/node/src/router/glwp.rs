//! The GLWP processor of a border router (`[glwp]`): validation of GLWP data packets (path type
//! 252) at an on-path AS, and the AS's own hosts' GLWP packets sent out within their β (see
//! docs/glwp.md, "Routers on the emulated network").
//!
//! ```toml
//! [glwp]
//! # lifetime_ms = 1000, skew_ms = 1000      # L and ε, as the AS's GLWP service has them
//! # validity_s = 86400                      # ΔT, as the AS's GLWP service has it
//! # monitor_allocations = 4096              # live allocations the traffic monitor holds
//! # monitor_burst_bytes = 16000             # burst of each allocation's token bucket
//! # packets_per_window = 1000000            # duplicate filter sized for this many packets in L + 2ε
//! ```
//!
//! `K_k` is `hop_key::as_secret` of the AS master secret, as the control service's GLWP
//! service derives it for the hop keys it issues. A rotation of the master secret
//! (`PUT /v1/keys`) must keep the old `K_k` for as long as allocations issued under it live,
//! ΔT + L + ε: shorter overlaps are refused, and the default is that plus
//! [`RESTART_MARGIN_SECS`] ([`RouterGlwpConfig::key_overlap`]).

use anyhow::anyhow;
use aviary_glwp::{AidMonitor, Freshness, Router};
use aviary_qos::{DuplicateFilter, DuplicateFilterConfig};
use aviary_scion::IsdAsn;
use serde::{Deserialize, Serialize};

use super::management::{KeyOverlap, DEFAULT_OVERLAP_SECS, MAX_OVERLAP_SECS};
use crate::config::ConfigError;

const MS: u64 = 1_000_000;
/// Probability that a fresh packet is taken for a replay, at `packets_per_window`.
const FALSE_POSITIVE_RATE: f64 = 1e-6;
/// Beyond ΔT + L + ε, the default key overlap of a GLWP router leaves this long between the
/// router's rotation and the control service's restart: allocations issued until the restart
/// are under the old key, and the overlap counts from the rotation.
pub const RESTART_MARGIN_SECS: u64 = 3600;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RouterGlwpConfig {
    /// L, the lifetime of a data packet.
    pub lifetime_ms: u64,
    /// ε, the clock skew tolerated between ASes.
    pub skew_ms: u64,
    /// ΔT, how long the AS's GLWP service makes allocations last: the router keeps a rotated
    /// `K_k` that long (and L + ε more).
    pub validity_s: u32,
    /// How many live allocations the traffic monitor can hold.
    pub monitor_allocations: usize,
    /// Burst of each allocation's token bucket, bytes: at least one packet.
    pub monitor_burst_bytes: u16,
    /// Packets per duplicate-suppression window (L + 2ε) at which its false-positive rate is 10⁻⁶.
    pub packets_per_window: u64,
}

impl Default for RouterGlwpConfig {
    fn default() -> Self {
        Self {
            lifetime_ms: 1000,
            skew_ms: 1000,
            validity_s: 86_400,
            monitor_allocations: 4096,
            // Sixteen 1000-byte packets: a paced sender's jitter, not a burst that could
            // crowd a link.
            monitor_burst_bytes: 16_000,
            packets_per_window: 1_000_000,
        }
    }
}

impl RouterGlwpConfig {
    fn freshness(&self) -> Freshness {
        Freshness { lifetime_ns: self.lifetime_ms * MS, skew_ns: self.skew_ms * MS }
    }

    fn duplicates(&self) -> DuplicateFilterConfig {
        DuplicateFilterConfig {
            window_ns: (self.lifetime_ms + 2 * self.skew_ms) * MS,
            expected_per_window: self.packets_per_window,
            false_positive_rate: FALSE_POSITIVE_RATE,
        }
    }

    /// ΔT + L + ε in whole seconds, rounded up: how long after a rotation an allocation issued
    /// under the old `K_k` can still be used.
    pub fn allocation_lifetime_secs(&self) -> u64 {
        (u64::from(self.validity_s) * 1000).saturating_add(self.lifetime_ms).saturating_add(self.skew_ms).div_ceil(1000)
    }

    /// The overlaps `PUT /v1/keys` accepts on this router: at least ΔT + L + ε, by default that
    /// plus [`RESTART_MARGIN_SECS`] (never less than the routers' [`DEFAULT_OVERLAP_SECS`]).
    pub fn key_overlap(&self) -> KeyOverlap {
        let min = self.allocation_lifetime_secs();
        KeyOverlap {
            default_secs: DEFAULT_OVERLAP_SECS.max(min.saturating_add(RESTART_MARGIN_SECS)),
            glwp_min_secs: min,
        }
    }

    /// Checks the table; errors name the field of `file`.
    pub fn check(&self, file: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| ConfigError::new(file, format!("glwp.{field}"), msg);
        if self.lifetime_ms == 0 {
            return Err(err("lifetime_ms", "must be positive".into()));
        }
        if self.validity_s == 0 {
            return Err(err("validity_s", "must be positive".into()));
        }
        if self.key_overlap().default_secs > MAX_OVERLAP_SECS {
            let longest = MAX_OVERLAP_SECS - RESTART_MARGIN_SECS;
            let msg = format!("ΔT + L + ε must stay within {longest} s, so that a key rotation's overlap can cover it");
            return Err(err("validity_s", msg));
        }
        if self.monitor_allocations == 0 || self.monitor_allocations > 1 << 24 {
            return Err(err("monitor_allocations", "must be 1 … 16777216".into()));
        }
        if self.monitor_burst_bytes < 1500 {
            return Err(err("monitor_burst_bytes", "must hold a packet of 1500 bytes".into()));
        }
        DuplicateFilter::new(self.duplicates(), [0; 16]).map_err(|e| err("packets_per_window", e.to_string()))?;
        Ok(())
    }
}

/// The processor of AS `ia` with master secret `secret`; the monitor's slot hash and the
/// duplicate filter's hash get fresh keys at every start.
pub fn processor(ia: IsdAsn, secret: &[u8], cfg: &RouterGlwpConfig) -> anyhow::Result<Router> {
    let mut keys = [0u8; 24];
    getrandom::getrandom(&mut keys).map_err(|e| anyhow!("no randomness from the OS: {e}"))?;
    let (dup_key, hash_key) = keys.split_at(16);
    let duplicates = DuplicateFilter::new(cfg.duplicates(), dup_key.try_into().expect("16 bytes"))
        .map_err(|e| anyhow!("glwp.packets_per_window: {e}"))?;
    let monitor = AidMonitor::new(
        cfg.monitor_allocations,
        cfg.monitor_burst_bytes,
        u64::from_be_bytes(hash_key.try_into().expect("8 bytes")),
    );
    let as_secret = aviary_glwp::hop_key::as_secret(secret);
    Ok(Router::new(&as_secret, cfg.freshness(), monitor, duplicates).with_source_as(ia))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::RouterConfig;
    use aviary_qos::{Admission, ClassId};

    const ROUTER: &str = r#"ia = "1-ff00:0:110"
master_secret_file = "secret.hex"
internal = "127.0.0.1:0"
management = "127.0.0.1:0"

[glwp]
monitor_allocations = 64

[[interface]]
id = 2
local = "127.0.0.1:0"
remote = "127.0.0.1:9"
neighbor = "1-ff00:0:111"
capacity_bps = 1000000
"#;

    #[test]
    fn a_glwp_router_claims_path_type_252_and_queues_it_with_priority() {
        let cfg: RouterConfig = toml::from_str(ROUTER).unwrap();
        cfg.validate("r.toml").unwrap();
        assert_eq!(cfg.glwp, Some(RouterGlwpConfig { monitor_allocations: 64, ..Default::default() }));
        let pipeline = super::super::processors(
            cfg.ia,
            &[7; 32],
            &aviary_scion::drkey::RotatingSecret::new(&[7; 32]).unwrap(),
            &[2],
            &cfg,
            [0; 16],
            0,
        )
        .unwrap();
        let glwp = pipeline.processors().find(|p| p.name() == "glwp").expect("a glwp processor");
        assert_eq!(glwp.claims(), [aviary_qos::Claim::PathType(aviary_glwp::PATH_TYPE)]);
        let tables = cfg.class_tables("r.toml").unwrap();
        let table = &tables[super::super::classes::DEFAULT_TABLE];
        let classify = |cfg: &RouterConfig| {
            let c = super::super::classes::classifier(
                "r.toml",
                "default",
                table,
                &cfg.class_mapping(),
                pipeline.admissions(),
            )
            .unwrap();
            (c.classify(Admission::GUARANTEED), c.classify(Admission::UNAUTHENTICATED))
        };
        assert_eq!(classify(&cfg), (ClassId(0), ClassId(1)), "GLWP before best effort");
        // Without [glwp], guaranteed traffic is best effort on the plain table.
        let plain = RouterConfig { glwp: None, ..cfg.clone() };
        assert_eq!(classify(&plain), (ClassId(1), ClassId(1)));
        // `[classes]` still decides.
        let mut own = cfg.clone();
        own.classes.insert("guaranteed".into(), "best_effort".into());
        assert_eq!(classify(&own).0, ClassId(1));
        let bad = ROUTER.replace("monitor_allocations = 64", "monitor_burst_bytes = 10");
        let e = toml::from_str::<RouterConfig>(&bad).unwrap().validate("r.toml").unwrap_err();
        assert_eq!(e.field, "glwp.monitor_burst_bytes");
    }

    #[test]
    fn the_key_overlap_covers_the_allocations_and_leaves_time_for_the_restart() {
        let defaults = RouterGlwpConfig::default();
        // The routers' default of 24 h is ΔT, two seconds short of an allocation's life.
        assert_eq!(defaults.key_overlap(), KeyOverlap { default_secs: 86_402 + 3600, glwp_min_secs: 86_402 });
        let short = RouterGlwpConfig { validity_s: 30, lifetime_ms: 500, skew_ms: 200, ..defaults };
        assert_eq!(short.key_overlap(), KeyOverlap { default_secs: DEFAULT_OVERLAP_SECS, glwp_min_secs: 31 });
        let cfg: RouterConfig =
            toml::from_str(&ROUTER.replace("monitor_allocations = 64", "validity_s = 30\nlifetime_ms = 500")).unwrap();
        assert_eq!(cfg.glwp.unwrap().key_overlap().glwp_min_secs, 32);
    }

    #[test]
    fn bad_tables_name_the_field() {
        let ok = RouterGlwpConfig::default();
        ok.check("r.toml").unwrap();
        for (cfg, field) in [
            (RouterGlwpConfig { lifetime_ms: 0, ..ok }, "glwp.lifetime_ms"),
            (RouterGlwpConfig { monitor_allocations: 0, ..ok }, "glwp.monitor_allocations"),
            (RouterGlwpConfig { validity_s: 0, ..ok }, "glwp.validity_s"),
            (RouterGlwpConfig { validity_s: 7 * 24 * 3600, ..ok }, "glwp.validity_s"),
            (RouterGlwpConfig { monitor_burst_bytes: 100, ..ok }, "glwp.monitor_burst_bytes"),
            (RouterGlwpConfig { packets_per_window: 0, ..ok }, "glwp.packets_per_window"),
        ] {
            assert_eq!(cfg.check("r.toml").unwrap_err().field, field);
        }
    }
}
