import { crc32 as nativeCrc32 } from './native.js';

/**
 * CRC-32 (IEEE, as magic 0/1 messages use it) over `buf[start, end)` without creating a view.
 * A call into the native CRC costs ~300 ns whatever the length (plus a subarray per range), which
 * dominates for the ~120-byte messages of a typical magic 0/1 set; short ranges are therefore done
 * here with a slicing-by-16 table (~1.3 GB/s, ~95 ns for 118 bytes), long ones natively (>10 GB/s).
 */

const NATIVE_FROM = 512;
const T = new Int32Array(256 * 16);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  T[n] = c;
}
for (let n = 0; n < 256; n++) {
  for (let t = 1; t < 16; t++) {
    const prev = T[(t - 1) * 256 + n] as number;
    T[t * 256 + n] = (prev >>> 8) ^ (T[prev & 255] as number);
  }
}

/** Unsigned CRC-32 of `buf[start, end)`. */
export function crc32Range(buf: Uint8Array, start: number, end: number): number {
  if (end - start >= NATIVE_FROM) return nativeCrc32(Buffer.from(buf.buffer, buf.byteOffset + start, end - start)) >>> 0;
  const t = T;
  const b = buf;
  let c = -1;
  let i = start;
  for (; i + 16 <= end; i += 16) {
    c ^= (b[i] as number) | ((b[i + 1] as number) << 8) | ((b[i + 2] as number) << 16) | ((b[i + 3] as number) << 24);
    c =
      (t[3840 + (c & 255)] as number) ^
      (t[3584 + ((c >>> 8) & 255)] as number) ^
      (t[3328 + ((c >>> 16) & 255)] as number) ^
      (t[3072 + (c >>> 24)] as number) ^
      (t[2816 + (b[i + 4] as number)] as number) ^
      (t[2560 + (b[i + 5] as number)] as number) ^
      (t[2304 + (b[i + 6] as number)] as number) ^
      (t[2048 + (b[i + 7] as number)] as number) ^
      (t[1792 + (b[i + 8] as number)] as number) ^
      (t[1536 + (b[i + 9] as number)] as number) ^
      (t[1280 + (b[i + 10] as number)] as number) ^
      (t[1024 + (b[i + 11] as number)] as number) ^
      (t[768 + (b[i + 12] as number)] as number) ^
      (t[512 + (b[i + 13] as number)] as number) ^
      (t[256 + (b[i + 14] as number)] as number) ^
      (t[b[i + 15] as number] as number);
  }
  for (; i < end; i++) c = (t[(c ^ (b[i] as number)) & 255] as number) ^ (c >>> 8);
  return ~c >>> 0;
}
