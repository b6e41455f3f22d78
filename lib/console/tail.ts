/**
 * Live tail over Server-Sent Events: from the high watermark of each selected partition, a Fetch
 * that waits in the purgatory (as a consumer's long poll: no polling loop, an idle tail costs
 * nothing until data comes), each record that passes the text search and filter sent as an
 * `event: record` (the JSON of the browser's records). A comment line goes out after each empty
 * wait so the end of the connection is noticed. Ends when the client goes, the topic is deleted,
 * or the broker stops.
 *
 * A tail costs the broker a bounded amount of work per second whatever the produce rate (issue 19:
 * producers keep their throughput while a browser tails): one Fetch at most every MIN_ROUND_MS
 * (BUSY_ROUND_MS after a round that had to skip), the records of a round written in one go, and a
 * partition more than KEEP_UP records behind its high watermark jumps to KEEP_UP from it, and of
 * more than KEEP_UP records a Fetch brings, the newest KEEP_UP are sent (the page shows the newest
 * rows; what was passed over is announced as an `event: skipped` with the count), so a fast topic
 * is never decoded or sent record by record. A round decodes only the records from each position
 * on (tail-decode.ts: a producer's batch holds ~1,000 records at full rate, the round wants the
 * newest 50) and writes its events as one Buffer (issue 19: a busy round, 200 records of 1 KB,
 * went from ~5 to ~2 ms of CPU; compat/bench/console-tail-round.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TopicRecord } from '../metadata/store.js';
import type { TopicLogs } from '../topics.js';
import { type Selection, selects } from './browse.js';
import { ConsoleError, toJson } from './http.js';
import { type InprocConnection, inprocConnection } from './inproc.js';
import { fetchRecords, recordJson } from './records.js';
import type { ConsoleDeps } from './types.js';

const WAIT_MS = 2000;
/** a round (Fetch, decode, send) starts at most this often */
export const MIN_ROUND_MS = 250;
/** ... and at most this often while the topic runs faster than the tail shows (it skipped) */
export const BUSY_ROUND_MS = 2000;
/** records per partition a round reads at most: further behind, the tail skips ahead */
export const KEEP_UP = 50;
const WAITING = Buffer.from(': waiting\n\n');

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

export async function tail(
  deps: ConsoleDeps,
  listenerName: string,
  t: TopicRecord,
  sel: Selection,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const s = deps.services;
  const kafka = inprocConnection(s, listenerName);
  const state = { open: true };
  const stop = () => {
    state.open = false;
  };
  const ended = () => !state.open || deps.signal.aborted;
  req.on('close', stop);
  res.on('close', stop);
  deps.signal.addEventListener('abort', stop, { once: true });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  const write = async (text: string | Buffer): Promise<void> => {
    if (res.destroyed || res.writableEnded) return;
    if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
  };
  const logs = s.topics.logsOf(t.name) ?? [];
  const positions = new Map(sel.partitions.map((p) => [p, logs[p]?.highWatermark ?? 0n]));
  try {
    await write(`event: ready\ndata: ${toJson({ topic: t.name, positions: Object.fromEntries(positions) })}\n\n`);
    let lastRound = 0;
    let gap = MIN_ROUND_MS;
    while (state.open && !deps.signal.aborted) {
      if (s.metadata.topic(t.name)?.topicId !== t.topicId) {
        await write(`event: end\ndata: ${toJson({ reason: 'the topic was deleted' })}\n\n`);
        break;
      }
      const since = Date.now() - lastRound;
      if (since < gap) await sleep(gap - since, deps.signal);
      if (ended()) break;
      lastRound = Date.now();
      const round = await tailRound(kafka, t.name, logs, positions, sel);
      gap = round.skipped > 0 ? BUSY_ROUND_MS : MIN_ROUND_MS;
      await write(round.events);
    }
  } catch (e) {
    const message = e instanceof ConsoleError || e instanceof Error ? e.message : String(e);
    if (state.open) await write(`event: error\ndata: ${toJson({ message })}\n\n`).catch(() => undefined);
  } finally {
    kafka.close();
    deps.signal.removeEventListener('abort', stop);
    res.end();
  }
}

/** What one round of a tail sends. */
export interface TailRound {
  /** the round's events (`skipped`, then `record`s; or a `: waiting` comment), ready to write */
  events: Buffer;
  sent: number;
  skipped: number;
}

/**
 * One round of a tail: partitions more than KEEP_UP behind their high watermark jump ahead, one
 * Fetch (waiting up to WAIT_MS for data), the newest KEEP_UP new records of each partition that
 * pass the selection as events; `positions` move past what was read.
 */
export async function tailRound(
  kafka: InprocConnection,
  topic: string,
  logs: TopicLogs,
  positions: Map<number, bigint>,
  sel: Pick<Selection, 'q' | 'filter'>,
): Promise<TailRound> {
  let skipped = 0;
  for (const [p, pos] of positions) {
    const hw = logs[p]?.highWatermark ?? pos;
    if (hw - pos > BigInt(KEEP_UP)) {
      skipped += Number(hw - BigInt(KEEP_UP) - pos);
      positions.set(p, hw - BigInt(KEEP_UP));
    }
  }
  const reads = await fetchRecords(kafka, topic, positions, { maxWaitMs: WAIT_MS, partitionMaxBytes: 1 << 20, lean: true });
  // each event's bytes, then one Buffer: a string of hundreds of events (joined or appended) costs
  // more to flatten and encode than making the events
  const out: Buffer[] = [];
  let sent = 0;
  for (const r of reads) {
    let pos = positions.get(r.partition) ?? 0n;
    const fresh = r.records.filter((rec) => rec.offset >= pos && rec.offset < r.highWatermark);
    // more came in than a round shows: the newest KEEP_UP
    if (fresh.length > KEEP_UP) skipped += fresh.length - KEEP_UP;
    for (const rec of fresh.length > KEEP_UP ? fresh.slice(-KEEP_UP) : fresh) {
      if (!selects(sel, rec)) continue;
      out.push(Buffer.from(`event: record\ndata: ${recordJson(rec)}\n\n`));
      sent++;
    }
    const last = fresh[fresh.length - 1];
    if (last !== undefined) pos = last.offset + 1n;
    if (r.records.length === 0 && r.nextOffset > pos && r.nextOffset <= r.highWatermark) pos = r.nextOffset;
    if (pos < r.logStartOffset) pos = r.logStartOffset; // retention went past the tail
    positions.set(r.partition, pos);
  }
  if (skipped > 0) out.unshift(Buffer.from(`event: skipped\ndata: ${toJson({ records: skipped })}\n\n`));
  if (sent === 0 && skipped === 0) out.push(WAITING);
  return { events: out.length === 1 ? (out[0] as Buffer) : Buffer.concat(out), sent, skipped };
}
