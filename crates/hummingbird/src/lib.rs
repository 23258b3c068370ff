//! Hummingbird (the Hummingbird paper): flyover bandwidth reservations on SCION path type 5.
//!
//! - [`path`]: the wire format (meta header, hop and flyover hop fields), reversal.
//! - [`crypto`]: SV, A_K and FlyoverMAC.
//! - [`bw`]: the bandwidth codecs.
//! - [`reservation`]: ASes of a path and building a reserved path (crossover rule).
//! - [`router`]: border-router processing (Alg. 1-4) returning a verdict.
//! - [`admission`]: the freshness and activity checks' bounds at one time, for a batch.
//! - [`auth_key_cache`]: the expanded A_Ks a router keeps for packets that arrive alone.
//! - [`profile`]: the verdict parameters, as named profiles (`paper`, `scionproto`).
//! - [`source`]: per-packet stamping at the source.

pub mod admission;
pub mod auth_key_cache;
pub mod bw;
pub mod crypto;
pub mod path;
pub mod path_view;
mod prepare;
pub mod profile;
pub mod reservation;
pub mod resid;
pub mod router;
pub mod seal;
pub mod service;
pub mod source;
pub mod testbed;

pub use bw::BwCodec;
pub use crypto::{derive_sv, AuthKey, ResInfo, SecretValue};
pub use path::{Flyover, HbirdHop, HbirdPath};
pub use path_view::HbirdPathView;
pub use profile::{PolicedLength, PolicingMode, Profile, RouterParams, StartBound};
pub use reservation::{as_hops, build_path, AsHop, Reservation};
pub use resid::{ResIdAllocator, ResIdError};
pub use router::{Router, RouterConfigError};
pub use seal::{open, seal, BuyerKey, SealContext, SealError};
pub use service::{Fulfilment, RedeemRequest, ReservationService, ServiceError, ServiceState};
pub use source::Source;
