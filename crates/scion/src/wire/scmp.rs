//! SCMP, the SCION Control Message Protocol (SCION `NextHdr` 202), as the SCION SCMP
//! specification defines it: error messages that quote the offending packet and the echo and
//! traceroute informational messages.
//!
//! ```text
//!  0               8               16                              32
//! |     Type      |     Code      |           Checksum            |
//! |              message-specific fields and data ...             |
//! ```
//!
//! | type | message | fields after the checksum |
//! |---|---|---|
//! | 1 | Destination Unreachable | reserved (4), quote |
//! | 2 | Packet Too Big | reserved (2), MTU (2), quote |
//! | 4 | Parameter Problem | reserved (2), pointer (2), quote |
//! | 5 | External Interface Down | ISD-AS (8), interface (8), quote |
//! | 6 | Internal Connectivity Down | ISD-AS (8), ingress (8), egress (8), quote |
//! | 128/129 | Echo Request/Reply | identifier (2), sequence (2), data |
//! | 130/131 | Traceroute Request/Reply | identifier (2), sequence (2), ISD-AS (8), interface (8) |
//!
//! The checksum is the upper-layer checksum of [`crate::wire::udp`] (the pseudo header with
//! protocol 202, then the message with a zero checksum field). An error message quotes as much
//! of the offending packet as fits without the whole SCMP packet exceeding
//! [`MAX_ERROR_PACKET_LEN`] bytes.

use thiserror::Error;

use crate::wire::header::{HeaderError, ScionHeader, ScionView};
use crate::wire::udp::{l4_offset, pseudo_header_checksum, UdpError};
use crate::IsdAsn;

/// Protocol number of SCMP (SCION `NextHdr`).
pub const PROTOCOL_SCMP: u8 = 202;
/// An SCMP error packet, SCION header included, is at most this long.
pub const MAX_ERROR_PACKET_LEN: usize = 1232;

/// Field offsets of the SCMP messages: the one place they are written down.
pub mod field {
    use std::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    /// Echo and traceroute.
    pub const IDENTIFIER: Range<usize> = 4..6;
    pub const SEQUENCE: Range<usize> = 6..8;
    /// Packet Too Big.
    pub const MTU: Range<usize> = 6..8;
    /// Parameter Problem: offset of the offending byte in the quoted packet.
    pub const POINTER: Range<usize> = 6..8;
    /// External Interface Down and Internal Connectivity Down.
    pub const ERROR_IA: Range<usize> = 4..12;
    pub const ERROR_INTERFACE: Range<usize> = 12..20;
    /// Internal Connectivity Down: the egress interface after the ingress one.
    pub const ERROR_EGRESS: Range<usize> = 20..28;
    /// Traceroute.
    pub const TRACEROUTE_IA: Range<usize> = 8..16;
    pub const TRACEROUTE_INTERFACE: Range<usize> = 16..24;
}

/// SCMP message types.
pub mod msg_type {
    pub const DESTINATION_UNREACHABLE: u8 = 1;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const PARAMETER_PROBLEM: u8 = 4;
    pub const EXTERNAL_INTERFACE_DOWN: u8 = 5;
    pub const INTERNAL_CONNECTIVITY_DOWN: u8 = 6;
    pub const ECHO_REQUEST: u8 = 128;
    pub const ECHO_REPLY: u8 = 129;
    pub const TRACEROUTE_REQUEST: u8 = 130;
    pub const TRACEROUTE_REPLY: u8 = 131;
}

/// Codes of Parameter Problem messages that routers send.
pub mod param_code {
    pub const ERRONEOUS_HEADER_FIELD: u8 = 0;
    pub const INVALID_DESTINATION_ADDRESS: u8 = 34;
    pub const INVALID_PATH: u8 = 48;
    pub const UNKNOWN_HOP_FIELD_INGRESS: u8 = 49;
    pub const UNKNOWN_HOP_FIELD_EGRESS: u8 = 50;
    pub const INVALID_HOP_FIELD_MAC: u8 = 51;
    pub const PATH_EXPIRED: u8 = 52;
}

