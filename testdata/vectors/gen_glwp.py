#!/usr/bin/env python3
"""Generates testdata/vectors/glwp.json: GLWP transmission-phase test vectors (the GLWP paper,
"Secure and Scalable QoS for Critical Applications", Table I and Alg. 2, laid out as in
docs/glwp.md), computed independently of aviary's Rust code with the `cryptography` package's
AES-CMAC and the SCION common and address header built by hand here.

Run from the repository root (needs `pip install cryptography`):

    python3 testdata/vectors/gen_glwp.py > testdata/vectors/glwp.json

The output is deterministic. Before printing, the script checks its CMAC against RFC 4493.
`cargo test -p aviary-glwp --test vectors` checks the Rust implementation against the
committed file.
"""

import json
import struct
import sys

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import algorithms

S = 10**9
PATH_TYPE = 252
LIFETIME_NS = S // 2
SKEW_NS = S
NOW = 1_700_000_000 * S


def aes_cmac(key, msg):
    c = cmac.CMAC(algorithms.AES(key))
    c.update(msg)
    return c.finalize()


def check_cmac():
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    msg = bytes.fromhex("6bc1bee22e409f96e93d7e117393172a")
    assert aes_cmac(key, msg).hex() == "070a16b46b4d4144f79bdd9dd04a287c", "not RFC 4493's CMAC"


def parse_ia(text):
    isd, asn = text.split("-")
    value = 0
    for g in asn.split(":"):
        value = (value << 16) | int(g, 16)
    return (int(isd) << 48) | value


def hop_key_input(src, aid, beta, ingress, egress, ts_exp):
    return struct.pack(">QQIHHI", src, aid, beta, ingress, egress, ts_exp)


def hop_key(secret, src, aid, beta, ingress, egress, ts_exp):
    return aes_cmac(secret, hop_key_input(src, aid, beta, ingress, egress, ts_exp))


def ha_input(src, ts_pkt, pkt_len):
    return struct.pack(">QQH", src, ts_pkt, pkt_len)


def hop_authenticator(hk, src, ts_pkt, pkt_len):
    return aes_cmac(hk, ha_input(src, ts_pkt, pkt_len))[:3]


def glwp_header(src, hp, path, beta, aid, ts_pkt, ts_exp, has):
    lam = len(path) - 1
    b = struct.pack(">QBB", src, lam, hp)
    for i, j in path:
        b += struct.pack(">HH", i, j)
    b += struct.pack(">IQQI", beta, aid, ts_pkt, ts_exp)
    for ha in has:
        b += ha
    return b + b"\x00" * (-len(b) % 4)


SRC_IA = "1-ff00:0:110"
DST_IA = "1-ff00:0:112"


