//! SCION itself: ISD-AS addresses, the common and address header, the standard path
//! (type 1), hop-field MACs with SegID chaining, path reversal, and border-router
//! processing of standard paths.
//!
//! Hot paths use zero-copy views ([`ScionView`]) over byte buffers; endpoints build packets
//! from owned representations ([`ScionPacket`], [`StandardPath`]) with `parse`/`emit`.

pub mod aes;
pub mod drkey;
pub mod extension;
pub mod forwarding;
pub mod header;
pub mod ia;
pub mod mac;
pub mod path;
pub mod path_view;
pub mod segment;
pub mod udp;

pub use forwarding::{AsForwarding, InterfaceSet, StandardForwarder};
pub use header::{path_type, HeaderError, HostAddr, ScionHeader, ScionPacket, ScionView};
pub use ia::{IaParseError, IsdAsn};
pub use mac::{derive_forwarding_key, derive_key, HopMacKey};
pub use path::{HopField, InfoField, PathError, StandardPath};
pub use path_view::StandardPathView;
pub use segment::{combine, combine_from, Segment};
pub use udp::{ScionUdpView, UdpError, UdpHeader};
