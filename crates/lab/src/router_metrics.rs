//! What the congested router counted per class on its egress interface, read from its
//! Prometheus `/metrics` before and after the measurement.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;

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
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once('{') else { continue };
        if name != SENT && name != QUEUE_DROPPED {
            continue;
        }
        let Some((labels, value)) = rest.rsplit_once('}') else { continue };
        let Ok(value) = value.trim().parse::<u64>() else { continue };
        let label =
            |key: &str| labels.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix("=\"")?.strip_suffix('"'));
        if label("interface") != Some(interface.as_str()) {
            continue;
        }
        let Some(class) = label("class") else { continue };
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
}
