/**
 * The message browser's selection: where to start in each partition (start, end, an offset, a
 * timestamp, or a cursor from a previous page), then Fetch until `limit` records per partition
 * passed the text search and the filter, a partition's high watermark, or the scan budget; the
 * partitions' records merged by timestamp. `next` is where the following page starts.
 */
import type { FetchedRecord } from '../client/fetcher.js';
import type { TopicLogs } from '../topics.js';
import type { TopicRecord } from '../metadata/store.js';
import type { BrokerServices } from '../services.js';
import { type CompiledFilter, compileFilter } from './filter/eval.js';
import { FilterError } from './filter/parse.js';
import { badRequest, ConsoleError, ConsoleErrorCode } from './http.js';
import type { InprocConnection } from './inproc.js';
import { fetchRecords, filterView, offsetsForTime, textMatch } from './records.js';

/** Records read per request at most (matching or not), so a selective filter cannot scan a whole large topic in one request. */
export const SCAN_BUDGET = 100_000;
export const MAX_LIMIT = 10_000;

export interface Selection {
  partitions: number[];
  from: 'start' | 'end' | 'offset' | 'timestamp' | 'cursor';
  offset: bigint;
  timestamp: bigint;
  cursor: Map<number, bigint>;
  limit: number;
  q: string;
  filter: CompiledFilter | null;
}

export interface Page {
  records: FetchedRecord[];
  /** where the next page starts in each partition not at its end */
  next: Record<number, string>;
  scanned: number;
  /** every partition was read to its high watermark */
  atEnd: boolean;
}

export function compileOrRefuse(src: string): CompiledFilter | null {
  if (src.trim() === '') return null;
  try {
    return compileFilter(src);
  } catch (e) {
    if (e instanceof FilterError) throw new ConsoleError(400, ConsoleErrorCode.FILTER, e.message, { position: e.position });
    throw e;
  }
}

export function parseSelection(t: TopicRecord, q: URLSearchParams, maxLimit = MAX_LIMIT): Selection {
  const part = q.get('partition') ?? 'all';
  let partitions: number[];
  if (part === 'all' || part === '') partitions = Array.from({ length: t.partitions }, (_v, i) => i);
  else {
    const p = Number(part);
    if (!Number.isSafeInteger(p) || p < 0 || p >= t.partitions) throw badRequest(`partition must be "all" or 0..${t.partitions - 1}`);
    partitions = [p];
  }
  const from = q.get('from') ?? 'end';
  if (from !== 'start' && from !== 'end' && from !== 'offset' && from !== 'timestamp' && from !== 'cursor')
    throw badRequest('from must be start, end, offset, timestamp or cursor');
  const big = (name: string): bigint => {
    const v = q.get(name) ?? '';
    if (!/^-?\d+$/.test(v)) throw badRequest(`${name} must be an integer`);
    return BigInt(v);
  };
  const cursor = new Map<number, bigint>();
  if (from === 'cursor') {
    for (const item of (q.get('cursor') ?? '').split(',').filter((x) => x !== '')) {
      const m = /^(\d+):(\d+)$/.exec(item);
      if (m === null) throw badRequest('cursor must be partition:offset pairs separated by commas');
      cursor.set(Number(m[1]), BigInt(m[2] ?? '0'));
    }
  }
  const limit = Number(q.get('limit') ?? '100');
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit) throw badRequest(`limit must be 1..${maxLimit}`);
  return {
    partitions: from === 'cursor' ? partitions.filter((p) => cursor.has(p)) : partitions,
    from,
    offset: from === 'offset' ? big('offset') : 0n,
    timestamp: from === 'timestamp' ? big('timestamp') : 0n,
    cursor,
    limit,
    q: q.get('q') ?? '',
    filter: compileOrRefuse(q.get('filter') ?? ''),
  };
}

/** Whether a record passes the selection's text search and filter. */
export function selects(sel: Pick<Selection, 'q' | 'filter'>, r: FetchedRecord): boolean {
  if (sel.q === '' && sel.filter === null) return true;
  const v = filterView(r);
  if (sel.q !== '' && !textMatch(v, sel.q)) return false;
  if (sel.filter === null) return true;
  try {
    return sel.filter.matches(v);
  } catch (e) {
    if (e instanceof FilterError) throw new ConsoleError(400, ConsoleErrorCode.FILTER, e.message);
    throw e;
  }
}

/** Records read from the end of all partitions together at most, before they are merged by time. */
export const END_SCAN = 5_000;

/**
 * How far back from its high watermark each partition is read for the newest `limit` records: all
 * `limit` while the non-empty partitions times `limit` stay within END_SCAN (exact), else an even
 * share of `limit` (at least one each), as Redpanda Console spreads its "newest" reads: with
 * thousands of partitions the page shows the newest records of each, not necessarily the newest
 * `limit` of the topic.
 */
function endDepth(limit: number, nonEmpty: number): number {
  const n = Math.max(1, nonEmpty);
  return Math.max(Math.ceil(limit / n), Math.min(limit, Math.floor(END_SCAN / n)));
}

