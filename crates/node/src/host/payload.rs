//! The header at the start of every payload the sender writes; the rest is zero padding up to
//! the packet size.
//!
//! ```text
//! | "AVRY" | name length (u8) | flow name (≤ 32 B) | sequence (u64) | send time, Unix ns (u64) |
//! ```

use thiserror::Error;

pub const MAGIC: [u8; 4] = *b"AVRY";
/// Longest flow name in bytes.
pub const MAX_FLOW_NAME: usize = 32;

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum PayloadError {
    #[error("payload too short for its header")]
    Truncated,
    #[error("payload does not start with AVRY")]
    BadMagic,
    #[error("flow name of {0} bytes exceeds 32")]
    NameTooLong(usize),
    #[error("flow name is not UTF-8")]
    NameNotUtf8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PayloadHeader<'a> {
    pub flow: &'a str,
    /// Counts the packets the flow sent (skipped send slots take no number).
    pub seq: u64,
    /// CLOCK_REALTIME at sending, ns.
    pub sent_ns: u64,
}

impl<'a> PayloadHeader<'a> {
    /// Length of the header of a flow called `flow`.
    pub fn len_for(flow: &str) -> usize {
        MAGIC.len() + 1 + flow.len() + 16
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, PayloadError> {
        let n = self.flow.len();
        if n > MAX_FLOW_NAME {
            return Err(PayloadError::NameTooLong(n));
        }
        let len = Self::len_for(self.flow);
        let out = out.get_mut(..len).ok_or(PayloadError::Truncated)?;
        out[..4].copy_from_slice(&MAGIC);
        out[4] = n as u8;
        out[5..5 + n].copy_from_slice(self.flow.as_bytes());
        out[5 + n..13 + n].copy_from_slice(&self.seq.to_be_bytes());
        out[13 + n..21 + n].copy_from_slice(&self.sent_ns.to_be_bytes());
        Ok(len)
    }

    pub fn parse(b: &'a [u8]) -> Result<Self, PayloadError> {
        if b.get(..4).ok_or(PayloadError::Truncated)? != MAGIC {
            return Err(PayloadError::BadMagic);
        }
        let n = usize::from(*b.get(4).ok_or(PayloadError::Truncated)?);
        if n > MAX_FLOW_NAME {
            return Err(PayloadError::NameTooLong(n));
        }
        let rest = b.get(5..21 + n).ok_or(PayloadError::Truncated)?;
        let flow = std::str::from_utf8(&rest[..n]).map_err(|_| PayloadError::NameNotUtf8)?;
        let u64_at = |i: usize| u64::from_be_bytes(rest[i..i + 8].try_into().unwrap());
        Ok(Self { flow, seq: u64_at(n), sent_ns: u64_at(n + 8) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_every_truncation_is_an_error() {
        let h = PayloadHeader { flow: "reserved-1", seq: 0x0102_0304_0506_0708, sent_ns: u64::MAX - 7 };
        let mut b = [0u8; 64];
        let n = h.emit(&mut b).unwrap();
        assert_eq!(n, PayloadHeader::len_for("reserved-1"));
        assert_eq!(PayloadHeader::parse(&b).unwrap(), h);
        assert_eq!(PayloadHeader::parse(&b[..n]).unwrap(), h);
        for cut in 0..n {
            assert!(PayloadHeader::parse(&b[..cut]).is_err(), "cut at {cut}");
        }
        assert_eq!(h.emit(&mut b[..n - 1]), Err(PayloadError::Truncated));
    }

    #[test]
    fn bad_inputs() {
        let long = "x".repeat(33);
        let h = PayloadHeader { flow: &long, seq: 1, sent_ns: 2 };
        assert_eq!(h.emit(&mut [0u8; 128]), Err(PayloadError::NameTooLong(33)));
        let mut b = [0u8; 64];
        PayloadHeader { flow: "ab", seq: 1, sent_ns: 2 }.emit(&mut b).unwrap();
        b[5] = 0xff;
        assert_eq!(PayloadHeader::parse(&b), Err(PayloadError::NameNotUtf8));
        b[4] = 200;
        assert_eq!(PayloadHeader::parse(&b), Err(PayloadError::NameTooLong(200)));
        b[0] = b'X';
        assert_eq!(PayloadHeader::parse(&b), Err(PayloadError::BadMagic));
    }
}
