/**
 * xxHash32 (the checksum the LZ4 frame format uses for its header, block and content checksums).
 * Plain JS with Math.imul; the inputs it sees on the hot path (frame descriptors) are a few bytes.
 */

const P1 = 0x9e3779b1;
const P2 = 0x85ebca77;
const P3 = 0xc2b2ae3d;
const P4 = 0x27d4eb2f;
const P5 = 0x165667b1;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function u32le(buf: Uint8Array, p: number): number {
  return (buf[p] ?? 0) | ((buf[p + 1] ?? 0) << 8) | ((buf[p + 2] ?? 0) << 16) | ((buf[p + 3] ?? 0) << 24) | 0;
}

function round(acc: number, lane: number): number {
  acc = (acc + Math.imul(lane, P2)) | 0;
  return Math.imul(rotl(acc, 13), P1);
}

/** xxHash32 of `buf[start, end)`, as an unsigned 32-bit number. */
export function xxhash32(buf: Uint8Array, start = 0, end = buf.length, seed = 0): number {
  let p = start;
  const len = end - start;
  let h: number;
  if (len >= 16) {
    let v1 = (seed + P1 + P2) | 0;
    let v2 = (seed + P2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - P1) | 0;
    const limit = end - 16;
    while (p <= limit) {
      v1 = round(v1, u32le(buf, p));
      v2 = round(v2, u32le(buf, p + 4));
      v3 = round(v3, u32le(buf, p + 8));
      v4 = round(v4, u32le(buf, p + 12));
      p += 16;
    }
    h = (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
  } else {
    h = (seed + P5) | 0;
  }
  h = (h + len) | 0;
  while (p + 4 <= end) {
    h = (h + Math.imul(u32le(buf, p), P3)) | 0;
    h = Math.imul(rotl(h, 17), P4);
    p += 4;
  }
  while (p < end) {
    h = (h + Math.imul(buf[p] ?? 0, P5)) | 0;
    h = Math.imul(rotl(h, 11), P1);
    p++;
  }
  h ^= h >>> 15;
  h = Math.imul(h, P2);
  h ^= h >>> 13;
  h = Math.imul(h, P3);
  h ^= h >>> 16;
  return h >>> 0;
}
