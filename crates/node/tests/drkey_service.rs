//! The DRKey service of the control service on real sockets: the run directory's PKI, Level-1
//! keys over mutually authenticated TLS, Level-2/3 keys for hosts (locally derived and via a
//! remote Level-1 fetch), authorisation, epochs and malformed input. Every key is checked
//! against the independent derivation of `aviary_scion::drkey`.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aviary_node::api::{HostKeyKind, Level1Reply};
use aviary_node::config::{read_secret, ControlConfig, HostConfig};
use aviary_node::control::drkey::{DrkeyService, HostKeyRequest, Level1Fetch};
use aviary_node::control::level1::fetch_level1;
use aviary_node::control::tls::{cs_name, provider, DrkeyTls};
use aviary_node::control::ControlService;
use aviary_node::host::drkey::fetch_host_key;
use aviary_node::runner::pki::{self, IsdRoot};
use aviary_node::runner::RunLayout;
use aviary_node::secret_rotation;
use aviary_scion::drkey::{Epoch, EpochSchedule, HostAddr, IssuerKeys, Protocol, RotatingSecret, SecretValue};
use aviary_scion::IsdAsn;
use aviary_scratch::ScratchDir;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

const A: &str = "1-ff00:0:111";
const B: &str = "2-ff00:0:211";
const C: &str = "1-ff00:0:110";

