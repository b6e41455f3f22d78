/** Parsers of command-line values; each throws UsageError naming what was wrong. */
import type { StartSpec } from '../client/consumer.js';
import { UsageError } from './errors.js';

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60000, h: 3600000 };

/** "500ms", "30s", "2m", "1h", or plain milliseconds. */
export function parseDuration(text: string, what = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (m === null) throw new UsageError(`${what} '${text}' is not a duration (examples: 500ms, 30s, 2m, 1500)`);
  return Math.round(Number(m[1]) * (DURATION_UNITS[m[2] ?? 'ms'] ?? 1));
}

/** Milliseconds since the epoch, or an ISO 8601 date/time (a date alone is midnight UTC). */
export function parseTimestamp(text: string): bigint {
  const t = text.trim();
  if (/^\d+$/.test(t)) return BigInt(t);
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(t)) {
    const ms = Date.parse(t.includes('T') || t.includes(' ') ? t.replace(' ', 'T') : `${t}T00:00:00Z`);
    if (!Number.isNaN(ms)) return BigInt(ms);
  }
  throw new UsageError(`'${text}' is not a timestamp (milliseconds since the epoch, or ISO 8601 such as 2024-05-01T12:00:00Z)`);
}

/** kcat/rpk -o: start|beginning|earliest, end|latest, <offset>, -<N> (last N), @<timestamp> (also s@<ts>). */
export function parseOffsetSpec(text: string): StartSpec {
  const t = text.trim().toLowerCase();
  if (t === 'start' || t === 'beginning' || t === 'earliest' || t === 'oldest') return { kind: 'start' };
  if (t === 'end' || t === 'latest' || t === 'newest') return { kind: 'end' };
  if (/^\d+$/.test(t)) return { kind: 'offset', offset: BigInt(t) };
  if (/^-\d+$/.test(t)) return { kind: 'relative', count: BigInt(t.slice(1)) };
  if (t.startsWith('@') || t.startsWith('s@'))
    return { kind: 'timestamp', timestamp: parseTimestamp(text.trim().slice(t.indexOf('@') + 1)) };
  throw new UsageError(`offset '${text}' is not one of start, end, <offset>, -<count>, @<timestamp>`);
}

/** "key=value" (the value may hold '='; it may be empty). */
export function parseKeyValue(text: string, what = 'key=value'): [string, string] {
  const i = text.indexOf('=');
  if (i <= 0) throw new UsageError(`'${text}' is not ${what}`);
  return [text.slice(0, i), text.slice(i + 1)];
}

/** "2,3,1" → [2, 3, 1]: broker ids in the order given (a replica list: the first is the preferred leader). */
export function parseBrokerList(text: string): number[] {
  const out = text.split(',').map((s) => s.trim());
  if (out.some((s) => !/^\d+$/.test(s))) throw new UsageError(`'${text}' is not a list of broker ids (example: 1,2,3)`);
  return out.map(Number);
}

/** "0,1,4-6" → [0, 1, 4, 5, 6]. */
export function parsePartitionList(text: string): number[] {
  const out: number[] = [];
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (m === null) throw new UsageError(`'${text}' is not a partition list (examples: 0, 0,2, 1-3)`);
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (b < a) throw new UsageError(`partition range '${part}' runs backwards`);
    for (let p = a; p <= b; p++) out.push(p);
  }
  if (out.length === 0) throw new UsageError('empty partition list');
  return [...new Set(out)].sort((x, y) => x - y);
}

export function parseNonNegativeInt(text: string, what: string): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`${what} '${text}' is not a non-negative integer`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new UsageError(`${what} '${text}' is too large`);
  return n;
}

export function parsePositiveInt(text: string, what: string): number {
  const n = parseNonNegativeInt(text, what);
  if (n === 0) throw new UsageError(`${what} must be at least 1`);
  return n;
}

/** -1/all, 0 or 1. */
export function parseAcks(text: string): number {
  const t = text.trim().toLowerCase();
  if (t === 'all' || t === '-1') return -1;
  if (t === '0' || t === '1') return Number(t);
  throw new UsageError(`acks '${text}' is not one of all, -1, 0, 1`);
}

export const COMPRESSION_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

/** Codec id of a compression name (the codec ids of the batch attributes). */
export function parseCompression(text: string): number {
  const i = (COMPRESSION_NAMES as readonly string[]).indexOf(text.trim().toLowerCase());
  if (i < 0) throw new UsageError(`compression '${text}' is not one of ${COMPRESSION_NAMES.join(', ')}`);
  return i;
}

/** Topic with an optional partition list: "orders" or "orders:0,2". */
export function parseTopicPartitions(text: string): { topic: string; partitions: number[] | null } {
  const i = text.lastIndexOf(':');
  if (i <= 0) return { topic: text, partitions: null };
  return { topic: text.slice(0, i), partitions: parsePartitionList(text.slice(i + 1)) };
}

/** Collects a repeatable option's values. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}
