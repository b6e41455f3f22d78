/**
 * Durable share-partition state in `__share_group_state`, as Kafka's share coordinator keeps it: per
 * (group, topic id, partition) a ShareSnapshot record (start offset and every in-flight state batch)
 * followed by ShareUpdate records holding only what changed (the start offset and the state batches
 * of the changed offset ranges), with a new snapshot every
 * `share.coordinator.snapshot.update.records.per.snapshot` updates. ACQUIRED records are written as
 * AVAILABLE: after a restart their locks are gone. Writes are coalesced per share partition; an
 * acknowledgement is answered only once the record holding it is written. Replayed at start (snapshot,
 * then its updates; see state-records.ts).
 *
 * The topic is created with `cleanup.policy=delete` and no retention, as Kafka creates it (compaction
 * would keep only the last update of a share partition): records below the oldest latest snapshot of
 * the share partitions a topic partition holds are pruned (DeleteRecords) after each snapshot.
 */
import type { Logger } from 'pino';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { partitionFor } from '../group/records.js';
import { InternalTopicOnFirstUse } from '../internal-topic.js';
import { replayBatches } from '../log/replay.js';
import type { MetadataStore } from '../metadata/store.js';
import type { TopicManager } from '../topics.js';
import { AppendOrigin } from '../txn/producer-state.js';
import type { SharePartition } from './share-partition.js';
import { readStateKey, type ShareSnapshot, snapshotValue, StateRecordType, StateReplay, stateKey, updateValue } from './state-records.js';

export const SHARE_STATE_TOPIC = '__share_group_state';

interface Pending {
  /** the state epoch the last finished write held */
  written: number;
  running: Promise<void> | null;
  /** updates written since the last snapshot */
  updates: number;
  /** snapshots written (the SnapshotEpoch of the updates that follow one) */
  snapshotEpoch: number;
}

export interface ShareStateStoreOptions {
  numPartitions: number;
  /** share.coordinator.snapshot.update.records.per.snapshot */
  updatesPerSnapshot: number;
  /** how long a change no request waits for may wait for the next one (one write for both) */
  lingerMs: number;
}

const keyOf = (groupId: string, topicId: string, partition: number): string => `${groupId}\0${topicId}\0${partition}`;

export class ShareStateStore {
  private readonly topic: InternalTopicOnFirstUse;
  private readonly pending = new Map<SharePartition, Pending>();
  private readonly scheduled = new Set<SharePartition>();
  /** per state-topic partition: the offset of each share partition's latest snapshot (what pruning may not pass) */
  private readonly snapshots = new Map<number, Map<string, bigint>>();

  constructor(
    private readonly topics: TopicManager,
    private readonly metadata: MetadataStore,
    private readonly opts: ShareStateStoreOptions,
    private readonly logger: Logger,
  ) {
    this.topic = new InternalTopicOnFirstUse({
      name: SHARE_STATE_TOPIC,
      create: async () => {
        if (this.metadata.topic(SHARE_STATE_TOPIC) === undefined) {
          await this.topics.create(
            {
              name: SHARE_STATE_TOPIC,
              numPartitions: this.opts.numPartitions,
              replicationFactor: 1,
              configs: { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'retention.bytes': '-1' },
            },
            { internal: true },
          );
        }
        await this.topics.ready(SHARE_STATE_TOPIC);
      },
      logger,
      errorCode: 'GREGOR_ERR_SHARE_STATE_TOPIC',
    });
  }

  /** The state of every share partition the topic holds, when it exists. */
  async load(): Promise<ShareSnapshot[]> {
    const t = this.metadata.topic(SHARE_STATE_TOPIC);
    if (t === undefined) return [];
    await this.topics.openPartitions(
      SHARE_STATE_TOPIC,
      Array.from({ length: t.partitions }, (_, p) => p),
    );
    this.topic.markReady();
    const replay = new StateReplay();
    for (let p = 0; p < t.partitions; p++) {
      const log = this.topics.partition(SHARE_STATE_TOPIC, p);
      if (log === undefined) continue;
      await replayBatches(log, (batch) => {
        for (const rec of batch.records({ maxOutput: 1 << 26 })) {
          if (rec.key === null) continue;
          replay.apply(rec.key, rec.value);
          const k = readStateKey(rec.key);
          if (k.type === StateRecordType.SHARE_SNAPSHOT)
            this.noteSnapshot(p, keyOf(k.groupId, k.topicId, k.partition), rec.value, batch.baseOffset);
        }
      });
    }
    return replay.result();
  }

