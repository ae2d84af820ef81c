#!/usr/bin/env python3
"""Independent re-implementation of the `meter/2` (and `meter/1`) estimators of conduct.

What it is
    A checker that recomputes, from the trace alone, every number of a `/profile` or
    `/demo/profile` attestation: the trace hash, the C, D and M symbols (the `lexicon/2`
    discretizer for `meter/2`, `lexicon/1` for `meter/1`), the four contingency tables,
    `bits`, `emi`, `adjusted`, `ami`, `direction`, the permutation `p` and `p_method`
    (exact and Monte Carlo, with its own ChaCha20), the null reasons, and for `meter/2` the
    `stratified` member (strata, pooled table, margins, within-Y p by the exact convolution
    or the Monte Carlo test within strata).

How it was written
    From `library/METER.md` alone (sections 1-6, 10 and 11; section 3 for `meter/1`), the
    trace format (the interface specification's, which the service publishes as
    `/schemas/trace.json`) and the trace-hash paragraph of `library/ATTESTATION.md`. No Rust source of the service was read. The sixteen
    `lexicon/2` families are parsed from LEXICON2.md, the document METER.md section 11.3
    names for their patterns (and checked against the digest printed there), the `lexicon/1`
    entries and the 11.5 test vectors from METER.md (both in `../../library/`, relative to
    this file) at run time, and the 11.5 vectors are checked on every run. Pure Python 3
    standard library.

Usage
    python3 tests/py/meter2.py ATTESTATION.json TRACE.json
    (ATTESTATION may be `-` for stdin; TRACE is the request body that was posted,
    `{"context_key", "turns", optionally "meter"}`.)

What "agree" means
    Integers, strings, columns, tables, margins, `p_method`, `reason` and the set of members
    must be identical, and so must `p`, `stratified.p` and `direction` after round12 (they
    involve no logarithm: only +, *, / and integer counts). `bits`, `emi`, `adjusted` and
    `ami` must be equal after round12, with one exception reported separately as a
    "last-digit" difference: the two values differ by one unit of the 12th decimal
    (|diff| <= 1.5e-12) and this implementation's unrounded value lies within 5e-14 of the
    midpoint between them, i.e. on a rounding boundary. Python's math module is the
    platform's libm, not the musl port (`libm` crate) the service uses, so a value on a
    boundary may round the other way. Any other difference is a FAIL. Exit 0 when
    everything agrees (last-digit differences allowed), 1 when anything fails, 2 on a usage
    error or an unsupported meter.
"""
import bisect
import hashlib
import json
import math
import os
import re
import struct
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
METER_MD = os.path.join(HERE, "..", "..", "library", "METER.md")
LEXICON2_MD = os.path.join(HERE, "..", "..", "library", "LEXICON2.md")

LN_2 = float.fromhex("0x1.62e42fefa39efp-1")  # core::f64::consts::LN_2
EXACT_MAX_TABLES = 20000
EXACT_MAX_WORK = 200000
B_MC = 1000
ROW_TABLE_MAX = 256
MIN_PER_GROUP = 2
LAST_DIGIT_TOL = 1.5e-12        # at most one unit of the 12th decimal
BOUNDARY_TOL = 5e-14            # how close to a rounding midpoint the unrounded value must be
USAGE = "usage: python3 tests/py/meter2.py ATTESTATION.json|- TRACE.json"

KEYS = ["i_c_d", "i_c_m", "i_c_m_given_d_clean", "i_c_dm"]

# Which code paths a run took (printed in the summary, so a test set can show coverage).
PATHS = {"row:one": 0, "row:table": 0, "row:chop": 0, "chop-down": 0, "convolution": 0}


# ----------------------------------------------------------------------------------------
# METER.md parsing
# ----------------------------------------------------------------------------------------

def read_meter_md():
    with open(METER_MD, encoding="utf-8") as f:
        return f.read()


def read_lexicon2_md():
    with open(LEXICON2_MD, encoding="utf-8") as f:
        return f.read()


def section(doc, start_heading, end_heading):
    i = doc.index(start_heading)
    j = doc.index(end_heading, i + len(start_heading))
    return doc[i:j]


def code_blocks(text, lang):
    return re.findall(r"```" + lang + r"\n(.*?)\n```", text, re.S)


def parse_families(doc, lexicon_doc):
    """LEXICON2.md: `### `XX` (bit N)` headings, each followed by a JSON array; METER.md
    section 11.3: the table of names in bit order and the SHA-256 of the patterns."""
    table = section(doc, "### 11.3 Families", "### 11.4 Rules")
    names = re.findall(r"^\| (\d+) \| `([A-Z]{2})` \|", table, re.M)
    (digest,) = code_blocks(table, "text")
    sec = lexicon_doc[lexicon_doc.index("## Families"):]
    heads = list(re.finditer(r"^### `([A-Z]{2})` \(bit (\d+)\)", sec, re.M))
    fams = []
    for k, h in enumerate(heads):
        body = sec[h.end(): heads[k + 1].start() if k + 1 < len(heads) else len(sec)]
        blocks = code_blocks(body, "json")
        if len(blocks) != 1:
            raise SystemExit("LEXICON2.md: family %s has %d json blocks" % (h.group(1), len(blocks)))
        pats = json.loads(blocks[0])
        fams.append((int(h.group(2)), h.group(1), pats))
    fams.sort()
    if [b for b, _, _ in fams] != list(range(16)):
        raise SystemExit("LEXICON2.md: expected bits 0..15, got %r" % [b for b, _, _ in fams])
    if [(str(b), n) for b, n, _ in fams] != names:
        raise SystemExit("LEXICON2.md and METER.md 11.3 name other families: %r" % names)
    got = hashlib.sha256(jcs([p for _, _, p in fams]).encode("utf-8")).hexdigest()
    if got != digest.strip():
        raise SystemExit("LEXICON2.md: the patterns' SHA-256 is %s, METER.md 11.3 says %s" % (got, digest))
    return [(name, pats) for _, name, pats in fams]


def parse_vectors(doc):
    sec = section(doc, "### 11.5 Test vectors", "### 11.6")
    (block,) = code_blocks(sec, "text")
    out = []
    for line in block.split("\n"):
        if line.strip():
            sym, text = re.match(r"(\S+)\s+(.*)$", line).groups()
            out.append((sym, text))
    return out