/**
 * The newest `limit` records of a topic with more non-empty partitions than END_SCAN / `limit`,
 * without a search or filter, lie in the `limit` partitions with the newest largest timestamp (each
 * partition's is in memory, in its segment list): every partition holding one of them has a
 * largest timestamp at least that record's, and there are at most `limit` such partitions. Only
 * those are read (`limit` deep while `limit` squared stays within END_SCAN, so exact up to a limit
 * of 70; an even share of END_SCAN beyond). Null when this does not apply, or a candidate has no
 * timestamps (magic 0): then every partition is read as endDepth says.
 */
export function newestPartitions(sel: Selection, logs: TopicLogs, nonEmpty: number[]): { partitions: number[]; depth: number } | null {
  if (sel.from !== 'end' || sel.q !== '' || sel.filter !== null || nonEmpty.length * sel.limit <= END_SCAN) return null;
  const newest = nonEmpty.map((p) => {
    let ts = -1n;
    for (const seg of logs[p]?.summary().segments ?? []) if (seg.maxTimestamp > ts) ts = seg.maxTimestamp;
    return { p, ts };
  });
  newest.sort((a, b) => (a.ts === b.ts ? a.p - b.p : a.ts > b.ts ? -1 : 1));
  const top = newest.slice(0, sel.limit);
  if (top.some((x) => x.ts < 0n)) return null;
  return { partitions: top.map((x) => x.p), depth: Math.max(1, Math.min(sel.limit, Math.floor(END_SCAN / top.length))) };
}

export async function browse(s: BrokerServices, kafka: InprocConnection, t: TopicRecord, sel: Selection): Promise<Page> {
  const logs = s.topics.logsOf(t.name) ?? [];
  const bounds = (p: number) => ({ start: logs[p]?.logStartOffset ?? 0n, hw: logs[p]?.highWatermark ?? 0n });
  const positions = new Map<number, bigint>();
  const byTime = sel.from === 'timestamp' ? await offsetsForTime(kafka, t.name, sel.partitions, sel.timestamp) : null;
  let read = sel.partitions;
  let fromEnd = 0n;
  if (sel.from === 'end') {
    const nonEmpty = sel.partitions.filter((p) => bounds(p).hw > bounds(p).start);
    const newest = newestPartitions(sel, logs, nonEmpty);
    if (newest !== null) read = newest.partitions;
    fromEnd = BigInt(newest?.depth ?? endDepth(sel.limit, nonEmpty.length));
  }
  for (const p of read) {
    const { start, hw } = bounds(p);
    const clamp = (o: bigint) => (o < start ? start : o > hw ? hw : o);
    let at: bigint;
    if (sel.from === 'start') at = start;
    else if (sel.from === 'end') at = clamp(hw - fromEnd);
    else if (sel.from === 'offset') at = clamp(sel.offset);
    else if (sel.from === 'cursor') at = clamp(sel.cursor.get(p) ?? start);
    else {
      const o = byTime?.get(p) ?? -1n;
      at = o < 0n ? hw : clamp(o);
    }
    positions.set(p, at);
  }
  const found = new Map<number, FetchedRecord[]>(read.map((p) => [p, []]));
  let scanned = 0;
  const active = new Map([...positions].filter(([p, o]) => o < bounds(p).hw));
  while (active.size > 0 && scanned < SCAN_BUDGET) {
    const reads = await fetchRecords(kafka, t.name, active, { maxWaitMs: 0, partitionMaxBytes: 1 << 20 });
    for (const r of reads) {
      const mine = found.get(r.partition) ?? [];
      let pos = active.get(r.partition) ?? 0n;
      for (const rec of r.records) {
        if (rec.offset >= r.highWatermark) break;
        scanned++;
        pos = rec.offset + 1n;
        if (selects(sel, rec)) mine.push(rec);
        if (mine.length >= sel.limit) break;
      }
      if (r.records.length === 0) pos = r.nextOffset > pos ? r.nextOffset : pos;
      positions.set(r.partition, pos);
      if (mine.length >= sel.limit || pos >= r.highWatermark || r.nextOffset <= (active.get(r.partition) ?? 0n)) active.delete(r.partition);
      else active.set(r.partition, pos);
    }
  }
  const all = [...found.values()]
    .flat()
    .sort((a, b) =>
      a.timestamp !== b.timestamp ? Number(a.timestamp - b.timestamp) : a.partition - b.partition || Number(a.offset - b.offset),
    );
  const records = sel.from === 'end' ? all.slice(-sel.limit) : all.slice(0, sel.limit);
  // the next page starts after what this one showed (records read but merged away come again), in
  // the partitions not at their end (a partition left out of `next` is: from the end, every one not read)
  const next: Record<number, string> = {};
  const shown = new Set(records);
  for (const p of read) {
    const dropped = (found.get(p) ?? []).find((r) => !shown.has(r));
    const at = dropped !== undefined ? dropped.offset : (positions.get(p) ?? 0n);
    if (at < bounds(p).hw) next[p] = String(at);
  }
  return { records, next, scanned, atEnd: Object.keys(next).length === 0 };
}
