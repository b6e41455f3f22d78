/**
 * The share coordinator (KIP-932's ShareCoordinatorService): owns the `__share_group_state` partitions
 * this broker leads and the state of the share partitions they hold, keyed "group:topicId:partition"
 * (FindCoordinator key type SHARE). Partition leaders read and write that state through it
 * (ReadShareGroupState / WriteShareGroupState, or an in-process call when the state partition is local;
 * see persister.ts). As Kafka's coordinator does, a write whose state epoch is above the stored one
 * replaces the state (a ShareSnapshot record), any other write is merged as a ShareUpdate record holding
 * only what changed, with a new snapshot every `share.coordinator.snapshot.update.records.per.snapshot`
 * updates. A write is answered once its record is in the ISR (acks=all; clusters) or on disk (one
 * node); the state held in memory moves only then. Records below the oldest latest snapshot of a state
 * partition are pruned (DeleteRecords) after each snapshot. A partition gained (a leader elected) is
 * replayed first (COORDINATOR_LOAD_IN_PROGRESS meanwhile); one lost is forgotten (NOT_COORDINATOR).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { partitionFor } from '../group/records.js';
import { InternalTopicOnFirstUse } from '../internal-topic.js';
import type { PartitionLog } from '../log/partition-log.js';
import { replayBatches } from '../log/replay.js';
import { AppendOrigin } from '../txn/producer-state.js';
import type { PersistedRecordState } from './share-partition.js';
import {
  overlay,
  readStateKey,
  type ShareSnapshot,
  snapshotValue,
  StateRecordType,
  StateReplay,
  stateKey,
  updateValue,
} from './state-records.js';

export const SHARE_STATE_TOPIC = '__share_group_state';

/** What a partition leader reads back: the state epoch, start offset (-1: never written) and in-flight batches. */
export interface PersistedShareState {
  stateEpoch: number;
  leaderEpoch: number;
  startOffset: bigint;
  batches: PersistedRecordState[];
}

/** What ReadShareGroupStateSummary answers of a share partition (no in-flight records). */
export type ShareStateSummary = Omit<PersistedShareState, 'batches'>;

/** A partition leader's write: `stateEpoch` above the stored one replaces the state, otherwise `batches` are the changed ranges. */
export type ShareStateWrite = PersistedShareState;

interface Held extends PersistedShareState {
  /** ShareUpdate records since the last snapshot */
  updates: number;
  /** offset of the latest snapshot in the state partition (what pruning may not pass) */
  snapshotAt: bigint;
}

export interface StateCoordinatorDeps {
  logger: Logger;
  numPartitions: number;
  /** share.coordinator.snapshot.update.records.per.snapshot */
  updatesPerSnapshot: number;
  /** Creates the topic when missing (replicated, internal) and resolves once its logs are here. */
  createTopic(): Promise<void>;
  topicExists(): boolean;
  /** The state partition's log when this broker leads it (one node: always). */
  log(partition: number): PartitionLog | undefined;
  /** The leader epoch of the state partition, stamped on the coordinator's batches (one node: 0). */
  leaderEpoch(partition: number): number;
  /** Clusters: waits until the ISR has the partition up to `endOffset`; NONE or an error. */
  awaitCommitted?(partition: number, endOffset: bigint): Promise<number>;
  /** Wakes fetches waiting on the state partition (followers). */
  notifyAppend(partition: number, bytes: number): void;
}

export const shareStateKey = (groupId: string, topicId: string, partition: number): string => `${groupId}:${topicId}:${partition}`;

export class ShareStateCoordinator {
  private readonly topic: InternalTopicOnFirstUse;
  /** per state partition led here: the state of each share partition it holds */
  private readonly held = new Map<number, Map<string, Held>>();
  private readonly loading = new Set<number>();
  private active = true;

  constructor(private readonly deps: StateCoordinatorDeps) {
    this.topic = new InternalTopicOnFirstUse({
      name: SHARE_STATE_TOPIC,
      create: async () => {
        await deps.createTopic();
        // the partitions led here become this coordinator's (clusters: also through leadershipChanged)
        for (let p = 0; p < deps.numPartitions; p++) if (!this.held.has(p) && !this.loading.has(p)) await this.loadPartition(p);
      },
      logger: deps.logger,
      errorCode: 'GREGOR_ERR_SHARE_STATE_TOPIC',
    });
  }

