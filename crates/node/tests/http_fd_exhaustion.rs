//! An HTTP server of aviary's daemons keeps serving after its process ran out of file
//! descriptors (a flood of connections, or anything else holding them): its accept loop counts
//! the failed accepts and goes on. The server it replaced stopped accepting for good on the
//! first one. Alone in its test binary: it lowers the process's descriptor limit.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aviary_node::http::server::{Limits, Server, ServerStats};
use aviary_node::http::{Request, Response};

fn get(addr: SocketAddr) -> std::io::Result<String> {
    let mut c = TcpStream::connect(addr)?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    c.write_all(b"GET /x HTTP/1.1\r\n\r\n")?;
    let mut reply = String::new();
    c.read_to_string(&mut reply)?;
    Ok(reply)
}

#[test]
fn the_server_serves_again_once_descriptors_are_free() {
    let limit = libc::rlimit { rlim_cur: 128, rlim_max: 128 };
    // SAFETY: a valid rlimit for the call; this process only, which runs this test alone.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
    let answer = |req: &Request, _: &ServerStats| Response::json(200, format!("{{\"path\":\"{}\"}}", req.path));
    let any = "127.0.0.1:0".parse().unwrap();
    let server = Server::http("test", any, Limits::default(), Arc::new(answer)).unwrap();
    assert!(get(server.addr()).unwrap().starts_with("HTTP/1.1 200 OK"));

    // Take every descriptor: client sockets (the server's side of each also takes one while
    // it accepts them), then until the server fails to accept.
    let mut held = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.stats().accept_errors.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "the server never ran out of descriptors");
        match TcpStream::connect(server.addr()) {
            Ok(c) => held.push(c),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    drop(held);

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match get(server.addr()) {
            Ok(reply) if reply.starts_with("HTTP/1.1 200 OK") => break,
            other => assert!(Instant::now() < deadline, "the server never served again: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