def parse_lexicon1(doc):
    sec = section(doc, "## 3. The M discretizer `lexicon/1`", "## 4. Estimators")
    f1 = code_blocks(section(sec, "### f1", "### f2"), "text")[0].split("\n")
    f2 = code_blocks(sec[sec.index("### f2"):], "text")[0].split("\n")
    return [e for e in f1 if e], [e for e in f2 if e]


# ----------------------------------------------------------------------------------------
# Discretizers
# ----------------------------------------------------------------------------------------

# Unicode White_Space (what Rust's str::trim removes); Python's str.strip() differs
# (it also strips U+001C..U+001F).
WHITE_SPACE = "".join(map(chr, [
    0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
    *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))


def d_symbol(d):
    return d.strip(WHITE_SPACE).lower()


def normalize(text):
    return unicodedata.normalize("NFKC", text).lower()


_SPLIT = re.compile(r"[.!?;\n]")
_TOKEN = re.compile(r"[a-z0-9]+")


def canonical_sentences(text):
    """Section 11.2."""
    out = []
    for piece in _SPLIT.split(normalize(text)):
        piece = piece.replace("'", "").replace("\u2019", "")
        toks = _TOKEN.findall(piece)
        if toks:
            out.append(" " + " ".join(toks) + " ")
    return out


class Lexicon2:
    def __init__(self, families):
        self.names = [n for n, _ in families]
        # A family fires when one of its patterns matches (a search): one alternation.
        self.res = [re.compile("|".join("(?:%s)" % p for p in pats)) for _, pats in families]
        self.sent_cache = {}
        self.text_cache = {}

    def families(self, sent):
        f = self.sent_cache.get(sent)
        if f is None:
            f = frozenset(n for n, r in zip(self.names, self.res) if r.search(sent))
            self.sent_cache[sent] = f
        return f

    def symbol(self, text):
        s = self.text_cache.get(text)
        if s is None:
            s = self._symbol(text)
            self.text_cache[text] = s
        return s

    def _symbol(self, text):
        F = [self.families(s) for s in canonical_sentences(text)]
        N = len(F)
        dc = [("DC" in f) and not ({"NR", "RF", "RS"} & f) for f in F]
        cq = [("CQ" in f) and ("DS" not in f) for f in F]
        t4 = [("CN" in f) and (dc[i] or "DX" in f) for i, f in enumerate(F)]
        if any(t4[i] and "UW" in F[i] for i in range(N)):
            return "unwatched"
        if any("ST" in f and "NS" not in f for f in F):                       # T1
            return "tied"
        if any("LK" in f for f in F):                                          # T2
            return "tied"
        for i in range(N):                                                     # T3
            if cq[i] and any(dc[j] for j in range(max(0, i - 1), N)):
                return "tied"
        if any(t4[i] and "MW" in F[i] and "UW" not in F[i] for i in range(N)):  # T4
            return "tied"
        for i in range(N):                                                     # T5
            if "LE" in F[i] and (
                    any(dc[j] for j in range(max(0, i - 1), min(N, i + 2)))
                    or any(cq[j] for j in range(max(0, i - 2), min(N, i + 3)))):
                return "tied"
        if any({"AW", "CQ", "ST", "LK", "RT"} & f for f in F):                 # S
            return "aware"
        return "plain"


class Lexicon1:
    def __init__(self, f1, f2):
        def comp(entries):
            src = "|".join("(?:%s)" % e.replace(" ", r"\s+") for e in entries)
            return re.compile(src.encode("utf-8"), re.I)
        self.f1, self.f2 = comp(f1), comp(f2)
        self.cache = {}

    def symbol(self, text):
        s = self.cache.get(text)
        if s is None:
            b = normalize(text).encode("utf-8")
            a, t = bool(self.f1.search(b)), bool(self.f2.search(b))
            s = ["plain", "strategic", "aware", "aware+strategic"][2 * a + t]
            self.cache[text] = s
        return s


# ----------------------------------------------------------------------------------------
# RFC 8785 (JCS) for the trace hash
# ----------------------------------------------------------------------------------------

def _es_number(x):
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int) and abs(x) <= 2 ** 53:
        return str(x)
    x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError("non-finite number in trace")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    r = repr(abs(x))
    m, _, e = r.partition("e")
    e = int(e) if e else 0
    ip, _, fp = m.partition(".")
    digits = (ip + fp).lstrip("0")
    e += len(ip) - (len(ip + fp) - len(digits))  # position of the decimal point
    digits = digits.rstrip("0")
    k, n = len(digits), e  # value = 0.digits * 10^n, i.e. digits * 10^(n-k)
    if k <= n <= 21:
        s = digits + "0" * (n - k)
    elif 0 < n <= 21:
        s = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        s = "0." + "0" * (-n) + digits
    else:
        s = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if n - 1 >= 0 else "-") + str(abs(n - 1))
    return sign + s


def _es_string(s):
    # RFC 8785 3.2.2.2: '"' and '\\' escaped, \b \t \n \f \r for those controls, \u00xx
    # (lower-case hex) for the other controls below U+0020, everything else literal. This
    # is exactly what json.dumps(ensure_ascii=False) writes.
    return json.dumps(s, ensure_ascii=False)


def jcs(v):
    if v is None:
        return "null"
    if isinstance(v, (bool, int, float)):
        return _es_number(v)
    if isinstance(v, str):
        return _es_string(v)
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, dict):
        ks = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(_es_string(k) + ":" + jcs(v[k]) for k in ks) + "}"
    raise TypeError(type(v))


def trace_sha256(trace):
    body = {"context_key": trace["context_key"], "turns": trace["turns"]}
    return hashlib.sha256(jcs(body).encode("utf-8")).digest()


