/**
 * DescribeLogDirs (key 35) v0-v4 (KIP-113; v4 adds each dir's total and usable bytes, KIP-827): every
 * log dir of this broker with the replicas it holds, as Kafka's ReplicaManager.describeLogDirs answers:
 * - `topics` null asks for every replica; otherwise only the listed partitions this broker holds
 *   (one it does not hold, or an unknown topic, is left out, and so is a topic left with none);
 * - partitionSize: the bytes of the partition's segment files (`.log`, not the indexes);
 * - offsetLag: max(0, highWatermark - logEndOffset) for a current replica, so 0 here (gregor has no
 *   future replicas: AlterReplicaLogDirs is not supported) and isFutureKey false;
 * - a dir whose file system cannot be read answers KAFKA_STORAGE_ERROR and no topics.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type {
  DescribeLogDirsRequest,
  DescribeLogDirsResponse,
  DescribeLogDirsResponseDescribeLogDirsResult,
  DescribeLogDirsResponseDescribeLogDirsTopic,
} from '../../protocol/generated/describe-log-dirs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { BrokerServices } from '../services.js';
import { AclOperation, clusterAllowed } from '../security/acl/checks.js';
import { defineHandler } from './types.js';

/** Bytes of the `.log` files in a partition directory (a log not opened yet, or not recovered). */
async function segmentBytesOnDisk(dir: string): Promise<number> {
  let n = 0;
  for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
    if (!name.endsWith('.log')) continue;
    n += await fsp.stat(path.join(dir, name)).then(
      (st) => st.size,
      () => 0,
    );
  }
  return n;
}

async function partitionSize(log: PartitionLog): Promise<bigint> {
  return BigInt(log.servable ? log.size : await segmentBytesOnDisk(log.dir));
}

function offsetLag(log: PartitionLog): bigint {
  if (!log.servable) return 0n;
  const lag = log.highWatermark - log.logEndOffset;
  return lag > 0n ? lag : 0n;
}

async function describeDir(
  s: BrokerServices,
  dir: string,
  partitions: readonly { topic: string; partition: number }[],
  wanted: ((topic: string, partition: number) => boolean) | null,
): Promise<DescribeLogDirsResponseDescribeLogDirsResult> {
  let totalBytes: bigint;
  let usableBytes: bigint;
  try {
    const st = await fsp.statfs(dir, { bigint: true });
    totalBytes = st.blocks * st.bsize;
    usableBytes = st.bavail * st.bsize;
  } catch (err) {
    s.logger.warn({ err, dir }, 'DescribeLogDirs: the log dir cannot be read');
    return { errorCode: ErrorCode.KAFKA_STORAGE_ERROR, logDir: dir, topics: [], totalBytes: -1n, usableBytes: -1n };
  }
  const byTopic = new Map<string, DescribeLogDirsResponseDescribeLogDirsTopic>();
  const sorted = [...partitions].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  for (const { topic, partition } of sorted) {
    if (wanted !== null && !wanted(topic, partition)) continue;
    const log = s.logManager.get(topic, partition);
    if (log === undefined || s.metadata.topic(topic) === undefined) continue; // not a replica this broker serves
    let t = byTopic.get(topic);
    if (t === undefined) byTopic.set(topic, (t = { name: topic, partitions: [] }));
    t.partitions.push({
      partitionIndex: partition,
      partitionSize: await partitionSize(log),
      offsetLag: offsetLag(log),
      isFutureKey: false,
    });
  }
  return { errorCode: ErrorCode.NONE, logDir: dir, topics: [...byTopic.values()], totalBytes, usableBytes };
}

export const describeLogDirsHandler = defineHandler<DescribeLogDirsRequest, DescribeLogDirsResponse>({
  apiKey: ApiKey.DescribeLogDirs,
  minVersion: 0,
  maxVersion: 4,
  async handle(req, ctx) {
    const s = ctx.services;
    if (!clusterAllowed(ctx, AclOperation.DESCRIBE)) return this.errorResponse(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx);
    let wanted: ((topic: string, partition: number) => boolean) | null = null;
    if (req.topics !== null) {
      const asked = new Set(req.topics.flatMap((t) => t.partitions.map((p) => `${t.topic}\u0000${p}`)));
      wanted = (topic, partition) => asked.has(`${topic}\u0000${partition}`);
    }
    const results: DescribeLogDirsResponseDescribeLogDirsResult[] = [];
    for (const [dir, partitions] of s.logManager.partitionsByDir()) results.push(await describeDir(s, dir, partitions, wanted));
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, results };
  },
  errorResponse(_req, errorCode) {
    return { throttleTimeMs: 0, errorCode, results: [] };
  },
});
