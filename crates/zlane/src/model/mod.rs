//! The analytical DDoS model of the Z-Lane paper's §5: the throughput a source AS S keeps at each
//! of the routers of its path when every router is attacked, for Z-Lane routers (Eq. (1) inside
//! S's ISD, Eq. (2) outside it) and for three baselines (FIFO, per-flow fairness, local isolation).
//!
//! The scenario (§5.3): every router's egress capacity is `C`; only queues G and A count, the
//! others being full. Every other origin fills its guaranteed rate exactly, so the only unused
//! part of G is that of S (inside its ISD) or of S's ISD I (outside); everything else the
//! attackers send, `D`, competes in queue A. S sends all its traffic through its Z-Lane gateway
//! (class γ) at `F`; a router's input rate from S is the previous router's throughput. Outside
//! its ISD, S shares I's rate with `T` of other traffic of I. docs/zlane.md lists every point
//! where §5 leaves a choice and how it is resolved here.
//!
//! Pure functions of validated [`Params`]; rates in Gbit/s.

mod params;

pub use params::{Param, ParamError, Params, DEFAULT_ROUTERS_IN_SOURCE_ISD, FIG4_OFFERED_RATES_GBPS};

/// How a router schedules the traffic of queues G and A.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Per-AS guarantees inside the router's ISD, per-ISD guarantees outside (G), best effort
    /// shared in proportion to demand (A).
    ZLane,
    /// One queue of capacity `C * (mu_A + mu_G)`, shared in proportion to demand.
    Fifo,
    /// The same capacity shared max-min fairly per flow; attackers open twice as many flows per
    /// unit of traffic as benign sources.
    PerFlowFairness,
    /// Isolation per ingress-egress interface pair: S's traffic is alone on its pair at the first
    /// router and shares the attackers' pair (hence FIFO) at every later one.
    LocalIsolation,
}

impl Mechanism {
    pub const ALL: [Mechanism; 4] =
        [Mechanism::ZLane, Mechanism::Fifo, Mechanism::PerFlowFairness, Mechanism::LocalIsolation];

    /// Key in the JSON output of `aviary lab zlane-model`.
    pub fn key(self) -> &'static str {
        match self {
            Mechanism::ZLane => "zlane",
            Mechanism::Fifo => "fifo",
            Mechanism::PerFlowFairness => "per_flow",
            Mechanism::LocalIsolation => "local_isolation",
        }
    }

    /// Name as Fig. 4's legend gives it.
    pub fn label(self) -> &'static str {
        match self {
            Mechanism::ZLane => "Z-Lane",
            Mechanism::Fifo => "FIFO",
            Mechanism::PerFlowFairness => "per-flow fairness",
            Mechanism::LocalIsolation => "local isolation",
        }
    }
}

/// Whether a router's AS is in the source AS's ISD (Eq. (1)) or not (Eq. (2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    InsideSourceIsd,
    OutsideSourceIsd,
}

/// Attack flows per unit of traffic, relative to benign sources (§5.3, "Per-flow Fairness").
pub const ATTACK_FLOW_DENSITY: f64 = 2.0;

/// The model over validated parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    params: Params,
}

/// What the guaranteed rate `r` of one origin does with that origin's class-γ traffic `f` (§5.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Guarantee {
    /// `g = min(f, r)`: forwarded through queue G.
    pub guaranteed: f64,
    /// `u = r - g`: the part of the rate left unused, which queue A may use.
    pub unused: f64,
    /// `o = max(f - r, 0)`: overuse, sent on to queue A.
    pub overuse: f64,
}

impl Guarantee {
    pub fn of(traffic: f64, rate: f64) -> Self {
        let guaranteed = traffic.min(rate);
        Self { guaranteed, unused: rate - guaranteed, overuse: (traffic - rate).max(0.0) }
    }
}

/// The part of `demand_of_origin` a queue of capacity `capacity` forwards when `demand_total`
/// competes for it, each sender getting the same fraction (the `b` of §5.2 and the FIFO
/// formula). Nothing is demanded, nothing is forwarded.
pub fn proportional_share(capacity: f64, demand_total: f64, demand_of_origin: f64) -> f64 {
    if demand_total <= 0.0 {
        return 0.0;
    }
    (capacity / demand_total).min(1.0) * demand_of_origin
}

