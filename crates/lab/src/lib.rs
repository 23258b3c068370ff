//! Measurements and scenarios on top of the mechanism crates: the per-packet benchmark
//! table of `aviary bench`, the networked demo with its HTML report, and the reproductions of
//! the papers' figures (`aviary lab ...`).

pub mod bench;
pub mod demo;
pub mod forward;
pub mod gas;
pub mod glwp_lab;
pub mod gma;
mod html;
pub mod machine;
pub mod pathval;
pub mod pathval_attack;
pub mod pathval_report;
pub mod report;
pub mod resid;
pub mod router_metrics;
pub mod zlane_lab;
pub mod zlane_model;
