/**
 * Durable share-partition state in `__share_group_state` (compacted, created on first use), as
 * Kafka's share coordinator keeps it: one ShareSnapshot record per (group, topic id, partition) with
 * the start offset and the in-flight records as state batches (AVAILABLE with their delivery counts,
 * ACKNOWLEDGED, ARCHIVED; ACQUIRED ones are written as AVAILABLE: after a restart their locks are
 * gone). Writes are coalesced per share partition; an acknowledgement is answered only once the
 * snapshot holding it is written. Replayed at start: the last snapshot of each key wins.
 *
 * Record layouts (KIP-932's share-coordinator schemas, written by hand): key = int16 record type 0
 * (ShareSnapshot), GroupId (int16-length string), TopicId (16 bytes), Partition (int32); value =
 * int16 version 0, then flexible: SnapshotEpoch (uint16), StateEpoch (int32), LeaderEpoch (int32),
 * StartOffset (int64), StateBatches (compact array of FirstOffset int64, LastOffset int64,
 * DeliveryState int8, DeliveryCount int16, empty tags), empty tags. A null value is a tombstone.
 */
import type { Logger } from 'pino';
import { Reader } from '../../protocol/codec/reader.js';
import { sizeUvarint, Writer } from '../../protocol/codec/writer.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { partitionFor } from '../group/records.js';
import { InternalTopicOnFirstUse } from '../internal-topic.js';
import { replayBatches } from '../log/replay.js';
import type { MetadataStore } from '../metadata/store.js';
import type { TopicManager } from '../topics.js';
import { AppendOrigin } from '../txn/producer-state.js';
import type { PersistedRecordState, SharePartition } from './share-partition.js';

export const SHARE_STATE_TOPIC = '__share_group_state';
const SHARE_SNAPSHOT = 0;

export interface ShareSnapshot {
  groupId: string;
  topicId: string;
  partition: number;
  stateEpoch: number;
  startOffset: bigint;
  batches: PersistedRecordState[];
}

export function snapshotKey(groupId: string, topicId: string, partition: number): Buffer {
  const w = Writer.alloc(2 + 2 + Buffer.byteLength(groupId) + 16 + 4);
  w.int16(SHARE_SNAPSHOT);
  w.string(groupId);
  w.uuid(topicId);
  w.int32(partition);
  return w.done();
}

export function snapshotValue(s: ShareSnapshot): Buffer {
  const n = s.batches.length;
  const w = Writer.alloc(2 + 2 + 4 + 4 + 8 + sizeUvarint(n + 1) + n * (8 + 8 + 1 + 2 + 1) + 1);
  w.int16(0);
  w.uint16(s.stateEpoch & 0xffff);
  w.int32(s.stateEpoch);
  w.int32(0);
  w.int64(s.startOffset);
  w.compactArrayLength(s.batches.length);
  for (const b of s.batches) {
    w.int64(b.firstOffset);
    w.int64(b.lastOffset);
    w.int8(b.state);
    w.int16(b.deliveryCount);
    w.taggedFields([]);
  }
  w.taggedFields([]);
  return w.done();
}

/** The snapshot a record holds (null: a tombstone), or undefined for another record type. */
export function readSnapshot(key: Buffer, value: Buffer | null): ShareSnapshot | null | undefined {
  const k = new Reader(key);
  if (k.int16() !== SHARE_SNAPSHOT) return undefined;
  const groupId = k.string();
  const topicId = k.uuid();
  const partition = k.int32();
  if (value === null) return null;
  const r = new Reader(value);
  r.int16();
  r.uint16();
  const stateEpoch = r.int32();
  r.int32();
  const startOffset = r.int64();
  const n = r.compactArrayLength();
  const batches: PersistedRecordState[] = [];
  for (let i = 0; i < n; i++) {
    const firstOffset = r.int64();
    const lastOffset = r.int64();
    const state = r.int8();
    const deliveryCount = r.int16();
    r.taggedFields();
    batches.push({ firstOffset, lastOffset, state, deliveryCount });
  }
  return { groupId, topicId, partition, stateEpoch, startOffset, batches };
}

interface Pending {
  /** the state epoch the last finished write held */
  written: number;
  running: Promise<void> | null;
}

export class ShareStateStore {
  private readonly topic: InternalTopicOnFirstUse;
  private readonly pending = new Map<SharePartition, Pending>();