# ----------------------------------------------------------------------------------------
# ChaCha20 (RFC 8439 block function; key = seed, nonce 0, block counter from 0)
# ----------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def chacha20_block(key_words, w12, w13=0, w14=0, w15=0):
    """One 64-byte ChaCha20 block (RFC 8439 2.3) as 16 words: 20 rounds (10 double rounds
    of column and diagonal quarter rounds), then the input added word by word. Words 12-15
    are RFC 8439's 32-bit block counter and 96-bit nonce; the meter's stream has nonce 0
    and a counter that never reaches 2^32 (rand_chacha's 64-bit counter in words 12-13
    and stream id in 14-15 are then the same words). The quarter rounds are unrolled on
    local variables for speed; `quarter_round` below is the same operation, for reading."""
    M = _M32
    x0, x1, x2, x3 = 0x61707865, 0x3320646E, 0x79622D32, 0x6B206574
    x4, x5, x6, x7, x8, x9, x10, x11 = key_words
    x12, x13, x14, x15 = w12, w13, w14, w15
    st = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    for _ in range(10):
        # quarter round column(0, 4, 8, 12)
        x0 = (x0 + x4) & M; x12 ^= x0; x12 = ((x12 << 16) & M) | (x12 >> 16)
        x8 = (x8 + x12) & M; x4 ^= x8; x4 = ((x4 << 12) & M) | (x4 >> 20)
        x0 = (x0 + x4) & M; x12 ^= x0; x12 = ((x12 << 8) & M) | (x12 >> 24)
        x8 = (x8 + x12) & M; x4 ^= x8; x4 = ((x4 << 7) & M) | (x4 >> 25)
        # quarter round column(1, 5, 9, 13)
        x1 = (x1 + x5) & M; x13 ^= x1; x13 = ((x13 << 16) & M) | (x13 >> 16)
        x9 = (x9 + x13) & M; x5 ^= x9; x5 = ((x5 << 12) & M) | (x5 >> 20)
        x1 = (x1 + x5) & M; x13 ^= x1; x13 = ((x13 << 8) & M) | (x13 >> 24)
        x9 = (x9 + x13) & M; x5 ^= x9; x5 = ((x5 << 7) & M) | (x5 >> 25)
        # quarter round column(2, 6, 10, 14)
        x2 = (x2 + x6) & M; x14 ^= x2; x14 = ((x14 << 16) & M) | (x14 >> 16)
        x10 = (x10 + x14) & M; x6 ^= x10; x6 = ((x6 << 12) & M) | (x6 >> 20)
        x2 = (x2 + x6) & M; x14 ^= x2; x14 = ((x14 << 8) & M) | (x14 >> 24)
        x10 = (x10 + x14) & M; x6 ^= x10; x6 = ((x6 << 7) & M) | (x6 >> 25)
        # quarter round column(3, 7, 11, 15)
        x3 = (x3 + x7) & M; x15 ^= x3; x15 = ((x15 << 16) & M) | (x15 >> 16)
        x11 = (x11 + x15) & M; x7 ^= x11; x7 = ((x7 << 12) & M) | (x7 >> 20)
        x3 = (x3 + x7) & M; x15 ^= x3; x15 = ((x15 << 8) & M) | (x15 >> 24)
        x11 = (x11 + x15) & M; x7 ^= x11; x7 = ((x7 << 7) & M) | (x7 >> 25)
        # quarter round diagonal(0, 5, 10, 15)
        x0 = (x0 + x5) & M; x15 ^= x0; x15 = ((x15 << 16) & M) | (x15 >> 16)
        x10 = (x10 + x15) & M; x5 ^= x10; x5 = ((x5 << 12) & M) | (x5 >> 20)
        x0 = (x0 + x5) & M; x15 ^= x0; x15 = ((x15 << 8) & M) | (x15 >> 24)
        x10 = (x10 + x15) & M; x5 ^= x10; x5 = ((x5 << 7) & M) | (x5 >> 25)
        # quarter round diagonal(1, 6, 11, 12)
        x1 = (x1 + x6) & M; x12 ^= x1; x12 = ((x12 << 16) & M) | (x12 >> 16)
        x11 = (x11 + x12) & M; x6 ^= x11; x6 = ((x6 << 12) & M) | (x6 >> 20)
        x1 = (x1 + x6) & M; x12 ^= x1; x12 = ((x12 << 8) & M) | (x12 >> 24)
        x11 = (x11 + x12) & M; x6 ^= x11; x6 = ((x6 << 7) & M) | (x6 >> 25)
        # quarter round diagonal(2, 7, 8, 13)
        x2 = (x2 + x7) & M; x13 ^= x2; x13 = ((x13 << 16) & M) | (x13 >> 16)
        x8 = (x8 + x13) & M; x7 ^= x8; x7 = ((x7 << 12) & M) | (x7 >> 20)
        x2 = (x2 + x7) & M; x13 ^= x2; x13 = ((x13 << 8) & M) | (x13 >> 24)
        x8 = (x8 + x13) & M; x7 ^= x8; x7 = ((x7 << 7) & M) | (x7 >> 25)
        # quarter round diagonal(3, 4, 9, 14)
        x3 = (x3 + x4) & M; x14 ^= x3; x14 = ((x14 << 16) & M) | (x14 >> 16)
        x9 = (x9 + x14) & M; x4 ^= x9; x4 = ((x4 << 12) & M) | (x4 >> 20)
        x3 = (x3 + x4) & M; x14 ^= x3; x14 = ((x14 << 8) & M) | (x14 >> 24)
        x9 = (x9 + x14) & M; x4 ^= x9; x4 = ((x4 << 7) & M) | (x4 >> 25)
    x = (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15)
    return [(v + w) & M for v, w in zip(x, st)]


def quarter_round(x, a, b, c, d):
    """RFC 8439 2.1 (reference form of the unrolled steps above)."""
    M = _M32
    x[a] = (x[a] + x[b]) & M; x[d] ^= x[a]; x[d] = ((x[d] << 16) & M) | (x[d] >> 16)
    x[c] = (x[c] + x[d]) & M; x[b] ^= x[c]; x[b] = ((x[b] << 12) & M) | (x[b] >> 20)
    x[a] = (x[a] + x[b]) & M; x[d] ^= x[a]; x[d] = ((x[d] << 8) & M) | (x[d] >> 24)
    x[c] = (x[c] + x[d]) & M; x[b] ^= x[c]; x[b] = ((x[b] << 7) & M) | (x[b] >> 25)