def scion_packet(path_bytes, payload):
    """Common header (version 0, TC 0, flow 1, NextHdr 17), IPv4 hosts 10.0.0.2 <- 10.0.0.1."""
    hdr_len = 12 + 16 + 8 + len(path_bytes)
    common = struct.pack(">IBBHBBH", 1, 17, hdr_len // 4, len(payload), PATH_TYPE, 0x00, 0)
    addr = struct.pack(">QQ", parse_ia(DST_IA), parse_ia(SRC_IA)) + bytes([10, 0, 0, 2, 10, 0, 0, 1])
    return common + addr + path_bytes + payload


class Alloc:
    def __init__(self, aid, beta, ts_exp):
        self.aid, self.beta, self.ts_exp = aid, beta, ts_exp


def build(path, alloc, secrets, ts_pkt, payload_len=100, hp=0, src=SRC_IA):
    """A packet on `path` for `alloc`, stamped with the hop keys of `secrets` (one per on-path
    AS) as the source computes them (Alg. 2 lines 4-6) for the packet's own length."""
    s = parse_ia(src)
    keys = [hop_key(k, s, alloc.aid, alloc.beta, i, j, alloc.ts_exp) for k, (i, j) in zip(secrets, path[1:])]
    payload = bytes([0x5A]) * payload_len
    blank = glwp_header(s, hp, path, alloc.beta, alloc.aid, ts_pkt, alloc.ts_exp, [b"\x00" * 3] * len(keys))
    pkt_len = len(scion_packet(blank, payload))
    has = [hop_authenticator(hk, s, ts_pkt, pkt_len) for hk in keys]
    return scion_packet(glwp_header(s, hp, path, alloc.beta, alloc.aid, ts_pkt, alloc.ts_exp, has), payload)


class Router:
    """Alg. 2 lines 9-18 as docs/glwp.md specifies them, with an exact token bucket per AID and
    an exact duplicate set (the Rust router's are approximations that agree on these walks)."""

    def __init__(self, secret, burst):
        self.secret, self.burst = secret, burst
        self.buckets = {}
        self.seen = set()

    def process(self, pkt, ingress, now):
        pkt = bytearray(pkt)
        hdr_len = pkt[5] * 4
        if pkt[8] != PATH_TYPE:
            return pkt, "drop unsupported_path_type"
        p = 12 + 16 + 8
        src, lam, hp = struct.unpack_from(">QBB", pkt, p)
        assert src == struct.unpack_from(">Q", pkt, 20)[0]
        if hp >= lam:
            return pkt, "drop path_complete"
        pair = lambda k: struct.unpack_from(">HH", pkt, p + 10 + 4 * k)
        after = p + 10 + 4 * (lam + 1)
        beta, aid, ts_pkt, ts_exp = struct.unpack_from(">IQQI", pkt, after)
        k = hp + 1
        i, j = pair(k)
        if ingress != i:
            return pkt, "drop bad_ingress"
        if (j == 0) != (k == lam) or i == 0:
            return pkt, "drop malformed_path"
        if ts_pkt > now + SKEW_NS:
            return pkt, "drop timestamp_future"
        if now - ts_pkt > LIFETIME_NS + SKEW_NS:
            return pkt, "drop timestamp_expired"
        if ts_exp * S < now + LIFETIME_NS + SKEW_NS:
            return pkt, "drop allocation_expired"
        hk = hop_key(self.secret, src, aid, beta, i, j, ts_exp)
        ha_at = after + 24 + 3 * (k - 1)
        if bytes(pkt[ha_at : ha_at + 3]) != hop_authenticator(hk, src, ts_pkt, len(pkt)):
            return pkt, "drop bad_hop_authenticator"
        if (src, ts_pkt) in self.seen:
            return pkt, "drop duplicate"
        self.seen.add((src, ts_pkt))
        # β in kbit/s, policed in whole 100 kbit/s units: bytes/s = units · 12 500.
        rate = (beta // 100) * 12_500
        tokens, last = self.buckets.get(aid, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * rate / S)
        if len(pkt) > tokens:
            self.buckets[aid] = (tokens, now)
            return pkt, "drop overuse"
        self.buckets[aid] = (tokens - len(pkt), now)
        pkt[p + 9] = hp + 1
        assert hdr_len == len(pkt) - struct.unpack_from(">H", pkt, 6)[0]
        return pkt, "deliver" if j == 0 else f"forward {j}"


SECRETS = [bytes([0x11] * 16), bytes([0x22] * 16)]
PATH = [(0, 1), (2, 3), (4, 0)]
ALLOC = Alloc(0xA1D0_0000_0000_0001, 8_000, 1_700_003_600)
BURST = 1500


def walks():
    out = []

    def walk(name, comment, steps):
        routers = {}
        rendered = []
        for secret, ingress, now, before in steps:
            r = routers.setdefault(secret, Router(secret, BURST))
            after, verdict = r.process(before, ingress, now)
            step = {"as_secret": secret.hex(), "ingress": ingress, "now_ns": now, "before": before.hex(), "verdict": verdict}
            if not verdict.startswith("drop"):
                step["after"] = bytes(after).hex()
            rendered.append(step)
        out.append({"name": name, "comment": comment, "steps": rendered})
        return rendered

    honest = build(PATH, ALLOC, SECRETS, NOW)
    forwarded, verdict = Router(SECRETS[0], BURST).process(honest, 2, NOW)
    assert verdict == "forward 3"
    walk(
        "honest",
        "two on-path ASes forward and deliver",
        [(SECRETS[0], 2, NOW, honest), (SECRETS[1], 4, NOW + 1000, bytes(forwarded))],
    )
    tampered = bytearray(honest)
    tampered[36 + 10 + 12] ^= 0x01  # β's first byte: a source claiming more bandwidth
    walk("tampered_beta", "β changed after stamping (F5)", [(SECRETS[0], 2, NOW, bytes(tampered))])
    # Hop authenticators from the hop keys of another path through the same ASes (F6).
    moved = bytearray(honest)
    stamped = build([(0, 1), (2, 5), (6, 0)], ALLOC, SECRETS, NOW)
    moved[36 + 10 + 12 + 24 : 36 + 10 + 12 + 30] = stamped[36 + 10 + 12 + 24 : 36 + 10 + 12 + 30]
    walk("other_path", "HAs made with another path's hop keys (F6)", [(SECRETS[0], 2, NOW, bytes(moved))])
    walk("replay", "the same packet twice (F8)", [(SECRETS[0], 2, NOW, honest), (SECRETS[0], 2, NOW + 100, honest)])
    second = build(PATH, ALLOC, SECRETS, NOW + 1)
    walk(
        "overuse",
        f"a burst of {BURST} bytes: 188 bytes, then 1400 bytes 1 µs later, beyond what is left (F4)",
        [(SECRETS[0], 2, NOW, honest), (SECRETS[0], 2, NOW + 1000, build(PATH, ALLOC, SECRETS, NOW + 1000, 1312))],
    )
    walk("bad_ingress", "arrived on the wrong interface", [(SECRETS[0], 3, NOW, honest)])
    walk("stale", "ts_pkt older than L + ε", [(SECRETS[0], 2, NOW + LIFETIME_NS + SKEW_NS + 1, honest)])
    walk("future", "ts_pkt beyond the clock skew", [(SECRETS[0], 2, NOW - SKEW_NS - 1, honest)])
    walk("fresh_edges", "exactly at both freshness bounds", [(SECRETS[0], 2, NOW - SKEW_NS, honest), (SECRETS[0], 2, NOW + 1 + LIFETIME_NS + SKEW_NS, second)])
    soon = Alloc(ALLOC.aid, ALLOC.beta, NOW // S + 1)
    walk("allocation_expired", "ts_exp before now + L + ε", [(SECRETS[0], 2, NOW, build(PATH, soon, SECRETS, NOW))])
    return out


def main():
    check_cmac()
    src = parse_ia(SRC_IA)
    hop_keys = []
    for secret, (aid, beta, i, j, ts_exp) in [
        (SECRETS[0], (ALLOC.aid, ALLOC.beta, 2, 3, ALLOC.ts_exp)),
        (SECRETS[1], (ALLOC.aid, ALLOC.beta, 4, 0, ALLOC.ts_exp)),
        (bytes(16), (0, 0, 0, 0, 0)),
        (bytes([0xFF] * 16), (2**64 - 1, 2**32 - 1, 0xFFFF, 0xFFFF, 2**32 - 1)),
    ]:
        hop_keys.append(
            {
                "as_secret": secret.hex(),
                "src": SRC_IA,
                "aid": aid,
                "beta": beta,
                "ingress": i,
                "egress": j,
                "ts_exp": ts_exp,
                "input": hop_key_input(src, aid, beta, i, j, ts_exp).hex(),
                "hop_key": hop_key(secret, src, aid, beta, i, j, ts_exp).hex(),
            }
        )
    has = []
    for hk, ts_pkt, pkt_len in [(bytes.fromhex(hop_keys[0]["hop_key"]), NOW, 188), (bytes(16), 0, 0), (bytes([0xFF] * 16), 2**64 - 1, 0xFFFF)]:
        has.append(
            {
                "hop_key": hk.hex(),
                "src": SRC_IA,
                "ts_pkt": ts_pkt,
                "pkt_len": pkt_len,
                "input": ha_input(src, ts_pkt, pkt_len).hex(),
                "ha": hop_authenticator(hk, src, ts_pkt, pkt_len).hex(),
            }
        )
    doc = {
        "format": "aviary-glwp-vectors/1",
        "comment": "GLWP transmission phase: hop keys, hop authenticators, packets through on-path routers",
        "router_params": {
            "lifetime_ns": LIFETIME_NS,
            "skew_ns": SKEW_NS,
            "burst_bytes": BURST,
            "path_type": PATH_TYPE,
        },
        "hop_keys": hop_keys,
        "hop_authenticators": has,
        "walks": walks(),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
