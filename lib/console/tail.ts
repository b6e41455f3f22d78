/**
 * Live tail over Server-Sent Events: from the high watermark of each selected partition, a Fetch
 * that waits in the purgatory (as a consumer's long poll: no polling loop, an idle tail costs
 * nothing until data comes), each record that passes the text search and filter sent as an
 * `event: record` (the JSON of the browser's records). A comment line goes out after each empty
 * wait so the end of the connection is noticed. Ends when the client goes, the topic is deleted,
 * or the broker stops.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TopicRecord } from '../metadata/store.js';
import { type Selection, selects } from './browse.js';
import { ConsoleError, toJson } from './http.js';
import { inprocConnection } from './inproc.js';
import { fetchRecords, showRecord } from './records.js';
import type { ConsoleDeps } from './types.js';

const WAIT_MS = 2000;

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
  req.on('close', stop);
  res.on('close', stop);
  deps.signal.addEventListener('abort', stop, { once: true });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
  const write = async (text: string): Promise<void> => {
    if (res.destroyed || res.writableEnded) return;
    if (!res.write(text)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
  };
  const logs = s.topics.logsOf(t.name) ?? [];
  const positions = new Map(sel.partitions.map((p) => [p, logs[p]?.highWatermark ?? 0n]));
  try {
    await write(`event: ready\ndata: ${toJson({ topic: t.name, positions: Object.fromEntries(positions) })}\n\n`);
    while (state.open && !deps.signal.aborted) {
      if (s.metadata.topic(t.name)?.topicId !== t.topicId) {
        await write(`event: end\ndata: ${toJson({ reason: 'the topic was deleted' })}\n\n`);
        break;
      }
      const reads = await fetchRecords(kafka, t.name, positions, { maxWaitMs: WAIT_MS, partitionMaxBytes: 1 << 20 });
      let sent = 0;
      for (const r of reads) {
        let pos = positions.get(r.partition) ?? 0n;
        for (const rec of r.records) {
          if (rec.offset >= r.highWatermark) break;
          pos = rec.offset + 1n;
          if (!selects(sel, rec)) continue;
          await write(`event: record\ndata: ${toJson(showRecord(rec))}\n\n`);
          sent++;
        }
        if (r.records.length === 0 && r.nextOffset > pos && r.nextOffset <= r.highWatermark) pos = r.nextOffset;
        if (pos < r.logStartOffset) pos = r.logStartOffset; // retention went past the tail
        positions.set(r.partition, pos);
      }
      if (sent === 0) await write(': waiting\n\n');
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
