use std::time::Instant;

use super::*;

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Receives on `sock` until `want` datagrams from `from` arrived or 10 s passed.
/// Datagrams from elsewhere (a parallel test that reuses a port a test closed) are
/// ignored.
fn recv_n(sock: &BatchSocket, batch: &mut RecvBatch, from: SocketAddr, want: usize) -> Vec<(Vec<u8>, RecvMeta)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    let mut ready = [false];
    while got.len() < want && Instant::now() < deadline {
        wait_readable(&[sock], Some(Duration::from_millis(100)), &mut ready).unwrap();
        let n = sock.recv_batch(batch).unwrap();
        assert_eq!(n, batch.len());
        got.extend(batch.iter().filter(|(_, m)| m.from == from).map(|(b, m)| (b.to_vec(), m)));
    }
    got
}

/// The source address an IPv4 loopback peer sees for datagrams from the dual-stack `dual`.
fn dual_addr(dual: &BatchSocket) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::LOCALHOST.into(), dual.local_addr().port())
}

fn payload(i: usize) -> Vec<u8> {
    let len = 1 + (i * 37) % 1400;
    (0..len).map(|j| (i * 7 + j) as u8).collect()
}

#[test]
fn hundred_datagrams_in_batches() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let mut batch = RecvBatch::default();
    let pkts: Vec<Vec<u8>> = (0..100).map(payload).collect();
    let mut received = Vec::new();
    // 20 at a time: well inside any socket buffer, and more than one recvmmsg per
    // round when they arrive in pieces.
    for chunk in pkts.chunks(20) {
        let items: Vec<(&[u8], SocketAddr)> = chunk.iter().map(|p| (&p[..], b.local_addr())).collect();
        let o = a.send_batch_outcome(&items).unwrap();
        assert_eq!((o.sent, o.dropped), (chunk.len(), 0));
        received.extend(recv_n(&b, &mut batch, a.local_addr(), chunk.len()));
        assert_eq!(received.len() % 20, 0);
    }
    assert_eq!(received.len(), 100);
    for (i, (data, meta)) in received.iter().enumerate() {
        assert_eq!(data, &pkts[i], "datagram {i}");
        assert_eq!(meta.len, pkts[i].len());
        assert_eq!(meta.from, a.local_addr());
        assert!(!meta.truncated);
    }
}

#[test]
fn more_than_one_chunk_in_one_call() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let pkts: Vec<Vec<u8>> = (0..70u8).map(|i| vec![i; 100]).collect();
    let items: Vec<(&[u8], SocketAddr)> = pkts.iter().map(|p| (&p[..], b.local_addr())).collect();
    assert_eq!(a.send_batch(&items).unwrap(), 70);
    let got = recv_n(&b, &mut RecvBatch::new(8, 256), a.local_addr(), 70);
    let firsts: Vec<u8> = got.iter().map(|(d, _)| d[0]).collect();
    assert_eq!(firsts, (0..70u8).collect::<Vec<_>>());
}

#[test]
fn ipv6_peers() {
    let Ok(a) = BatchSocket::bind("[::1]:0".parse().unwrap()) else {
        eprintln!("no IPv6 loopback here; skipped");
        return;
    };
    let b = BatchSocket::bind("[::1]:0".parse().unwrap()).unwrap();
    let n = a.send_batch(&[(&b"six"[..], b.local_addr()), (&b"again"[..], b.local_addr())]).unwrap();
    assert_eq!(n, 2);
    let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 2);
    assert_eq!(got[0].0, b"six");
    assert_eq!(got[1].0, b"again");
    assert_eq!(got[0].1.from, a.local_addr());

    // A dual-stack socket talks to an IPv4 peer; the peer's address stays IPv4.
    let Ok(dual) = BatchSocket::bind("[::]:0".parse().unwrap()) else { return };
    let v4 = BatchSocket::bind(localhost()).unwrap();
    if dual.send_to(b"to v4", v4.local_addr()).unwrap().sent == 1 {
        let got = recv_n(&v4, &mut RecvBatch::default(), dual_addr(&dual), 1);
        assert_eq!(got[0].0, b"to v4");
        v4.send_to(b"back", got[0].1.from).unwrap();
        let back = recv_n(&dual, &mut RecvBatch::default(), v4.local_addr(), 1);
        assert_eq!(back[0].0, b"back");
        assert_eq!(back[0].1.from, v4.local_addr());
    }
}

#[test]
fn oversized_datagram_is_flagged_truncated() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let big = [0xab; 100];
    a.send_batch(&[(&big[..], b.local_addr()), (&b"small"[..], b.local_addr())]).unwrap();
    let got = recv_n(&b, &mut RecvBatch::new(4, 64), a.local_addr(), 2);
    assert!(got[0].1.truncated);
    assert_eq!(got[0].1.len, 64);
    assert_eq!(got[0].0, &big[..64]);
    assert!(!got[1].1.truncated);
    assert_eq!(got[1].0, b"small");
    // Nothing waiting: the batch is empty, packets() yields nothing.
    let mut batch = RecvBatch::new(4, 64);
    assert_eq!(b.recv_batch(&mut batch).unwrap(), 0);
    assert_eq!(batch.packets().count(), 0);
}