#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum ScmpError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("extension header truncated")]
    ExtensionTruncated,
    #[error("next header {0} is not SCMP (202)")]
    NotScmp(u8),
    #[error("SCMP message of {have} bytes is shorter than the {need} bytes of its type {msg_type}")]
    Truncated { msg_type: u8, need: usize, have: usize },
    #[error("unknown SCMP informational type {0}")]
    UnknownInformational(u8),
    #[error("bad SCMP checksum {found:#06x}, expected {expected:#06x}")]
    BadChecksum { found: u16, expected: u16 },
    #[error("SCMP message of {0} bytes does not fit a SCION packet")]
    TooLong(usize),
    #[error("output buffer of {have} bytes is too small for {need}")]
    BufferTooSmall { need: usize, have: usize },
}

impl From<UdpError> for ScmpError {
    fn from(e: UdpError) -> Self {
        match e {
            UdpError::Header(h) => ScmpError::Header(h),
            _ => ScmpError::ExtensionTruncated,
        }
    }
}

/// Length of the fixed part of a message of type `t` (what precedes its quote or data);
/// `None` for an unknown informational type. An unknown error type has the 4-byte common part
/// and a body the receiver passes on uninterpreted.
pub const fn fixed_len(t: u8) -> Option<usize> {
    match t {
        msg_type::EXTERNAL_INTERFACE_DOWN => Some(field::ERROR_INTERFACE.end),
        msg_type::INTERNAL_CONNECTIVITY_DOWN => Some(field::ERROR_EGRESS.end),
        msg_type::TRACEROUTE_REQUEST | msg_type::TRACEROUTE_REPLY => Some(field::TRACEROUTE_INTERFACE.end),
        msg_type::ECHO_REQUEST | msg_type::ECHO_REPLY => Some(field::SEQUENCE.end),
        1..=127 => Some(field::SEQUENCE.end),
        _ => None,
    }
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes(b.try_into().expect("a 2-byte field"))
}
fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().expect("an 8-byte field"))
}

/// Zero-copy view over one SCMP message (from its type byte to the end of the packet) whose
/// fixed part has been checked against its type.
#[derive(Clone, Copy, Debug)]
pub struct ScmpView<T> {
    buf: T,
    fixed: usize,
}

