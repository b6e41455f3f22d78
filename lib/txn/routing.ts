/**
 * Where a transactional id is coordinated, and whether this broker can serve it now (the routing
 * half of Kafka's TransactionStateManager): the id's `__transaction_state` partition, that topic
 * created on first use, the replay of the partitions this broker leads (all of them on one node; in
 * a cluster, those the controller moves here, while those it moves away are forgotten), and the
 * KIP-890 check of a write whose id another broker coordinates (sent there through
 * inter-broker.ts). What happens to a transaction is the coordinator's (coordinator.ts).
 */
import { InternalTopicOnFirstUse } from '../internal-topic.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { partitionFor } from '../group/records.js';
import type { TxnCoordinatorDeps } from './coordinator.js';
import { replayTxnLog, TRANSACTION_STATE_TOPIC, type TxnMetadata } from './txn-metadata.js';

/** What the routing asks of the coordinator it serves. */
export interface TxnRoutingHooks {
  /** The id → metadata map the state partitions are replayed into. */
  readonly txns: Map<string, TxnMetadata>;
  now(): number;
  /** The coordinator's own KIP-890 check of a transactional write. */
  verify(transactionalId: string, producerId: bigint, producerEpoch: number, topic: string, partition: number): number;
  /** State partition `p` (undefined: every partition, at start) is replayed: finish its prepared transactions. */
  loaded(p: number | undefined): void;
}

