#!/usr/bin/env python3
"""Generates testdata/vectors/drkey.json: DRKey test vectors computed independently of
aviary's Rust code, from the byte layout of SCION's DRKey (docs.scion.org "DRKey" and
scionproto's pkg/drkey), with Python's hashlib (PBKDF2), ipaddress and the `cryptography`
package (AES-128 block encryption; the CBC-MAC chaining is done here by hand).

Run from the repository root (needs `pip install cryptography`; any version with AES-ECB):

    python3 testdata/vectors/gen_drkey.py > testdata/vectors/drkey.json

The output is deterministic. Before printing anything the script checks itself against
the golden keys of scionproto's own tests (pkg/drkey/testdata/TestDeriveSV,
pkg/drkey/specific/specific_test.go TestDeriveLevel1, pkg/drkey/{specific,generic}/testdata/*)
and refuses to write vectors if one differs. `cargo test -p aviary-scion --test drkey`
checks the Rust implementation against the committed file.
"""

import hashlib
import ipaddress
import json
import struct
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

SALT = b"Derive DRKey Key"
SVC = {"DS": 0x0001, "CS": 0x0002, "Wildcard": 0x0010}
SVC_MULTICAST = 0x8000


def aes_block(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def prf(key, data):
    """AES-128 CBC-MAC, zero IV, input zero-padded to whole blocks, last block out."""
    data = data + b"\x00" * (-len(data) % 16)
    state = b"\x00" * 16
    for i in range(0, len(data), 16):
        state = aes_block(key, bytes(a ^ b for a, b in zip(state, data[i : i + 16])))
    return state


def secret_value(master, protocol, begin, end):
    assert master, "scionproto rejects an empty master secret"
    password = struct.pack(">Q", len(master)) + master + struct.pack(">HII", protocol, begin, end)
    return hashlib.pbkdf2_hmac("sha256", password, SALT, 1000, 16)


def parse_ia(text):
    isd, asn = text.split("-")
    if ":" in asn:
        groups = asn.split(":")
        assert len(groups) == 3
        value = 0
        for g in groups:
            value = (value << 16) | int(g, 16)
    else:
        value = int(asn)
    return struct.pack(">Q", (int(isd) << 48) | value)


def host_bytes(text):
    """(type/length code, address bytes) as in the SCION address header."""
    base, flag = text, 0
    if text.endswith("_A"):
        base = text[:-2]
    elif text.endswith("_M"):
        base, flag = text[:-2], SVC_MULTICAST
    if base in SVC:
        return 0x4, struct.pack(">H", SVC[base] | flag) + b"\x00\x00"
    addr = ipaddress.ip_address(text)
    if addr.version == 6 and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return (0x0, addr.packed) if addr.version == 4 else (0x3, addr.packed)


def level2_input(key_type, generic_protocol, host):
    code, raw = host_bytes(host)
    proto = b"" if generic_protocol is None else struct.pack(">H", generic_protocol)
    return bytes([key_type]) + proto + bytes([code]) + raw


def derive(v):
    master = bytes.fromhex(v["master_secret"])
    generic = v["derivation"] == "generic"
    proto = v["protocol"]
    sv = secret_value(master, 0 if generic else proto, v["epoch_begin"], v["epoch_end"])
    level1 = prf(sv, b"\x00" + parse_ia(v["dst_ia"]))
    l2_proto = proto if generic else None
    as_host = prf(level1, level2_input(1, l2_proto, v["dst_host"]))
    host_as = prf(level1, level2_input(2, l2_proto, v["src_host"]))
    host_host = prf(host_as, level2_input(3, None, v["dst_host"]))
    out = dict(v)
    for name, key in [("sv", sv), ("level1", level1), ("as_host", as_host), ("host_as", host_as), ("host_host", host_host)]:
        out[name] = key.hex()
    return out


def vector(name, derivation, protocol, master, epoch, dst_ia, src_host, dst_host, src_ia=None):
    v = {"name": name, "derivation": derivation, "protocol": protocol, "master_secret": master}
    v["epoch_begin"], v["epoch_end"] = epoch
    if src_ia is not None:
        v["src_ia"] = src_ia
    v.update({"dst_ia": dst_ia, "src_host": src_host, "dst_host": dst_host})
    return v


GO_MASTER_16 = "0001020304050607" * 2
# drkeytest.GetLevel1: {0..7} followed by the low byte of srcIA 1-ff00:0:111.
GO_MASTER_9 = "000102030405060711"
DAY = (1700006400, 1700092800)  # a 24 h epoch aligned as scionproto's control service aligns it

VECTORS = [
    # scionproto's own test settings; their golden keys are checked in GOLDEN below.
    vector("scionproto_sv_protocol0", "specific", 0, GO_MASTER_16, (0, 1), "1-ff00:0:112", "127.0.0.2", "127.0.0.1"),
    vector("scionproto_level1_scmp", "specific", 1, GO_MASTER_16, (0, 1), "1-ff00:0:112", "127.0.0.2", "127.0.0.1"),
    vector("scionproto_specific_scmp", "specific", 1, GO_MASTER_9, (0, 1), "1-ff00:0:112", "127.0.0.2", "127.0.0.1", "1-ff00:0:111"),
    vector("scionproto_generic_10000", "generic", 10000, GO_MASTER_9, (0, 1), "1-ff00:0:112", "127.0.0.2", "127.0.0.1", "1-ff00:0:111"),
    # Both schemes, protocol ids 0, 1 and niche ones.
    vector("specific_p0_ipv4", "specific", 0, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("generic_p0_ipv4", "generic", 0, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("specific_scmp_ipv4", "specific", 1, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("generic_p1_ipv4", "generic", 1, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("generic_p2_ipv4", "generic", 2, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("specific_p2_ipv4", "specific", 2, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("generic_p65535_ipv4", "generic", 65535, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("specific_p65535_ipv4", "specific", 65535, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    # IPv6 in several text forms (the second input block is used: 20 bytes under generic).
    vector("specific_scmp_ipv6", "specific", 1, "6176696172792d6d0000000000000001", DAY, "2-ff00:0:220", "2001:db8::1", "fd00:1:2:3:4:5:6:7"),
    vector("generic_p2_ipv6_full_form", "generic", 2, "6176696172792d6d0000000000000001", DAY, "2-ff00:0:220", "2001:0db8:0000:0000:0000:ff00:0042:8329", "FE80:0:0:0:0:0:0:1"),
    vector("generic_p65535_ipv6_embedded_v4", "generic", 65535, "6176696172792d6d0000000000000001", DAY, "2-ff00:0:220", "64:ff9b::192.0.2.33", "::192.0.2.1"),
    vector("specific_p0_ipv6_loopback_unspecified", "specific", 0, "6176696172792d6d0000000000000001", DAY, "2-ff00:0:220", "::1", "::"),
    # IPv4-mapped IPv6 encodes as IPv4: same keys as specific_p0_ipv4 / generic_p2_ipv4.
    vector("specific_p0_ipv4_mapped", "specific", 0, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "::ffff:192.0.2.1", "::ffff:c633:6407", "1-ff00:0:110"),
    vector("generic_p2_ipv4_mapped", "generic", 2, "6176696172792d6d0000000000000000", DAY, "1-ff00:0:111", "::FFFF:192.0.2.1", "0:0:0:0:0:ffff:198.51.100.7", "1-ff00:0:110"),
    # SVC addresses, with and without suffixes, mixed with IP hosts.
    vector("specific_scmp_svc", "specific", 1, "6176696172792d6d0000000000000002", DAY, "1-ff00:0:112", "CS", "DS_A"),
    vector("generic_p7_svc_multicast", "generic", 7, "6176696172792d6d0000000000000002", DAY, "1-ff00:0:112", "Wildcard_M", "CS_M"),
    vector("generic_p7_svc_anycast_suffix", "generic", 7, "6176696172792d6d0000000000000002", DAY, "1-ff00:0:112", "Wildcard_A", "CS_A"),
    vector("specific_p0_ipv6_to_svc", "specific", 0, "6176696172792d6d0000000000000002", DAY, "1-ff00:0:112", "2001:db8:ffff::42", "Wildcard"),
    # Master secrets: 1 byte, exactly one HMAC block, longer than one (hashed first), 100 bytes.
    vector("specific_p0_master_1_byte_zero", "specific", 0, "00", DAY, "1-ff00:0:110", "10.0.0.1", "10.0.0.2"),
    vector("generic_p3_master_1_byte_ff", "generic", 3, "ff", DAY, "1-ff00:0:110", "10.0.0.1", "10.0.0.2"),
    vector("specific_scmp_master_46_bytes", "specific", 1, "ab" * 46, DAY, "1-ff00:0:110", "10.0.0.1", "10.0.0.2"),
    vector("specific_scmp_master_64_bytes", "specific", 1, bytes(range(64)).hex(), DAY, "1-ff00:0:110", "10.0.0.1", "10.0.0.2"),
    vector("generic_p300_master_100_bytes", "generic", 300, bytes(range(100, 200)).hex(), DAY, "1-ff00:0:110", "10.0.0.1", "2001:db8::2"),
    vector("specific_p0_master_100_bytes", "specific", 0, bytes(range(100, 200)).hex(), DAY, "1-ff00:0:110", "10.0.0.1", "2001:db8::2"),
    # Epoch and ISD-AS edges.
    vector("specific_p0_next_day", "specific", 0, "6176696172792d6d0000000000000000", (DAY[1], DAY[1] + 86400), "1-ff00:0:111", "192.0.2.1", "198.51.100.7", "1-ff00:0:110"),
    vector("specific_p0_epoch_max", "specific", 0, "01020304", (4294880895, 4294967295), "65535-ffff:ffff:ffff", "0.0.0.0", "255.255.255.255"),
    vector("generic_p9_bgp_asn", "generic", 9, "01020304", (600, 1200), "64-559", "192.0.2.1", "192.0.2.2", "64-4294967295"),
    vector("specific_scmp_ia_zero", "specific", 1, "01020304", (86400, 172800), "0-0", "192.0.2.1", "192.0.2.2"),
]

# Golden keys of scionproto's tests, by vector name.
GOLDEN = {
    "scionproto_sv_protocol0": {"sv": "c3b4843c990314f9ac554f9b781cdeb7"},
    "scionproto_level1_scmp": {"level1": "a823f5b956de7c0cbc5a6942f5b6fc10"},
    "scionproto_specific_scmp": {
        "as_host": "b5a756caa2e030f3a2b6dbfb03e03eb0",
        "host_as": "4cca42cd61ec9f84802b65f7774e9854",
        "host_host": "164fc8460825bc1abf88b4689c70f559",
    },
    "scionproto_generic_10000": {
        "as_host": "2bc8fbb9455531a804cf7fd5e5e512a4",
        "host_as": "3341fe339ec9492dd15509ce3a08b960",
        "host_host": "f7f4d42ced8b7d040be51b2f6837f886",
    },
}


def main():
    vectors = [derive(v) for v in VECTORS]
    by_name = {v["name"]: v for v in vectors}
    assert len(by_name) == len(vectors), "vector names must be unique"
    for name, keys in GOLDEN.items():
        for field, want in keys.items():
            got = by_name[name][field]
            if got != want:
                sys.exit(f"{name}.{field}: computed {got}, scionproto's golden value is {want}")
    # IPv4-mapped IPv6 must give the keys of the plain IPv4 spelling.
    for mapped, plain in [("specific_p0_ipv4_mapped", "specific_p0_ipv4"), ("generic_p2_ipv4_mapped", "generic_p2_ipv4")]:
        for field in ["as_host", "host_as", "host_host"]:
            assert by_name[mapped][field] == by_name[plain][field], (mapped, field)
    json.dump({"schema": "scion-drkey-v1", "vectors": vectors}, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