#[test]
fn wait_readable_times_out_and_reports_readiness() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let mut ready = [true, true];

    let t = Instant::now();
    let n = wait_readable(&[&a, &b], Some(Duration::from_millis(50)), &mut ready).unwrap();
    let waited = t.elapsed();
    assert_eq!((n, ready), (0, [false, false]));
    // Generous bounds only: it waited, and it came back.
    assert!(waited >= Duration::from_millis(20), "{waited:?}");
    assert!(waited < Duration::from_secs(30), "{waited:?}");

    assert_eq!(wait_readable(&[&a, &b], Some(Duration::ZERO), &mut ready).unwrap(), 0);

    a.send_to(b"ping", b.local_addr()).unwrap();
    let n = wait_readable(&[&a, &b], Some(Duration::from_secs(10)), &mut ready).unwrap();
    assert_eq!((n, ready), (1, [false, true]));
    let mut batch = RecvBatch::default();
    assert_eq!(b.recv_batch(&mut batch).unwrap(), 1);
    assert_eq!(batch.get(0), Some(&b"ping"[..]));
    assert_eq!(batch.get(1), None);
    // Drained: nothing ready again.
    assert_eq!(wait_readable(&[&a, &b], Some(Duration::from_millis(1)), &mut ready).unwrap(), 0);
    assert_eq!(b.recv_batch(&mut batch).unwrap(), 0);
    assert!(batch.is_empty());

    let err = wait_readable(&[&a, &b], None, &mut [false]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn closed_port_does_not_break_later_io() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let closed = {
        let c = BatchSocket::bind(localhost()).unwrap();
        c.local_addr()
    };
    let mut batch = RecvBatch::default();
    for round in 0..5u8 {
        let o = a.send_batch_outcome(&[(&[round][..], closed), (&[round, 1][..], b.local_addr())]).unwrap();
        assert_eq!((o.sent, o.dropped), (2, 0), "round {round}: {o:?}");
        // The ICMP port-unreachable has had time to arrive: neither receiving on the
        // sender nor the next send may fail.
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(a.recv_batch(&mut batch).unwrap(), 0);
        let got = recv_n(&b, &mut batch, a.local_addr(), 1);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, [round, 1]);
    }
}

#[test]
fn bad_datagrams_are_dropped_not_fatal() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let huge = vec![0u8; 70_000];
    let v6: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
    let items: [(&[u8], SocketAddr); 4] =
        [(b"one", b.local_addr()), (&huge, b.local_addr()), (b"two", v6), (b"three", b.local_addr())];
    let o = a.send_batch_outcome(&items).unwrap();
    assert_eq!((o.sent, o.dropped), (2, 2), "{o:?}");
    assert!(o.last_drop_error.is_some());
    assert_eq!(a.kernel_drops(), 2);
    assert_eq!(a.send_batch(&items[1..3]).unwrap(), 2);
    assert_eq!(a.kernel_drops(), 4);
    let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 2);
    assert_eq!(got[0].0, b"one");
    assert_eq!(got[1].0, b"three");
}

#[test]
fn send_queue() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let b = BatchSocket::bind(localhost()).unwrap();
    let mut q = SendBatch::new(3, 16);
    assert_eq!(q.push(&[0; 17], b.local_addr()), Err(PushError::TooLarge { len: 17, max: 16 }));
    q.push(b"first", b.local_addr()).unwrap();
    q.push_with(b.local_addr(), |buf| {
        buf[..6].copy_from_slice(b"second");
        6
    })
    .unwrap();
    q.push(b"third", b.local_addr()).unwrap();
    assert!(q.is_full());
    assert_eq!(q.push(b"x", b.local_addr()), Err(PushError::Full));
    assert_eq!(q.len(), 3);
    let o = a.send_queued(&mut q).unwrap();
    assert_eq!(o.sent, 3);
    assert!(q.is_empty() && !q.is_full());
    assert_eq!(a.send_queued(&mut q).unwrap().consumed(), 0);
    let got = recv_n(&b, &mut RecvBatch::default(), a.local_addr(), 3);
    let data: Vec<&[u8]> = got.iter().map(|(d, _)| &d[..]).collect();
    assert_eq!(data, [&b"first"[..], b"second", b"third"]);
}

#[test]
fn in_use_address_is_named() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let err = BatchSocket::bind(a.local_addr()).unwrap_err();
    assert!(matches!(err, BindError::InUse(addr) if addr == a.local_addr()));
    assert_eq!(err.to_string(), format!("address {} is already in use", a.local_addr()));
}

#[test]
fn buffers_are_enlarged() {
    let a = BatchSocket::bind(localhost()).unwrap();
    let (rcv, snd) = a.buffer_sizes().unwrap();
    // Best effort: at least the usual default, whatever the system limit.
    assert!(rcv > 0 && snd > 0);
}

#[test]
fn a_full_receive_buffer_shows_in_the_kernel_receive_drops() {
    let rx = BatchSocket::bind(localhost()).unwrap();
    rx.set_buffer_sizes(4096);
    let tx = UdpSocket::bind(localhost()).unwrap();
    assert_eq!(rx.kernel_receive_drops(), 0);
    // Far more than a few KiB of buffer holds, and nobody reads.
    for _ in 0..2000 {
        let _ = tx.send_to(&[0u8; 1000], rx.local_addr());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while rx.kernel_receive_drops() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(rx.kernel_receive_drops() > 0);
}
