#!/usr/bin/env python3
"""Generates testdata/vectors/pathval.json: test vectors for pathval (the paper "Hummingbird:
Dynamic Path Validation with Hidden Equal-Probability Sampling", with the errata of its Alg. 2
fixed; layout and keys as in docs/pathval.md), computed independently of aviary's Rust code
with hashlib (SHA3-256), the KangarooTwelve (RFC 9861) written out below from the RFC and
FIPS 202 (checked against RFC 9861's test vectors at start) and the `cryptography` package
(AES-CMAC). DRKey comes from
gen_drkey.py next to this file.

Run from the repository root (needs `pip install cryptography`):

    python3 testdata/vectors/gen_pathval.py > testdata/vectors/pathval.json

The output is deterministic. `cargo test -p aviary-pathval --test vectors` checks the Rust
implementation against the committed file.
"""

import hashlib
import json
import os
import struct
import sys

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import algorithms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_drkey import level2_input, parse_ia, prf, secret_value  # noqa: E402

PROTOCOL = 0x7076
OPT_PATHVAL = 0x50
HOP_BY_HOP = 200
UDP = 17
FRESHNESS = {"max_age_s": 3, "max_future_s": 1}
EPOCH = (1700006400, 1700092800)
NOW = 1700050000


# --- DRKey keys (docs/pathval.md, "Keys") -------------------------------------------------

def link_key(downstream_master, upstream_ia):
    """K_{i(i+1)} = Level 1 K_{R_{i+1} -> R_i}, protocol-specific secret value."""
    sv = secret_value(downstream_master, PROTOCOL, *EPOCH)
    return prf(sv, b"\x00" + parse_ia(upstream_ia))


def end_to_end_key(dst_master, src_ia, src_host, dst_host):
    """K_{0n} = Level 3 K_{Dst:H_dst -> Src:H_src} (specific scheme: no protocol in Level 2)."""
    sv = secret_value(dst_master, PROTOCOL, *EPOCH)
    level1 = prf(sv, b"\x00" + parse_ia(src_ia))
    host_as = prf(level1, level2_input(2, None, dst_host))
    return prf(host_as, level2_input(3, None, src_host))


# --- the paper's primitives -----------------------------------------------------------------

def sha3(b):
    return hashlib.sha3_256(b).digest()


def aes_cmac(key, msg):
    c = cmac.CMAC(algorithms.AES(key))
    c.update(msg)
    return c.finalize()


# KangarooTwelve (RFC 9861) over Keccak-p[1600, 12] (FIPS 202, §3.3): the last 12 rounds of
# Keccak-f[1600]. Round constants from the rc(t) LFSR of FIPS 202 §3.2.5, rotation offsets
# from §3.2.2, so that nothing is copied from the Rust tables.

def _rc_bit(t):
    if t % 255 == 0:
        return 1
    r = [1, 0, 0, 0, 0, 0, 0, 0]
    for _ in range(t % 255):
        r = [0] + r
        r[0] ^= r[8]
        r[4] ^= r[8]
        r[5] ^= r[8]
        r[6] ^= r[8]
        r = r[:8]
    return r[0]


