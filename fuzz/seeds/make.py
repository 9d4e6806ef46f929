#!/usr/bin/env python3
"""Seed corpora for the fuzz targets from the project's own test fixtures.

Reads the string literals of the decoder tests (SSE/NDJSON bodies and the
JSON payloads of every dialect), the example config and the TOML in the
config tests, and writes one file per seed under fuzz/corpus/<target>/
(named by content hash, as libFuzzer does). The import corpus is seeded by
`FIRSTTOKEN_WRITE_SEEDS=1 cargo test -p firsttoken-record --test
fuzz_corpus`, from the writer itself. Run from the repository root:
    python3 fuzz/seeds/make.py
"""
import gzip, hashlib, os, re, subprocess, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

def read(p):
    with open(os.path.join(ROOT, p), encoding="utf-8") as f:
        return f.read()

ESC = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}

def unescape(s, is_bytes):
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode(); i += 1; continue
        n = s[i + 1]
        if n in ESC:
            out += ESC[n].encode(); i += 2
        elif n == "x":
            v = int(s[i + 2:i + 4], 16)
            out += bytes([v]) if is_bytes else chr(v).encode(); i += 4
        elif n == "u":
            j = s.index("}", i)
            out += chr(int(s[i + 3:j], 16)).encode(); i = j + 1
        elif n == "\n":  # line continuation
            i += 2
            while i < len(s) and s[i] in " \t\n": i += 1
        else:
            out += c.encode(); i += 1
    return bytes(out)

def literals(src):
    """Rust string literals: raw (r#".."#, br#".."#) and plain ("..", b"..")."""
    for m in re.finditer(r'(b?)r(#+)"(.*?)"\2', src, re.S):
        yield m.group(3).encode()
    plain = re.sub(r'b?r#+".*?"#+', "", src, flags=re.S)
    for m in re.finditer(r'(b?)"((?:[^"\\]|\\.)*)"', plain, re.S):
        try:
            yield unescape(m.group(2), m.group(1) == "b")
        except (ValueError, IndexError):
            pass

def put(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

decoder_sources = [
    "crates/drive/src/decode/mod.rs", "crates/drive/src/decode/formats.rs",
    "crates/drive/src/decode/sse.rs", "crates/drive/src/decode/lines.rs",
    "crates/drive/src/decode/hostile.rs", "crates/drive/tests/formats.rs",
    "crates/drive/tests/hostile_bounds.rs", "crates/emulator/src/stream.rs",
]
bodies, payloads, timings = set(), set(), set()
for p in decoder_sources:
    for lit in literals(read(p)):
        if len(lit) < 2 or len(lit) > 4096:
            continue
        if lit.lstrip().startswith(b"{"):
            payloads.add(lit)
        if b"data:" in lit or b"event:" in lit or b"\n" in lit or lit.startswith(b":"):
            bodies.add(lit)
        if b"dur=" in lit:
            timings.add(lit)
# Whole streams built from the payloads: one SSE event, one NDJSON line each.
for pl in payloads:
    bodies.add(b"data: " + pl + b"\n\n")
    bodies.add(pl + b"\n")
bodies.add(b"data: [DONE]\n\n")
bodies.add(b"\xef\xbb\xbfdata: x\r\n\r\n")

# Selector bytes: bound index 4 (the default bound) or 2 (64 bytes).
for b in bodies:
    put("sse", bytes([4]) + b)
    put("sse", bytes([2]) + b)
    put("lines", bytes([4]) + b)
    for fmt in range(15):
        put("decode", bytes([fmt + 15 * 4]) + b)
    put("decode", bytes([hashlib.sha1(b).digest()[0] % 15 + 15 * 2]) + b)
for t in timings:
    put("server_timing", t)
for v in [b'auth;dur=0.4, db;dur=12;desc="4 queries", retrieve, upstream_connect;dur=1.5',
          b'total;dur=80', b'upstream_ttft;dur=50, total;dur=80', b'cache;desc="hit", db;dur="3.2"',
          b'a;dur=1;dur=2,,b;desc=x', b'miss, ;dur=5, x;dur=NaN, y;dur=inf, z;dur=-0.0', b'edge;dur=1e400']:
    put("server_timing", v)

# Inflate: a few bodies in each coding (zstd through its CLI when present).
sample = sorted(bodies, key=len)[-8:]
for b in sample:
    put("inflate", bytes([0]) + gzip.compress(b))
    put("inflate", bytes([1]) + zlib.compress(b))
    raw = zlib.compressobj(wbits=-15)
    put("inflate", bytes([1]) + raw.compress(b) + raw.flush())
    try:
        z = subprocess.run(["zstd", "-c", "-q"], input=b, capture_output=True, check=True).stdout
        put("inflate", bytes([3]) + z)
    except (OSError, subprocess.CalledProcessError):
        pass
# Brotli: the test literals in coding.rs are compressed streams already.
for lit in literals(read("crates/drive/src/decode/coding.rs")):
    if lit:
        put("inflate", bytes([2]) + lit)

# Config: the example config and every TOML text in the config tests.
put("config", read("crates/plan/firsttoken.example.toml").encode())
for p in ["crates/plan/src/config/tests.rs", "crates/cli/tests/cli.rs",
          "crates/cli/tests/perpath_fixture.rs", "crates/cli/tests/proxy.rs"]:
    for lit in literals(read(p)):
        if b"=" in lit and (b"[" in lit or b"\n" in lit) and len(lit) < 8192:
            put("config", lit)
for p in ["README.md", "docs/SHAPE.md"]:
    for m in re.finditer(r"```toml\n(.*?)```", read(p), re.S):
        put("config", m.group(1).encode())
for t in sorted(os.listdir(CORPUS)):
    print(t, len(os.listdir(os.path.join(CORPUS, t))))
