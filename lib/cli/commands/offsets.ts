/** offsets <topics...> [--time earliest|latest|max-timestamp|<ts>]: Kafka's GetOffsetShell. */
import { listOffsets, OffsetTime, type OffsetQuery } from '../../client/offsets.js';
import type { Context } from '../context.js';
import { renderTable } from '../output.js';
import { parseTimestamp } from '../parse.js';
import { emit } from './common.js';

type Flags = Record<string, unknown>;

export function parseTime(text: string): bigint {
  const t = text.trim().toLowerCase();
  if (t === 'earliest' || t === 'start' || t === 'beginning') return OffsetTime.EARLIEST;
  if (t === 'latest' || t === 'end') return OffsetTime.LATEST;
  if (t === 'max-timestamp') return OffsetTime.MAX_TIMESTAMP;
  if (t === '-1' || t === '-2' || t === '-3') return BigInt(t);
  return parseTimestamp(text);
}

export async function offsets(ctx: Context, topics: string[], f: Flags): Promise<number> {
  const time = parseTime(String(f['time']));
  const client = ctx.client();
  const queries: OffsetQuery[] = [];
  for (const topic of topics) {
    const t = await client.topic(topic);
    const wanted = (f['partitions'] as number[] | undefined) ?? t.partitions.map((p) => p.partition);
    for (const p of wanted) queries.push({ topic, partition: client.partition(t, p).partition, timestamp: time });
  }
  const results = await listOffsets(client, queries, { isolationLevel: f['readCommitted'] === true ? 1 : 0 });
  const withTime = time >= 0n || time === OffsetTime.MAX_TIMESTAMP;
  emit(
    ctx,
    results.map((r) => ({
      topic: r.topic,
      partition: r.partition,
      offset: r.offset < 0n ? null : r.offset,
      ...(withTime ? { timestamp: r.timestamp < 0n ? null : r.timestamp } : {}),
    })),
    () =>
      renderTable(
        withTime ? ['TOPIC', 'PARTITION', 'OFFSET', 'TIMESTAMP'] : ['TOPIC', 'PARTITION', 'OFFSET'],
        results.map((r) => [
          r.topic,
          r.partition,
          r.offset < 0n ? null : r.offset,
          ...(withTime ? [r.timestamp < 0n ? null : r.timestamp] : []),
        ]),
      ),
  );
  return 0;
}
