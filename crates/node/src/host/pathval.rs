//! `aviary host pathval-send`: pathval packets to a host through routers that forward them by
//! destination (see docs/pathval.md, "On the emulated network").
//!
//! Each packet carries SCION's empty path, a hop-by-hop extension with a zeroed pathval header
//! holding only the session's SessionID, and a SCION/UDP datagram. The host's AS's trusted
//! router is the path's first node: it runs SrcInitialization (Timestamp, DataHash,
//! Concealment under the source-destination key it derives from DRKey) and Construction for
//! the next trusted node. The host needs no key.

use std::net::UdpSocket;
use std::time::Duration;

use anyhow::Context;
use aviary_pathval::header::{emit_extension, EXTENSION_LEN};
use aviary_pathval::PathvalView;
use aviary_scion::wire::extension::HOP_BY_HOP;
use aviary_scion::wire::header::path_type;
use aviary_scion::wire::udp::{self, UdpHeader, UDP_HEADER_LEN};
use aviary_scion::{HostAddr, ScionHeader};
use serde::Serialize;

use super::ScionAddr;
use crate::config::HostConfig;

/// `aviary host pathval-send`.
#[derive(Clone, Debug, clap::Args)]
pub struct PathvalSendOptions {
    /// Destination, ISD-AS,IP:PORT.
    pub dst: ScionAddr,
    /// Packets to send.
    #[arg(long, short = 'c', default_value_t = 100)]
    pub count: u32,
    /// UDP payload bytes per packet (the paper measures with 1000).
    #[arg(long, default_value_t = 1000)]
    pub payload: usize,
    /// Time between packets.
    #[arg(long, default_value_t = 1000)]
    pub interval_us: u64,
}

/// What was sent.
#[derive(Clone, Debug, Serialize)]
pub struct PathvalSendReport {
    pub sent: u32,
    /// The session's SessionID (hex).
    pub session_id: String,
}

/// The `seq`-th packet of a session: SCION header (empty path), the extension with a zeroed
/// pathval header carrying `session_id`, and UDP from `src_port` with `payload` bytes.
pub fn packet(
    cfg: &HostConfig,
    opts: &PathvalSendOptions,
    src_port: u16,
    session_id: &[u8; 16],
    seq: u32,
) -> anyhow::Result<Vec<u8>> {
    let header = ScionHeader {
        traffic_class: 0,
        flow_id: u32::from(src_port),
        next_hdr: HOP_BY_HOP,
        path_type: path_type::EMPTY,
        dst_ia: opts.dst.ia,
        src_ia: cfg.ia,
        dst_host: HostAddr::from(opts.dst.host.ip()),
        src_host: HostAddr::from(cfg.addr),
        path: Vec::new(),
    };
    let udp_len = UDP_HEADER_LEN + opts.payload;
    let h = header.len();
    let mut pkt = vec![0; h + EXTENSION_LEN + udp_len];
    header.emit(EXTENSION_LEN + udp_len, &mut pkt).context("the packet's SCION header")?;
    let opt = emit_extension(udp::PROTOCOL_UDP, &mut pkt[h..]);
    PathvalView::new_checked(&mut pkt[h + opt.start..h + opt.end])?.set_session_id(session_id);
    let l4 = h + EXTENSION_LEN;
    let length = u16::try_from(udp_len).context("--payload: at most 65527 bytes")?;
    UdpHeader { src_port, dst_port: opts.dst.host.port(), length, checksum: 0 }.emit(&mut pkt[l4..])?;
    // A payload that differs per packet, so that every DataHash does.
    for (i, b) in pkt[l4 + UDP_HEADER_LEN..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_add(i) as u8;
    }
    udp::set_checksum(&mut pkt)?;
    Ok(pkt)
}

/// Sends the packets to the AS's border router.
pub fn send(cfg: &HostConfig, opts: &PathvalSendOptions) -> anyhow::Result<PathvalSendReport> {
    let sock = UdpSocket::bind((cfg.addr, 0)).with_context(|| format!("cannot bind {}", cfg.addr))?;
    let src_port = sock.local_addr()?.port();
    let mut session_id = [0u8; 16];
    getrandom::getrandom(&mut session_id).map_err(|e| anyhow::anyhow!("no randomness for a SessionID: {e}"))?;
    for seq in 0..opts.count {
        let pkt = packet(cfg, opts, src_port, &session_id, seq)?;
        sock.send_to(&pkt, cfg.router).with_context(|| format!("cannot send to {}", cfg.router))?;
        std::thread::sleep(Duration::from_micros(opts.interval_us));
    }
    Ok(PathvalSendReport { sent: opts.count, session_id: hex::encode(session_id) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_carry_the_pathval_option_over_an_empty_path_and_valid_udp() {
        let cfg = HostConfig {
            name: "h".into(),
            ia: "1-ff00:0:111".parse().unwrap(),
            addr: "127.0.1.10".parse().unwrap(),
            router: "127.0.1.1:49000".parse().unwrap(),
            control: "127.0.1.1:49002".parse().unwrap(),
            zlane_gateway: None,
        };
        let opts = PathvalSendOptions {
            dst: "1-ff00:0:115,127.0.5.10:40000".parse().unwrap(),
            count: 1,
            payload: 1000,
            interval_us: 0,
        };
        let pkt = packet(&cfg, &opts, 5000, &[7; 16], 3).unwrap();
        let at = aviary_pathval::locate(&pkt).unwrap();
        assert_eq!(PathvalView::new_checked(&pkt[at.header]).unwrap().session_id(), [7; 16]);
        assert_eq!(at.payload.len(), UDP_HEADER_LEN + 1000);
        udp::verify(&pkt).unwrap();
        assert_eq!(aviary_scion::ScionView::new_checked(&pkt[..]).unwrap().path_type(), path_type::EMPTY);
        assert_ne!(packet(&cfg, &opts, 5000, &[7; 16], 4).unwrap(), pkt);
    }
}
