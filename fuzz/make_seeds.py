#!/usr/bin/env python3
# Copyright 2026 The rfrpc Authors.
#
# Writes the seed corpora under fuzz/corpus/ (committed; rerun only to change
# them): a few well-formed inputs per fuzzer, built here byte by byte from
# docs/wire_formats.md, plus a few near misses. Usage: python3 fuzz/make_seeds.py
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def f_varint(field, v):
    return varint(field << 3) + varint(v)


def f_bytes(field, b):
    return varint((field << 3) | 2) + varint(len(b)) + b


def f_double(field, d):
    return varint((field << 3) | 1) + struct.pack("<d", d)


def write(fuzzer, name, data):
    d = os.path.join(ROOT, fuzzer)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def fnv1a(s):
    h = 2166136261
    for c in s.encode():
        h ^= c
        h = (h * 16777619) & 0xFFFFFFFF
    return h or 1


ECHO = fnv1a("/rfrpc.fuzz.Fuzz/Echo")
OTHER = fnv1a("/rfrpc.fuzz.Fuzz/Other")
LATER = fnv1a("/rfrpc.fuzz.Fuzz/Later")
TAIL = 0x52465450


def align8(n):
    return (n + 7) & ~7


# --- handshake: frames of Hello, then HelloReply ---------------------------
def frame(body, magic=0x50524652, version=1, length=None):
    return struct.pack("<IHHI", magic, version, 0,
                       len(body) if length is None else length) + body


rpc_hello = (f_varint(1, 1) + f_varint(2, -1) + f_varint(3, 8) +
             f_varint(4, 4096) + f_varint(5, 4096) + f_bytes(6, b"fuzz"))
region = (f_varint(1, 0x7f0000001000) + f_varint(2, 65536) + f_varint(3, 7) +
          f_varint(4, 1) + f_varint(5, 1) + f_varint(6, 0) + f_varint(7, 0) +
          f_varint(8, 65536))
qp = f_varint(1, 17) + f_varint(2, 99) + f_bytes(4, bytes(16)) + f_varint(5, 3)
hello = (f_bytes(1, b"shm") + f_bytes(2, qp) + f_bytes(3, region) +
         f_bytes(4, rpc_hello) + f_bytes(5, b"token") + f_bytes(6, b"pid 1") +
         f_varint(7, 128))
welcome = (f_varint(1, 1) + f_varint(2, 0) + f_varint(3, 2) + f_varint(4, 8) +
           f_varint(5, 4096) + f_varint(6, 4096) + f_varint(7, 8192))
reply_hello = f_bytes(1, b"shm") + f_bytes(3, region) + f_bytes(4, welcome)
reply = f_varint(1, 0) + f_bytes(3, reply_hello)
refusal = f_varint(1, 16) + f_bytes(2, b"bad token")
write("handshake_fuzzer", "hello_then_reply", frame(hello) + frame(reply))
write("handshake_fuzzer", "refusal", frame(b"") + frame(refusal))
write("handshake_fuzzer", "bad_magic", frame(hello, magic=0x48545450))
write("handshake_fuzzer", "bad_version", frame(hello, version=2))
write("handshake_fuzzer", "oversize", frame(b"", length=1 << 20))
write("handshake_fuzzer", "truncated", frame(hello)[:30])

# --- request slots -----------------------------------------------------------
def test_request(payload=b"", id_=0, response_size=0, fail=0, text=b""):
    out = b""
    if payload:
        out += f_bytes(1, payload)
    if id_:
        out += f_varint(2, id_)
    if response_size:
        out += f_varint(4, response_size)
    if fail:
        out += f_varint(5, fail)
    if text:
        out += f_bytes(6, text)
    return out


def slot(payload, seq, method, aux=0, flags=0):
    body = payload + bytes(align8(len(payload)) - len(payload))
    return (struct.pack("<IIHHI", 0x80000000 | len(payload), seq, aux, flags,
                        method) + body + struct.pack("<Q", (seq << 32) | TAIL))


