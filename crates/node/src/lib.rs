//! aviary's processes and what they share: topology files, per-process configs, the UDP
//! underlay, the border router, the AS control service, the host agent and the runner
//! that starts a whole topology. The mechanisms stay sans-IO in their own crates; this
//! crate wires them to sockets and clocks.

pub mod api;
pub mod as_service;
pub mod buyer;
pub mod clock;
pub mod config;
pub mod control;
pub mod files;
#[cfg(target_os = "linux")]
pub mod gateway;
pub mod host;
pub mod http;
pub mod metrics;
pub mod reservable;
pub mod resid_store;
pub mod router;
pub mod routes;
pub mod runner;
pub mod secret_rotation;
pub mod signals;
pub mod topology;
#[cfg(not(target_os = "linux"))]
compile_error!("aviary's UDP underlay uses recvmmsg/sendmmsg/ppoll and supports only Linux");
#[cfg(target_os = "linux")]
pub mod underlay;
