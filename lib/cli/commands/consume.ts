/**
 * consume <topics...>: JSON lines by default ({"topic","partition","offset","timestamp",
 * "timestampType","key","value","headers"}), or kcat-style format strings (-f, --format text).
 */
import { consume, type ConsumeOptions } from '../../client/consumer.js';
import type { FetchedRecord } from '../../client/fetcher.js';
import type { TopicPartition } from '../../client/offsets.js';
import type { Context } from '../context.js';
import { encodeNullable, type Encoding } from '../encoding.js';
import { compileFormat } from '../format-string.js';
import { toJson } from '../output.js';
import { parseOffsetSpec } from '../parse.js';
import { Progress } from '../progress.js';

type Flags = Record<string, unknown>;

const TIMESTAMP_TYPES: Readonly<Record<number, string>> = { [-1]: 'NoTimestampType', 0: 'CreateTime', 1: 'LogAppendTime' };

/** One record as a JSON line. */
export function recordJson(r: FetchedRecord, enc: Encoding): string {
  return toJson(
    {
      topic: r.topic,
      partition: r.partition,
      offset: r.offset,
      timestamp: r.timestamp,
      timestampType: TIMESTAMP_TYPES[r.timestampType] ?? 'NoTimestampType',
      key: encodeNullable(r.key, enc),
      value: encodeNullable(r.value, enc),
      headers: r.headers.map((h) => ({ key: h.key, value: encodeNullable(h.value, enc) })),
    },
    false,
  );
}

export async function consumeCommand(ctx: Context, topics: string[], f: Flags): Promise<number> {
  const enc = f['encoding'] as Encoding;
  const fmt = f['formatString'] as string | undefined;
  const render: (r: FetchedRecord) => string | Buffer =
    fmt !== undefined || ctx.format === 'text' ? compileFormat(fmt ?? '%v\\n', enc) : (r) => `${recordJson(r, enc)}\n`;
  const start = parseOffsetSpec(String(f['offset']));
  const client = ctx.client();
  const partitions: TopicPartition[] = [];
  for (const topic of topics) {
    const t = await client.topic(topic);
    const wanted = (f['partitions'] as number[] | undefined) ?? t.partitions.map((p) => p.partition);
    for (const p of wanted) partitions.push({ topic, partition: client.partition(t, p).partition });
  }
  const abort = new AbortController();
  const stop = () => abort.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  ctx.out.onClose(stop);
  const progress = new Progress('consumed');
  const opts: ConsumeOptions = {
    start,
    isolationLevel: f['readCommitted'] === true ? 1 : 0,
    stopAtEnd: f['exitAtEnd'] === true,
    signal: abort.signal,
    onRecord: (r) => {
      ctx.out.write(render(r));
      progress.add(1, (r.key?.length ?? 0) + (r.value?.length ?? 0));
    },
    onNotice: (m) => ctx.notice(m),
    afterRound: () => ctx.out.drain(),
  };
  if (f['count'] !== undefined) opts.maxRecords = f['count'] as number;
  try {
    const group = f['group'] as string | undefined;
    await consume(client, group === undefined ? { partitions } : { group, topics }, opts);
  } finally {
    process.removeListener('SIGINT', stop);
    process.removeListener('SIGTERM', stop);
    progress.done();
  }
  return 0;
}
