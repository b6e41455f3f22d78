/**
 * Big-endian 32-bit reads and writes on a Buffer whose bounds the caller has checked: cheaper per
 * message than Buffer#readInt32BE / #writeUInt32BE, which check them again.
 */
export const TWO_32 = 4294967296;

/** Big-endian int32 at p. */
export function i32(b: Buffer, p: number): number {
  return ((b[p] as number) << 24) | ((b[p + 1] as number) << 16) | ((b[p + 2] as number) << 8) | (b[p + 3] as number);
}

/** Writes the low 32 bits of v big-endian at p. */
export function w32(b: Buffer, p: number, v: number): void {
  b[p] = v >>> 24;
  b[p + 1] = v >>> 16;
  b[p + 2] = v >>> 8;
  b[p + 3] = v;
}
