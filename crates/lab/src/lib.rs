//! Measurements and scenarios on top of the mechanism crates: the per-packet benchmark
//! table of `aviary bench` and the in-process data-plane demo.

pub mod bench;
pub mod demo;
pub mod machine;