def batch(entries):
    out = b""
    for method, p in entries:
        out += struct.pack("<II", len(p), method) + p + bytes(align8(len(p)) - len(p))
    return out


reqs = [
    test_request(b"hello", 42),
    test_request(id_=7, response_size=3000),
    test_request(fail=5),
    test_request(text=b"\xff\xfe not utf-8"),
]
b3 = batch([(ECHO, reqs[0]), (OTHER, f_bytes(6, b"x")), (ECHO, reqs[2])])
b_many = batch([(ECHO, test_request(b"p" * (i * 7), i)) for i in range(24)])
for i, r in enumerate(reqs):
    # byte 0: slot size 1024 (index 2); byte 1: no fix-ups (the slot is whole).
    write("request_slot_fuzzer", "single_%d" % i,
          bytes([2, 0]) + slot(r, 7, ECHO))
write("request_slot_fuzzer", "batch3", bytes([2, 0]) + slot(b3, 7, 0, 3, 1))
write("request_slot_fuzzer", "batch_many",
      bytes([3, 0]) + slot(b_many, 7, 0, 4, 1))
write("request_slot_fuzzer", "fixups", bytes([1, 15]) + bytes(16) + reqs[0])
write("request_slot_fuzzer", "stale", bytes([2, 0]) + slot(reqs[0], 6, ECHO))
write("request_slot_fuzzer", "oversize",
      bytes([0, 0]) + struct.pack("<IIHHI", 0x80000000 | 4000, 7, 0, 0, ECHO))

# --- server: ctl, aux (2), raw flags, payload --------------------------------
for i, r in enumerate(reqs):
    write("server_fuzzer", "single_%d" % i, bytes([8, 0, 0, 0, 0]) + r)
    # With bit 3 the method is picked by the first payload byte % 3; 0x0a
    # (the tag of field 1) % 3 = 1 would pick Other, so also send it raw.
write("server_fuzzer", "batch3", bytes([1, 3, 0, 0]) + b3)
write("server_fuzzer", "batch_many", bytes([1, 4, 0, 0]) + b_many)
write("server_fuzzer", "batch_many_reply", bytes([3, 2, 0, 0]) + b_many)
write("server_fuzzer", "batch_large",
      bytes([1, 8, 0, 0]) + batch([(ECHO, test_request(id_=i, response_size=600))
                                   for i in range(3)]))
write("server_fuzzer", "corrupt", bytes([4, 0, 0, 0]) + reqs[0])
write("server_fuzzer", "bad_flags", bytes([16, 0, 0, 6]) + reqs[0])
write("server_fuzzer", "bad_batch", bytes([1, 0, 0, 0]) + b"\x40\x00\x00\x00")
# Bit 5: budget codes after the entries (2 ms, none, 0 = expired).
write("server_fuzzer", "batch3_budgets",
      bytes([33, 3, 0, 0]) + b3 + struct.pack("<HHHH", 2000, 0xFFFF, 0, 0))
# Async entries (Later: even ids finish inline, odd ones on a helper thread)
# between sync ones, in parts of one entry (aux 1).
b_later = batch([(LATER if i % 3 else ECHO, test_request(b"l" * i, i))
                 for i in range(7)])
write("server_fuzzer", "batch_later", bytes([1, 1, 0, 0]) + b_later)
write("server_fuzzer", "batch_later_reply", bytes([3, 4, 0, 0]) + b_later)
# Bit 6: the cancel word names this batch (aux 1: odd), so its async entries
# still running are answered CANCELLED; aux 2: a garbage word, ignored.
write("server_fuzzer", "batch_later_cancelled", bytes([65, 1, 0, 0]) + b_later)
write("server_fuzzer", "batch_later_garbage_cancel", bytes([65, 2, 0, 0]) + b_later)
# A single call to Later (bit 3: 0x0b % 4 = 3) with a 1 ms budget (raw
# flags 2 = deadline, aux 1000): 0x0b is no valid protobuf tag, so the async
# handler's request does not parse.
write("server_fuzzer", "single_later", bytes([24, 0xE8, 0x03, 2]) + b"\x0b\x00")

