//! Measurements and scenarios on top of the mechanism crates: the per-packet benchmark
//! table of `aviary bench`, the networked demo with its HTML report, and the `aviary lab`
//! measurements (gas, ResIDs, GMA allocations).

pub mod bench;
pub mod demo;
pub mod gas;
pub mod gma;
pub mod machine;
pub mod report;
pub mod resid;
