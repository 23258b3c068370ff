//! SCION itself: ISD-AS addresses, the common and address header, the standard path
//! (type 1), hop-field MACs with SegID chaining, path reversal, and border-router
//! processing of standard paths.
//!
//! Hot paths use zero-copy views ([`ScionView`]) over byte buffers; endpoints build packets
//! from owned representations ([`ScionPacket`], [`StandardPath`]) with `parse`/`emit`.

pub mod drkey;
pub mod epic;
pub mod forwarding;
pub mod mac;
pub mod prefix;
pub mod raw;
pub mod segment;
pub mod wire;

/// AES-128 and AES-CMAC live in aviary-aes, below aviary-qos; re-exported where they were.
pub use aviary_aes::{aes, cmac, cpu};

pub use forwarding::{AsForwarding, InterfaceSet, StandardForwarder};
pub use mac::{derive_forwarding_key, derive_key, HopMacKey};
pub use prefix::Prefix;
pub use segment::{combine, combine_from, Segment};
pub use wire::header::{path_type, HeaderError, HostAddr, ScionHeader, ScionLayout, ScionPacket, ScionView};
pub use wire::ia::{IaParseError, IsdAsn};
pub use wire::path::{HopField, InfoField, PathError, StandardPath};
pub use wire::path_view::StandardPathView;
pub use wire::udp::{ScionUdpView, UdpError, UdpHeader};
