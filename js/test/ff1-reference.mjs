// FF1 (NIST SP 800-38G, Algorithm 7) written from the standard, on
// node:crypto's AES: the tests' reference for the public IDs the addon makes
// (libidgen's FF1 is C on libcrypto; this shares none of its code).  Slow and
// plain on purpose: BigInt numerals, any radix, AES per block.
import crypto from 'node:crypto';

function aesBlock(key, block) {
  const c = crypto.createCipheriv(`aes-${key.length * 8}-ecb`, key, null);
  c.setAutoPadding(false);
  return Buffer.concat([c.update(block), c.final()]);
}

// CBC-MAC with a zero IV: the last block of AES-CBC over x (whole blocks).
function prf(key, x) {
  const c = crypto.createCipheriv(`aes-${key.length * 8}-cbc`, key, Buffer.alloc(16));
  c.setAutoPadding(false);
  const out = Buffer.concat([c.update(x), c.final()]);
  return out.subarray(out.length - 16);
}

const num = (digits, radix) => digits.reduce((a, d) => a * BigInt(radix) + BigInt(d), 0n);
function str(x, radix, m) {
  const out = new Array(m);
  for (let i = m - 1; i >= 0; i--) {
    out[i] = Number(x % BigInt(radix));
    x /= BigInt(radix);
  }
  return out;
}
function bytesOf(x, len) {
  const b = Buffer.alloc(len);
  for (let i = len - 1; i >= 0; i--) {
    b[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return b;
}

/** FF1 encryption (or decryption) of digits (an array, each below radix). */
export function ff1(key, radix, tweak, digits, decrypt = false) {
  const n = digits.length, u = Math.floor(n / 2), v = n - u, t = tweak.length;
  let A = digits.slice(0, u), B = digits.slice(u);
  const b = Math.ceil(Math.ceil(v * Math.log2(radix)) / 8);
  const d = 4 * Math.ceil(b / 4) + 4;
  const P = Buffer.concat([Buffer.from([1, 2, 1]), bytesOf(BigInt(radix), 3), Buffer.from([10, u % 256]),
                           bytesOf(BigInt(n), 4), bytesOf(BigInt(t), 4)]);
  const round = (i, X) => {
    const pad = (((-t - b - 1) % 16) + 16) % 16;
    const Q = Buffer.concat([tweak, Buffer.alloc(pad), Buffer.from([i]), bytesOf(num(X, radix), b)]);
    const R = prf(key, Buffer.concat([P, Q]));
    const blocks = [R];
    for (let j = 1; j < Math.ceil(d / 16); j++) {
      const x = Buffer.from(R);
      const jb = bytesOf(BigInt(j), 16);
      for (let k = 0; k < 16; k++) x[k] ^= jb[k];
      blocks.push(aesBlock(key, x));
    }
    return num([...Buffer.concat(blocks).subarray(0, d)], 256);
  };
  if (!decrypt) {
    for (let i = 0; i < 10; i++) {
      const m = i % 2 === 0 ? u : v;
      const c = (num(A, radix) + round(i, B)) % BigInt(radix) ** BigInt(m);
      [A, B] = [B, str(c, radix, m)];
    }
  } else {
    for (let i = 9; i >= 0; i--) {
      const m = i % 2 === 0 ? u : v;
      const mod = BigInt(radix) ** BigInt(m);
      const c = (((num(B, radix) - round(i, A)) % mod) + mod) % mod;
      [B, A] = [A, str(c, radix, m)];
    }
  }
  return [...A, ...B];
}

/** FF1 with radix 2 over the low `bits` bits of x (a BigInt), most significant bit first. */
export function ff1Bits(key, tweak, x, bits, decrypt = false) {
  const digits = [];
  for (let i = bits - 1; i >= 0; i--) digits.push(Number((x >> BigInt(i)) & 1n));
  return ff1(key, 2, tweak, digits, decrypt).reduce((a, d) => (a << 1n) | BigInt(d), 0n);
}