  /** The state partition of a share partition (FindCoordinator key type SHARE: "group:topicId:partition"). */
  partitionFor(key: string): number {
    return partitionFor(key, this.deps.numPartitions);
  }

  /** Creates `__share_group_state` on first use: NONE once it is there, COORDINATOR_NOT_AVAILABLE when that failed. */
  ensureReady(): Promise<number> {
    return this.topic.ensure();
  }

  /** Replays every state partition led here (broker start); returns every share partition's state. */
  async load(): Promise<ShareSnapshot[]> {
    if (!this.deps.topicExists()) return [];
    this.topic.markReady();
    const out: ShareSnapshot[] = [];
    for (let p = 0; p < this.deps.numPartitions; p++) {
      if (this.deps.log(p) === undefined || this.held.has(p)) continue;
      out.push(...(await this.loadPartition(p)));
    }
    return out;
  }

  /** Clusters: this broker became (or stopped being) the leader of state partition `p`. */
  async leadershipChanged(p: number, leads: boolean): Promise<void> {
    if (!this.active) return;
    if (!leads) {
      if (this.held.delete(p)) this.deps.logger.info({ partition: p }, `resigned as share coordinator of ${SHARE_STATE_TOPIC}-${p}`);
      return;
    }
    if (this.loading.has(p)) return;
    this.topic.markReady();
    const n = (await this.loadPartition(p)).length;
    this.deps.logger.info({ partition: p, sharePartitions: n }, `elected share coordinator of ${SHARE_STATE_TOPIC}-${p}`);
  }

  /** NONE when this broker coordinates the key's state partition now. */
  status(key: string): number {
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const p = this.partitionFor(key);
    if (this.loading.has(p)) return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    if (this.deps.log(p) === undefined || !this.held.has(p)) return ErrorCode.NOT_COORDINATOR;
    return ErrorCode.NONE;
  }

