/**
 * A full integrity scan of a partition directory's files (tests): every entry of every segment is
 * whole, CRC-valid and in offset order within and across segments, each segment's entries lie at or
 * above its base offset, every offset-index entry points at the start of the entry it names, and no
 * cleaner leftovers (`.cleaned`, `.swap`) remain; bytes after the last whole entry are a problem too
 * (a torn tail that recovery should have cut). Returns the problems found (empty: sound), and the
 * offset after the last entry (-1n: none). Offsets may have gaps (a cleaned log), never go back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { entryCrcValid, parseEntryHeader } from '../../lib/log/segment-format.js';

export interface ScanReport {
  problems: string[];
  entries: number;
  segments: number;
  /** the offset after the last entry (-1n when there are none) */
  nextOffset: bigint;
}

export function scanPartitionDir(dir: string): ScanReport {
  const problems: string[] = [];
  const names = fs.readdirSync(dir).sort();
  for (const n of names) if (n.endsWith('.cleaned') || n.endsWith('.swap')) problems.push(`leftover ${n}`);
  const logs = names.filter((n) => /^\d{20}\.log$/.test(n));
  let prev = -1n;
  let entries = 0;
  for (const name of logs) {
    const base = BigInt(name.slice(0, 20));
    const buf = fs.readFileSync(path.join(dir, name));
    const starts = new Map<number, bigint>();
    for (let p = 0; p < buf.length;) {
      const h = parseEntryHeader(buf, p, buf.length - p, p);
      if (h === null || typeof h === 'string' || p + h.size > buf.length) {
        problems.push(`${name}: bad entry at ${p}: ${typeof h === 'string' ? h : 'cut short'}`);
        break;
      }
      if (!entryCrcValid(buf, p, h.size, h.magic)) problems.push(`${name}: CRC mismatch at ${p}`);
      if (h.baseOffset <= prev) problems.push(`${name}: offset ${h.baseOffset} at ${p} not after ${prev}`);
      if (h.baseOffset < base) problems.push(`${name}: offset ${h.baseOffset} below the segment base`);
      starts.set(p, h.lastOffset);
      prev = h.lastOffset;
      entries++;
      p += h.size;
    }
    const index = path.join(dir, name.replace(/\.log$/, '.index'));
    if (fs.existsSync(index)) {
      const ib = fs.readFileSync(index);
      for (let q = 0; q + 8 <= ib.length; q += 8) {
        const offset = base + BigInt(ib.readInt32BE(q));
        const pos = ib.readInt32BE(q + 4);
        if (starts.get(pos) !== offset) problems.push(`${name}: index entry ${offset} -> ${pos} is not an entry start holding it`);
      }
    }
  }
  return { problems, entries, segments: logs.length, nextOffset: prev < 0n ? -1n : prev + 1n };
}
