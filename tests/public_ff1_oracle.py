#!/usr/bin/env python3
"""An independent FF1 (NIST SP 800-38G, Algorithm 7, radix 2) on AES-256
from the `cryptography` package, written from the standard's pseudo-code,
and the public IDs' forms built on it as docs/DESIGN.md describes them
(tweak [form, kind, bits, key version] + prefix for text forms).

Used by public_oracle_test.sh: `idgen public` must give what this gives,
for Snowflake (several layouts), ULID and UUIDv7, integer and text forms,
with and without a prefix, and back.

  public_ff1_oracle.py KEYFILE  reads "kind bits prefix form id" lines on
  stdin and prints the public form of each (kind: snowflake, ulid, uuid7;
  prefix '-' for none; id decimal, ULID or UUID text).
"""
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
CROCKFORD_UP = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
KINDS = {"snowflake": 1, "ulid": 2, "uuid7": 3}


def aes(key, block):
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return enc.update(block) + enc.finalize()


def prf(key, x):
    """CBC-MAC with a zero IV: the last block."""
    y = bytes(16)
    for j in range(0, len(x), 16):
        y = aes(key, bytes(a ^ b for a, b in zip(y, x[j:j + 16])))
    return y


def ff1_encrypt(key, tweak, n, x):
    """FF1.Encrypt(K, T, X) with radix 2 over the n-bit integer x (X's first
    numeral the most significant bit)."""
    radix = 2
    u = n // 2
    v = n - u
    a, b_ = x >> v, x & ((1 << v) - 1)  # NUM_2(A), NUM_2(B)
    blen = -(-v // 8)  # ceil(ceil(v * log2(radix)) / 8)
    d = 4 * (-(-blen // 4)) + 4
    t = len(tweak)
    p = bytes([1, 2, 1]) + radix.to_bytes(3, "big") + bytes([10, u % 256]) + \
        n.to_bytes(4, "big") + t.to_bytes(4, "big")
    for i in range(10):
        q = tweak + bytes((-t - blen - 1) % 16) + bytes([i]) + b_.to_bytes(blen, "big")
        r = prf(key, p + q)
        s = r
        j = 1
        while len(s) < d:
            s += aes(key, bytes(a ^ b for a, b in zip(r, j.to_bytes(16, "big"))))
            j += 1
        y = int.from_bytes(s[:d], "big")
        m = u if i % 2 == 0 else v
        c = (a + y) % (radix ** m)
        a, b_ = b_, c
    # After 10 rounds A has u digits and B v digits (10 is even).
    return a << v | b_


def crockford(x, nchars):
    return "".join(CROCKFORD[(x >> (5 * (nchars - 1 - k))) & 31] for k in range(nchars))


def load_keys(path):
    keys = {}
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            ver, hexkey = line.split()
            keys[int(ver[1:])] = bytes.fromhex(hexkey)
    return keys


def parse_128(kind, text):
    if kind == "ulid":
        x = 0
        for ch in text.upper():
            x = x << 5 | CROCKFORD_UP.index(ch)
        return x
    return int(text.replace("-", ""), 16)


def uuid_bits(u):
    return (u >> 80) << 74 | ((u >> 64) & 0xfff) << 62 | (u & ((1 << 62) - 1))


def uuid_from_bits(x, version):
    return (x >> 74) << 80 | version << 76 | ((x >> 62) & 0xfff) << 64 | 2 << 62 | \
        (x & ((1 << 62) - 1))


def uuid_text(u):
    h = "%032x" % u
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def public(keys, kind, bits, prefix, form, idtext):
    ver = max(keys)
    key = keys[ver]
    k = KINDS[kind]
    if kind != "snowflake":
        bits = 128 if kind == "ulid" else 122
    pre = b"" if prefix == "-" else prefix.encode()
    if form == "int":
        tweak = bytes([1, k, bits & 0xff, ver])
        if kind == "snowflake":
            return str(ff1_encrypt(key, tweak, bits, int(idtext)))
        x = parse_128(kind, idtext)
        if kind == "ulid":
            return crockford(ff1_encrypt(key, tweak, 128, x), 26).upper()
        return uuid_text(uuid_from_bits(ff1_encrypt(key, tweak, 122, uuid_bits(x)), 4))
    tweak = bytes([2, k, bits & 0xff, ver]) + pre
    head = (prefix + "_" if pre else "") + CROCKFORD[ver - 1]
    if kind == "snowflake":
        return head + crockford(ff1_encrypt(key, tweak, 80, int(idtext) << 16), 16)
    return head + crockford(ff1_encrypt(key, tweak, 144, parse_128(kind, idtext) << 16), 29)


def main():
    keys = load_keys(sys.argv[1])
    for line in sys.stdin:
        kind, bits, prefix, form, idtext = line.split()
        print(public(keys, kind, int(bits), prefix, form, idtext))


if __name__ == "__main__":
    main()
