//! SCION's wire formats, and nothing else: ISD-AS numbers, the common and address header, the
//! standard path (type 1), EPIC-HP (type 3) and aviary's per-AS EPIC path, the hop-by-hop and
//! end-to-end extension headers, SCION/UDP, SCMP.
//!
//! Each header has a zero-copy view over a byte buffer (`new_checked` validates lengths once,
//! after which every getter and setter is in bounds) whose field offsets come from one table
//! per header (a `field` module next to the view), and an owned representation with
//! `parse`/`emit` for endpoints. Public parsers return a typed error on short or malformed
//! input; none panics. This module knows nothing of routers: what a parse error costs a
//! packet is decided in [`crate::forwarding`].

pub mod epic;
pub mod epic_per_as;
pub mod extension;
pub mod header;
pub mod ia;
pub mod path;
pub mod path_view;
pub mod scmp;
pub mod udp;