impl<T: AsRef<[u8]>> ScmpView<T> {
    pub fn new_checked(buf: T) -> Result<Self, ScmpError> {
        let b = buf.as_ref();
        let have = b.len();
        let msg_type = *b.first().ok_or(ScmpError::Truncated { msg_type: 0, need: 4, have })?;
        let fixed = fixed_len(msg_type).ok_or(ScmpError::UnknownInformational(msg_type))?;
        if have < fixed {
            return Err(ScmpError::Truncated { msg_type, need: fixed, have });
        }
        Ok(Self { buf, fixed })
    }
    fn b(&self) -> &[u8] {
        self.buf.as_ref()
    }
    pub fn msg_type(&self) -> u8 {
        self.b()[field::TYPE]
    }
    pub fn code(&self) -> u8 {
        self.b()[field::CODE]
    }
    pub fn checksum(&self) -> u16 {
        be_u16(&self.b()[field::CHECKSUM])
    }
    /// Error messages have types below 128.
    pub fn is_error(&self) -> bool {
        self.msg_type() < 128
    }
    /// Identifier of an echo or traceroute message; the unused bytes 4..6 otherwise.
    pub fn identifier(&self) -> u16 {
        be_u16(&self.b()[field::IDENTIFIER])
    }
    pub fn sequence(&self) -> u16 {
        be_u16(&self.b()[field::SEQUENCE])
    }
    /// What follows the fixed part: the quoted packet of an error, the data of an echo.
    pub fn body(&self) -> &[u8] {
        &self.b()[self.fixed..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ScmpView<T> {
    pub fn set_checksum(&mut self, c: u16) {
        self.buf.as_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

/// An SCMP message, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScmpMessage {
    DestinationUnreachable {
        code: u8,
        quote: Vec<u8>,
    },
    PacketTooBig {
        mtu: u16,
        quote: Vec<u8>,
    },
    ParameterProblem {
        code: u8,
        pointer: u16,
        quote: Vec<u8>,
    },
    ExternalInterfaceDown {
        ia: IsdAsn,
        interface: u64,
        quote: Vec<u8>,
    },
    InternalConnectivityDown {
        ia: IsdAsn,
        ingress: u64,
        egress: u64,
        quote: Vec<u8>,
    },
    EchoRequest {
        id: u16,
        seq: u16,
        data: Vec<u8>,
    },
    EchoReply {
        id: u16,
        seq: u16,
        data: Vec<u8>,
    },
    /// A request carries zeros where the reply names the AS and interface.
    TracerouteRequest {
        id: u16,
        seq: u16,
    },
    TracerouteReply {
        id: u16,
        seq: u16,
        ia: IsdAsn,
        interface: u64,
    },
    /// An error of a type this crate does not know, passed on to whoever sent the quoted packet.
    UnknownError {
        msg_type: u8,
        code: u8,
        body: Vec<u8>,
    },
}

impl ScmpMessage {
    pub fn msg_type(&self) -> u8 {
        use msg_type::*;
        match self {
            Self::DestinationUnreachable { .. } => DESTINATION_UNREACHABLE,
            Self::PacketTooBig { .. } => PACKET_TOO_BIG,
            Self::ParameterProblem { .. } => PARAMETER_PROBLEM,
            Self::ExternalInterfaceDown { .. } => EXTERNAL_INTERFACE_DOWN,
            Self::InternalConnectivityDown { .. } => INTERNAL_CONNECTIVITY_DOWN,
            Self::EchoRequest { .. } => ECHO_REQUEST,
            Self::EchoReply { .. } => ECHO_REPLY,
            Self::TracerouteRequest { .. } => TRACEROUTE_REQUEST,
            Self::TracerouteReply { .. } => TRACEROUTE_REPLY,
            Self::UnknownError { msg_type, .. } => *msg_type,
        }
    }
    pub fn code(&self) -> u8 {
        match self {
            Self::DestinationUnreachable { code, .. }
            | Self::ParameterProblem { code, .. }
            | Self::UnknownError { code, .. } => *code,
            _ => 0,
        }
    }
    pub fn is_error(&self) -> bool {
        self.msg_type() < 128
    }
    /// The quoted packet of an error message.
    pub fn quote(&self) -> Option<&[u8]> {
        match self {
            Self::DestinationUnreachable { quote, .. }
            | Self::PacketTooBig { quote, .. }
            | Self::ParameterProblem { quote, .. }
            | Self::ExternalInterfaceDown { quote, .. }
            | Self::InternalConnectivityDown { quote, .. } => Some(quote),
            _ => None,
        }
    }
    fn body(&self) -> &[u8] {
        match self {
            Self::EchoRequest { data, .. } | Self::EchoReply { data, .. } => data,
            Self::UnknownError { body, .. } => body,
            Self::TracerouteRequest { .. } | Self::TracerouteReply { .. } => &[],
            _ => self.quote().unwrap_or_default(),
        }
    }
    fn fixed_len(&self) -> usize {
        fixed_len(self.msg_type()).unwrap_or(field::SEQUENCE.end)
    }
    pub fn len(&self) -> usize {
        self.fixed_len() + self.body().len()
    }
    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn parse<T: AsRef<[u8]>>(v: &ScmpView<T>) -> Self {
        let b = v.b();
        let quote = v.body().to_vec();
        let ia = || IsdAsn::from_bytes(b[field::ERROR_IA].try_into().expect("8 bytes"));
        let (id, seq) = (v.identifier(), v.sequence());
        match v.msg_type() {
            msg_type::DESTINATION_UNREACHABLE => Self::DestinationUnreachable { code: v.code(), quote },
            msg_type::PACKET_TOO_BIG => Self::PacketTooBig { mtu: be_u16(&b[field::MTU]), quote },
            msg_type::PARAMETER_PROBLEM => {
                Self::ParameterProblem { code: v.code(), pointer: be_u16(&b[field::POINTER]), quote }
            }
            msg_type::EXTERNAL_INTERFACE_DOWN => {
                Self::ExternalInterfaceDown { ia: ia(), interface: be_u64(&b[field::ERROR_INTERFACE]), quote }
            }
            msg_type::INTERNAL_CONNECTIVITY_DOWN => Self::InternalConnectivityDown {
                ia: ia(),
                ingress: be_u64(&b[field::ERROR_INTERFACE]),
                egress: be_u64(&b[field::ERROR_EGRESS]),
                quote,
            },
            msg_type::ECHO_REQUEST => Self::EchoRequest { id, seq, data: quote },
            msg_type::ECHO_REPLY => Self::EchoReply { id, seq, data: quote },
            msg_type::TRACEROUTE_REQUEST => Self::TracerouteRequest { id, seq },
            msg_type::TRACEROUTE_REPLY => Self::TracerouteReply {
                id,
                seq,
                ia: IsdAsn::from_bytes(b[field::TRACEROUTE_IA].try_into().expect("8 bytes")),
                interface: be_u64(&b[field::TRACEROUTE_INTERFACE]),
            },
            t => Self::UnknownError { msg_type: t, code: v.code(), body: b[field::SEQUENCE.end..].to_vec() },
        }
    }

    /// Writes the message with a zero checksum into `out[..self.len()]`.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, ScmpError> {
        let need = self.len();
        let have = out.len();
        let out = out.get_mut(..need).ok_or(ScmpError::BufferTooSmall { need, have })?;
        let fixed = self.fixed_len();
        out[..fixed].fill(0);
        out[field::TYPE] = self.msg_type();
        out[field::CODE] = self.code();
        let mut put16 = |r: std::ops::Range<usize>, v: u16| out[r].copy_from_slice(&v.to_be_bytes());
        match self {
            Self::PacketTooBig { mtu, .. } => put16(field::MTU, *mtu),
            Self::ParameterProblem { pointer, .. } => put16(field::POINTER, *pointer),
            Self::EchoRequest { id, seq, .. }
            | Self::EchoReply { id, seq, .. }
            | Self::TracerouteRequest { id, seq }
            | Self::TracerouteReply { id, seq, .. } => {
                put16(field::IDENTIFIER, *id);
                put16(field::SEQUENCE, *seq);
            }
            _ => {}
        }
        match self {
            Self::ExternalInterfaceDown { ia, interface, .. } => {
                out[field::ERROR_IA].copy_from_slice(&ia.to_bytes());
                out[field::ERROR_INTERFACE].copy_from_slice(&interface.to_be_bytes());
            }
            Self::InternalConnectivityDown { ia, ingress, egress, .. } => {
                out[field::ERROR_IA].copy_from_slice(&ia.to_bytes());
                out[field::ERROR_INTERFACE].copy_from_slice(&ingress.to_be_bytes());
                out[field::ERROR_EGRESS].copy_from_slice(&egress.to_be_bytes());
            }
            Self::TracerouteReply { ia, interface, .. } => {
                out[field::TRACEROUTE_IA].copy_from_slice(&ia.to_bytes());
                out[field::TRACEROUTE_INTERFACE].copy_from_slice(&interface.to_be_bytes());
            }
            _ => {}
        }
        out[fixed..].copy_from_slice(self.body());
        Ok(need)
    }

    /// The error `make(quote)` about `offending`, quoting as much of it as fits in an error
    /// packet whose SCION header is `header_len` bytes long.
    pub fn error_quoting(offending: &[u8], header_len: usize, make: impl Fn(Vec<u8>) -> Self) -> Self {
        let probe = make(Vec::new());
        let room = MAX_ERROR_PACKET_LEN.saturating_sub(header_len + probe.fixed_len());
        make(offending[..offending.len().min(room)].to_vec())
    }
}

/// Writes a whole SCION/SCMP packet (header, message with its checksum) into `out`; returns
/// its length. `header.next_hdr` is set to SCMP on the copy written.
pub fn emit_packet(header: &ScionHeader, msg: &ScmpMessage, out: &mut [u8]) -> Result<usize, ScmpError> {
    let (h, m) = (header.len(), msg.len());
    if m > usize::from(u16::MAX) {
        return Err(ScmpError::TooLong(m));
    }
    if out.len() < h + m {
        return Err(ScmpError::BufferTooSmall { need: h + m, have: out.len() });
    }
    let mut header = header.clone();
    header.next_hdr = PROTOCOL_SCMP;
    header.emit(m, out)?;
    msg.emit(&mut out[h..])?;
    let c = pseudo_header_checksum(
        header.dst_ia,
        header.src_ia,
        header.dst_host,
        header.src_host,
        PROTOCOL_SCMP,
        &out[h..h + m],
    );
    out[h..][field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    Ok(h + m)
}

/// [`emit_packet`] into a new vector.
pub fn packet_to_vec(header: &ScionHeader, msg: &ScmpMessage) -> Result<Vec<u8>, ScmpError> {
    let mut v = vec![0; header.len() + msg.len()];
    emit_packet(header, msg, &mut v)?;
    Ok(v)
}

/// Offset of the SCMP message in a checked SCION packet (after any extension headers), if the
/// packet carries SCMP.
pub fn scmp_offset<T: AsRef<[u8]>>(v: &ScionView<T>) -> Result<usize, ScmpError> {
    let (off, next) = l4_offset(v)?;
    if next != PROTOCOL_SCMP {
        return Err(ScmpError::NotScmp(next));
    }
    Ok(off)
}

/// Checks a whole SCION/SCMP packet, checksum included; returns its header and message.
pub fn parse_packet(pkt: &[u8]) -> Result<(ScionHeader, ScmpMessage), ScmpError> {
    let v = ScionView::new_checked(pkt)?;
    let off = scmp_offset(&v)?;
    let msg = ScmpView::new_checked(&pkt[off..])?;
    let data = &pkt[off..];
    // Summing the message with its checksum field gives 0 exactly when the field is right.
    let sum = pseudo_header_checksum(v.dst_ia(), v.src_ia(), v.dst_host(), v.src_host(), PROTOCOL_SCMP, data);
    if sum != 0 {
        let mut zeroed = data.to_vec();
        zeroed[field::CHECKSUM].fill(0);
        let expected =
            pseudo_header_checksum(v.dst_ia(), v.src_ia(), v.dst_host(), v.src_host(), PROTOCOL_SCMP, &zeroed);
        return Err(ScmpError::BadChecksum { found: msg.checksum(), expected });
    }
    Ok((ScionHeader::parse(&v), ScmpMessage::parse(&msg)))
}

/// The UDP port of the host an SCMP message is for, in SCION's dispatcher-less model: the
/// identifier of an informational message; for an error, the port its quoted packet came from
/// (the UDP source port, or the identifier of a quoted echo or traceroute request). The quote
/// may be cut short, so only the bytes up to that port need to be there.
pub fn destination_port<T: AsRef<[u8]>>(msg: &ScmpView<T>) -> Option<u16> {
    use crate::wire::header::field as hdr;
    if !msg.is_error() {
        return Some(msg.identifier());
    }
    let quote = msg.body();
    let l4 = usize::from(*quote.get(hdr::HDR_LEN)?) * 4;
    let at = |r: std::ops::Range<usize>| quote.get(l4 + r.start..l4 + r.end).map(be_u16);
    match *quote.get(hdr::NEXT_HDR)? {
        crate::wire::udp::PROTOCOL_UDP => at(crate::wire::udp::field::SRC_PORT),
        PROTOCOL_SCMP if quote.get(l4).is_some_and(|t| *t >= 128) => at(field::IDENTIFIER),
        _ => None,
    }
}