ROUND_CONSTANTS = [sum(_rc_bit(j + 7 * ir) << ((1 << j) - 1) for j in range(7)) for ir in range(24)]
RHO = [[0] * 5 for _ in range(5)]
_x, _y = 1, 0
for _t in range(24):
    RHO[_x][_y] = ((_t + 1) * (_t + 2) // 2) % 64
    _x, _y = _y, (2 * _x + 3 * _y) % 5
MASK = (1 << 64) - 1


def _rot(v, n):
    return ((v << n) | (v >> (64 - n))) & MASK if n else v


def keccak_p12(a):
    """Keccak-p[1600, 12] on a[x][y] (64-bit lanes)."""
    for rc in ROUND_CONSTANTS[12:]:
        c = [a[x][0] ^ a[x][1] ^ a[x][2] ^ a[x][3] ^ a[x][4] for x in range(5)]
        d = [c[(x - 1) % 5] ^ _rot(c[(x + 1) % 5], 1) for x in range(5)]
        a = [[a[x][y] ^ d[x] for y in range(5)] for x in range(5)]
        b = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                b[y][(2 * x + 3 * y) % 5] = _rot(a[x][y], RHO[x][y])
        a = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
        a[0][0] ^= rc
    return a


def turboshake128(msg, domain, out_len):
    """TurboSHAKE128 (RFC 9861, §2.2), rate 168 bytes."""
    rate = 168
    padded = bytearray(msg) + bytes([domain]) + bytes((-len(msg) - 1) % rate)
    padded[-1] ^= 0x80
    a = [[0] * 5 for _ in range(5)]
    for off in range(0, len(padded), rate):
        block = padded[off:off + rate]
        for i in range(rate // 8):
            a[i % 5][i // 5] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        a = keccak_p12(a)
    out = b"".join(a[i % 5][i // 5].to_bytes(8, "little") for i in range(rate // 8))
    assert out_len <= rate
    return out[:out_len]


def _length_encode(x):
    b = x.to_bytes((x.bit_length() + 7) // 8, "big") if x else b""
    return b + bytes([len(b)])


def kt128(msg, out_len):
    """KT128(M, C = empty, L) (RFC 9861, §3.2)."""
    s = msg + _length_encode(0)
    if len(s) <= 8192:
        return turboshake128(s, 0x07, out_len)
    chunks = [s[i:i + 8192] for i in range(0, len(s), 8192)]
    node = chunks[0] + b"\x03" + bytes(7)
    node += b"".join(turboshake128(c, 0x0B, 32) for c in chunks[1:])
    node += _length_encode(len(chunks) - 1) + b"\xff\xff"
    return turboshake128(node, 0x06, out_len)


def _ptn(n):
    return bytes(i % 251 for i in range(n))


# RFC 9861, §5: KT128(ptn(17^i bytes), C = empty, 32) for i = 0, 2, 4 (single node, and
# 83521 bytes in the tree mode), and TurboSHAKE128(ptn(17 bytes), D = 0x1F, 32).
assert kt128(_ptn(1), 32).hex() == "2bda92450e8b147f8a7cb629e784a058efca7cf7d8218e02d345dfaa65244a1f"
assert kt128(_ptn(17 ** 2), 32).hex() == "0c315ebcdedbf61426de7dcf8fb725d1e74675d7f5327a5067f367b108ecb67c"
assert kt128(_ptn(17 ** 4), 32).hex() == "8701045e22205345ff4dda05555cbb5c3af1a771c2b89baef37db43d9998b9fe"
assert turboshake128(_ptn(17), 0x1F, 32).hex() == "9c97d036a3bac819db70ede0ca554ec6e4c2a1a4ffbfd9ec269ca6a111161233"


def data_hash(payload):
    """DataHash = KT128(payload, C = empty, 16) (docs/pathval.md, "Crypto")."""
    return kt128(payload, 16)


def metadata(session_id, timestamp, dh):
    return session_id + struct.pack(">I", timestamp) + dh


def hidden_sample(key, flag, dh, hop_count):
    return sha3(bytes([flag]) + dh + bytes([hop_count]) + key)


def validation_proof(key, meta, hop_count, concealment):
    return aes_cmac(key, meta + bytes([hop_count]) + concealment)


def concealment(key, meta):
    return aes_cmac(key, meta)


def rho(sampling_key, meta, hop_count):
    x = int.from_bytes(aes_cmac(sampling_key, meta + bytes([hop_count]))[:8], "big")
    return (x * (hop_count + 1)) >> 64


# --- the header and the packet --------------------------------------------------------------

# Offsets in the 101-byte header (Table III order).
HS, HC, DH, SID, TS, CONC, VP = (0, 32), 32, (33, 49), (49, 65), (65, 69), (69, 85), (85, 101)


def scion_packet(header101, payload, src_ia="1-ff00:0:110", dst_ia="1-ff00:0:112"):
    """Common + address header (empty path, IPv4 hosts 10.0.0.1 -> 10.0.0.2), then the
    hop-by-hop extension with the pathval option and a PadN, then the payload."""
    ext = bytes([UDP, 108 // 4 - 1, OPT_PATHVAL, 101]) + header101 + bytes([1, 1, 0])
    body = ext + payload
    hdr_len = 12 + 16 + 4 + 4
    common = struct.pack(">IBBHBBH", 1, HOP_BY_HOP, hdr_len // 4, len(body), 0, 0x00, 0)
    addr = parse_ia(dst_ia) + parse_ia(src_ia) + bytes([10, 0, 0, 2]) + bytes([10, 0, 0, 1])
    return common + addr + body


HDR_AT = 36 + 4  # header offset in the packets above


def header_of(pkt):
    return bytearray(pkt[HDR_AT:HDR_AT + 101])


def payload_of(pkt):
    return pkt[36 + 108:]


def with_header(pkt, h):
    return pkt[:HDR_AT] + bytes(h) + pkt[HDR_AT + 101:]


def source(pkt, session_id, timestamp, k0n, k01):
    h = header_of(pkt)
    dh = data_hash(payload_of(pkt))
    meta = metadata(session_id, timestamp, dh)
    h[SID[0]:SID[1]], h[TS[0]:TS[1]], h[DH[0]:DH[1]] = session_id, struct.pack(">I", timestamp), dh
    h[CONC[0]:CONC[1]] = concealment(k0n, meta)
    h[HC] = 1
    h[HS[0]:HS[1]] = hidden_sample(k01, 1, dh, 1)
    h[VP[0]:VP[1]] = validation_proof(k01, meta, 1, bytes(h[CONC[0]:CONC[1]]))
    return with_header(pkt, h)


def fresh(h, now):
    ts = struct.unpack(">I", h[TS[0]:TS[1]])[0]
    return not (ts > now + FRESHNESS["max_future_s"] or now > ts + FRESHNESS["max_age_s"])


def verification(h, payload, k_prev):
    """None if fine, else the drop label."""
    dh = bytes(h[DH[0]:DH[1]])
    if hidden_sample(k_prev, 0, dh, h[HC]) == bytes(h[HS[0]:HS[1]]):
        return None
    if data_hash(payload) != dh:
        return "bad_data_hash"
    meta = bytes(h[SID[0]:SID[1]]) + bytes(h[TS[0]:TS[1]]) + dh
    if validation_proof(k_prev, meta, h[HC], bytes(h[CONC[0]:CONC[1]])) != bytes(h[VP[0]:VP[1]]):
        return "bad_validation_proof"
    return None


def router(pkt, k_prev, k_next, sampling_key, random16, now):
    h = header_of(pkt)
    if h[HC] == 255:
        return pkt, "drop hop_count_overflow"
    if not fresh(h, now):
        return pkt, "drop stale_timestamp"
    bad = verification(h, payload_of(pkt), k_prev)
    if bad:
        return pkt, "drop " + bad
    dh = bytes(h[DH[0]:DH[1]])
    meta = bytes(h[SID[0]:SID[1]]) + bytes(h[TS[0]:TS[1]]) + dh
    flag = int(rho(sampling_key, meta, h[HC]) == h[HC])
    h[HC] += 1
    h[HS[0]:HS[1]] = hidden_sample(k_next, flag, dh, h[HC])
    if flag:
        h[VP[0]:VP[1]] = validation_proof(k_next, meta, h[HC], bytes(h[CONC[0]:CONC[1]]))
    else:
        h[VP[0]:VP[1]] = random16
    return with_header(pkt, h), "forward sampled" if flag else "forward unsampled"


def destination(pkt, k_prev, k0n, now):
    h = header_of(pkt)
    if not fresh(h, now):
        return "drop stale_timestamp"
    bad = verification(h, payload_of(pkt), k_prev)
    if bad:
        return "drop " + bad
    meta = bytes(h[SID[0]:SID[1]]) + bytes(h[TS[0]:TS[1]]) + data_hash(payload_of(pkt))
    return "deliver" if concealment(k0n, meta) == bytes(h[CONC[0]:CONC[1]]) else "drop bad_concealment"


# --- the vectors ----------------------------------------------------------------------------

MASTERS = [bytes([0x70, 0x76, i]) * 5 + bytes([i]) for i in range(3)]
IAS = ["1-ff00:0:110", "1-ff00:0:111", "1-ff00:0:112"]
SRC_HOST, DST_HOST = "10.0.0.1", "10.0.0.2"
SESSION = bytes(range(0x10, 0x20))
SAMPLING_KEY = bytes(range(0xa0, 0xb0))
RANDOM = bytes(range(0xc0, 0xd0))


def keys():
    k01 = link_key(MASTERS[1], IAS[0])
    k12 = link_key(MASTERS[2], IAS[1])
    k0n = end_to_end_key(MASTERS[2], IAS[0], SRC_HOST, DST_HOST)
    return k01, k12, k0n


def walk(name, comment, payload, tamper_after=None, tamper=None, timestamp=NOW, hop_count=None):
    k01, k12, k0n = keys()
    pkt = scion_packet(bytes(101), payload)
    steps = [{"node": "source", "timestamp": timestamp, "before": pkt.hex()}]
    pkt = source(pkt, SESSION, timestamp, k0n, k01)
    steps[0]["after"] = pkt.hex()
    if hop_count is not None:
        h = header_of(pkt)
        h[HC] = hop_count
        pkt = with_header(pkt, h)
    if tamper_after == "source":
        pkt = tamper(pkt)
    step = {"node": "router", "now_s": NOW, "random": RANDOM.hex(), "before": pkt.hex()}
    after, verdict = router(pkt, k01, k12, SAMPLING_KEY, RANDOM, NOW)
    step.update({"after": after.hex(), "verdict": verdict})
    steps.append(step)
    if verdict.startswith("forward"):
        pkt = tamper(after) if tamper_after == "router" else after
        steps.append({"node": "destination", "now_s": NOW, "before": pkt.hex(),
                      "verdict": destination(pkt, k12, k0n, NOW)})
    return {"name": name, "comment": comment, "steps": steps}


def payload_where_router(samples):
    """A payload for which the router's EpSampling gives `samples`."""
    for i in range(1000):
        p = b"pathval vector payload %d" % i
        meta = metadata(SESSION, NOW, data_hash(p))
        if (rho(SAMPLING_KEY, meta, 1) == 1) == samples:
            return p
    raise AssertionError("no payload found")


def flip_last_payload_byte(pkt):
    return pkt[:-1] + bytes([pkt[-1] ^ 1])


def flip_concealment(pkt):
    h = header_of(pkt)
    h[CONC[0]] ^= 0x80
    return with_header(pkt, h)


def main():
    k01, k12, k0n = keys()
    out = {
        "format": "aviary-pathval-vectors/1",
        "comment": "pathval (Hummingbird: Dynamic Path Validation with Hidden Equal-Probability Sampling), see testdata/vectors/README.md",
        "drkey_protocol": PROTOCOL,
        "epoch": {"begin": EPOCH[0], "end": EPOCH[1]},
        "freshness": FRESHNESS,
        "router_sampling_key": SAMPLING_KEY.hex(),
        "keys": [
            {"name": "k01", "kind": "link", "downstream_master_secret": MASTERS[1].hex(), "upstream_ia": IAS[0], "key": k01.hex()},
            {"name": "k12", "kind": "link", "downstream_master_secret": MASTERS[2].hex(), "upstream_ia": IAS[1], "key": k12.hex()},
            {"name": "k0n", "kind": "end_to_end", "dst_master_secret": MASTERS[2].hex(), "src_ia": IAS[0],
             "src_host": SRC_HOST, "dst_host": DST_HOST, "key": k0n.hex()},
        ],
        "data_hash": [{"payload": p.hex(), "data_hash": data_hash(p).hex()} for p in [b"", b"abc", bytes(range(256)) * 4, _ptn(8191), _ptn(9000)]],
        "hidden_sample": [],
        "validation_proof": [],
        "concealment": [],
        "sampling": [],
    }
    for key in [k01, bytes(16), b"\xff" * 16]:
        for flag, hc, dh in [(0, 1, bytes(16)), (1, 1, bytes(16)), (0, 255, b"\x5a" * 16), (1, 7, bytes(range(16)))]:
            out["hidden_sample"].append({"key": key.hex(), "flag": flag, "data_hash": dh.hex(), "hop_count": hc,
                                         "hidden_sample": hidden_sample(key, flag, dh, hc).hex()})
    for sid, ts, dh, hc, conc in [(SESSION, NOW, data_hash(b"abc"), 1, b"\x11" * 16),
                                  (bytes(16), 0, bytes(16), 0, bytes(16)),
                                  (b"\xff" * 16, 0xffffffff, b"\xee" * 16, 255, b"\xdd" * 16)]:
        meta = metadata(sid, ts, dh)
        out["validation_proof"].append({"key": k12.hex(), "session_id": sid.hex(), "timestamp": ts, "data_hash": dh.hex(),
                                        "hop_count": hc, "concealment": conc.hex(),
                                        "validation_proof": validation_proof(k12, meta, hc, conc).hex()})
        out["concealment"].append({"key": k0n.hex(), "session_id": sid.hex(), "timestamp": ts, "data_hash": dh.hex(),
                                   "concealment": concealment(k0n, meta).hex()})
    for i, hc in enumerate([0, 1, 1, 2, 3, 5, 11, 100, 254, 255]):
        meta = metadata(SESSION, NOW + i, data_hash(b"sample %d" % i))
        r = rho(SAMPLING_KEY, meta, hc)
        out["sampling"].append({"key": SAMPLING_KEY.hex(), "session_id": SESSION.hex(), "timestamp": NOW + i,
                                "data_hash": meta[20:].hex(), "hop_count": hc, "rho": r, "flag": r == hc})
    out["walks"] = [
        walk("router_samples", "source, router (samples), destination", payload_where_router(True)),
        walk("router_does_not_sample", "the router updates with the random proof", payload_where_router(False)),
        walk("payload_changed_after_source", "the router recomputes DataHash", b"pathval vector payload", "source", flip_last_payload_byte),
        walk("concealment_changed_after_unsampling_router", "only the destination can tell",
             payload_where_router(False), "router", flip_concealment),
        walk("hop_count_at_limit", "the source's HopCount is set to 255 on the wire", b"x" * 40, hop_count=255),
        walk("stale_timestamp", "created 4 s before the router's clock", b"old", timestamp=NOW - 4),
    ]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
