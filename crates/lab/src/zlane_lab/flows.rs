//! The traffic of the scenario: who sends what, and how, relative to the congested link.

use crate::demo::send_args;
use std::path::Path;

/// How a flow's packets are authenticated, which decides their class at a Z-Lane router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sending {
    /// Per-AS EPIC through the AS's gateway process, which sets the QoS flag within the host's
    /// rate: G up to the origin's guarantee at the router, A above it.
    Gateway,
    /// Per-AS EPIC from an AS without a gateway: authenticated, never flagged: A.
    Epic,
    /// Standard SCION: U.
    Standard,
}

impl Sending {
    /// The `aviary host send` flags of this way of sending (`aviary run` points the hosts of an
    /// AS with a gateway at it).
    fn args(self) -> &'static [&'static str] {
        match self {
            Sending::Gateway | Sending::Epic => &["--epic"],
            Sending::Standard => &[],
        }
    }
}

/// One flow: a host of the topology sending to the sink across the congested link.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    /// Flow and host name (the topology's host of the same name sends it).
    pub name: &'static str,
    /// The AS of its host.
    pub ia: &'static str,
    /// What the flow stands for in the paper's experiment.
    pub role: &'static str,
    pub sending: Sending,
    /// Offered rate as a fraction of the congested link's capacity.
    pub share_of_capacity: f64,
}

/// The protected AS's flow: through its gateway, at its guarantee (half of μ_G = 20 %).
pub const PROTECTED: Flow = Flow {
    name: "protected",
    ia: "1-ff00:0:111",
    role: "AS X at its guarantee",
    sending: Sending::Gateway,
    share_of_capacity: 0.10,
};

/// Everything else: together with the protected flow four times the link's capacity, as the
/// paper's 160 Gbit/s on 40.
pub const ATTACK: [Flow; 4] = [
    Flow {
        name: "as-overuse",
        ia: "1-ff00:0:112",
        role: "an AS of the ISD over its guarantee",
        sending: Sending::Gateway,
        share_of_capacity: 1.2,
    },
    Flow {
        name: "isd-overuse",
        ia: "3-ff00:0:310",
        role: "another ISD over its guarantee",
        sending: Sending::Gateway,
        share_of_capacity: 1.2,
    },
    Flow {
        name: "authenticated",
        ia: "1-ff00:0:113",
        role: "EPIC without the QoS flag",
        sending: Sending::Epic,
        share_of_capacity: 0.5,
    },
    Flow {
        name: "unauthenticated",
        ia: "1-ff00:0:113",
        role: "standard SCION",
        sending: Sending::Standard,
        share_of_capacity: 1.0,
    },
];

impl Flow {
    pub fn rate_bps(&self, capacity_bps: u64) -> u64 {
        (capacity_bps as f64 * self.share_of_capacity) as u64
    }

    /// The sender's flags for this flow to `dst` (`ISD-AS,IP:PORT`). Every flow is jittered:
    /// strictly periodic senders lock each other out of a drop-tail queue in phase-dependent
    /// ways, which made the FIFO run swing between runs.
    pub fn send_args(&self, dst: String, capacity_bps: u64, duration_ms: u64, report: &Path) -> Vec<String> {
        let mut args = send_args(self.name, dst, self.rate_bps(capacity_bps), duration_ms, report);
        args.extend(self.sending.args().iter().chain(&["--pattern", "jittered"]).map(|a| a.to_string()));
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offered_load_is_four_times_the_capacity() {
        let total: f64 = ATTACK.iter().chain([&PROTECTED]).map(|f| f.share_of_capacity).sum();
        assert!((total - 4.0).abs() < 1e-9, "{total}");
    }
}