# --- response buffers (client side) ------------------------------------------
SEQ = 0x01020304


def response(payload, flags=0, entries=0, code=0, seq=SEQ):
    body = payload + bytes(align8(len(payload)) - len(payload))
    return (struct.pack("<IIHHHH", 0x80000000 | len(payload), seq, 3, code,
                        flags, entries) + body + struct.pack("<Q", (seq << 32) | TAIL))


def results(items):
    out = b""
    for code, p in items:
        out += struct.pack("<IHH", len(p), code, 0) + p + bytes(align8(len(p)) - len(p))
    return out


part1 = response(results([(0, b"a" * 20), (5, b"not found")]), 2, 2)
part2 = response(results([(0, b"b" * 100)]), 2, 1)
# byte 0: size 1024 (index 4) | batch (16); byte 1: F = 16*8 = 128; byte 2: 3 calls - 1.
write("response_fuzzer", "batch_two_parts", bytes([4 | 16, 8, 2]) + part1 + part2)
write("response_fuzzer", "batch_two_parts_reply",
      bytes([4 | 16 | 8, 8, 2]) + part1 + part2)
write("response_fuzzer", "single", bytes([3, 4, 0]) + response(b"x" * 70))
write("response_fuzzer", "error", bytes([3, 4, 0]) + response(b"boom", code=13))
write("response_fuzzer", "pushed", bytes([3, 4, 0]) + response(b"y" * 9, flags=1))
write("response_fuzzer", "oversize",
      bytes([0, 1, 0]) + struct.pack("<IIQ", 0x80000000 | 5000, SEQ, 0))

# --- YCSB property files -----------------------------------------------------
wl = os.path.join(os.path.dirname(ROOT), "..", "kvstore", "workloads")
for name in sorted(os.listdir(wl)):
    if name == "BUILD":
        continue
    with open(os.path.join(wl, name), "rb") as f:
        write("ycsb_properties_fuzzer", name, f.read())
write("ycsb_properties_fuzzer", "escapes",
      b"key\\ with\\:colon = va\\\n    lue\\u00e9\\t\n! comment\n"
      b"recordcount: 10\nfieldlengthdistribution=zipfian\n"
      b"hotspotdatafraction 0.5\npercentiles=50,99.99\nbad=\\u12\n")

# --- tuner profiles -----------------------------------------------------------
points = "".join(
    "  points { retries: %d fetch_size: %d ops_per_sec: %d }\n" % (r, f, 1000 * r + f)
    for r in (1, 2) for f in (64, 256, 1024))
profile = ("format_version: 1\nprovider: \"shm\"\nhost: \"h\"\n"
           "read_curve { size: 64 ops_per_sec: 1e6 }\n"
           "mode_curve { server_time_ns: 1000 rf_ops_per_sec: 5 sr_ops_per_sec: 4 }\n"
           "low_size: 64\nhigh_size: 1024\nmax_retries: 2\nfetch_step: 64\n"
           "throughput {\n  server_time_ns: 0\n%s}\n"
           "throughput {\n  server_time_ns: 5000\n%s}\n" % (points, points))
write("tuner_profile_fuzzer", "valid", profile.encode())
write("tuner_profile_fuzzer", "wrong_version",
      profile.replace("format_version: 1", "format_version: 2").encode())
write("tuner_profile_fuzzer", "missing_row",
      profile.replace("max_retries: 2", "max_retries: 3").encode())
write("tuner_profile_fuzzer", "garbled", b"format_version: 1\nprovider: \"shm\nlow_size: -")