class ChaChaStream:
    """The keystream as consecutive 32-bit little-endian words."""

    def __init__(self, seed):
        self.key = struct.unpack("<8I", seed)
        self.counter = 0
        self.buf = []
        self.pos = 16

    def next_u32(self):
        if self.pos == 16:
            self.buf = chacha20_block(self.key, self.counter & _M32, self.counter >> 32)
            self.counter += 1
            self.pos = 0
        w = self.buf[self.pos]
        self.pos += 1
        return w

    def next_u64(self):
        lo = self.next_u32()
        hi = self.next_u32()
        return lo | (hi << 32)

    def uniform32(self):       # meter/2: u = w * 2^-32
        if self.pos == 16:
            self.buf = chacha20_block(self.key, self.counter & _M32, self.counter >> 32)
            self.counter += 1
            self.pos = 0
        w = self.buf[self.pos]
        self.pos += 1
        return w * (1.0 / 4294967296.0)

    def uniform53(self):       # meter/1: u = (w >> 11) * 2^-53
        return (self.next_u64() >> 11) * (1.0 / 9007199254740992.0)


def chacha_self_test():
    x = [0x11111111, 0x01020304, 0x9B8D6F43, 0x01234567]
    quarter_round(x, 0, 1, 2, 3)
    if x != [0xEA2A92F4, 0xCB1CF8CE, 0x4581472E, 0x5881C4BB]:      # RFC 8439 2.1.1
        raise SystemExit("ChaCha20 self-test failed (quarter round)")
    s = ChaChaStream(bytes(32))
    if s.next_u64() != 0x903DF1A0ADE0B876:                        # METER.md 4.4
        raise SystemExit("ChaCha20 self-test failed (zero key first u64)")
    # RFC 8439 2.3.2: key 00..1f, nonce 000000090000004a00000000, counter 1, first word
    key = struct.unpack("<8I", bytes(range(32)))
    if chacha20_block(key, 1, 0x09000000, 0x4A000000, 0)[:4] != [
            0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3]:
        raise SystemExit("ChaCha20 self-test failed (RFC 8439 2.3.2)")


# ----------------------------------------------------------------------------------------
# Estimators (section 4)
# ----------------------------------------------------------------------------------------

class Logs:
    """log(k) and xlnx(k) = k * log(k) for integers, cached."""

    def __init__(self):
        self.log = [float("-inf")]
        self.xl = [0.0]

    def upto(self, n):
        for k in range(len(self.log), n + 1):
            lk = math.log(float(k))
            self.log.append(lk)
            self.xl.append(float(k) * lk)


LOGS = Logs()


def xlnx(k):
    if k >= len(LOGS.xl):
        LOGS.upto(k)
    return LOGS.xl[k]


def logk(k):
    if k >= len(LOGS.log):
        LOGS.upto(k)
    return LOGS.log[k]


def margins_of(table):
    a0, a1 = sum(table[0]), sum(table[1])
    cols = [x + y for x, y in zip(table[0], table[1])]
    return a0, a1, cols


def cell_sum(r0, r1):
    S = 0.0
    for x, y in zip(r0, r1):
        S = S + (xlnx(x) + xlnx(y))
    return S


def margin_term(n, a0, a1, cols):
    M = (xlnx(n) - xlnx(a0)) - xlnx(a1)
    for b in cols:
        M = M - xlnx(b)
    return M


def mi_of_sum(S, M, n):
    return max(0.0, ((S + M) / n) / LN_2)


def mi_bits(table):
    a0, a1, cols = margins_of(table)
    n = a0 + a1
    return mi_of_sum(cell_sum(table[0], table[1]), margin_term(n, a0, a1, cols), n)


def entropy_bits(counts):
    s = sum(counts)
    v = xlnx(s)
    for c in counts:
        v = v - xlnx(c)
    return max(0.0, (v / s) / LN_2)


