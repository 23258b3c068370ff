#!/usr/bin/env python3
"""Generates testdata/vectors/epic.json: test vectors for SCION's EPIC-HP (path type 3),
computed independently of aviary's Rust code from SCION's published algorithm (the SCION
header specification's EPIC path type and scionproto's pkg/experimental/epic): Python
integers for the timestamp rules, the `cryptography` package for AES-CMAC (hop-field
authenticators) and AES-128 block encryption (the CBC-MAC chaining is done here by hand).

Run from the repository root (needs `pip install cryptography`):

    python3 testdata/vectors/gen_epic.py > testdata/vectors/epic.json

The output is deterministic. Before printing anything the script checks its MAC input
layout against the expected bytes of scionproto's own test (TestPrepareMacInput) and its
timestamp rules against the boundary cases of scionproto's TestCreateTimestamp and
TestVerifyTimestamp, and refuses to write vectors if one differs.
`cargo test -p aviary-scion --test epic_vectors` checks the Rust implementation against the
committed file.
"""

import ipaddress
import json
import struct
import sys

from cryptography.hazmat.primitives import cmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

NS = 10**9
RESOLUTION_NS = 21_000  # unit of EpicTS
LIFETIME_NS = 2 * NS  # maximal packet lifetime
SKEW_NS = NS  # maximal clock skew
SVC = {"DS": 0x0001, "CS": 0x0002, "Wildcard": 0x0010}