/// `part / whole`, and 0 for an empty whole (an origin without traffic has no share of it).
fn fraction(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// The max-min fair rate per flow on a link of capacity `capacity` shared by groups of
/// `(flows, demand per flow)`: every flow gets `min(demand, level)`. Infinite when the link
/// carries every demand.
pub fn max_min_level(capacity: f64, groups: &[(f64, f64)]) -> f64 {
    let mut groups: Vec<(f64, f64)> = groups.iter().copied().filter(|&(flows, _)| flows > 0.0).collect();
    groups.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut left = capacity;
    let mut flows_left: f64 = groups.iter().map(|g| g.0).sum();
    for (flows, demand) in groups {
        if demand * flows_left > left {
            return left / flows_left;
        }
        left -= flows * demand;
        flows_left -= flows;
    }
    f64::INFINITY
}

impl Model {
    pub fn new(params: Params) -> Result<Self, ParamError> {
        params.validate()?;
        Ok(Self { params })
    }

    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Router `n` (1-based) is inside S's ISD when `n <= j` (§5.3).
    pub fn position(&self, n: usize) -> Position {
        if n <= self.params.routers_in_source_isd {
            Position::InsideSourceIsd
        } else {
            Position::OutsideSourceIsd
        }
    }

    /// S's throughput at every router of the path, `[t_1, ..., t_n_routers]`, when S sends at `offered`.
    pub fn path_throughput(&self, mechanism: Mechanism, offered: f64) -> Result<Vec<f64>, ParamError> {
        params::check_rate(Param::OfferedRate, offered)?;
        let mut arriving = offered;
        Ok((1..=self.params.routers)
            .map(|n| {
                arriving = self.router_throughput(mechanism, n, arriving);
                arriving
            })
            .collect())
    }

    /// S's throughput at router `n` (1-based) when S's traffic arrives there at `arriving`.
    pub fn router_throughput(&self, mechanism: Mechanism, n: usize, arriving: f64) -> f64 {
        let position = self.position(n);
        match mechanism {
            Mechanism::ZLane => match position {
                Position::InsideSourceIsd => self.zlane_inside(arriving),
                Position::OutsideSourceIsd => self.zlane_outside(arriving),
            },
            Mechanism::Fifo => self.fifo(position, arriving),
            Mechanism::PerFlowFairness => self.per_flow(position, arriving),
            Mechanism::LocalIsolation if n == 1 => arriving.min(self.shared_capacity()),
            Mechanism::LocalIsolation => self.fifo(position, arriving),
        }
    }

    /// Eq. (1): S's own rate `r_S` in G, its overuse competing with the attack in A.
    fn zlane_inside(&self, f_s: f64) -> f64 {
        let p = &self.params;
        let g = Guarantee::of(f_s, p.source_as_rate_gbps);
        let leftover = p.capacity_gbps * p.share_authenticated + g.unused;
        g.guaranteed + proportional_share(leftover, g.overuse + p.attack_gbps, g.overuse)
    }

    /// Eq. (2): S's share of its ISD's rate `r_I` in G and of the ISD's best effort in A, in
    /// proportion to S's part of the ISD's class-γ traffic. No traffic of the ISD is of class α.
    fn zlane_outside(&self, f_s: f64) -> f64 {
        let p = &self.params;
        let f_i = p.isd_other_traffic_gbps + f_s;
        let g = Guarantee::of(f_i, p.source_isd_rate_gbps);
        let leftover = p.capacity_gbps * p.share_authenticated + g.unused;
        let best_effort_of_isd = proportional_share(leftover, g.overuse + p.attack_gbps, g.overuse);
        let share_of_s = fraction(f_s, f_i);
        let guaranteed_of_s = g.guaranteed * share_of_s;
        let best_effort_of_s = best_effort_of_isd * fraction(g.overuse * share_of_s, g.overuse);
        guaranteed_of_s + best_effort_of_s
    }

    /// Capacity of the baselines' single queue: what Z-Lane gives G and A together.
    fn shared_capacity(&self) -> f64 {
        self.params.capacity_gbps * (self.params.share_authenticated + self.params.share_guaranteed)
    }

    /// The legitimate traffic besides S: what the other origins send within their guarantees
    /// under Z-Lane (all of G but S's rate inside the ISD; all of G but I's rate, plus the rest
    /// of I's traffic, outside). The baselines see the same traffic as Z-Lane.
    fn legitimate_background(&self, position: Position) -> f64 {
        let p = &self.params;
        let queue = p.capacity_gbps * p.share_guaranteed;
        match position {
            Position::InsideSourceIsd => queue - p.source_as_rate_gbps,
            Position::OutsideSourceIsd => queue - p.source_isd_rate_gbps + p.isd_other_traffic_gbps,
        }
    }

    fn fifo(&self, position: Position, f_s: f64) -> f64 {
        let total = f_s + self.legitimate_background(position) + self.params.attack_gbps;
        proportional_share(self.shared_capacity(), total, f_s)
    }

    /// Benign sources open one flow per unit of traffic, each sending one unit; attackers
    /// [`ATTACK_FLOW_DENSITY`] times as many, each sending correspondingly less (the unit cancels).
    fn per_flow(&self, position: Position, f_s: f64) -> f64 {
        let attack = self.params.attack_gbps;
        let groups = [
            (f_s, 1.0),
            (self.legitimate_background(position), 1.0),
            (attack * ATTACK_FLOW_DENSITY, 1.0 / ATTACK_FLOW_DENSITY),
        ];
        f_s * max_min_level(self.shared_capacity(), &groups).min(1.0)
    }
}
