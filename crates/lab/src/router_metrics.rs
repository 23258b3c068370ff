//! What a border router counted, read from its Prometheus `/metrics`: the bytes per class of an
//! egress interface (before and after a measurement) and a mechanism's drops by reason.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use aviary_node::router::metrics::CLASS_COUNTERS_TIME;

/// Bytes of one class on one egress interface (monotonic counters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassBytes {
    pub sent: u64,
    pub queue_dropped: u64,
}

impl ClassBytes {
    /// What arrived at the class's queue (sent or dropped there).
    pub fn offered(&self) -> u64 {
        self.sent + self.queue_dropped
    }

    /// The counters' growth from `earlier` to `self`.
    pub fn since(&self, earlier: &ClassBytes) -> ClassBytes {
        ClassBytes {
            sent: self.sent.saturating_sub(earlier.sent),
            queue_dropped: self.queue_dropped.saturating_sub(earlier.queue_dropped),
        }
    }
}

const SENT: &str = "aviary_router_sent_bytes_total";
const QUEUE_DROPPED: &str = "aviary_router_queue_dropped_bytes_total";

/// The per-class byte counters of `interface` in a router's Prometheus text, in the order the
/// router lists them (its class table's: R, N, G, A, U on a Z-Lane link).
pub fn class_bytes(text: &str, interface: u16) -> Vec<(String, ClassBytes)> {
    let mut out: Vec<(String, ClassBytes)> = Vec::new();
    let interface = interface.to_string();
    for (name, labels, value) in samples::<u64>(text) {
        if name != SENT && name != QUEUE_DROPPED {
            continue;
        }
        if label(labels, "interface") != Some(interface.as_str()) {
            continue;
        }
        let Some(class) = label(labels, "class") else { continue };
        let entry = match out.iter().position(|(c, _)| c == class) {
            Some(k) => &mut out[k].1,
            None => {
                out.push((class.to_owned(), ClassBytes::default()));
                &mut out.last_mut().expect("just pushed").1
            }
        };
        if name == SENT {
            entry.sent = value;
        } else {
            entry.queue_dropped = value;
        }
    }
    out
}

/// The labelled samples of a Prometheus text whose values parse as `V`: name, labels
/// (`k="v",...`), value.
fn samples<V: std::str::FromStr>(text: &str) -> impl Iterator<Item = (&str, &str, V)> {
    text.lines().filter(|l| !l.starts_with('#')).filter_map(|line| {
        let (name, rest) = line.split_once('{')?;
        let (labels, value) = rest.rsplit_once('}')?;
        Some((name, labels, value.trim().parse::<V>().ok()?))
    })
}

/// The value of label `key` in `labels`.
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=\"")?.strip_suffix('"'))
}

/// When the router read its class counters (Unix time, s): a rate is the counters' growth over
/// this time's growth between two scrapes. The counters are published every few hundred ms, so
/// the time between the scrapes themselves is off by up to that, and under load by more.
pub fn class_counters_time_s(text: &str) -> anyhow::Result<f64> {
    samples::<f64>(text)
        .find_map(|(name, _, t)| (name == CLASS_COUNTERS_TIME).then_some(t))
        .filter(|t| *t > 0.0)
        .with_context(|| format!("the router's metrics have no {CLASS_COUNTERS_TIME}"))
}

const MECHANISM_DROPPED: &str = "aviary_router_mechanism_dropped_packets_total";

/// The packets `mechanism` dropped, by reason (every reason the router lists, zeros included).
pub fn mechanism_drops(text: &str, mechanism: &str) -> std::collections::BTreeMap<String, u64> {
    samples::<u64>(text)
        .filter(|(name, labels, _)| *name == MECHANISM_DROPPED && label(labels, "mechanism") == Some(mechanism))
        .filter_map(|(_, labels, value)| Some((label(labels, "reason")?.to_owned(), value)))
        .collect()
}

/// Fetches the router's `/metrics` from its management address.
pub fn scrape(management: SocketAddr) -> anyhow::Result<String> {
    ureq::get(&format!("http://{management}/metrics"))
        .timeout(Duration::from_secs(5))
        .call()
        .with_context(|| format!("cannot read the metrics of the router at {management}"))?
        .into_string()
        .context("router metrics")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_interfaces_class_counters_are_read() {
        let text = "# HELP x\n\
            aviary_router_sent_bytes_total{ia=\"1-ff00:0:110\",interface=\"3\",class=\"G\"} 1500\n\
            aviary_router_sent_bytes_total{ia=\"1-ff00:0:110\",interface=\"13\",class=\"G\"} 99\n\
            aviary_router_queue_dropped_bytes_total{ia=\"1-ff00:0:110\",interface=\"3\",class=\"A\"} 700\n\
            aviary_router_queued_bytes{ia=\"1-ff00:0:110\",interface=\"3\",class=\"A\"} 5\n\
            aviary_router_sent_bytes_total{ia=\"1-ff00:0:110\",interface=\"3\",class=\"A\"} garbage\n";
        let c = class_bytes(text, 3);
        assert_eq!(
            c,
            [
                ("G".to_owned(), ClassBytes { sent: 1500, queue_dropped: 0 }),
                ("A".to_owned(), ClassBytes { sent: 0, queue_dropped: 700 })
            ]
        );
        assert_eq!(c[1].1.since(&ClassBytes { sent: 0, queue_dropped: 200 }).offered(), 500);
    }

    #[test]
    fn the_counters_time_is_read_from_the_routers_own_text() {
        let status = aviary_node::router::metrics::RouterStatus {
            ia: Some("1-ff00:0:110".parse().unwrap()),
            classes_read_unix_ns: 1_750_000_003_125_000_000,
            ..Default::default()
        };
        assert_eq!(class_counters_time_s(&status.prometheus()).unwrap(), 1_750_000_003.125);
        // Before the leader read any (0), or from a router without the gauge: no time to take
        // a rate over.
        let unread = aviary_node::router::metrics::RouterStatus::default().prometheus();
        assert!(class_counters_time_s(&unread).is_err());
        assert!(class_counters_time_s("aviary_router_sent_bytes_total{interface=\"3\",class=\"G\"} 1500\n").is_err());
    }

    #[test]
    fn a_mechanisms_drops_by_reason() {
        let text = "aviary_router_mechanism_dropped_packets_total{ia=\"1-ff00:0:110\",mechanism=\"glwp\",reason=\"overuse\"} 7\n\
            aviary_router_mechanism_dropped_packets_total{ia=\"1-ff00:0:110\",mechanism=\"glwp\",reason=\"duplicate\"} 0\n\
            aviary_router_mechanism_dropped_packets_total{ia=\"1-ff00:0:110\",mechanism=\"zlane\",reason=\"overuse\"} 9\n";
        let d = mechanism_drops(text, "glwp");
        assert_eq!(d.len(), 2);
        assert_eq!((d["overuse"], d["duplicate"]), (7, 0));
    }
}