fn ia(s: &str) -> IsdAsn {
    s.parse().unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// The two-ISD topology written to a run directory, with the control services of A and B
/// serving on threads.
struct Run {
    layout: RunLayout,
    /// Last, so that it goes after what uses it.
    _dir: ScratchDir,
}

impl Run {
    fn start(name: &str, port_base: u16) -> Self {
        let dir = ScratchDir::new(&format!("drkey-{name}"));
        let topo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/topologies/two-isd.toml");
        let layout = RunLayout::write(&topo, &dir, port_base).unwrap();
        for x in [A, B] {
            let path = layout.ases[&ia(x)].dir.join("control.toml");
            let cfg = ControlConfig::load(&path).unwrap();
            let svc = ControlService::from_config(&cfg, &path).unwrap();
            std::thread::spawn(move || svc.serve(cfg.listen));
        }
        let run = Self { layout, _dir: dir };
        for x in [A, B] {
            let c = run.control(x);
            for addr in [c.listen, c.drkey.as_ref().unwrap().listen] {
                let deadline = Instant::now() + Duration::from_secs(10);
                while TcpStream::connect(addr).is_err() {
                    assert!(Instant::now() < deadline, "{addr} did not come up");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        run
    }

    fn control(&self, x: &str) -> &ControlConfig {
        &self.layout.ases[&ia(x)].control
    }

    fn dir(&self, x: &str) -> PathBuf {
        self.layout.ases[&ia(x)].dir.clone()
    }

    fn secret(&self, x: &str) -> Vec<u8> {
        read_secret(Path::new("test"), "master", &self.dir(x).join("master.key")).unwrap()
    }

    fn drkey_addr(&self, x: &str) -> SocketAddr {
        self.control(x).drkey.as_ref().unwrap().listen
    }

    fn roots(&self) -> Vec<(u16, PathBuf)> {
        [1, 2].map(|isd| (isd, self.layout.dir.join(format!("pki/isd-{isd}-root.pem")))).to_vec()
    }

    /// The TLS of the control service of `x`, as its own files give it.
    fn tls_of(&self, x: &str) -> DrkeyTls {
        let d = self.dir(x);
        DrkeyTls::load(&d.join(pki::CS_CERT_FILE), &d.join(pki::CS_KEY_FILE), &self.roots()).unwrap()
    }

    /// A client identity from PEM texts.
    fn tls_with(&self, name: &str, cert: &str, key: &str) -> DrkeyTls {
        let (c, k) = (self.layout.dir.join(format!("{name}.pem")), self.layout.dir.join(format!("{name}.key")));
        std::fs::write(&c, cert).unwrap();
        std::fs::write(&k, key).unwrap();
        DrkeyTls::load(&c, &k, &self.roots()).unwrap()
    }

    fn host(&self, name: &str) -> HostConfig {
        self.layout.hosts[name].clone()
    }
}

/// `N` distinct local addresses that no socket holds now, for a service started on ports of its
/// own. Not fixed ports: the test's connections take their local ports from the kernel's
/// ephemeral range (32768-60999 on Linux), and for a minute after such a connection closes its
/// TIME_WAIT keeps a listener from binding that port (SO_REUSEADDR or not). With the fixed
/// ports 55480-55481 it had, this test failed in 6 of 40 runs of aviary-node's tests one after
/// another. The listeners are held until all are bound, so that no two addresses are the same.
fn unused_addrs<const N: usize>() -> [SocketAddr; N] {
    let held: [TcpListener; N] = std::array::from_fn(|_| TcpListener::bind("127.0.0.1:0").unwrap());
    held.map(|l| l.local_addr().unwrap())
}

fn epoch_now() -> Epoch {
    EpochSchedule::SCION_DEFAULT.epoch_at(now()).unwrap()
}

fn level1_from_a(run: &Run, client: &DrkeyTls, subject: &str, protocol: u16) -> Result<Level1Reply, String> {
    fetch_level1(client.client_config(1).unwrap(), run.drkey_addr(A), ia(A), ia(subject), Protocol(protocol), None)
}

#[test]
fn run_writes_the_pki_with_private_keys_for_the_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let run = Run::start("pki", 41000);
    for f in ["pki/isd-1-root.key", "pki/isd-2-root.key", "1-ff00_0_111/cs-tls.key"] {
        let mode = std::fs::metadata(run.layout.dir.join(f)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{f}");
    }
    assert!(run.layout.dir.join("pki/isd-1-root.pem").exists());
    let cfg = run.control(A).drkey.clone().unwrap();
    assert_eq!(cfg.trust_roots.len(), 2, "every ISD's root");
    assert_eq!(cfg.epoch_duration_s, 86400);
}

#[test]
fn keys_served_before_a_rotation_and_a_restart_of_the_control_service_are_served_after_them() {
    let run = Run::start("rotation", 55000);
    let schedule = EpochSchedule::SCION_DEFAULT;
    let (e, b_tls) = (epoch_now(), run.tls_of(B));
    let next = schedule.next(e).unwrap();
    let fetch = |addr: SocketAddr, at: u32| {
        let c = b_tls.client_config(1).unwrap();
        fetch_level1(c, addr, ia(A), ia(B), Protocol(0), Some(u64::from(at))).unwrap().key
    };
    let before = [fetch(run.drkey_addr(A), e.begin_s), fetch(run.drkey_addr(A), next.begin_s)];

    // The rotation as a router takes it (`PUT /v1/keys`): the record, then the new secret.
    let master = run.dir(A).join("master.key");
    let (old, new) = (run.secret(A), vec![0x5a; 32]);
    secret_rotation::keep(&master, &old, now()).unwrap();
    std::fs::write(&master, hex::encode(&new)).unwrap();
    // The control service started again from its files (on other ports: the first one keeps
    // serving on its thread).
    let path = run.dir(A).join("control.toml");
    let mut cfg = ControlConfig::load(&path).unwrap();
    let [control_addr, drkey_addr] = unused_addrs();
    cfg.listen = control_addr;
    cfg.drkey.as_mut().unwrap().listen = drkey_addr;
    let svc = ControlService::from_config(&cfg, &path).unwrap();
    std::thread::spawn(move || svc.serve(cfg.listen));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(drkey_addr).is_err() {
        assert!(Instant::now() < deadline, "{drkey_addr} did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!([fetch(drkey_addr, e.begin_s), fetch(drkey_addr, next.begin_s)], before);
    let want = SecretValue::derive(&old, Protocol(0), next).unwrap().level1(ia(B));
    assert_eq!(before[1], hex::encode(want.as_bytes()));

    // The first epoch that could not have been served before the rotation takes the new secret
    // (asked for once it is the next one).
    let after = schedule.next(next).unwrap();
    let secret = secret_rotation::load(&path, "master_secret_file", &master).unwrap();
    let svc = DrkeyService::new(ia(A), secret, schedule, run.tls_of(A), Box::new(NoFetch)).unwrap();
    let r = svc.issue_level1(ia(B), Protocol(0), u64::from(after.begin_s), u64::from(next.begin_s)).unwrap();
    let want = SecretValue::derive(&new, Protocol(0), after).unwrap().level1(ia(B));
    assert_eq!(r.key, hex::encode(want.as_bytes()));
}

struct NoFetch;

impl Level1Fetch for NoFetch {
    fn fetch(&self, issuer: IsdAsn, _: Protocol, _: u64) -> Result<Level1Reply, String> {
        Err(format!("no fetch from {issuer} in this test"))
    }
}

#[test]
fn level1_over_tls_equals_the_derivation_and_only_for_the_certified_as() {
    let run = Run::start("level1", 41700);
    let e = epoch_now();
    let b_tls = run.tls_of(B);
    for p in [0u16, 1] {
        let r = level1_from_a(&run, &b_tls, B, p).unwrap();
        let want = SecretValue::derive(&run.secret(A), Protocol(p), e).unwrap().level1(ia(B));
        assert_eq!(r.key, hex::encode(want.as_bytes()), "protocol {p}");
        assert_eq!((r.issuer, r.subject, r.epoch.begin, r.epoch.end), (ia(A), ia(B), e.begin_s, e.end_s));
    }
    // C's certificate gets K_{A→C}, never K_{A→B}.
    let c_tls = run.tls_of(C);
    let err = level1_from_a(&run, &c_tls, B, 0).unwrap_err();
    assert!(err.contains("HTTP 403") && err.contains(&cs_name(ia(B))), "{err}");
    let kc = level1_from_a(&run, &c_tls, C, 0).unwrap();
    assert_eq!(
        kc.key,
        hex::encode(SecretValue::derive(&run.secret(A), Protocol(0), e).unwrap().level1(ia(C)).as_bytes())
    );
    // A protocol without protocol-specific keys.
    let err = level1_from_a(&run, &b_tls, B, 7).unwrap_err();
    assert!(err.contains("HTTP 400") && err.contains("protocol 7"), "{err}");
}

#[test]
fn the_handshake_refuses_untrusted_self_signed_expired_and_missing_certificates() {
    let run = Run::start("handshake", 42400);
    let now_t = time::OffsetDateTime::now_utc();
    let hour = Duration::from_secs(3600);
    let (other_root, _) = IsdRoot::generate(2, now_t - hour, now_t + hour).unwrap();
    let (c, k) = other_root.issue(ia(B), now_t - hour, now_t + hour).unwrap();
    let untrusted = run.tls_with("untrusted", &c, &k);
    let (c, k) = pki::self_signed(ia(B)).unwrap();
    let self_signed = run.tls_with("selfsigned", &c, &k);
    let real_root = IsdRoot::load_or_create(&run.layout.dir.join("pki"), 2).unwrap();
    let (c, k) = real_root.issue(ia(B), now_t - 3 * hour, now_t - 2 * hour).unwrap();
    let expired = run.tls_with("expired", &c, &k);
    for (what, tls) in [("untrusted root", &untrusted), ("self-signed", &self_signed), ("expired", &expired)] {
        let err = level1_from_a(&run, tls, B, 0).unwrap_err();
        assert!(!err.contains("HTTP"), "{what}: the handshake must fail, got {err}");
    }
    // A client without a certificate.
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(aviary_node::control::tls::load_certs(&run.roots()[0].1).unwrap());
    let anon = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let err = fetch_level1(Arc::new(anon), run.drkey_addr(A), ia(A), ia(B), Protocol(0), None).unwrap_err();
    assert!(!err.contains("HTTP"), "no client certificate: {err}");
    // The same root re-issues a valid certificate, and the service still answers.
    let (c, k) = real_root.issue(ia(B), now_t - hour, now_t + hour).unwrap();
    assert!(level1_from_a(&run, &run.tls_with("fresh", &c, &k), B, 0).is_ok());
    // The server must name A: B's service does not pass for A's.
    let b_as_a =
        fetch_level1(run.tls_of(A).client_config(2).unwrap(), run.drkey_addr(B), ia(A), ia(A), Protocol(0), None);
    assert!(b_as_a.is_err_and(|e| !e.contains("HTTP")));
}

fn host_ip(h: &HostConfig) -> HostAddr {
    HostAddr::from_ip(h.addr)
}

#[test]
fn hosts_get_their_own_keys_derived_locally_or_through_a_remote_level1_fetch() {
    let run = Run::start("level2", 43100);
    let (ha, hb) = (run.host("h111"), run.host("h211"));
    let e = epoch_now();
    let req = |kind, protocol, src: &str, dst: &str, src_host, dst_host| HostKeyRequest {
        kind,
        protocol: Protocol(protocol),
        src_ia: ia(src),
        dst_ia: ia(dst),
        src_host,
        dst_host,
        at: None,
    };
    for p in [0u16, 1, 7] {
        let issued_by = |x: &str| IssuerKeys::new(&run.secret(x), Protocol(p), e).unwrap();
        // K_{A:h111→B}: A issues it, derived locally.
        let r = fetch_host_key(&ha, &req(HostKeyKind::HostAs, p, A, B, Some(host_ip(&ha)), None)).unwrap();
        assert_eq!(r.key, hex::encode(issued_by(A).host_as(ia(B), &host_ip(&ha)).as_bytes()), "host-as {p}");
        assert_eq!((r.epoch.begin, r.epoch.end), (e.begin_s, e.end_s));
        // K_{B→A:h111}: B issues it; A's service fetches K_{B→A} over TLS.
        let r = fetch_host_key(&ha, &req(HostKeyKind::AsHost, p, B, A, None, Some(host_ip(&ha)))).unwrap();
        assert_eq!(r.key, hex::encode(issued_by(B).as_host(ia(A), &host_ip(&ha)).as_bytes()), "as-host {p}");
        // Host-host with the asking host at either end.
        let hh = req(HostKeyKind::HostHost, p, B, A, Some(host_ip(&hb)), Some(host_ip(&ha)));
        let want = issued_by(B).host_host(ia(A), &host_ip(&hb), &host_ip(&ha));
        assert_eq!(fetch_host_key(&ha, &hh).unwrap().key, hex::encode(want.as_bytes()), "host-host (dst) {p}");
        // ... and h211 at the source gets the same key from its own AS, derived locally.
        assert_eq!(fetch_host_key(&hb, &hh).unwrap().key, hex::encode(want.as_bytes()), "host-host (src) {p}");
    }
    // Another host's keys are refused.
    let other = HostAddr::from_ip(IpAddr::from([127, 0, 3, 99]));
    for r in [
        req(HostKeyKind::HostAs, 0, A, B, Some(other), None),
        req(HostKeyKind::AsHost, 0, B, A, None, Some(other)),
        req(HostKeyKind::HostAs, 0, B, A, Some(host_ip(&ha)), None),
        req(HostKeyKind::HostHost, 0, B, A, Some(host_ip(&hb)), Some(other)),
    ] {
        let err = fetch_host_key(&ha, &r).unwrap_err().to_string();
        assert!(err.contains("HTTP 403"), "{r:?}: {err}");
    }
    // A machine outside A (h211, of B) that asks A's control service for the keys of its own
    // address as if it were A's host is refused: K_{B→A:h211} would let it pass as A's.
    let outsider = HostConfig { control: run.control(A).listen, ..hb.clone() };
    for r in [
        req(HostKeyKind::AsHost, 0, B, A, None, Some(host_ip(&hb))),
        req(HostKeyKind::HostAs, 0, A, B, Some(host_ip(&hb)), None),
        req(HostKeyKind::HostHost, 0, B, A, Some(host_ip(&ha)), Some(host_ip(&hb))),
    ] {
        let err = fetch_host_key(&outsider, &r).unwrap_err().to_string();
        assert!(err.contains("HTTP 403") && err.contains("host_networks"), "{r:?}: {err}");
    }
}

/// A fetcher that counts its calls and answers from B's secret.
struct CountingFetcher {
    secret: Vec<u8>,
    schedule: EpochSchedule,
    calls: Arc<AtomicUsize>,
}

impl Level1Fetch for CountingFetcher {
    fn fetch(&self, issuer: IsdAsn, protocol: Protocol, at: u64) -> Result<Level1Reply, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let e = self.schedule.epoch_at(at).unwrap();
        let key = SecretValue::derive(&self.secret, protocol, e).unwrap().level1(ia(A));
        Ok(Level1Reply {
            issuer,
            subject: ia(A),
            protocol: protocol.0,
            epoch: aviary_node::api::EpochWire { begin: e.begin_s, end: e.end_s },
            key: hex::encode(key.as_bytes()),
        })
    }
}

#[test]
fn epochs_roll_over_with_a_grace_period_and_remote_keys_are_cached_per_epoch() {
    let run = Run::start("epochs", 43800);
    let schedule = EpochSchedule::new(100, 5).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let fetcher = CountingFetcher { secret: run.secret(B), schedule, calls: calls.clone() };
    let svc = DrkeyService::new(
        ia(A),
        RotatingSecret::new(&run.secret(A)).unwrap(),
        schedule,
        run.tls_of(A),
        Box::new(fetcher),
    )
    .unwrap();
    let begin: u64 = 1_700_000_000; // the start of an epoch: a multiple of 100 s
    let prev = Epoch::new((begin - 100) as u32, begin as u32).unwrap();
    let level1 = |at, now| svc.issue_level1(ia(B), Protocol(0), at, now);
    // Two seconds into an epoch: the previous epoch's key is still served, as its own.
    let r = level1(begin - 1, begin + 2).unwrap();
    assert_eq!((r.epoch.begin, r.epoch.end), (prev.begin_s, prev.end_s));
    assert_eq!(
        r.key,
        hex::encode(SecretValue::derive(&run.secret(A), Protocol(0), prev).unwrap().level1(ia(B)).as_bytes())
    );
    // After the grace period it is not; the current and the next epoch are.
    let err = level1(begin - 1, begin + 5).unwrap_err();
    assert!(err.to_string().contains("grace") || err.to_string().contains("first 5 s"), "{err}");
    assert_eq!(err.status(), 400);
    assert!(level1(begin + 5, begin + 5).is_ok());
    assert_eq!(u64::from(level1(begin + 150, begin + 50).unwrap().epoch.begin), begin + 100);
    assert!(level1(begin + 250, begin + 50).is_err(), "two epochs ahead");
    // A host's remote key: one fetch per epoch, then the cache.
    let h = run.host("h111");
    let r = |at| HostKeyRequest {
        kind: HostKeyKind::AsHost,
        protocol: Protocol(0),
        src_ia: ia(B),
        dst_ia: ia(A),
        src_host: None,
        dst_host: Some(HostAddr::from_ip(h.addr)),
        at: Some(at),
    };
    let k1 = svc.host_key(&r(begin + 10), h.addr, begin + 10).unwrap();
    let k2 = svc.host_key(&r(begin + 60), h.addr, begin + 60).unwrap();
    assert_eq!((k1.key.clone(), calls.load(Ordering::SeqCst)), (k2.key, 1));
    let k3 = svc.host_key(&r(begin + 101), h.addr, begin + 101).unwrap();
    assert_ne!(k3.key, k1.key);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Inside the grace period, a key of the previous epoch comes from the cache.
    let k4 = svc.host_key(&r(begin + 99), h.addr, begin + 102).unwrap();
    assert_eq!((k4.key, calls.load(Ordering::SeqCst)), (k1.key, 2));
    let want = IssuerKeys::new(&run.secret(B), Protocol(0), schedule.epoch_at(begin + 101).unwrap())
        .unwrap()
        .as_host(ia(A), &HostAddr::from_ip(h.addr));
    assert_eq!(k3.key, hex::encode(want.as_bytes()));
}

/// A TLS stream to A's Level-1 service as B.
fn tls_to_a(run: &Run) -> StreamOwned<ClientConnection, TcpStream> {
    let name = ServerName::try_from(cs_name(ia(A))).unwrap();
    let conn = ClientConnection::new(run.tls_of(B).client_config(1).unwrap(), name).unwrap();
    let tcp = TcpStream::connect(run.drkey_addr(A)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    StreamOwned::new(conn, tcp)
}

fn status_of(stream: &mut impl Read) -> String {
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).lines().next().unwrap_or_default().to_string()
}

#[test]
fn malformed_requests_get_errors_and_the_service_survives() {
    let run = Run::start("malformed", 44500);
    // Junk instead of a TLS handshake: the connection closes.
    let mut raw = TcpStream::connect(run.drkey_addr(A)).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\n\r\n\x00\xff junk junk").unwrap();
    let mut buf = Vec::new();
    let _ = raw.read_to_end(&mut buf);
    assert!(!String::from_utf8_lossy(&buf).contains("200"));
    // Inside TLS: junk, an oversized head, an unknown endpoint, bad parameters.
    for (request, want) in [
        (b"\x01\x02\x03 junk\r\n\r\n".to_vec(), "400"),
        (format!("GET /v1/drkey/level1 HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000)).into_bytes(), "431"),
        (b"GET /v1/other HTTP/1.1\r\n\r\n".to_vec(), "404"),
        (format!("GET /v1/drkey/level1?protocol=x&subject={B} HTTP/1.1\r\n\r\n").into_bytes(), "400"),
        (b"GET /v1/drkey/level1?protocol=0 HTTP/1.1\r\n\r\n".to_vec(), "400"),
        (format!("GET /v1/drkey/level1?protocol=0&subject={B}&evil=1 HTTP/1.1\r\n\r\n").into_bytes(), "400"),
    ] {
        let mut s = tls_to_a(&run);
        let _ = s.write_all(&request);
        let _ = s.flush();
        let line = status_of(&mut s);
        assert!(line.contains(want), "{:?}...: {line}", String::from_utf8_lossy(&request[..20]));
    }
    // The host API: bad queries and kinds.
    let h = run.host("h111");
    for (target, want) in [
        ("/v1/drkey/host-as?protocol=abc", "400"),
        ("/v1/drkey/level9?protocol=0", "404"),
        (&format!("/v1/drkey/host-as?protocol=0&src_ia={A}&dst_ia={B}") as &str, "400"),
    ] {
        let mut tcp = aviary_node::host::drkey::connect_from(h.addr, h.control).unwrap();
        write!(tcp, "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let line = status_of(&mut tcp);
        assert!(line.contains(want), "{target}: {line}");
    }
    // Still serving.
    assert!(level1_from_a(&run, &run.tls_of(B), B, 0).is_ok());
}

#[test]
fn a_client_that_trickles_its_handshake_is_cut_at_the_deadline() {
    let run = Run::start("trickle", 45900);
    let mut tcp = TcpStream::connect(run.drkey_addr(A)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // A TLS record header announcing 64 bytes, then one byte every 300 ms for 12 s: each read
    // is quick, the handshake never completes. A timeout per read never ends it.
    let mut trickle = tcp.try_clone().unwrap();
    let start = Instant::now();
    let writer = std::thread::spawn(move || {
        for byte in [0x16u8, 0x03, 0x01, 0x00, 0x40].into_iter().chain(std::iter::repeat(0x01).take(35)) {
            if trickle.write_all(&[byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let mut rest = Vec::new();
    let _ = tcp.read_to_end(&mut rest);
    let closed_after = start.elapsed();
    assert!(
        closed_after < Duration::from_secs(9),
        "closed after {closed_after:?}, not at the 5 s deadline of handshake and request"
    );
    drop(tcp);
    writer.join().unwrap();
    assert!(level1_from_a(&run, &run.tls_of(B), B, 0).is_ok(), "still serving");
}

#[test]
fn the_gateway_gets_level1_keys_from_its_own_as_with_the_operator_token_only() {
    use aviary_node::api::fetch_infrastructure_level1;
    let run = Run::start("infra", 45200);
    let token = run.layout.ases[&ia(A)].operator_token().unwrap();
    let control = run.control(A).listen;
    let e = epoch_now();
    // Protocol 42 has no keys of its own: its keys derive from protocol 0's Level-1 keys.
    for (issuer, p) in [(B, 42u16), (A, 42), (B, 1)] {
        let r = fetch_infrastructure_level1(control, &token, ia(issuer), p, now()).unwrap();
        let want = IssuerKeys::new(&run.secret(issuer), Protocol(p), e).unwrap().level1(ia(A));
        assert_eq!(r.key, hex::encode(want.as_bytes()), "K_{{{issuer}→A}} for protocol {p}");
        assert_eq!((r.issuer, r.subject), (ia(issuer), ia(A)));
        assert_eq!((r.epoch.begin, r.epoch.end), (e.begin_s, e.end_s));
    }
    // The next epoch's key, for prefetching.
    let next = EpochSchedule::SCION_DEFAULT.next(e).unwrap();
    let r = fetch_infrastructure_level1(control, &token, ia(B), 42, u64::from(next.begin_s)).unwrap();
    assert_eq!((r.epoch.begin, r.epoch.end), (next.begin_s, next.end_s));
    // Without the token, or with another, a host gets nothing.
    for bad in ["", "not-the-token"] {
        let err = fetch_infrastructure_level1(control, bad, ia(B), 42, now()).unwrap_err().to_string();
        assert!(err.contains("HTTP 401"), "{err}");
    }
}
