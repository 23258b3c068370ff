//! The reservable bandwidth of each interface, as the control service and the AS service
//! configure it (`[[hummingbird.interface]]`), checked against the link's capacity at start-up.
//!
//! ```toml
//! [[hummingbird.interface]]
//! id = 1
//! capacity_bps = 10000000   # the link's capacity, each direction
//! reservable_bps = 8000000  # optional: default 80% of capacity_bps
//! ```
//! The default leaves a fifth of every link to best-effort and control traffic (path lookups,
//! beaconing, the market's own transactions), which reservations would otherwise starve.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::resid_store::Limits;

/// Share of a link's capacity that is reservable unless configured, in percent.
pub const DEFAULT_RESERVABLE_PERCENT: u64 = 80;

/// One `[[hummingbird.interface]]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterfaceBandwidth {
    pub id: u16,
    /// The link's capacity in each direction, bit/s. The control service takes it from the
    /// topology when absent (and refuses one that differs); the AS service needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bps: Option<u64>,
    /// The most bandwidth that reservations (grants and market assets together) may hold in each
    /// direction at any instant, bit/s; default [`DEFAULT_RESERVABLE_PERCENT`] of the capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservable_bps: Option<u64>,
}

impl InterfaceBandwidth {
    /// The entry the runner writes for a link of `capacity_bps`: everything explicit.
    pub fn for_link(id: u16, capacity_bps: u64) -> Self {
        Self { id, capacity_bps: Some(capacity_bps), reservable_bps: Some(default_reservable(capacity_bps)) }
    }
}

/// [`DEFAULT_RESERVABLE_PERCENT`] of `capacity_bps`, rounded down.
pub fn default_reservable(capacity_bps: u64) -> u64 {
    (u128::from(capacity_bps) * u128::from(DEFAULT_RESERVABLE_PERCENT) / 100) as u64
}

fn field(i: usize, name: &str) -> String {
    format!("hummingbird.interface[{i}].{name}")
}

/// The bound of entry `i` against the link's `capacity`.
fn bound(file: &str, i: usize, e: &InterfaceBandwidth, capacity: u64) -> Result<u64, ConfigError> {
    if capacity == 0 {
        return Err(ConfigError::new(file, field(i, "capacity_bps"), "must be positive"));
    }
    let reservable = e.reservable_bps.unwrap_or_else(|| default_reservable(capacity));
    if reservable > capacity {
        let msg = format!("{reservable} bit/s is more than the link's capacity of {capacity} bit/s");
        return Err(ConfigError::new(file, field(i, "reservable_bps"), msg));
    }
    Ok(reservable)
}

fn unique(file: &str, entries: &[InterfaceBandwidth]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, e) in entries.iter().enumerate() {
        if e.id == 0 {
            return Err(ConfigError::new(file, field(i, "id"), "0 is the AS's inside, not an interface"));
        }
        if !seen.insert(e.id) {
            return Err(ConfigError::new(file, field(i, "id"), format!("interface {} is listed twice", e.id)));
        }
    }
    Ok(())
}

/// The control service's bounds: every link of the AS in the topology (`links`: interface and
/// capacity), at the configured reservable bandwidth or the default share of its capacity.
pub fn control_limits(
    file: &str,
    entries: &[InterfaceBandwidth],
    links: impl IntoIterator<Item = (u16, u64)>,
) -> Result<Limits, ConfigError> {
    unique(file, entries)?;
    let links: BTreeMap<u16, u64> = links.into_iter().collect();
    let mut limits: BTreeMap<u16, u64> = links.iter().map(|(&id, &c)| (id, default_reservable(c))).collect();
    for (i, e) in entries.iter().enumerate() {
        let Some(&capacity) = links.get(&e.id) else {
            return Err(ConfigError::new(
                file,
                field(i, "id"),
                format!("the topology has no link at interface {}", e.id),
            ));
        };
        if let Some(c) = e.capacity_bps.filter(|&c| c != capacity) {
            let msg = format!("{c} bit/s, but the topology's link has {capacity} bit/s");
            return Err(ConfigError::new(file, field(i, "capacity_bps"), msg));
        }
        limits.insert(e.id, bound(file, i, e, capacity)?);
    }
    Ok(Limits::new(limits))
}

/// The AS service's bounds: only the interfaces configured, each with its capacity.
pub fn as_service_limits(file: &str, entries: &[InterfaceBandwidth]) -> Result<Limits, ConfigError> {
    unique(file, entries)?;
    let mut limits = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        let capacity = e.capacity_bps.ok_or_else(|| {
            ConfigError::new(file, field(i, "capacity_bps"), "required: the AS service has no topology to take it from")
        })?;
        limits.insert(e.id, bound(file, i, e, capacity)?);
    }
    Ok(Limits::new(limits))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u16, capacity: Option<u64>, reservable: Option<u64>) -> InterfaceBandwidth {
        InterfaceBandwidth { id, capacity_bps: capacity, reservable_bps: reservable }
    }

    #[test]
    fn defaults_and_errors_naming_the_field() {
        let links = [(1, 10_000_000), (2, 1_000_000)];
        let l = control_limits("c.toml", &[], links).unwrap();
        assert_eq!((l.get(1), l.get(2), l.get(3)), (Some(8_000_000), Some(800_000), None));
        let l = control_limits("c.toml", &[entry(2, None, Some(1_000_000))], links).unwrap();
        assert_eq!(l.get(2), Some(1_000_000), "the whole link may be reservable");
        let e = control_limits("c.toml", &[entry(1, None, Some(50_000_000))], links).unwrap_err();
        assert_eq!((e.file.as_str(), e.field.as_str()), ("c.toml", "hummingbird.interface[0].reservable_bps"));
        assert!(e.to_string().contains("more than the link's capacity of 10000000 bit/s"), "{e}");
        let e = control_limits("c.toml", &[entry(1, Some(20_000_000), None)], links).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[0].capacity_bps");
        let e = control_limits("c.toml", &[entry(1, None, None), entry(9, None, None)], links).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[1].id");
        let e = control_limits("c.toml", &[entry(1, None, None), entry(1, None, None)], links).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[1].id");

        let l = as_service_limits("a.toml", &[InterfaceBandwidth::for_link(1, 10_000_000)]).unwrap();
        assert_eq!(l.get(1), Some(8_000_000));
        let e = as_service_limits("a.toml", &[entry(1, None, Some(1))]).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[0].capacity_bps");
        let e = as_service_limits("a.toml", &[entry(1, Some(10), Some(11))]).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[0].reservable_bps");
        let e = as_service_limits("a.toml", &[entry(1, Some(0), None)]).unwrap_err();
        assert_eq!(e.field, "hummingbird.interface[0].capacity_bps");
    }
}
