//! ISD-AS identifiers and their text form (`1-ff00:0:110`, `64-559`).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The largest AS number written in decimal (BGP-style); larger ones use `a:b:c` hex groups.
const MAX_BGP_ASN: u64 = u32::MAX as u64;
const MAX_ASN: u64 = (1 << 48) - 1;

/// A SCION ISD-AS: 16-bit ISD and 48-bit AS number, stored as on the wire (ISD << 48 | AS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IsdAsn(u64);

#[derive(Debug, Error, PartialEq, Eq)]
pub enum IaParseError {
    #[error("ISD-AS {0:?} has no '-' between ISD and AS")]
    MissingDash(String),
    #[error("ISD {0:?} is not a decimal number below 65536")]
    BadIsd(String),
    #[error("AS {0:?} is neither a decimal number below 2^32 nor three hex groups a:b:c")]
    BadAsn(String),
}

impl IsdAsn {
    pub const fn new(isd: u16, asn: u64) -> Self {
        Self(((isd as u64) << 48) | (asn & MAX_ASN))
    }
    pub const fn from_u64(raw: u64) -> Self {
        Self(raw)
    }
    pub const fn to_u64(self) -> u64 {
        self.0
    }
    pub const fn isd(self) -> u16 {
        (self.0 >> 48) as u16
    }
    pub const fn asn(self) -> u64 {
        self.0 & MAX_ASN
    }
    pub fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
    pub fn from_bytes(b: [u8; 8]) -> Self {
        Self(u64::from_be_bytes(b))
    }
}

fn parse_asn(s: &str) -> Option<u64> {
    if s.contains(':') {
        let groups: Vec<&str> = s.split(':').collect();
        if groups.len() != 3 {
            return None;
        }
        let mut asn = 0u64;
        for g in groups {
            if g.is_empty() || g.len() > 4 || !g.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            asn = (asn << 16) | u64::from_str_radix(g, 16).ok()?;
        }
        Some(asn)
    } else {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse::<u64>().ok().filter(|a| *a <= MAX_BGP_ASN)
    }
}

impl FromStr for IsdAsn {
    type Err = IaParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (isd, asn) = s.split_once('-').ok_or_else(|| IaParseError::MissingDash(s.into()))?;
        let isd = (!isd.is_empty() && isd.bytes().all(|b| b.is_ascii_digit()))
            .then(|| isd.parse::<u16>().ok())
            .flatten()
            .ok_or_else(|| IaParseError::BadIsd(isd.into()))?;
        let asn = parse_asn(asn).ok_or_else(|| IaParseError::BadAsn(asn.into()))?;
        Ok(Self::new(isd, asn))
    }
}

impl fmt::Display for IsdAsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let asn = self.asn();
        if asn <= MAX_BGP_ASN {
            write!(f, "{}-{}", self.isd(), asn)
        } else {
            write!(f, "{}-{:x}:{:x}:{:x}", self.isd(), asn >> 32, (asn >> 16) & 0xffff, asn & 0xffff)
        }
    }
}

impl serde::Serialize for IsdAsn {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for IsdAsn {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_forms() {
        let ia: IsdAsn = "1-ff00:0:110".parse().unwrap();
        assert_eq!(ia.isd(), 1);
        assert_eq!(ia.asn(), 0xff00_0000_0110);
        assert_eq!(ia.to_string(), "1-ff00:0:110");
        assert_eq!(ia.to_bytes(), [0, 1, 0xff, 0, 0, 0, 1, 0x10]);
        assert_eq!("64-559".parse::<IsdAsn>().unwrap().to_string(), "64-559");
        // A small AS written in hex is printed in its canonical decimal form.
        assert_eq!("1-0:0:1".parse::<IsdAsn>().unwrap().to_string(), "1-1");
        assert_eq!("65535-ffff:ffff:ffff".parse::<IsdAsn>().unwrap().to_u64(), u64::MAX);
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "1",
            "1-",
            "-1",
            "a-1",
            "65536-1",
            "1-4294967296",
            "1-ff00:0",
            "1-ff00:0:0:1",
            "1-fffff:0:1",
            "1-:0:1",
            "1-+5",
            "+1-5",
            "1-ff00:0:11g",
        ] {
            assert!(bad.parse::<IsdAsn>().is_err(), "{bad:?} parsed");
        }
    }

    proptest! {
        #[test]
        fn text_round_trip(raw: u64) {
            let ia = IsdAsn::from_u64(raw);
            prop_assert_eq!(ia.to_string().parse::<IsdAsn>().unwrap(), ia);
        }
    }
}