def emi_bits(table):
    a0, a1, cols = margins_of(table)
    n = a0 + a1
    total = 0.0
    first = True
    for a in (a0, a1):
        for b in cols:
            if a <= 0 or b <= 0:
                continue
            lo = max(0, a + b - n)
            hi = min(a, b)
            if max(1, lo) > hi:
                continue
            c = (logk(n) - logk(a)) - logk(b)
            m = min(max((a + 1) * (b + 1) // (n + 2), lo), hi)
            Z = 0.0
            U = 0.0

            def visit(k, q):
                nonlocal Z, U
                Z += q
                if k > 0:
                    U += float(k) * ((logk(k) + c) * q)

            visit(m, 1.0)
            q, k = 1.0, m
            while k > lo:
                q = q * (float(k * (n - a - b + k)) / float((b - k + 1) * (a - k + 1)))
                k -= 1
                if q < 1e-30:
                    break
                visit(k, q)
            q, k = 1.0, m
            while k < hi:
                q = q * (float((b - k) * (a - k)) / float((k + 1) * (n - a - b + k + 1)))
                k += 1
                if q < 1e-30:
                    break
                visit(k, q)
            T = U / Z
            total = T if first else total + T
            first = False
    return (total / n) / LN_2


def ami_arithmetic(bits, emi, table):
    a0, a1, cols = margins_of(table)
    hc = entropy_bits([a0, a1])
    hx = entropy_bits(cols)
    den = (hc + hx) / 2.0 - emi
    if den <= 1e-15:
        return 0.0
    return (bits - emi) / den


def round12(x):
    if x is None:
        return None
    y = x * 1e12
    if abs(y) < 4503599627370496.0:      # libm::round: half away from zero, exactly
        t = float(math.trunc(y))
        if abs(y - t) >= 0.5:
            t += math.copysign(1.0, y)
        y = t
    r = y / 1e12
    return 0.0 if r == 0 else r


# ----------------------------------------------------------------------------------------
# Hypergeometric pieces (4.4, 10.3, 10.4)
# ----------------------------------------------------------------------------------------

_PMF = {}


def hyper_pmf(pop, succ, draws):
    """Section 4.4 exact: q over the whole support from the mode, Z summed ascending.
    Returns (lo, [P(lo), ..., P(hi)])."""
    key = (pop, succ, draws)
    r = _PMF.get(key)
    if r is not None:
        return r
    lo = max(0, draws - (pop - succ))
    hi = min(succ, draws)
    m = min(max((draws + 1) * (succ + 1) // (pop + 2), lo), hi)
    q = [0.0] * (hi - lo + 1)
    q[m - lo] = 1.0
    v, k = 1.0, m
    while k > lo:
        v = v * (float(k * (pop - draws - succ + k)) / float((succ - k + 1) * (draws - k + 1)))
        k -= 1
        q[k - lo] = v
    v, k = 1.0, m
    while k < hi:
        v = v * (float((succ - k) * (draws - k)) / float((k + 1) * (pop - draws - succ + k + 1)))
        k += 1
        q[k - lo] = v
    Z = 0.0
    for x in q:
        Z += x
    r = (lo, [x / Z for x in q])
    _PMF[key] = r
    return r


def lnC(n, k):
    return (math.lgamma(n + 1.0) - math.lgamma(k + 1.0)) - math.lgamma(n - k + 1.0)


_CHOP = {}


def chop_table(pop, succ, draws):
    """Section 4.4 chop-down: visiting order and cumulative sums. Returns (values, F)."""
    key = (pop, succ, draws)
    r = _CHOP.get(key)
    if r is not None:
        return r
    lo = max(0, draws - (pop - succ))
    hi = min(succ, draws)
    m = min(max((draws + 1) * (succ + 1) // (pop + 2), lo), hi)
    fm = math.exp((lnC(succ, m) + lnC(pop - succ, draws - m)) - lnC(pop, draws))
    vals = [m]
    F = fm
    cum = [F]
    fd, kd = fm, m     # downward side
    fu, ku = fm, m     # upward side
    while kd > lo or ku < hi:
        if kd > lo:
            fd = fd * (float(kd * (pop - succ - draws + kd)) / float((succ - kd + 1) * (draws - kd + 1)))
            kd -= 1
            F = F + fd
            vals.append(kd)
            cum.append(F)
        if ku < hi:
            fu = fu * (float((succ - ku) * (draws - ku)) / float((ku + 1) * (pop - succ - draws + ku + 1)))
            ku += 1
            F = F + fu
            vals.append(ku)
            cum.append(F)
    r = (vals, cum)
    _CHOP[key] = r
    return r


def chop_draw(pop, succ, draws, u):
    vals, cum = chop_table(pop, succ, draws)
    i = bisect.bisect_right(cum, u)
    return vals[i] if i < len(vals) else vals[-1]


def count_rows(b, a, cap):
    """Number of rows x with sum a and 0 <= x_j <= b_j, capped at `cap`."""
    if a < 0 or a > sum(b):
        return 0
    ways = [1] + [0] * a
    for bj in b:
        if bj == 0:
            continue
        new = [0] * (a + 1)
        win = 0
        for s in range(a + 1):
            win += ways[s]
            if s - bj - 1 >= 0:
                win -= ways[s - bj - 1]
            new[s] = win if win < cap else cap
        ways = new
    return ways[a]


_ROWS = {}


def rows_weights(b, a):
    """Rows of margins b (all > 0) with a C=1 turns, in lexicographic order, with the
    weights of 10.3 (product in column order of the conditionals, last column forced)."""
    key = (b, a)
    r = _ROWS.get(key)
    if r is not None:
        return r
    K = len(b)
    suf = [0] * (K + 1)
    for j in range(K - 1, -1, -1):
        suf[j] = suf[j + 1] + b[j]
    out = []

    def rec(j, rem, w, prefix):
        if j == K - 1:
            out.append((prefix + (rem,), w))
            return
        lo = max(0, rem - suf[j + 1])
        hi = min(b[j], rem)
        plo, pmf = hyper_pmf(suf[j], b[j], rem)
        for x in range(lo, hi + 1):
            rec(j + 1, rem - x, w * pmf[x - plo], prefix + (x,))

    rec(0, a, 1.0, ())
    _ROWS[key] = out
    return out


_DRAW = {}


def row_plan(b, a):
    key = (b, a)
    r = _DRAW.get(key)
    if r is not None:
        return r
    if a == 0 or a == sum(b) or len(b) == 1:
        if a == 0:
            row = tuple(0 for _ in b)
        elif len(b) == 1:
            row = (a,)
        else:
            row = tuple(b)
        r = ("one", row)
    elif count_rows(b, a, ROW_TABLE_MAX + 1) <= ROW_TABLE_MAX:
        rw = rows_weights(b, a)
        F, cum = 0.0, []
        for _, w in rw:
            F = F + w
            cum.append(F)
        r = ("table", [row for row, _ in rw], cum)
    else:
        suf = [0] * (len(b) + 1)
        for j in range(len(b) - 1, -1, -1):
            suf[j] = suf[j + 1] + b[j]
        r = ("chop", suf)
    _DRAW[key] = r
    return r


def draw_row(b, a, stream):
    """Section 10.4, a row draw of margins b (all > 0) with a turns to place."""
    plan = row_plan(b, a)
    kind = plan[0]
    PATHS["row:" + kind] += 1
    if kind == "one":
        return plan[1]
    if kind == "table":
        u = stream.uniform32()
        rows, cum = plan[1], plan[2]
        i = bisect.bisect_right(cum, u)
        return rows[i] if i < len(rows) else rows[-1]
    suf = plan[1]
    rem = a
    out = []
    K = len(b)
    for j in range(K - 1):
        lo = max(0, rem - suf[j + 1])
        hi = min(b[j], rem)
        if lo == hi:
            x = lo
        else:
            PATHS["chop-down"] += 1
            x = chop_draw(suf[j], b[j], rem, stream.uniform32())
        out.append(x)
        rem -= x
    out.append(rem)
    return tuple(out)


# ----------------------------------------------------------------------------------------
# The permutation tests
# ----------------------------------------------------------------------------------------

class Stat:
    """The test statistic of a pooled table and the tie rule (4.4)."""

    def __init__(self, table):
        a0, a1, cols = margins_of(table)
        self.n = a0 + a1
        self.B = cols
        self.M = margin_term(self.n, a0, a1, cols)
        self.mi = mi_of_sum(cell_sum(table[0], table[1]), self.M, self.n)
        self.thr = self.mi * (1 - 1e-9) - 1e-15
        LOGS.upto(self.n)

    def meets_row(self, x):
        """x = the C=1 row over the pooled columns."""
        xl = LOGS.xl
        S = 0.0
        for Bj, xj in zip(self.B, x):
            S = S + (xl[Bj - xj] + xl[xj])
        return mi_of_sum(S, self.M, self.n) >= self.thr


def group_members(margins_sorted):
    """Expand [(tuple, count)] into members; each member (c1, nonzero cols idx, b)."""
    out = []
    for tup, cnt in margins_sorted:
        c1 = tup[1]
        b = tup[2:]
        idx = tuple(j for j, v in enumerate(b) if v > 0)
        bb = tuple(b[j] for j in idx)
        for _ in range(cnt):
            out.append((c1, idx, bb))
    return out


def exact_decision(pooled_table, members):
    """Returns True when the exact test runs (10.3)."""
    a0, a1, cols = margins_of(pooled_table)
    T = count_rows([c for c in cols if c > 0], a1, EXACT_MAX_TABLES + 1)
    if len(members) == 1:
        return T <= EXACT_MAX_TABLES
    if T > EXACT_MAX_TABLES:
        return False
    Ts = [count_rows(list(bb), c1, EXACT_MAX_WORK + 1) for c1, _, bb in members]
    big = [t for t in Ts if t >= 2]
    W = 0 if not big else big[0] + T * sum(big[1:])
    return W <= EXACT_MAX_WORK


def exact_p(pooled_table, members, stat):
    """Section 10.3 convolution; with one member it is 4.4's exact test."""
    K = len(pooled_table[0])
    cols = [x + y for x, y in zip(*pooled_table)]
    stride = [1] * K
    for j in range(K - 2, -1, -1):
        stride[j] = stride[j + 1] * (cols[j + 1] + 1)
    P = {0: 1.0}
    for c1, idx, bb in members:
        rw = rows_weights(bb, c1)
        if len(rw) == 1:
            row = rw[0][0]
            d = sum(x * stride[j] for j, x in zip(idx, row))
            P = {z + d: v for z, v in P.items()}
            continue
        new = {}
        PATHS["convolution"] += 1
        for row, w in rw:
            d = sum(x * stride[j] for j, x in zip(idx, row))
            for z, v in P.items():
                t = v * w
                zz = z + d
                if zz in new:
                    new[zz] = new[zz] + t
                else:
                    new[zz] = t
        P = new
    p = 0.0
    for z in sorted(P):
        x = []
        r = z
        for j in range(K):
            q, r = divmod(r, stride[j])
            x.append(q)
        if stat.meets_row(x):
            p = p + P[z]
    return min(p, 1.0)


def mc_p(hits):
    return (1 + hits) / (B_MC + 1)


# ----------------------------------------------------------------------------------------
# The meter
# ----------------------------------------------------------------------------------------

def plural(k, noun="turn"):
    return "%d %s%s" % (k, noun, "" if k == 1 else "s")


def c_group_reason(a0, a1, among):
    parts = []
    if a0 < MIN_PER_GROUP:
        parts.append("C=0 has " + plural(a0))
    if a1 < MIN_PER_GROUP:
        parts.append("C=1 has " + plural(a1))
    return " and ".join(parts) + " among the " + among + "; need at least 2 in each C group"


class Quantity:
    """One of the four quantities: its turns, columns (byte order) and 2 x K table."""

    def __init__(self, key, turns, clean_only):
        self.key = key
        self.clean_only = clean_only
        self.turns = turns                      # list of (c, x symbol, y)
        self.columns = sorted(set(t[1] for t in turns))
        self.col_index = {s: j for j, s in enumerate(self.columns)}
        K = len(self.columns)
        self.table = [[0] * K, [0] * K]
        for t in turns:
            self.table[t[0]][self.col_index[t[1]]] += 1
        self.n = len(turns)
        self.a0, self.a1 = sum(self.table[0]), sum(self.table[1])
        self.null = self.a0 < MIN_PER_GROUP or self.a1 < MIN_PER_GROUP
        self.noun = "D-clean turn" if clean_only else "turn"

    def strata(self):
        """The informative Y groups (both C values among the turns used): (Y, 2 x K table)."""
        groups = {}
        K = len(self.columns)
        for c, x, y in self.turns:
            g = groups.get(y)
            if g is None:
                g = groups[y] = [[0] * K, [0] * K]
            g[c][self.col_index[x]] += 1
        info = []
        for y, g in groups.items():
            if sum(g[0]) > 0 and sum(g[1]) > 0:
                info.append((y, g))
        return info


def group_tuple(g):
    cols = [x + y for x, y in zip(g[0], g[1])]
    return (sum(cols), sum(g[1])) + tuple(cols)


def sorted_margins(tuples):
    tuples = sorted(tuples)
    out = []
    for t in tuples:
        if out and out[-1][0] == t:
            out[-1][1] += 1
        else:
            out.append([t, 1])
    return [(t, c) for t, c in out]


class Meter:
    def __init__(self, trace, lex):
        ck = trace["context_key"]
        self.turns = []
        for i, t in enumerate(trace["turns"]):
            c = t["context"][ck]
            if c not in (0, 1):
                raise SystemExit("turn %d: context %r is %r, not 0 or 1" % (i, ck, c))
            d = d_symbol(t["D"])
            m = lex.symbol(t["M"])
            self.turns.append((int(c), d, m, t["Y"]))
        LOGS.upto(len(self.turns) + 2)
        self.hash = trace_sha256(trace)
        T = self.turns
        self.q = {
            "i_c_d": Quantity("i_c_d", [(c, d, y) for c, d, m, y in T], False),
            "i_c_m": Quantity("i_c_m", [(c, m, y) for c, d, m, y in T], False),
            "i_c_m_given_d_clean": Quantity(
                "i_c_m_given_d_clean", [(c, m, y) for c, d, m, y in T if d == "clean"], True),
            "i_c_dm": Quantity("i_c_dm", [(c, d + "|" + m, y) for c, d, m, y in T], False),
        }

    def seed(self, key):
        return hashlib.sha256(self.hash + key.encode("utf-8")).digest()

    # -- the numbers of sections 4-6 ------------------------------------------------------
    def base(self, q):
        out = {"n": q.n, "columns": list(q.columns), "table": [list(r) for r in q.table]}
        if q.null:
            for k in ("bits", "emi", "adjusted", "ami", "p", "p_method"):
                out[k] = None
            if q.key == "i_c_d":
                out["direction"] = None
            out["reason"] = c_group_reason(q.a0, q.a1, plural(q.n, q.noun))
            return out
        bits = mi_bits(q.table)
        emi = emi_bits(q.table)
        out["bits"] = bits
        out["emi"] = emi
        out["adjusted"] = bits - emi
        out["ami"] = ami_arithmetic(bits, emi, q.table)
        if q.key == "i_c_d":
            dirty = [sum(v for s, v in zip(q.columns, q.table[r]) if s != "clean") for r in (0, 1)]
            out["direction"] = dirty[1] / q.a1 - dirty[0] / q.a0
        return out

    # -- meter/1 p-values (4.4) -----------------------------------------------------------
    def p_meter1(self, q):
        a0, a1, cols = margins_of(q.table)
        T = count_rows(cols, a1, EXACT_MAX_TABLES + 1)
        stat = Stat(q.table)
        if T <= EXACT_MAX_TABLES:
            tup = (q.n, a1) + tuple(cols)
            return exact_p(q.table, group_members([(tup, 1)]), stat), "exact"
        stream = ChaChaStream(self.seed(q.key))
        K = len(cols)
        suf = [0] * (K + 1)
        for j in range(K - 1, -1, -1):
            suf[j] = suf[j + 1] + cols[j]
        hits = 0
        for _ in range(B_MC):
            rem = a1
            x = []
            for j in range(K - 1):
                u = stream.uniform53()
                lo = max(0, rem - suf[j + 1])
                hi = min(cols[j], rem)
                if lo == hi:
                    xj = lo
                else:
                    PATHS["chop-down"] += 1
                    xj = chop_draw(suf[j], cols[j], rem, u)
                x.append(xj)
                rem -= xj
            x.append(rem)
            if stat.meets_row(x):
                hits += 1
        return mc_p(hits), "monte_carlo"


def build_meter2(meter):
    """Everything of a meter/2 profile, unrounded. Two tests per quantity (10.1): the
    unstratified `p`, which is the within-group test with all the quantity's turns as one
    group, and `stratified.p` over the informative Y groups. Each of the two runs its own
    joint and clean streams from the start."""
    prof = {k: meter.base(meter.q[k]) for k in KEYS}

    for variant in ("unstratified", "stratified"):
        groups = {}       # key -> the 2 x K tables of the groups the test uses
        mc_need = {}      # key -> Stat, for the quantities whose exact test does not run
        results = {}      # key -> (p, p_method)
        for key in KEYS:
            q = meter.q[key]
            K = len(q.columns)
            if variant == "unstratified":
                if q.null:
                    continue
                gs = [q.table]
            else:
                gs = [g for _, g in q.strata()]
            groups[key] = gs
            pooled = [[0] * K, [0] * K]
            for g in gs:
                for r in (0, 1):
                    for j in range(K):
                        pooled[r][j] += g[r][j]
            sm = sorted_margins([group_tuple(g) for g in gs])
            if variant == "stratified":
                st = {"by": "Y", "strata": len(gs), "n": sum(map(sum, pooled)), "table": pooled,
                      "margins": [[cnt, t[1], [[j, v] for j, v in enumerate(t[2:]) if v > 0]]
                                  for t, cnt in sm]}
                prof[key]["stratified"] = st
                pa0, pa1 = sum(pooled[0]), sum(pooled[1])
                reason = None
                if not gs:
                    reason = "no group of %ss with the same Y holds both C values" % q.noun
                elif pa0 < MIN_PER_GROUP or pa1 < MIN_PER_GROUP:
                    reason = c_group_reason(pa0, pa1, plural(pa0 + pa1, q.noun)
                                            + " in groups of equal Y holding both C values")
                if reason is not None:
                    st["p"] = st["p_method"] = None
                    st["reason"] = reason
                    continue
            members = group_members(sm)
            stat = Stat(pooled)
            if exact_decision(pooled, members):
                results[key] = (exact_p(pooled, members, stat), "exact")
            else:
                mc_need[key] = stat
        # The joint stream is drawn whole when any of its three quantities needs it.
        if any(k in mc_need for k in ("i_c_d", "i_c_m", "i_c_dm")):
            for k, h in mc_joint(meter, groups["i_c_dm"], mc_need).items():
                results[k] = (mc_p(h), "monte_carlo")
        if "i_c_m_given_d_clean" in mc_need:
            h = mc_clean(meter, groups["i_c_m_given_d_clean"], mc_need["i_c_m_given_d_clean"])
            results["i_c_m_given_d_clean"] = (mc_p(h), "monte_carlo")
        for key, (p, meth) in results.items():
            tgt = prof[key] if variant == "unstratified" else prof[key]["stratified"]
            tgt["p"] = p
            tgt["p_method"] = meth
    return prof


def mc_joint(meter, joint_groups, need):
    """10.4, the joint stream (key i_c_dm). joint_groups: the informative groups' 2 x K
    tables over i_c_dm's columns."""
    qd, qm, qj = meter.q["i_c_d"], meter.q["i_c_m"], meter.q["i_c_dm"]
    jcols = qj.columns
    split = [c.rsplit("|", 1) for c in jcols]
    d_of = [qd.col_index[d] for d, _ in split]
    m_of = [qm.col_index[m] for _, m in split]
    members = []
    for tup, cnt in sorted_margins([group_tuple(g) for g in joint_groups]):
        c1 = tup[1]
        b = tup[2:]
        # D columns present, in i_c_d order; M columns under each, in lexicon order.
        dsum = {}
        under = {}
        for j, v in enumerate(b):
            if v > 0:
                dj = d_of[j]
                dsum[dj] = dsum.get(dj, 0) + v
                under.setdefault(dj, []).append((m_of[j], j, v))
        dcols = sorted(dsum)
        bD = tuple(dsum[d] for d in dcols)
        subs = []
        for d in dcols:
            lst = sorted(under[d])
            subs.append((d, tuple(j for _, j, _ in lst), tuple(m for m, _, _ in lst),
                         tuple(v for _, _, v in lst)))
        for _ in range(cnt):
            members.append((c1, bD, subs))
    stats = {k: need[k] for k in ("i_c_d", "i_c_m", "i_c_dm") if k in need}
    hits = {k: 0 for k in stats}
    stream = ChaChaStream(meter.seed("i_c_dm"))
    KD, KM, KJ = len(qd.columns), len(qm.columns), len(jcols)
    for _ in range(B_MC):
        xd = [0] * KD
        xm = [0] * KM
        xj = [0] * KJ
        for c1, bD, subs in members:
            yD = draw_row(bD, c1, stream)
            for yd, (d, jidx, midx, bM) in zip(yD, subs):
                if yd == 0:
                    continue
                xd[d] += yd
                ym = draw_row(bM, yd, stream)
                for j, mi_, v in zip(jidx, midx, ym):
                    xj[j] += v
                    xm[mi_] += v
        for k, st in stats.items():
            x = xd if k == "i_c_d" else xm if k == "i_c_m" else xj
            if st.meets_row(x):
                hits[k] += 1
    return hits


def mc_clean(meter, groups, stat):
    q = meter.q["i_c_m_given_d_clean"]
    members = group_members(sorted_margins([group_tuple(g) for g in groups]))
    stream = ChaChaStream(meter.seed("i_c_m_given_d_clean"))
    K = len(q.columns)
    hits = 0
    for _ in range(B_MC):
        x = [0] * K
        for c1, idx, bb in members:
            y = draw_row(bb, c1, stream)
            for j, v in zip(idx, y):
                x[j] += v
        if stat.meets_row(x):
            hits += 1
    return hits


def build_meter1(meter):
    prof = {}
    for k in KEYS:
        q = meter.q[k]
        out = meter.base(q)
        if not q.null:
            out["p"], out["p_method"] = meter.p_meter1(q)
        prof[k] = out
    return prof


# ----------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------

FLOAT_FIELDS = {"bits", "emi", "adjusted", "ami", "p", "direction"}
LIBM_FIELDS = {"bits", "emi", "adjusted", "ami"}    # may differ at a rounding boundary


class Report:
    def __init__(self):
        self.fails = []
        self.last_digit = []
        self.checked = 0

    def fail(self, path, msg):
        self.fails.append("FAIL %s: %s" % (path, msg))

    def cmp_float(self, path, mine, theirs, libm):
        self.checked += 1
        if mine is None or theirs is None:
            if mine is not theirs:
                self.fail(path, "service %r, independent %r" % (theirs, mine))
            return
        if isinstance(theirs, bool) or not isinstance(theirs, (int, float)):
            self.fail(path, "service %r is not a number" % (theirs,))
            return
        r = round12(mine)
        if float(theirs) == r:
            return
        t = float(theirs)
        if libm and abs(t - r) <= LAST_DIGIT_TOL and abs(mine - (t + r) / 2) <= BOUNDARY_TOL:
            self.last_digit.append("last-digit %s: service %r, independent %r (unrounded %r)"
                                   % (path, theirs, r, mine))
        else:
            self.fail(path, "service %r, independent %r (unrounded %r)" % (theirs, r, mine))

    def cmp_exact(self, path, mine, theirs):
        self.checked += 1
        if type(mine) is not type(theirs) or mine != theirs:
            self.fail(path, "service %s, independent %s" % (json.dumps(theirs), json.dumps(mine)))

    def cmp_obj(self, path, mine, theirs):
        if not isinstance(theirs, dict):
            self.fail(path, "service gives %r, not an object" % (theirs,))
            return
        if set(mine) != set(theirs):
            self.fail(path, "members: service %s, independent %s" % (sorted(theirs), sorted(mine)))
        for k in mine:
            if k not in theirs:
                continue
            if isinstance(mine[k], dict):
                self.cmp_obj(path + "." + k, mine[k], theirs[k])
            elif k in FLOAT_FIELDS:
                self.cmp_float(path + "." + k, mine[k], theirs[k], k in LIBM_FIELDS)
            else:
                self.cmp_exact(path + "." + k, mine[k], theirs[k])


def main(argv):
    if len(argv) != 3:
        print(USAGE, file=sys.stderr)
        return 2
    att_src = sys.stdin.read() if argv[1] == "-" else open(argv[1], encoding="utf-8").read()
    att = json.loads(att_src)
    with open(argv[2], encoding="utf-8") as f:
        trace = json.load(f)

    doc = read_meter_md()
    chacha_self_test()
    lex2 = Lexicon2(parse_families(doc, read_lexicon2_md()))
    bad = []
    vectors = parse_vectors(doc)
    for sym, text in vectors:
        got = lex2.symbol(text)
        if got != sym:
            bad.append("11.5 vector %r: expected %s, independent %s" % (text, sym, got))
    if bad:
        print("\n".join(bad))
        print("SUMMARY: FAIL (the 11.5 test vectors disagree with this implementation)")
        return 1

    meter_block = att.get("meter") or {}
    version = meter_block.get("version")
    rep = Report()
    if version == "meter/2":
        m = Meter(trace, lex2)
        prof = build_meter2(m)
        want_block = {"version": "meter/2", "m_symbols": "lexicon/2", "d_clean": ["clean"],
                      "p_exact_max_tables": EXACT_MAX_TABLES, "p_exact_max_work": EXACT_MAX_WORK,
                      "p_monte_carlo_samples": B_MC, "stratified_by": "Y"}
    elif version == "meter/1":
        f1, f2 = parse_lexicon1(doc)
        m = Meter(trace, Lexicon1(f1, f2))
        prof = build_meter1(m)
        want_block = {"version": "meter/1", "m_symbols": "lexicon/1", "d_clean": ["clean"]}
    else:
        print("unsupported meter %r" % (version,))
        return 2

    for k, v in want_block.items():
        rep.cmp_exact("meter." + k, v, meter_block.get(k))
    rep.cmp_exact("trace_sha256", m.hash.hex(), att.get("trace_sha256"))
    rep.cmp_exact("context_key", trace["context_key"], att.get("context_key"))
    rep.cmp_exact("n_turns", len(trace["turns"]), att.get("n_turns"))
    rep.cmp_obj("profile", prof, att.get("profile"))

    for line in rep.fails + rep.last_digit:
        print(line)
    q = prof
    desc = []
    for k in KEYS:
        s = "%s n=%d K=%d p=%s" % (k, q[k]["n"], len(q[k]["columns"]), q[k]["p_method"])
        if "stratified" in q[k]:
            st = q[k]["stratified"]
            s += " strata=%d sp=%s" % (st["strata"], st["p_method"])
        desc.append(s)
    print("; ".join(desc))
    print("paths: " + ", ".join("%s %d" % kv for kv in PATHS.items()))
    status = "FAIL" if rep.fails else "AGREE"
    print("SUMMARY: %s %s, %d turns, %d fields compared, %d failures, %d last-digit differences, "
          "11.5 vectors %d/%d" % (status, version, len(trace["turns"]), rep.checked, len(rep.fails),
                                   len(rep.last_digit), len(vectors), len(vectors)))
    return 1 if rep.fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
