/** DescribeLogDirs against every broker (or some): what `gregor log-dirs` prints (Kafka's kafka-log-dirs --describe). */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeLogDirsRequest, DescribeLogDirsResponse } from '../../protocol/generated/describe-log-dirs.js';
import type { KafkaClient } from './client.js';

export interface LogDirReplica {
  topic: string;
  partition: number;
  /** Bytes of the replica's segment files. */
  size: bigint;
  offsetLag: bigint;
  isFuture: boolean;
}

export interface BrokerLogDir {
  broker: number;
  logDir: string;
  /** The dir's error (KAFKA_STORAGE_ERROR for an offline dir), 0 when none. */
  errorCode: number;
  /** Size and free space of the dir's file system (null before DescribeLogDirs v4). */
  totalBytes: bigint | null;
  usableBytes: bigint | null;
  replicas: LogDirReplica[];
}

/**
 * The log dirs of `brokers` (every broker when null) with their replicas of `topics` (every topic
 * when null; a topic's partitions are looked up first). Sorted by broker, then as each broker lists them.
 */
export async function describeLogDirs(
  client: KafkaClient,
  topics: readonly string[] | null,
  brokers: readonly number[] | null = null,
): Promise<BrokerLogDir[]> {
  let asked: DescribeLogDirsRequest['topics'] = null;
  if (topics !== null) {
    asked = [];
    for (const name of topics) asked.push({ topic: name, partitions: (await client.topic(name)).partitions.map((p) => p.partition) });
  }
  if (client.brokers.size === 0) await client.metadata([]);
  const ids = brokers ?? [...client.brokers.keys()].sort((a, b) => a - b);
  const perBroker = await Promise.all(
    ids.map(async (broker) => {
      const c = await client.node(broker);
      const res = await c.request<DescribeLogDirsResponse>(ApiKey.DescribeLogDirs, () => ({ topics: asked }));
      c.check(res.body.errorCode ?? 0, ApiKey.DescribeLogDirs);
      return res.body.results.map((r): BrokerLogDir => ({
        broker,
        logDir: r.logDir,
        errorCode: r.errorCode,
        totalBytes: r.totalBytes === undefined || r.totalBytes < 0n ? null : r.totalBytes,
        usableBytes: r.usableBytes === undefined || r.usableBytes < 0n ? null : r.usableBytes,
        replicas: r.topics.flatMap((t) =>
          t.partitions.map((p) => ({
            topic: t.name,
            partition: p.partitionIndex,
            size: p.partitionSize,
            offsetLag: p.offsetLag,
            isFuture: p.isFutureKey,
          })),
        ),
      }));
    }),
  );
  return perBroker.flat();
}