  /**
   * A change no one waits for (a release, a lock expiry): written within `lingerMs`, together with what
   * follows it (Kafka's share.coordinator.append.linger.ms), unless a waiter forces it sooner.
   */
  schedule(sp: SharePartition): void {
    if (this.scheduled.has(sp)) return;
    this.scheduled.add(sp);
    const t = setTimeout(() => {
      this.scheduled.delete(sp);
      void this.persist(sp);
    }, this.opts.lingerMs);
    t.unref();
  }

  /** Writes the partition's state unless its current state epoch is already written; resolves once it is. */
  persist(sp: SharePartition): Promise<void> {
    let p = this.pending.get(sp);
    if (p === undefined) this.pending.set(sp, (p = { written: -1, running: null, updates: 0, snapshotEpoch: 0 }));
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
      const p = await this.append(StateRecordType.SHARE_SNAPSHOT, sp, null);
      this.snapshots.get(p.partition)?.delete(keyOf(sp.groupId, sp.topicId, sp.partition));
    }
  }

  private async writeLoop(sp: SharePartition, p: Pending): Promise<void> {
    try {
      do {
        const epoch = sp.stateEpoch;
        const changes = sp.takeChanges();
        const snapshot = changes === null || p.updates >= this.opts.updatesPerSnapshot;
        try {
          if (snapshot) {
            const value = snapshotValue({ stateEpoch: epoch, startOffset: sp.startOffset, batches: sp.stateBatches() });
            const at = await this.append(StateRecordType.SHARE_SNAPSHOT, sp, value);
            p.updates = 0;
            p.snapshotEpoch++;
            this.noteSnapshot(at.partition, keyOf(sp.groupId, sp.topicId, sp.partition), value, at.offset);
            this.prune(at.partition);
          } else {
            await this.append(StateRecordType.SHARE_UPDATE, sp, updateValue(p.snapshotEpoch, sp.startOffset, changes));
            p.updates++;
          }
        } catch (err) {
          sp.needSnapshot(); // what this write held is not on disk: the next one writes everything
          throw err;
        }
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

  private noteSnapshot(statePartition: number, key: string, value: Buffer | null, offset: bigint): void {
    let m = this.snapshots.get(statePartition);
    if (m === undefined) this.snapshots.set(statePartition, (m = new Map<string, bigint>()));
    if (value === null) m.delete(key);
    else m.set(key, offset);
  }

  /** Deletes the records of a state partition no share partition's replay needs (below every latest snapshot). */
  private prune(statePartition: number): void {
    const m = this.snapshots.get(statePartition);
    const log = this.topics.partition(SHARE_STATE_TOPIC, statePartition);
    if (m === undefined || log === undefined || !log.isOpen) return;
    let min: bigint | undefined;
    for (const o of m.values()) if (min === undefined || o < min) min = o;
    if (min === undefined || min <= log.logStartOffset || min > log.highWatermark) return;
    try {
      log.deleteRecordsBefore(min);
    } catch (err) {
      this.logger.warn({ err, partition: statePartition }, 'GREGOR_ERR_SHARE_STATE_PRUNE: old share-partition state not pruned');
    }
  }

  private async append(
    type: StateRecordType,
    sp: Pick<SharePartition, 'groupId' | 'topicId' | 'partition'>,
    value: Buffer | null,
  ): Promise<{ partition: number; offset: bigint }> {
    await this.topic.ensure();
    const t = this.metadata.topic(SHARE_STATE_TOPIC);
    const p = partitionFor(`${sp.groupId}:${sp.topicId}:${sp.partition}`, t?.partitions ?? this.opts.numPartitions);
    const log = this.topics.partition(SHARE_STATE_TOPIC, p);
    if (log === undefined) throw new Error(`${SHARE_STATE_TOPIC}-${p} is not here`);
    if (!log.isOpen) await log.open(); // logs open on first use
    const batch = buildRecordBatch([{ key: stateKey(type, sp.groupId, sp.topicId, sp.partition), value, timestamp: BigInt(Date.now()) }]);
    const { info, written } = log.append(batch, { leaderEpoch: 0, origin: AppendOrigin.COORDINATOR });
    await written;
    return { partition: p, offset: info.firstOffset };
  }
}