  constructor(
    private readonly topics: TopicManager,
    private readonly metadata: MetadataStore,
    private readonly numPartitions: number,
    private readonly logger: Logger,
  ) {
    this.topic = new InternalTopicOnFirstUse({
      name: SHARE_STATE_TOPIC,
      create: async () => {
        if (this.metadata.topic(SHARE_STATE_TOPIC) === undefined) {
          await this.topics.create(
            { name: SHARE_STATE_TOPIC, numPartitions: this.numPartitions, replicationFactor: 1, configs: { 'cleanup.policy': 'compact' } },
            { internal: true },
          );
        }
        await this.topics.ready(SHARE_STATE_TOPIC);
      },
      logger,
      errorCode: 'GREGOR_ERR_SHARE_STATE_TOPIC',
    });
  }

  /** Every snapshot in the topic (the last of each key), when it exists. */
  async load(): Promise<ShareSnapshot[]> {
    const t = this.metadata.topic(SHARE_STATE_TOPIC);
    if (t === undefined) return [];
    await this.topics.openPartitions(
      SHARE_STATE_TOPIC,
      Array.from({ length: t.partitions }, (_, p) => p),
    );
    this.topic.markReady();
    const last = new Map<string, ShareSnapshot | null>();
    for (let p = 0; p < t.partitions; p++) {
      const log = this.topics.partition(SHARE_STATE_TOPIC, p);
      if (log === undefined) continue;
      await replayBatches(log, (batch) => {
        for (const rec of batch.records({ maxOutput: 1 << 26 })) {
          if (rec.key === null) continue;
          const s = readSnapshot(rec.key, rec.value);
          if (s === undefined) continue;
          const k = new Reader(rec.key);
          k.int16();
          last.set(`${k.string()}\0${k.uuid()}\0${k.int32()}`, s);
        }
      });
    }
    return [...last.values()].filter((s): s is ShareSnapshot => s !== null);
  }

  /** Writes the partition's state unless its current state epoch is already written; resolves once it is. */
  persist(sp: SharePartition): Promise<void> {
    let p = this.pending.get(sp);
    if (p === undefined) this.pending.set(sp, (p = { written: -1, running: null }));
    if (p.written >= sp.stateEpoch && p.running === null) return Promise.resolve();
    if (p.running !== null) {
      const current = p;
      return p.running.then(() => (current.written >= sp.stateEpoch ? undefined : this.persist(sp)));
    }
    const run = this.writeLoop(sp, p);
    p.running = run;
    return run;
  }

  /** Tombstones of a deleted group's share partitions. */
  async forget(sps: readonly SharePartition[]): Promise<void> {
    for (const sp of sps) {
      this.pending.delete(sp);
      await this.append(sp.groupId, sp.topicId, sp.partition, null);
    }
  }

  private async writeLoop(sp: SharePartition, p: Pending): Promise<void> {
    try {
      do {
        const epoch = sp.stateEpoch;
        const value = snapshotValue({
          groupId: sp.groupId,
          topicId: sp.topicId,
          partition: sp.partition,
          stateEpoch: epoch,
          startOffset: sp.startOffset,
          batches: sp.stateBatches(),
        });
        await this.append(sp.groupId, sp.topicId, sp.partition, value);
        p.written = epoch;
      } while (p.written < sp.stateEpoch); // changed while it was written: once more
    } catch (err) {
      this.logger.warn(
        { err, group: sp.groupId, partition: sp.partition },
        'GREGOR_ERR_SHARE_STATE_WRITE: share-partition state not written',
      );
    } finally {
      p.running = null;
    }
  }

  private async append(groupId: string, topicId: string, partition: number, value: Buffer | null): Promise<void> {
    await this.topic.ensure();
    const t = this.metadata.topic(SHARE_STATE_TOPIC);
    const p = partitionFor(`${groupId}:${topicId}:${partition}`, t?.partitions ?? this.numPartitions);
    const log = this.topics.partition(SHARE_STATE_TOPIC, p);
    if (log === undefined) throw new Error(`${SHARE_STATE_TOPIC}-${p} is not here`);
    if (!log.isOpen) await log.open(); // logs open on first use
    const batch = buildRecordBatch([{ key: snapshotKey(groupId, topicId, partition), value, timestamp: BigInt(Date.now()) }]);
    const { written } = log.append(batch, { leaderEpoch: 0, origin: AppendOrigin.COORDINATOR });
    await written;
  }
}
