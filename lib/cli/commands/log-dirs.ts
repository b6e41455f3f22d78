/** log-dirs [--topic t...] [--broker ids]: every broker's log dirs and the replicas in each (Kafka's kafka-log-dirs --describe). */
import { describeLogDirs } from '../../client/log-dirs.js';
import type { Context } from '../context.js';
import { renderTable } from '../output.js';
import { emit, itemError, jsonKafkaError, reportFailures, statusCell } from './common.js';

type Flags = Record<string, unknown>;

export async function logDirs(ctx: Context, f: Flags): Promise<number> {
  const topics = (f['topic'] as string[] | undefined) ?? [];
  const brokers = (f['broker'] as number[] | undefined) ?? null;
  const dirs = await describeLogDirs(ctx.client(), topics.length === 0 ? null : topics, brokers);
  // JSON as kafka-log-dirs prints it: brokers → logDirs → partitions ("topic-partition")
  const byBroker = [...new Set(dirs.map((d) => d.broker))].map((broker) => ({
    broker,
    logDirs: dirs
      .filter((d) => d.broker === broker)
      .map((d) => ({
        logDir: d.logDir,
        error: d.errorCode === 0 ? null : jsonKafkaError(d.errorCode, null),
        totalBytes: d.totalBytes,
        usableBytes: d.usableBytes,
        partitions: d.replicas.map((r) => ({
          partition: `${r.topic}-${r.partition}`,
          size: r.size,
          offsetLag: r.offsetLag,
          isFuture: r.isFuture,
        })),
      })),
  }));
  emit(ctx, { brokers: byBroker }, () =>
    [
      renderTable(
        ['BROKER', 'LOG DIR', 'STATUS', 'TOTAL BYTES', 'USABLE BYTES', 'REPLICAS'],
        dirs.map((d) => [d.broker, d.logDir, statusCell(d.errorCode), d.totalBytes, d.usableBytes, d.replicas.length]),
      ),
      '',
      renderTable(
        ['BROKER', 'LOG DIR', 'TOPIC', 'PARTITION', 'SIZE', 'OFFSET LAG'],
        dirs.flatMap((d) => d.replicas.map((r) => [d.broker, d.logDir, r.topic, r.partition, r.size, r.offsetLag])),
      ),
    ].join('\n'),
  );
  const failures = dirs
    .filter((d) => d.errorCode !== 0)
    .map((d) => itemError('DescribeLogDirs', String(d.broker), `log dir ${d.logDir}`, d.errorCode, null));
  return reportFailures(failures);
}
