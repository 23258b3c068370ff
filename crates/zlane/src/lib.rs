//! Z-Lane (the Z-Lane paper): zero-setup forwarding guarantees for authenticated traffic of ASes
//! and ISDs.
//!
//! So far this crate holds [`model`], the analytical model of the paper's §5 that computes what
//! throughput a source AS keeps at each router of a path under a volumetric DDoS attack, for
//! Z-Lane routers and three baselines (FIFO, per-flow fairness, local isolation).

pub mod model;
