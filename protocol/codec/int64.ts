/** `-1n` written in an expression is a unary minus on 1n, evaluated (and allocated) every time. */
const MINUS_ONE = -1n;

/**
 * The int64 whose big-endian halves are `hi` (signed) and `lo` (unsigned), when it is cheap: 0 and -1
 * (no producer id, no timestamp) are constants, and values within ±2^53 (offsets, millisecond
 * timestamps, producer ids) are one BigInt made from a number. null beyond that: the caller reads the
 * bytes with its general BigInt reader.
 */
export function smallInt64(hi: number, lo: number): bigint | null {
  if (hi === 0) return lo === 0 ? 0n : BigInt(lo);
  if (hi === -1 && lo === 0xffffffff) return MINUS_ONE;
  if (hi >= -0x200000 && hi < 0x200000) return BigInt(hi * 0x100000000 + lo);
  return null;
}

/**
 * The big-endian int64 at `pos` in `buf`, as `buf.readBigInt64BE(pos)` gives it, through smallInt64.
 * Node 20's readBigInt64BE makes two BigInts from numbers and combines them with a shift and an add,
 * each a new BigInt.
 */
export function int64At(buf: Buffer, pos: number): bigint {
  return smallInt64(buf.readInt32BE(pos), buf.readUInt32BE(pos + 4)) ?? buf.readBigInt64BE(pos);
}
