//! IP prefixes (`addr/len`), as operators write them for groups of hosts: the Z-Lane
//! gateway's rate groups, the networks a control service serves host keys to.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::HostAddr;

/// An IP prefix, `addr/len`; a bare address is a prefix of its full length. No bit is set
/// beyond the length (`10.0.1.7/24` is refused: it is ambiguous what was meant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    addr: IpAddr,
    len: u8,
}

impl Prefix {
    /// Whether `host` is inside the prefix (a service address never is).
    pub fn contains(&self, host: &HostAddr) -> bool {
        match (self.addr, host) {
            (IpAddr::V4(p), HostAddr::V4(h)) => mask_eq(&p.octets(), &h.octets(), self.len),
            (IpAddr::V6(p), HostAddr::V6(h)) => mask_eq(&p.octets(), &h.octets(), self.len),
            _ => false,
        }
    }

    /// Whether the IP address `ip` is inside the prefix.
    pub fn contains_ip(&self, ip: IpAddr) -> bool {
        self.contains(&HostAddr::from(ip))
    }

    pub fn len(&self) -> u8 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The one host a full-length prefix holds.
    pub fn single_host(&self) -> Option<HostAddr> {
        match self.addr {
            IpAddr::V4(a) if self.len == 32 => Some(HostAddr::V4(a)),
            IpAddr::V6(a) if self.len == 128 => Some(HostAddr::V6(a)),
            _ => None,
        }
    }
}

fn mask_eq(a: &[u8], b: &[u8], len: u8) -> bool {
    let (whole, rest) = (usize::from(len / 8), len % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) & (0xff << (8 - rest)) == 0
}

/// `addr` with every bit beyond the first `len` cleared.
fn masked(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let keep = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4((a.to_bits() & keep).into())
        }
        IpAddr::V6(a) => {
            let keep = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6((a.to_bits() & keep).into())
        }
    }
}

impl FromStr for Prefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (addr, len) = s.split_once('/').map_or((s, None), |(a, l)| (a, Some(l)));
        let addr: IpAddr = addr.parse().map_err(|_| format!("`{addr}` is not an IP address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            None => max,
            Some(l) => l.parse::<u8>().ok().filter(|l| *l <= max).ok_or(format!("`/{l}`: a length from 0 to {max}"))?,
        };
        if masked(addr, len) != addr {
            return Err(format!("`{s}` has bits set beyond its length"));
        }
        Ok(Prefix { addr, len })
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// As the string it is written as (`"10.0.1.0/24"`), so that config files hold prefixes.
impl Serialize for Prefix {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Prefix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn contains_exactly_the_addresses_under_the_prefix() {
        let p: Prefix = "127.0.3.0/24".parse().unwrap();
        assert!(p.contains_ip(Ipv4Addr::new(127, 0, 3, 0).into()));
        assert!(p.contains_ip(Ipv4Addr::new(127, 0, 3, 255).into()));
        assert!(!p.contains_ip(Ipv4Addr::new(127, 0, 2, 255).into()));
        assert!(!p.contains_ip(Ipv4Addr::new(127, 0, 4, 0).into()));
        assert!(!p.contains_ip(Ipv6Addr::LOCALHOST.into()), "no IPv6 address is in an IPv4 prefix");
        let odd: Prefix = "10.0.0.128/25".parse().unwrap();
        assert!(odd.contains_ip(Ipv4Addr::new(10, 0, 0, 200).into()));
        assert!(!odd.contains_ip(Ipv4Addr::new(10, 0, 0, 127).into()));
        let host: Prefix = "10.0.0.1".parse().unwrap();
        assert_eq!((host.len(), host.single_host()), (32, Some(HostAddr::V4(Ipv4Addr::new(10, 0, 0, 1)))));
        assert!(!host.contains_ip(Ipv4Addr::new(10, 0, 0, 2).into()));
        let all: Prefix = "::/0".parse().unwrap();
        assert!(all.contains_ip(Ipv6Addr::LOCALHOST.into()) && !all.contains(&HostAddr::Svc(0)));
        let v6: Prefix = "2001:db8::/33".parse().unwrap();
        assert!(v6.contains_ip("2001:db8:7fff::1".parse::<IpAddr>().unwrap()));
        assert!(!v6.contains_ip("2001:db8:8000::1".parse::<IpAddr>().unwrap()));
    }

    #[test]
    fn refuses_what_is_not_a_prefix_and_round_trips_what_is() {
        for bad in ["10.0.0.0/33", "10.0.1.7/24", "10.0.0/24", "::1/129", "10.0.0.0/", "x/8", ""] {
            assert!(bad.parse::<Prefix>().is_err(), "{bad}");
        }
        for good in ["10.0.0.0/8", "0.0.0.0/0", "10.0.0.1/32", "2001:db8::/32"] {
            let p: Prefix = good.parse().unwrap();
            assert_eq!(p.to_string(), good);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<Prefix>(&json).unwrap(), p);
        }
        assert!(serde_json::from_str::<Prefix>("\"10.0.0.0/33\"").is_err());
    }
}
