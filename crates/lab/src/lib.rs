//! Measurements and scenarios on top of the mechanism crates: the per-packet benchmark
//! table of `aviary bench` and the networked demo with its HTML report.

pub mod bench;
pub mod demo;
pub mod gas;
pub mod machine;
pub mod report;
pub mod resid;