def aes_block(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def cbc_mac(key, data):
    """AES-128 CBC-MAC, zero IV, input already a multiple of 16 bytes; last block out."""
    assert len(data) % 16 == 0
    state = b"\x00" * 16
    for i in range(0, len(data), 16):
        state = aes_block(key, bytes(a ^ b for a, b in zip(state, data[i : i + 16])))
    return state


def hop_auth(hop):
    """The full 16-byte AES-CMAC of a hop field (its first 6 bytes are the hop-field MAC)."""
    block = struct.pack(
        ">HHIBBHHH", 0, hop["seg_id"], hop["timestamp"], 0, hop["exp_time"], hop["cons_ingress"],
        hop["cons_egress"], 0,
    )
    c = cmac.CMAC(algorithms.AES(bytes.fromhex(hop["key"])))
    c.update(block)
    return c.finalize()


def parse_ia(text):
    isd, asn = text.split("-")
    value = 0
    for g in asn.split(":"):
        value = (value << 16) | int(g, 16)
    if ":" not in asn:
        value = int(asn)
    return struct.pack(">Q", (int(isd) << 48) | value)


def src_addr(text):
    """(length code L of the address header, raw address bytes)."""
    base = text[:-2] if text.endswith(("_A", "_M")) else text
    if base in SVC:
        flag = 0x8000 if text.endswith("_M") else 0
        return 0, struct.pack(">H", SVC[base] | flag) + b"\x00\x00"
    addr = ipaddress.ip_address(text)
    return (0, addr.packed) if addr.version == 4 else (3, addr.packed)


def mac_input(info_ts, epic_ts, counter, src_ia, src_host, payload_len):
    length_code, raw = src_addr(src_host)
    data = struct.pack(">BIII", length_code, info_ts, epic_ts, counter) + parse_ia(src_ia) + raw
    data += struct.pack(">H", payload_len)
    return data + b"\x00" * (-len(data) % 16)


def epic_timestamp(info_ts, now_ns):
    base = info_ts * NS
    if base > now_ns:
        return None
    ts = max(0, (now_ns - base) // RESOLUTION_NS - 1)
    return ts if ts < 2**32 else None


def verify(info_ts, epic_ts, now_ns):
    sent = info_ts * NS + (epic_ts + 1) * RESOLUTION_NS
    if sent > now_ns + SKEW_NS:
        return "future"
    if now_ns > sent + LIFETIME_NS + SKEW_NS:
        return "expired"
    return "ok"


def self_check():
    want = bytes.fromhex("004af9f07000000001020000030002ff00000002220a00006400780000000000")
    got = mac_input(1257894000, 1, 0x02000003, "2-ff00:0:222", "10.0.0.100", 120)
    if got != want:
        sys.exit(f"MAC input differs from scionproto's TestPrepareMacInput: {got.hex()}")
    now = 1_700_000_000 * NS
    minute = 60 * NS
    for back, ok in [(24 * 3600 + 63 * 60, True), (24 * 3600 + 64 * 60, False), (0, True)]:
        info = (now - back * NS) // NS
        if (epic_timestamp(info, now) is not None) != ok:
            sys.exit(f"CreateTimestamp boundary {back} s differs from scionproto's test")
    info = (now - minute) // NS
    ts = epic_timestamp(info, now)
    cs = SKEW_NS // RESOLUTION_NS
    cs_pl = (SKEW_NS + LIFETIME_NS) // RESOLUTION_NS
    cases = [(0, False), (ts - cs_pl, False), (ts - cs_pl + 1, True), (ts, True), (ts + cs, True),
             (ts + cs + 1, False), (2**32 - 1, False)]
    for epic_ts, ok in cases:
        if (verify(info, epic_ts, now) == "ok") != ok:
            sys.exit(f"VerifyTimestamp case {epic_ts} differs from scionproto's test")


def hvf_vector(name, comment, auth_ph=None, auth_lh=None, hop_ph=None, hop_lh=None, **inp):
    v = {"name": name, "kind": "hvf", "comment": comment}
    if hop_ph:
        auth_ph, v["hop_ph"] = hop_auth(hop_ph), hop_ph
    if hop_lh:
        auth_lh, v["hop_lh"] = hop_auth(hop_lh), hop_lh
    data = mac_input(inp["info_timestamp"], inp["epic_ts"], inp["counter"], inp["src_ia"], inp["src_host"],
                     inp["payload_len"])
    phvf = cbc_mac(auth_ph, data)[:4]
    lhvf = cbc_mac(auth_lh, data)[:4]
    v.update({"auth_ph": auth_ph.hex(), "auth_lh": auth_lh.hex()})
    v.update(inp)
    v.update({
        "phvf": phvf.hex(),
        "lhvf": lhvf.hex(),
        "metadata": (struct.pack(">II", inp["epic_ts"], inp["counter"]) + phvf + lhvf).hex(),
        "mac_input": data.hex(),
    })
    return v


def hop(key_byte, seg_id, timestamp, exp_time, cons_ingress, cons_egress):
    return {"key": bytes([key_byte] * 8 + list(range(8))).hex(), "seg_id": seg_id, "timestamp": timestamp,
            "exp_time": exp_time, "cons_ingress": cons_ingress, "cons_egress": cons_egress}


def vectors():
    out = [
        hvf_vector("scionproto_prepare_mac_input", "inputs of scionproto's TestPrepareMacInput (its expected MAC "
                   "input is mac_input) with the authenticators of its TestVerifyHVF",
                   auth_ph=b"fcdc8202502d452e", auth_lh=b"f5fcc4ce2250db36", info_timestamp=1257894000, epic_ts=1,
                   counter=0x02000003, src_ia="2-ff00:0:222", src_host="10.0.0.100", payload_len=120),
        hvf_vector("ipv6_source", "16-byte source address: length code 3, three input blocks",
                   auth_ph=bytes(range(16)), auth_lh=bytes(range(16, 32)), info_timestamp=1_700_000_000,
                   epic_ts=47_619, counter=0x01001234, src_ia="1-ff00:0:110", src_host="2001:db8::1",
                   payload_len=1400),
        hvf_vector("svc_source", "SVC source: 2-byte service and 2 zero bytes, length code 0",
                   auth_ph=b"\x11" * 16, auth_lh=b"\x22" * 16, info_timestamp=1_700_000_100, epic_ts=0,
                   counter=0, src_ia="64-559", src_host="CS", payload_len=0),
        hvf_vector("svc_multicast_source", "SVC source with the multicast bit", auth_ph=b"\x33" * 16,
                   auth_lh=b"\x44" * 16, info_timestamp=1, epic_ts=1, counter=1, src_ia="1-ff00:0:111",
                   src_host="Wildcard_M", payload_len=65535),
        hvf_vector("maximum_fields", "every integer at its maximum", auth_ph=b"\xff" * 16, auth_lh=b"\x00" * 16,
                   info_timestamp=2**32 - 1, epic_ts=2**32 - 1, counter=2**32 - 1,
                   src_ia="65535-ffff:ffff:ffff", src_host="255.255.255.255", payload_len=65535),
        hvf_vector("from_hop_fields_ipv4", "authenticators as the full CMACs of the last two hop fields",
                   hop_ph=hop(0xa1, 0x1234, 1_700_000_000, 63, 1, 2), hop_lh=hop(0xb2, 0x5678, 1_700_000_000, 63, 3, 0),
                   info_timestamp=1_700_000_000, epic_ts=123_456, counter=7, src_ia="1-ff00:0:110",
                   src_host="192.0.2.7", payload_len=512),
        hvf_vector("from_hop_fields_ipv6", "hop fields of two segments (different info timestamps)",
                   hop_ph=hop(0xc3, 0xffff, 1_699_999_000, 255, 65535, 17),
                   hop_lh=hop(0xd4, 0x0000, 1_700_000_000, 0, 0, 65535),
                   info_timestamp=1_699_999_000, epic_ts=4_000_000, counter=0xdeadbeef, src_ia="2-ff00:0:222",
                   src_host="fd00::abcd:1", payload_len=8),
    ]
    base = 1_700_000_000
    t0 = base * NS
    ts_cases = [
        ("at_info_timestamp", base, t0, "now equals the info timestamp: 0 - 1 rounds up to 0"),
        ("first_unit", base, t0 + RESOLUTION_NS, "one unit after: still 0"),
        ("second_unit_minus_1ns", base, t0 + 2 * RESOLUTION_NS - 1, "just before the second unit ends"),
        ("second_unit", base, t0 + 2 * RESOLUTION_NS, "two units after: 1"),
        ("one_minute", base, t0 + 60 * NS, "one minute after"),
        ("last_representable", base, t0 + 2**32 * RESOLUTION_NS, "EpicTS = 2^32 - 1"),
        ("overflow", base, t0 + (2**32 + 1) * RESOLUTION_NS, "EpicTS would be 2^32: SCION refuses"),
        ("one_day_64_min", base, t0 + (24 * 3600 + 64 * 60) * NS, "beyond 1 d 63 min: SCION refuses"),
        ("info_in_future", base, t0 - 1, "info timestamp 1 ns after now: SCION refuses"),
        ("zero_info", 0, 5 * NS, "info timestamp 0"),
    ]
    for name, info, now, comment in ts_cases:
        out.append({"name": f"ts_{name}", "kind": "timestamp", "comment": comment, "info_timestamp": info,
                    "now_ns": now, "epic_ts": epic_timestamp(info, now)})
    sent = t0 + (1000 + 1) * RESOLUTION_NS
    verify_cases = [
        ("exact", 1000, sent, "now is the send time"),
        ("future_bound", 1000, sent - SKEW_NS, "sent exactly the clock skew ahead: ok"),
        ("future", 1000, sent - SKEW_NS - 1, "1 ns further ahead"),
        ("past_bound", 1000, sent + LIFETIME_NS + SKEW_NS, "lifetime plus skew ago: ok"),
        ("expired", 1000, sent + LIFETIME_NS + SKEW_NS + 1, "1 ns older"),
        ("zero_ts_one_minute", 0, t0 + 60 * NS, "EpicTS 0 checked a minute later"),
        ("max_ts", 2**32 - 1, t0, "EpicTS far in the future"),
        ("fresh_now", epic_timestamp(base, t0 + 30 * NS), t0 + 30 * NS, "stamped and checked at once"),
        ("lifetime_only", 1000, sent + LIFETIME_NS, "within the lifetime"),
    ]
    for name, epic_ts, now, comment in verify_cases:
        out.append({"name": f"verify_{name}", "kind": "verify", "comment": comment, "info_timestamp": base,
                    "epic_ts": epic_ts, "now_ns": now, "result": verify(base, epic_ts, now)})
    return out


def main():
    self_check()
    vs = vectors()
    assert len({v["name"] for v in vs}) == len(vs)
    json.dump({"schema": "scion-epic-v1", "vectors": vs}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
