//! Z-Lane (the Z-Lane paper): zero-setup forwarding guarantees for authenticated traffic of ASes
//! and ISDs.
//!
//! - [`gateway`]: the source AS's gateway (§4.4, App. C): per-host rates, the QoS flag and
//!   the AS-level re-authentication of every hop validation field.
//! - [`classes`]: the router classification of §4.5 into the queues R, N, G, A and U, the
//!   per-AS and per-ISD guarantees in 8-byte token buckets, their configuration (§4.6) and the
//!   default class table (Table 2).
//! - [`router`]: the border router's processor, EPIC verification followed by classification.
//! - [`model`]: the analytical model of §5 that computes what throughput a source AS keeps at
//!   each router of a path under a volumetric DDoS attack, for Z-Lane routers and three
//!   baselines (FIFO, per-flow fairness, local isolation).
//! - [`testbed`]: a chain of ASes, hosts and their per-AS EPIC packets, for tests and benchmarks.

pub mod classes;
pub mod gateway;
pub mod model;
pub mod router;
pub mod testbed;
