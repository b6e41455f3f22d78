/**
 * Byte ranges of a segment file that a CRC check vouched for (read-verify.ts): a few disjoint,
 * sorted [start, end) pairs kept flat in one array. Readers that start anywhere (a consumer resuming
 * mid-segment) each grow a range of their own, which merges with its neighbours as they meet; at
 * most MAX_RANGES are kept (the shortest goes: its bytes are checked again when read).
 */
const MAX_RANGES = 8;

/** Whether [from, to) lies inside one range. */
export function isVerified(ranges: readonly number[], from: number, to: number): boolean {
  for (let i = 0; i < ranges.length; i += 2) {
    if ((ranges[i] as number) <= from && to <= (ranges[i + 1] as number)) return true;
  }
  return false;
}

/** Adds [from, to), merging it with the ranges it touches. */
export function markVerified(ranges: number[], from: number, to: number): void {
  if (to <= from) return;
  let s = from;
  let e = to;
  const out: number[] = [];
  let placed = false;
  for (let i = 0; i < ranges.length; i += 2) {
    const a = ranges[i] as number;
    const b = ranges[i + 1] as number;
    if (b < s) out.push(a, b);
    else if (a > e) {
      if (!placed) out.push(s, e);
      placed = true;
      out.push(a, b);
    } else {
      s = Math.min(s, a);
      e = Math.max(e, b);
    }
  }
  if (!placed) out.push(s, e);
  while (out.length > MAX_RANGES * 2) {
    let shortest = 0;
    for (let i = 2; i < out.length; i += 2) {
      if ((out[i + 1] as number) - (out[i] as number) < (out[shortest + 1] as number) - (out[shortest] as number)) shortest = i;
    }
    out.splice(shortest, 2);
  }
  ranges.splice(0, ranges.length, ...out);
}

/** Drops what lies at or after `position` (the file was cut there). */
export function clipVerified(ranges: number[], position: number): void {
  const out: number[] = [];
  for (let i = 0; i < ranges.length; i += 2) {
    const a = ranges[i] as number;
    const b = Math.min(ranges[i + 1] as number, position);
    if (a < b) out.push(a, b);
  }
  ranges.splice(0, ranges.length, ...out);
}
