/**
 * A live-tail reader without a browser, for console-tail.ts: it opens the console's tail stream as
 * the message page's "Live tail" button does (an EventSource on
 * `/ui/api/topics/<t>/tail?<the page's query>`, `Accept: text/event-stream`) and reads it as the
 * page does (each `record` event's data JSON.parse'd, `skipped` counts summed), in a worker thread
 * so that its reading does not share an event loop with the bench's producer.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export interface TailCounts {
  /** `record` events read (each one's JSON parsed, as the page does) */
  records: number;
  /** the sum of the `skipped` events' counts */
  skipped: number;
  /** events of any kind and `: waiting` comments: one per round of the broker's tail at least */
  events: number;
  bytes: number;
  /** an `error` or `end` event's data, or the reader's own failure */
  error: string | null;
}

/** The query string the message page sends for a live tail of all partitions with its defaults. */
export function pageTailQuery(): string {
  return new URLSearchParams({ partition: 'all', from: 'end', limit: '50', q: '', filter: '' }).toString();
}

export interface TailClient {
  /** resolves once the stream's `ready` event came */
  ready: Promise<void>;
  /** counts so far (the worker keeps reading) */
  counts(): Promise<TailCounts>;
  /** closes the stream and ends the worker; the final counts */
  stop(): Promise<TailCounts>;
}

interface Data {
  kind: 'console-tail';
  url: string;
}

export function startTailClient(url: string): TailClient {
  const w = new Worker(new URL(import.meta.url), { workerData: { kind: 'console-tail', url } satisfies Data });
  let readyResolve!: () => void;
  let readyReject!: (e: Error) => void;
  const ready = new Promise<void>((res, rej) => ((readyResolve = res), (readyReject = rej)));
  let waiting: ((c: TailCounts) => void)[] = [];
  w.on('message', (m: { type: 'ready' } | { type: 'counts'; counts: TailCounts }) => {
    if (m.type === 'ready') readyResolve();
    else {
      const ws = waiting;
      waiting = [];
      for (const f of ws) f(m.counts);
    }
  });
  w.on('error', (e) => readyReject(e));
  const ask = (type: 'counts' | 'stop') =>
    new Promise<TailCounts>((resolve) => {
      waiting.push(resolve);
      w.postMessage(type);
    });
  return {
    ready,
    counts: () => ask('counts'),
    async stop() {
      const c = await ask('stop');
      await w.terminate();
      return c;
    },
  };
}

async function read(url: string): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  const counts: TailCounts = { records: 0, skipped: 0, events: 0, bytes: 0, error: null };
  const abort = new AbortController();
  port.on('message', (m: 'counts' | 'stop') => {
    if (m === 'stop') abort.abort();
    port.postMessage({ type: 'counts', counts });
  });
  try {
    const res = await fetch(url, { headers: { accept: 'text/event-stream', 'cache-control': 'no-cache' }, signal: abort.signal });
    if (!res.ok || res.body === null) throw new Error(`tail answered ${res.status}`);
    const text = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      counts.bytes += chunk.byteLength;
      buf += text.decode(chunk, { stream: true });
      for (let end = buf.indexOf('\n\n'); end >= 0; end = buf.indexOf('\n\n')) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        counts.events++;
        let event = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (event === 'ready') port.postMessage({ type: 'ready' });
        else if (event === 'record') {
          JSON.parse(data);
          counts.records++;
        } else if (event === 'skipped') counts.skipped += (JSON.parse(data) as { records: number }).records;
        else if (event === 'error' || event === 'end') counts.error = data;
      }
    }
  } catch (e) {
    if (!abort.signal.aborted) counts.error = e instanceof Error ? e.message : String(e);
  }
}

if (!isMainThread && (workerData as Partial<Data> | null)?.kind === 'console-tail') await read((workerData as Data).url);