  /** ReadShareGroupState of one share partition: its state (start offset -1 when none is stored). */
  read(groupId: string, topicId: string, partition: number, leaderEpoch = -1): { errorCode: number; state: PersistedShareState } {
    const key = shareStateKey(groupId, topicId, partition);
    const none = { stateEpoch: 0, leaderEpoch: -1, startOffset: -1n, batches: [] };
    const errorCode = this.status(key);
    if (errorCode !== ErrorCode.NONE) return { errorCode, state: none };
    const h = this.held.get(this.partitionFor(key))?.get(key);
    if (h === undefined) return { errorCode, state: none };
    if (leaderEpoch >= 0 && leaderEpoch < h.leaderEpoch) return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, state: none };
    // a new leader read the state: writes of an older one are fenced from now on, also after a failover
    // of this coordinator (a ShareUpdate carrying only the leader epoch, as Kafka writes one; the state
    // held here is not replaced by it, so a leader's write meanwhile is kept)
    if (leaderEpoch > h.leaderEpoch) {
      h.leaderEpoch = leaderEpoch;
      const update = updateValue(h.stateEpoch, -1n, [], leaderEpoch);
      void this.append(this.partitionFor(key), stateKey(StateRecordType.SHARE_UPDATE, groupId, topicId, partition), update).then((r) => {
        if (r.errorCode === ErrorCode.NONE) h.updates++;
      });
    }
    return {
      errorCode,
      state: { stateEpoch: h.stateEpoch, leaderEpoch: h.leaderEpoch, startOffset: h.startOffset, batches: [...h.batches] },
    };
  }

  /** WriteShareGroupState of one share partition; resolves with a Kafka error code once the record is written. */
  async write(groupId: string, topicId: string, partition: number, w: ShareStateWrite): Promise<number> {
    const key = shareStateKey(groupId, topicId, partition);
    const status = this.status(key);
    if (status !== ErrorCode.NONE) return status;
    const p = this.partitionFor(key);
    const cur = this.held.get(p)?.get(key);
    if (cur !== undefined && w.leaderEpoch >= 0 && w.leaderEpoch < cur.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH;
    if (cur !== undefined && w.stateEpoch < cur.stateEpoch) return ErrorCode.FENCED_STATE_EPOCH;
    const leaderEpoch = Math.max(w.leaderEpoch, cur?.leaderEpoch ?? -1);
    let next: PersistedShareState;
    let snapshot: boolean;
    if (cur === undefined || w.stateEpoch > cur.stateEpoch) {
      next = { stateEpoch: w.stateEpoch, leaderEpoch, startOffset: w.startOffset, batches: [...w.batches] };
      snapshot = true;
    } else {
      const startOffset = w.startOffset >= 0n ? w.startOffset : cur.startOffset;
      const kept = cur.batches.filter((b) => b.lastOffset >= startOffset);
      next = { stateEpoch: cur.stateEpoch, leaderEpoch, startOffset, batches: overlay(kept, w.batches) };
      snapshot = cur.updates >= this.deps.updatesPerSnapshot;
    }
    const value = snapshot ? snapshotValue(next) : updateValue(next.stateEpoch, w.startOffset, w.batches, leaderEpoch);
    const type = snapshot ? StateRecordType.SHARE_SNAPSHOT : StateRecordType.SHARE_UPDATE;
    const r = await this.append(p, stateKey(type, groupId, topicId, partition), value);
    if (r.errorCode !== ErrorCode.NONE) return r.errorCode;
    const m = this.held.get(p);
    if (m === undefined) return ErrorCode.NOT_COORDINATOR; // resigned meanwhile
    m.set(key, {
      ...next,
      updates: snapshot ? 0 : (cur?.updates ?? 0) + 1,
      snapshotAt: snapshot ? r.offset : (cur?.snapshotAt ?? r.offset),
    });
    if (snapshot) this.prune(p);
    return ErrorCode.NONE;
  }

  /** DeleteShareGroupState of one share partition: a tombstone; resolves with a Kafka error code. */
  async delete(groupId: string, topicId: string, partition: number): Promise<number> {
    const key = shareStateKey(groupId, topicId, partition);
    const status = this.status(key);
    if (status !== ErrorCode.NONE) return status;
    const p = this.partitionFor(key);
    const r = await this.append(p, stateKey(StateRecordType.SHARE_SNAPSHOT, groupId, topicId, partition), null);
    if (r.errorCode === ErrorCode.NONE) this.held.get(p)?.delete(key);
    return r.errorCode;
  }

  /**
   * ReadShareGroupStateSummary of one share partition (the admin's read): its state epoch, leader epoch
   * and start offset (-1 when none is stored). Unlike a leader's read it fences nothing.
   */
  readSummary(groupId: string, topicId: string, partition: number, leaderEpoch = -1): { errorCode: number; summary: ShareStateSummary } {
    const none: ShareStateSummary = { stateEpoch: 0, leaderEpoch: -1, startOffset: -1n };
    if (groupId === '' || partition < 0) return { errorCode: ErrorCode.INVALID_REQUEST, summary: none };
    const key = shareStateKey(groupId, topicId, partition);
    const errorCode = this.status(key);
    if (errorCode !== ErrorCode.NONE) return { errorCode, summary: none };
    const h = this.held.get(this.partitionFor(key))?.get(key);
    if (h === undefined) return { errorCode, summary: none };
    if (leaderEpoch >= 0 && leaderEpoch < h.leaderEpoch) return { errorCode: ErrorCode.FENCED_LEADER_EPOCH, summary: none };
    return { errorCode, summary: { stateEpoch: h.stateEpoch, leaderEpoch: h.leaderEpoch, startOffset: h.startOffset } };
  }

  /**
   * InitializeShareGroupState of one share partition (alter/reset of share-group offsets): a snapshot of
   * the new start offset (-1: from share.auto.offset.reset) and state epoch, with no in-flight records;
   * a state epoch below the stored one is FENCED_STATE_EPOCH. A partition leader still holding the
   * older epoch has its next write fenced, and reads the new state when it next takes the partition up.
   */
  async initialize(groupId: string, topicId: string, partition: number, stateEpoch: number, startOffset: bigint): Promise<number> {
    if (groupId === '' || partition < 0 || startOffset < -1n) return ErrorCode.INVALID_REQUEST;
    const key = shareStateKey(groupId, topicId, partition);
    const status = this.status(key);
    if (status !== ErrorCode.NONE) return status;
    const p = this.partitionFor(key);
    const cur = this.held.get(p)?.get(key);
    if (cur !== undefined && stateEpoch < cur.stateEpoch) return ErrorCode.FENCED_STATE_EPOCH;
    const next: PersistedShareState = { stateEpoch, leaderEpoch: cur?.leaderEpoch ?? -1, startOffset, batches: [] };
    const r = await this.append(p, stateKey(StateRecordType.SHARE_SNAPSHOT, groupId, topicId, partition), snapshotValue(next));
    if (r.errorCode !== ErrorCode.NONE) return r.errorCode;
    const m = this.held.get(p);
    if (m === undefined) return ErrorCode.NOT_COORDINATOR; // resigned meanwhile
    m.set(key, { ...next, updates: 0, snapshotAt: r.offset });
    this.prune(p);
    return ErrorCode.NONE;
  }

  shutdown(): void {
    this.active = false;
  }

  private async loadPartition(p: number): Promise<ShareSnapshot[]> {
    const log = this.deps.log(p);
    if (log === undefined) return [];
    this.loading.add(p);
    try {
      if (!log.isOpen) await log.open();
      const replay = new StateReplay();
      const meta = new Map<string, { updates: number; snapshotAt: bigint }>();
      await replayBatches(log, (batch) => {
        for (const rec of batch.records({ maxOutput: 1 << 26 })) {
          if (rec.key === null) continue;
          replay.apply(rec.key, rec.value);
          const k = readStateKey(rec.key);
          const key = shareStateKey(k.groupId, k.topicId, k.partition);
          if (k.type === StateRecordType.SHARE_SNAPSHOT) meta.set(key, { updates: 0, snapshotAt: batch.baseOffset });
          else {
            const m = meta.get(key);
            if (m !== undefined) m.updates++;
          }
        }
      });
      const held = new Map<string, Held>();
      const states = replay.result();
      for (const s of states) {
        const key = shareStateKey(s.groupId, s.topicId, s.partition);
        const m = meta.get(key) ?? { updates: 0, snapshotAt: log.logStartOffset };
        held.set(key, { stateEpoch: s.stateEpoch, leaderEpoch: s.leaderEpoch, startOffset: s.startOffset, batches: s.batches, ...m });
      }
      if (this.deps.log(p) !== undefined) this.held.set(p, held); // still the leader
      return states;
    } catch (err) {
      this.deps.logger.error({ err, partition: p }, `GREGOR_ERR_SHARE_STATE_LOAD: failed to load ${SHARE_STATE_TOPIC}-${p}`);
      return [];
    } finally {
      this.loading.delete(p);
    }
  }

  private async append(p: number, key: Buffer, value: Buffer | null): Promise<{ errorCode: number; offset: bigint }> {
    const log = this.deps.log(p);
    if (log === undefined) return { errorCode: ErrorCode.NOT_COORDINATOR, offset: -1n };
    try {
      if (!log.isOpen) await log.open(); // logs open on first use
      const batch = buildRecordBatch([{ key, value, timestamp: BigInt(Date.now()) }]);
      const { info, written } = log.append(batch, { leaderEpoch: this.deps.leaderEpoch(p), origin: AppendOrigin.COORDINATOR });
      await written;
      this.deps.notifyAppend(p, batch.length);
      const errorCode = (await this.deps.awaitCommitted?.(p, info.lastOffset + 1n)) ?? ErrorCode.NONE;
      return { errorCode: errorCode === ErrorCode.NONE ? errorCode : storeError(errorCode), offset: info.firstOffset };
    } catch (err) {
      this.deps.logger.warn({ err, partition: p }, 'GREGOR_ERR_SHARE_STATE_WRITE: share-partition state not written');
      return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, offset: -1n };
    }
  }

  /** Deletes the records of a state partition no share partition's replay needs (below every latest snapshot). */
  private prune(p: number): void {
    const m = this.held.get(p);
    const log = this.deps.log(p);
    if (m === undefined || log === undefined || !log.isOpen) return;
    let min: bigint | undefined;
    for (const h of m.values()) if (min === undefined || h.snapshotAt < min) min = h.snapshotAt;
    if (min === undefined || min <= log.logStartOffset || min > log.highWatermark) return;
    try {
      log.deleteRecordsBefore(min);
    } catch (err) {
      this.deps.logger.warn({ err, partition: p }, 'GREGOR_ERR_SHARE_STATE_PRUNE: old share-partition state not pruned');
    }
  }
}

/** Kafka's mapping of a failed state append to what a share-state request answers. */
function storeError(errorCode: number): number {
  switch (errorCode) {
    case ErrorCode.NOT_LEADER_OR_FOLLOWER:
      return ErrorCode.NOT_COORDINATOR;
    case ErrorCode.NOT_ENOUGH_REPLICAS:
    case ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case ErrorCode.REQUEST_TIMED_OUT:
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    default:
      return errorCode;
  }
}
