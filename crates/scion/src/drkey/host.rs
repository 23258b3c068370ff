//! Host addresses as DRKey derives keys for them: the host type/length code and the address
//! bytes of the SCION address header, parsed from the text that SCION's control service
//! accepts in key requests.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use super::DrkeyError;

/// SCION service (SVC) address values, as in scionproto's `pkg/addr/svc.go`.
pub mod svc {
    /// Discovery service.
    pub const DS: u16 = 0x0001;
    /// Control service.
    pub const CS: u16 = 0x0002;
    /// Any service of the AS.
    pub const WILDCARD: u16 = 0x0010;
    /// "No service"; scionproto uses it as the failure value of its parser.
    pub const NONE: u16 = 0xffff;
    /// Flag bit: multicast instead of anycast.
    pub const MULTICAST: u16 = 0x8000;
}

/// The address of an end host inside its AS, as it enters a Level-2/3 derivation.
///
/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) are always stored as [`HostAddr::Ipv4`]:
/// scionproto unmaps them before encoding (`slayers.PackAddr`), so a host has one key no
/// matter which of its two spellings a request used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostAddr {
    Ipv4(Ipv4Addr),
    /// Never an IPv4-mapped address (the constructors unmap those).
    Ipv6(Ipv6Addr),
    /// A service address (see [`svc`]), multicast bit included.
    Svc(u16),
}

impl HostAddr {
    /// The host address of an IP address, unmapping IPv4-mapped IPv6.
    pub fn from_ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(a) => HostAddr::Ipv4(a),
            IpAddr::V6(a) => match a.to_ipv4_mapped() {
                Some(v4) => HostAddr::Ipv4(v4),
                None => HostAddr::Ipv6(a),
            },
        }
    }

    /// The 4-bit type/length code of the SCION address header, `T << 2 | L` (IPv4 0x0,
    /// IPv6 0x3, SVC 0x4); DRKey puts it in a byte of its own before the address.
    pub fn type_len(&self) -> u8 {
        match self.unmapped() {
            HostAddr::Ipv4(_) => 0x0,
            HostAddr::Ipv6(_) => 0x3,
            HostAddr::Svc(_) => 0x4,
        }
    }

    /// The address bytes as in the address header: 4 (IPv4), 16 (IPv6) or 4 (SVC: 2 bytes
    /// and 2 zero bytes of padding). Returns the buffer and the number of bytes used.
    pub fn encode(&self) -> ([u8; 16], usize) {
        let mut out = [0u8; 16];
        let len = match self.unmapped() {
            HostAddr::Ipv4(a) => {
                out[..4].copy_from_slice(&a.octets());
                4
            }
            HostAddr::Ipv6(a) => {
                out.copy_from_slice(&a.octets());
                16
            }
            HostAddr::Svc(s) => {
                out[..2].copy_from_slice(&s.to_be_bytes());
                4
            }
        };
        (out, len)
    }

    /// Guards against a mapped address put into `Ipv6` by hand: it encodes as IPv4.
    fn unmapped(self) -> Self {
        match self {
            HostAddr::Ipv6(a) => HostAddr::from_ip(IpAddr::V6(a)),
            other => other,
        }
    }

    /// Parses an SVC name: `DS`, `CS` or `Wildcard`, optionally with `_A` (anycast, the
    /// default) or `_M` (multicast). Case-sensitive, as scionproto's `ParseSVC`.
    pub fn parse_svc(s: &str) -> Option<u16> {
        let (base, flag) = if let Some(b) = s.strip_suffix("_A") {
            (b, 0)
        } else if let Some(b) = s.strip_suffix("_M") {
            (b, svc::MULTICAST)
        } else {
            (s, 0)
        };
        let value = match base {
            "DS" => svc::DS,
            "CS" => svc::CS,
            "Wildcard" => svc::WILDCARD,
            _ => return None,
        };
        Some(value | flag)
    }
}

impl From<Ipv4Addr> for HostAddr {
    fn from(a: Ipv4Addr) -> Self {
        HostAddr::Ipv4(a)
    }
}

impl From<Ipv6Addr> for HostAddr {
    fn from(a: Ipv6Addr) -> Self {
        HostAddr::from_ip(IpAddr::V6(a))
    }
}

impl From<IpAddr> for HostAddr {
    fn from(a: IpAddr) -> Self {
        HostAddr::from_ip(a)
    }
}

/// The source or destination host of an address header, as DRKey derives keys for it.
impl From<&crate::wire::header::HostAddr> for HostAddr {
    fn from(h: &crate::wire::header::HostAddr) -> Self {
        use crate::wire::header::HostAddr as Wire;
        match *h {
            Wire::V4(a) => HostAddr::Ipv4(a),
            Wire::V6(a) => HostAddr::from(a),
            Wire::Svc(s) => HostAddr::Svc(s),
        }
    }
}

impl FromStr for HostAddr {
    type Err = DrkeyError;

    /// An SVC name (see [`HostAddr::parse_svc`]), a dotted-quad IPv4 address or an IPv6
    /// address in any RFC 4291 text form (compressed, with an embedded IPv4 part, ...).
    /// Like scionproto's `addr.ParseHost`, SVC names are tried first. IPv6 zones (`%eth0`)
    /// are rejected: the zone is not part of the address and would silently drop out.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.is_empty() {
            return Err(DrkeyError::EmptyHost);
        }
        if let Some(v) = HostAddr::parse_svc(s) {
            return Ok(HostAddr::Svc(v));
        }
        if s.contains('%') {
            return Err(DrkeyError::ZonedHost(s.into()));
        }
        s.parse::<IpAddr>().map(HostAddr::from_ip).map_err(|_| DrkeyError::BadHost(s.into()))
    }
}

impl fmt::Display for HostAddr {
    /// IP addresses in their canonical form; SVC as `CS`, `CS_M`, ... and other service
    /// values as `<SVC:0x0003>` (scionproto's form, which no parser accepts).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unmapped() {
            HostAddr::Ipv4(a) => write!(f, "{a}"),
            HostAddr::Ipv6(a) => write!(f, "{a}"),
            HostAddr::Svc(v) => {
                let name = match v & !svc::MULTICAST {
                    svc::DS => "DS",
                    svc::CS => "CS",
                    svc::WILDCARD => "Wildcard",
                    _ => return write!(f, "<SVC:{v:#06x}>"),
                };
                let suffix = if v & svc::MULTICAST != 0 { "_M" } else { "" };
                write!(f, "{name}{suffix}")
            }
        }
    }
}