export class TxnRouting {
  readonly numPartitions: number;
  readonly verification: boolean;
  private readonly loading = new Set<number>();
  private active = false;
  /** `__transaction_state`, created on first use */
  private readonly stateTopic: InternalTopicOnFirstUse;
  private loadedAll: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: TxnCoordinatorDeps,
    private readonly hooks: TxnRoutingHooks,
  ) {
    this.numPartitions = deps.config.int('transaction.state.log.num.partitions');
    this.verification = deps.config.bool('transaction.partition.verification.enable');
    this.stateTopic = new InternalTopicOnFirstUse({
      name: TRANSACTION_STATE_TOPIC,
      create: async () => {
        await deps.ensureStateTopic(this.numPartitions);
        // clusters: the topic may have been made by another broker, and leadership of some of its
        // partitions reached this one before it was ready here: load those now (before it is ready)
        if (deps.leads !== undefined && this.active)
          for (let p = 0; p < this.numPartitions; p++) if (deps.leads(p) && !this.loading.has(p)) void this.loadPartition(p);
      },
      logger: deps.logger,
      errorCode: 'GREGOR_ERR_TXN_TOPIC',
    });
  }

  get isActive(): boolean {
    return this.active;
  }

  /** Some `__transaction_state` partition is still being replayed. */
  get isLoading(): boolean {
    return this.loading.size > 0;
  }

  /** Loads `__transaction_state` when it exists (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS). */
  async start(): Promise<void> {
    this.active = true;
    if (this.deps.stateTopicExists()) {
      await this.deps.ensureStateTopic(this.numPartitions);
      for (let p = 0; p < this.numPartitions; p++) this.loading.add(p);
      this.stateTopic.markReady();
      this.loadedAll = this.loadAll();
    }
  }

  stop(): void {
    this.active = false;
  }

  whenLoaded(): Promise<void> {
    return this.loadedAll;
  }

  /**
   * Creates `__transaction_state` on first use (FindCoordinator for a transactional id, or
   * InitProducerId with one). NONE once it is there, COORDINATOR_NOT_AVAILABLE when that failed.
   */
  async ensureReady(): Promise<number> {
    if (!this.active) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    return this.stateTopic.ensure();
  }

  partitionFor(transactionalId: string): number {
    return partitionFor(transactionalId, this.numPartitions);
  }

  /** NONE when this coordinator can serve the id now. */
  status(transactionalId: string): number {
    if (!this.active || !this.stateTopic.isReady) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    const p = this.partitionFor(transactionalId);
    if (this.deps.leads !== undefined && !this.deps.leads(p)) return ErrorCode.NOT_COORDINATOR;
    if (this.loading.has(p)) return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS;
    return ErrorCode.NONE;
  }

  /** The epoch markers carry: the state partition's (clusters: its leader epoch, Kafka's coordinator epoch). */
  coordinatorEpoch(transactionalId: string): number {
    const p = this.partitionFor(transactionalId);
    return Math.max(0, this.deps.stateLog(p)?.latestEpoch ?? 0, this.deps.leaderEpoch?.(TRANSACTION_STATE_TOPIC, p) ?? 0);
  }

  /**
   * Clusters: this broker became (or stopped being) the leader of state partition `p`: replay it and
   * finish what its prepared transactions decided, or forget its transactional ids.
   */
  async leadershipChanged(p: number, leads: boolean): Promise<void> {
    if (!this.active) return;
    if (!this.stateTopic.isReady) {
      // made by another broker and never used here yet: getting ready loads what this broker leads
      if (leads && this.deps.stateTopicExists()) await this.ensureReady();
      return;
    }
    if (!leads) {
      for (const id of [...this.hooks.txns.keys()]) if (this.partitionFor(id) === p) this.hooks.txns.delete(id);
      return;
    }
    await this.loadPartition(p);
  }

  /**
   * `verify` for the partition leader's side of a transactional write (Produce, TxnOffsetCommit). In
   * a cluster, a transactional id another broker coordinates is checked there (AddPartitionsToTxn
   * v4 verifyOnly, as Kafka's AddPartitionsToTxnManager does), unless `ongoingHere` (the partition
   * already holds this producer's open transaction, which Kafka does not verify again). That
   * coordinator moving or not answering is COORDINATOR_NOT_AVAILABLE (callers map it to their
   * API's retriable error). Synchronous on one node.
   */
  verifyForWrite(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    topic: string,
    partition: number,
    ongoingHere: () => boolean,
  ): number | Promise<number> {
    const d = this.deps;
    if (!this.verification || d.remoteVerify === undefined || d.leads === undefined || d.leads(this.partitionFor(transactionalId)))
      return this.hooks.verify(transactionalId, producerId, producerEpoch, topic, partition);
    if (ongoingHere()) return ErrorCode.NONE;
    return d.remoteVerify({ transactionalId, producerId, producerEpoch, topic, partition }).then((code) => {
      return code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        ? ErrorCode.COORDINATOR_NOT_AVAILABLE
        : code;
    });
  }

  /** Replays one state partition into the coordinator's map; a failure is logged (the partition then serves what it got). */
  private async replay(p: number): Promise<void> {
    try {
      const log = this.deps.stateLog(p);
      if (log !== undefined) await replayTxnLog(log, this.hooks.txns);
    } catch (err) {
      this.deps.logger.error({ err, partition: p, code: 'GREGOR_ERR_TXN_LOAD' }, `failed to load ${TRANSACTION_STATE_TOPIC}-${p}`);
    } finally {
      this.loading.delete(p);
    }
  }

  private async loadAll(): Promise<void> {
    const started = this.hooks.now();
    for (let p = 0; p < this.numPartitions; p++) {
      await this.replay(p);
      if (!this.active) return;
    }
    this.deps.logger.info({ transactionalIds: this.hooks.txns.size, ms: this.hooks.now() - started }, 'transaction coordinator loaded');
    await this.deps.groupsLoaded();
    // a crash between prepare and complete: finish what was decided
    this.hooks.loaded(undefined);
  }

  /** Replays state partition `p` (its ids answer COORDINATOR_LOAD_IN_PROGRESS meanwhile) and finishes its prepared transactions. */
  private async loadPartition(p: number): Promise<void> {
    if (this.loading.has(p)) return;
    this.loading.add(p);
    await this.replay(p);
    this.hooks.loaded(p);
  }
}
