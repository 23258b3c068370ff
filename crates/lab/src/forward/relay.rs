//! The bare UDP relay the router is measured against: `recvmmsg` → `sendmmsg` of the same
//! datagrams to one address, with the router's batch size and buffers, and no processing at
//! all. It is what forwarding over these sockets costs before any SCION work.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use aviary_node::underlay::{wait_readable, BatchSocket, RecvBatch, DEFAULT_BUF_SIZE};

use super::traffic::BATCH;

/// Longest wait for a datagram, so that `stop` is seen.
const MAX_WAIT: Duration = Duration::from_millis(100);

/// Relays every datagram arriving on `sock` to `to` until `stop`.
pub fn relay(sock: &BatchSocket, to: SocketAddr, stop: &AtomicBool) -> std::io::Result<()> {
    let mut rx = RecvBatch::new(BATCH, DEFAULT_BUF_SIZE);
    let mut ready = [false];
    while !stop.load(Relaxed) {
        let n = sock.recv_batch(&mut rx)?;
        if n == 0 {
            wait_readable(&[sock], Some(MAX_WAIT), &mut ready)?;
            continue;
        }
        let mut items: [(&[u8], SocketAddr); BATCH] = [(&[], to); BATCH];
        for (item, pkt) in items.iter_mut().zip(rx.packets()) {
            item.0 = pkt.0;
        }
        // As the router does: what the socket does not take after a partial send is lost.
        let mut sent = 0;
        while sent < n {
            match sock.send_batch(&items[sent..n])? {
                0 => break,
                k => sent += k,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_come_out_unchanged_at_the_other_side() {
        let bind = || BatchSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let (from, relay_sock, to) = (bind(), bind(), bind());
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let t = s.spawn(|| relay(&relay_sock, to.local_addr(), &stop));
            let sent: Vec<Vec<u8>> = (0..100u8).map(|i| vec![i; 10 + usize::from(i)]).collect();
            let items: Vec<(&[u8], SocketAddr)> = sent.iter().map(|p| (&p[..], relay_sock.local_addr())).collect();
            assert_eq!(from.send_batch(&items).unwrap(), 100);
            let mut got = Vec::new();
            let mut rx = RecvBatch::new(BATCH, DEFAULT_BUF_SIZE);
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while got.len() < 100 && std::time::Instant::now() < deadline {
                let n = to.recv_batch(&mut rx).unwrap();
                got.extend(rx.iter().take(n).map(|(p, m)| (p.to_vec(), m.from)));
                std::thread::sleep(Duration::from_millis(1));
            }
            stop.store(true, Relaxed);
            t.join().unwrap().unwrap();
            assert_eq!(got.iter().map(|g| g.0.clone()).collect::<Vec<_>>(), sent);
            assert!(got.iter().all(|g| g.1 == relay_sock.local_addr()));
        });
    }
}
