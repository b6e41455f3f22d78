/** `-1n` written in an expression is a unary minus on 1n, evaluated (and allocated) every time. */
const MINUS_ONE = -1n;

/**
 * The big-endian int64 at `pos` in `buf`, as `buf.readBigInt64BE(pos)` gives it, read as two int32
 * halves: 0 and -1 (no producer id, no timestamp) are constants, and values within ±2^53 (offsets,
 * millisecond timestamps, producer ids) are one BigInt made from a number. Node 20's readBigInt64BE
 * makes two BigInts from numbers and combines them with a shift and an add, each a new BigInt.
 */
export function int64At(buf: Buffer, pos: number): bigint {
  const hi = buf.readInt32BE(pos);
  const lo = buf.readUInt32BE(pos + 4);
  if (hi === 0) return lo === 0 ? 0n : BigInt(lo);
  if (hi === -1 && lo === 0xffffffff) return MINUS_ONE;
  if (hi >= -0x200000 && hi < 0x200000) return BigInt(hi * 0x100000000 + lo);
  return buf.readBigInt64BE(pos);
}
