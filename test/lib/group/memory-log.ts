/** An in-memory stand-in for a partition log, and a coordinator wired to it, for group unit tests. */
import type { Logger } from 'pino';
import { RecordBatch } from '../../../protocol/records/index.js';
import { BrokerConfig, type ConfigValue } from '../../../lib/config.js';
import { GroupCoordinator } from '../../../lib/group/coordinator.js';
import type { OffsetsLog } from '../../../lib/group/loader.js';
import { silentLogger } from '../../../lib/observability/logger.js';
import { Purgatory } from '../../../lib/replica/purgatory.js';

export class MemoryLog implements OffsetsLog {
  readonly batches: Buffer[] = [];
  logStartOffset = 0n;
  logEndOffset = 0n;
  /** When set, appends fail with this error. */
  failWith: Error | null = null;
  readonly isOpen = true;

  open(): Promise<void> {
    return Promise.resolve();
  }

  append(records: Buffer): { info: { firstOffset: bigint; lastOffset: bigint }; written: Promise<void> } {
    if (this.failWith !== null) throw this.failWith;
    const copy = Buffer.from(records);
    const b = RecordBatch.at(copy);
    const firstOffset = this.logEndOffset;
    b.setBaseOffset(firstOffset);
    this.logEndOffset = b.nextOffset;
    this.batches.push(copy);
    return { info: { firstOffset, lastOffset: b.nextOffset - 1n }, written: Promise.resolve() };
  }

  read(fetchOffset: bigint): Promise<{ records: Buffer[] }> {
    return Promise.resolve({ records: this.batches.filter((b) => RecordBatch.at(b).nextOffset > fetchOffset) });
  }
}

export interface TestCoordinator {
  coordinator: GroupCoordinator;
  logs: MemoryLog[];
  purgatory: Purgatory;
  topics: Map<string, { topicId: string; partitions: number }>;
}

export function testCoordinator(
  config: Record<string, string | ConfigValue> = {},
  opts: { logs?: MemoryLog[]; topics?: Map<string, { topicId: string; partitions: number }>; logger?: Logger } = {},
): TestCoordinator {
  const cfg = new BrokerConfig({ overrides: { 'offsets.topic.num.partitions': 4, 'group.initial.rebalance.delay.ms': 0, ...config } });
  const n = cfg.int('offsets.topic.num.partitions');
  const logs = opts.logs ?? Array.from({ length: n }, () => new MemoryLog());
  const topics = opts.topics ?? new Map([['t', { topicId: 'a'.repeat(32), partitions: 6 }]]);
  const purgatory = new Purgatory();
  const coordinator = new GroupCoordinator({
    config: cfg,
    logger: opts.logger ?? silentLogger(),
    purgatory,
    offsetsTopicExists: () => true, // the memory logs stand for an existing __consumer_offsets
    ensureOffsetsTopic: async () => {},
    offsetsLog: (p) => logs[p],
    topicByName: (name) => topics.get(name),
    topicName: (id) => [...topics].find(([, t]) => t.topicId === id)?.[0],
    topicNames: () => topics.keys(),
    notifyAppend: () => {},
  });
  return { coordinator, logs, purgatory, topics };
}
