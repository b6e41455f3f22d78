/**
 * The transaction coordinator of this node (Kafka's TransactionCoordinator + TransactionStateManager):
 * one TxnMetadata per transactional id, persisted on `__transaction_state` (partition = Java hash of
 * the id) before each answer, replayed at start. EndTxn is carried out before it is answered:
 * Prepare* is written, the markers go to every partition of the transaction, then Complete* is
 * written. A transaction found in Prepare* at load is finished the same way; an Ongoing one past
 * its timeout is fenced (epoch + 1) and aborted.
 */
import type { Logger } from 'pino';
import { TxnMarkerWriter } from './markers.js';
import type { RemoteMarker, RemoteVerification } from './inter-broker.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import type { BrokerConfig } from '../config.js';
import { LogError } from '../log/errors.js';
import type { PartitionLog } from '../log/partition-log.js';
import type { ProducerIdManager } from './producer-ids.js';
import { TxnRouting } from './routing.js';
import {
  persistError,
  withChanges,
  hasPartition,
  isEpochExhausted,
  TRANSACTION_STATE_TOPIC,
  TxnState,
  txnLogKey,
  txnLogValue,
  type TxnMetadata,
} from './txn-metadata.js';

export interface TxnCoordinatorDeps {
  config: BrokerConfig;
  logger: Logger;
  producerIds: ProducerIdManager;
  /** Whether `__transaction_state` exists (it is created on first use, as Kafka does). */
  stateTopicExists(): boolean;
  /** Creates `__transaction_state` if missing (internal, compacted) and waits until its logs are made (those with data open). */
  ensureStateTopic(numPartitions: number): Promise<void>;
  stateLog(partition: number): PartitionLog | undefined;
  /** Clusters: whether this broker leads the state partition (one node: always). */
  leads?(partition: number): boolean;
  partitionLog(topic: string, partition: number): PartitionLog | undefined;
  /** The offsets topic: its name, and a marker landed on one of its partitions. */
  offsetsTopic: string;
  onOffsetsMarker(partition: number, producerId: bigint, commit: boolean): void;
  /** Resolves once the group coordinator has loaded (markers on offsets partitions need it). */
  groupsLoaded(): Promise<void>;
  /** Wakes fetches after an append of `bytes` (see Services.notifyAppend for `stableBytes`). */
  notifyAppend(topic: string, partition: number, bytes: number, stableBytes?: number): void;
  now?: () => number;
  // ---- clusters only (absent on one node) ----
  /** The leader epoch an append to a partition this broker leads carries (one node: 0). */
  leaderEpoch?(topic: string, partition: number): number;
  /** acks=all before an append: NONE, or NOT_ENOUGH_REPLICAS when the ISR is below the topic's min.insync.replicas. */
  checkIsr?(topic: string, partition: number): number;
  /** acks=all after an append: NONE once the ISR has everything below `endOffset`, else the error (request.timeout.ms). */
  awaitCommitted?(topic: string, partition: number, endOffset: bigint): Promise<number>;
  /** What a partition this broker does not lead answers (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION). */
  notHereError?(topic: string, partition: number): number;
  /** A marker for a partition another broker leads: WriteTxnMarkers to its leader; a Kafka error code. */
  remoteMarker?(m: RemoteMarker): Promise<number>;
  /** KIP-890's check of a write whose transactional id another broker coordinates (AddPartitionsToTxn verifyOnly there). */
  remoteVerify?(v: RemoteVerification): Promise<number>;
  /** Called by shutdown (closes the inter-broker connections). */
  onShutdown?(): void;
}

export interface InitProducerIdResult {
  errorCode: number;
  producerId: bigint;
  producerEpoch: number;
}

const MARKER_RETRY_MS = 1000;

export class TransactionCoordinator {
  readonly txns = new Map<string, TxnMetadata>();
  readonly numPartitions: number;
  readonly maxTimeoutMs: number;
  readonly verification: boolean;
  readonly now: () => number;
  /** Which ids this broker serves now, the loading of the state partitions, remote verification. */
  readonly routing: TxnRouting;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Transactions whose markers are being (re)written in the background. */
  private readonly completing = new Set<string>();
  /** Writes COMMIT/ABORT markers to data partitions (markers.ts); WriteTxnMarkers uses it too. */
  readonly markers: TxnMarkerWriter;

  constructor(readonly deps: TxnCoordinatorDeps) {
    this.now = deps.now ?? Date.now;
    this.routing = new TxnRouting(deps, {
      txns: this.txns,
      now: () => this.now(),
      verify: (id, producerId, producerEpoch, topic, partition) => this.verify(id, producerId, producerEpoch, topic, partition),
      loaded: (p) => this.finishPrepared(p),
    });
    this.numPartitions = this.routing.numPartitions;
    this.verification = this.routing.verification;
    this.maxTimeoutMs = deps.config.int('transaction.max.timeout.ms');
    this.markers = new TxnMarkerWriter(deps);
  }

  get logger(): Logger {
    return this.deps.logger;
  }

  get isActive(): boolean {
    return this.routing.isActive;
  }

  /** Some `__transaction_state` partition is still being replayed. */
  get isLoading(): boolean {
    return this.routing.isLoading;
  }

  // ---- lifecycle ----

  /** Loads `__transaction_state` when it exists (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS). */
  async startup(): Promise<void> {
    await this.routing.start();
    const c = this.deps.config;
    const every = (ms: number, f: () => Promise<unknown>) => {
      const t = setInterval(() => void f().catch((err: unknown) => this.logger.error({ err }, 'transaction coordinator timer failed')), ms);
      t.unref();
      this.timers.push(t);
    };
    every(c.int('transaction.abort.timed.out.transaction.cleanup.interval.ms'), () => this.abortTimedOutTransactions());
    every(c.int('transaction.remove.expired.transaction.cleanup.interval.ms'), () => this.removeExpiredTransactionalIds());
  }

  whenLoaded(): Promise<void> {
    return this.routing.whenLoaded();
  }

  /** Creates `__transaction_state` on first use: NONE once it is there, COORDINATOR_NOT_AVAILABLE when that failed. */
  ensureReady(): Promise<number> {
    return this.routing.ensureReady();
  }

  shutdown(): void {
    this.routing.stop();
    this.deps.onShutdown?.();
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
  }

  // ---- routing (routing.ts; verifyForWrite and leadershipChanged are called there) ----

  partitionFor(transactionalId: string): number {
    return this.routing.partitionFor(transactionalId);
  }

  /** NONE when this coordinator can serve the id now. */
  status(transactionalId: string): number {
    return this.routing.status(transactionalId);
  }

  /** Finishes the prepared transactions of state partition `p` (undefined: of all) after its replay. */
  private finishPrepared(p: number | undefined): void {
    for (const m of this.txns.values()) {
      if (p !== undefined && this.partitionFor(m.transactionalId) !== p) continue;
      if (m.state === TxnState.PREPARE_COMMIT || m.state === TxnState.PREPARE_ABORT) this.completeInBackground(m);
    }
  }

  // ---- persistence ----

  /** Writes `next` (null: a tombstone) for `m`'s id; `m` takes `next`'s values once it is written. */
  private async transition(m: TxnMetadata, next: TxnMetadata | null): Promise<number> {
    m.pending = next?.state ?? TxnState.DEAD;
    const p = this.partitionFor(m.transactionalId);
    const log = this.deps.stateLog(p);
    let errorCode: number = ErrorCode.NONE;
    if (log === undefined) errorCode = this.deps.leads === undefined ? ErrorCode.COORDINATOR_NOT_AVAILABLE : ErrorCode.NOT_COORDINATOR;
    else {
      const batch = buildRecordBatch([
        { key: txnLogKey(m.transactionalId), value: next === null ? null : txnLogValue(next), timestamp: BigInt(this.now()) },
      ]);
      try {
        // a log known empty opens on its first write (TopicManager.openLogs); append needs it open
        if (!log.isOpen) await log.open();
        // clusters: acks=all, as Kafka writes the state log (refused up front below transaction.state.log.min.isr)
        const isr = this.deps.checkIsr?.(TRANSACTION_STATE_TOPIC, p) ?? ErrorCode.NONE;
        if (isr !== ErrorCode.NONE) throw new LogError(isr, `${TRANSACTION_STATE_TOPIC}-${p}: the ISR is below min.insync.replicas`);
        const r = log.append(batch, { leaderEpoch: this.deps.leaderEpoch?.(TRANSACTION_STATE_TOPIC, p) ?? 0 });
        await r.written;
        this.deps.notifyAppend(TRANSACTION_STATE_TOPIC, p, batch.length);
        if (this.deps.awaitCommitted !== undefined) {
          const committed = await this.deps.awaitCommitted(TRANSACTION_STATE_TOPIC, p, r.info.lastOffset + 1n);
          if (committed !== ErrorCode.NONE)
            throw new LogError(committed, `${TRANSACTION_STATE_TOPIC}-${p}: the ISR did not get the write (${committed})`);
        }
      } catch (err) {
        this.logger.warn(
          { err, transactionalId: m.transactionalId, code: 'GREGOR_ERR_TXN_WRITE' },
          `failed to write to ${TRANSACTION_STATE_TOPIC}`,
        );
        errorCode = persistError(err instanceof LogError ? err.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR);
      }
    }
    m.pending = null;
    if (errorCode === ErrorCode.NONE && next !== null) Object.assign(m, next, { pending: null });
    return errorCode;
  }

  // ---- InitProducerId ----

  /**
   * InitProducerId. Without a transactional id: a new producer id at epoch 0. With one: the id's
   * producer is bumped (or moved to a new producer id when its epoch is used up), an open
   * transaction of an older instance is fenced and aborted first. `expected` (v3+, KIP-360) is the
   * caller's current producer id and epoch, or null.
   */
  async initProducerId(
    transactionalId: string | null,
    timeoutMs: number,
    expected: { producerId: bigint; producerEpoch: number } | null,
  ): Promise<InitProducerIdResult> {
    const fail = (errorCode: number): InitProducerIdResult => ({ errorCode, producerId: -1n, producerEpoch: -1 });
    if (expected !== null && (expected.producerId === -1n) !== (expected.producerEpoch === -1)) return fail(ErrorCode.INVALID_REQUEST);
    if (expected !== null && expected.producerId === -1n) expected = null;
    if (transactionalId === null)
      return { errorCode: ErrorCode.NONE, producerId: await this.deps.producerIds.generate(), producerEpoch: 0 };
    if (transactionalId === '') return fail(ErrorCode.INVALID_REQUEST);
    if (timeoutMs <= 0 || timeoutMs > this.maxTimeoutMs) return fail(ErrorCode.INVALID_TRANSACTION_TIMEOUT);
    const ready = await this.ensureReady();
    if (ready !== ErrorCode.NONE) return fail(ready);
    const status = this.status(transactionalId);
    if (status !== ErrorCode.NONE) return fail(status);
    for (;;) {
      let m = this.txns.get(transactionalId);
      let created = false;
      if (m === undefined) {
        const now = this.now();
        m = {
          transactionalId,
          producerId: -1n,
          previousProducerId: -1n,
          producerEpoch: -1,
          lastProducerEpoch: -1,
          txnTimeoutMs: timeoutMs,
          state: TxnState.EMPTY,
          partitions: new Map(),
          txnStartTimestamp: -1,
          txnLastUpdateTimestamp: now,
          pending: TxnState.EMPTY,
        };
        this.txns.set(transactionalId, m);
        created = true;
        try {
          m.producerId = await this.deps.producerIds.generate();
        } catch (err) {
          this.txns.delete(transactionalId);
          throw err;
        }
        m.pending = null;
      }
      if (m.pending !== null) return fail(ErrorCode.CONCURRENT_TRANSACTIONS);
      if (
        expected !== null &&
        !(
          m.producerEpoch === -1 ||
          expected.producerId === m.producerId ||
          (expected.producerId === m.previousProducerId && isEpochExhausted(expected.producerEpoch))
        )
      ) {
        return fail(ErrorCode.PRODUCER_FENCED);
      }
      switch (m.state) {
        case TxnState.PREPARE_COMMIT:
        case TxnState.PREPARE_ABORT:
          return fail(ErrorCode.CONCURRENT_TRANSACTIONS);
        case TxnState.ONGOING: {
          // an older instance left a transaction open: fence it and abort, then bump again
          const e = await this.fenceAndAbort(m);
          if (e !== ErrorCode.NONE) return fail(e);
          continue;
        }
        default: {
          const next = await this.nextProducer(m, timeoutMs, expected);
          if (typeof next === 'number') return fail(next);
          const e = await this.transition(m, next);
          if (e !== ErrorCode.NONE) {
            if (created) this.txns.delete(transactionalId);
            return fail(e);
          }
          return { errorCode: ErrorCode.NONE, producerId: m.producerId, producerEpoch: m.producerEpoch };
        }
      }
    }
  }

  /** Kafka's prepareIncrementProducerEpoch / prepareProducerIdRotation: the Empty state to write. */
  private async nextProducer(m: TxnMetadata, timeoutMs: number, expected: { producerEpoch: number } | null): Promise<TxnMetadata | number> {
    const base = {
      state: TxnState.EMPTY,
      txnTimeoutMs: timeoutMs,
      partitions: new Map(),
      txnStartTimestamp: -1,
      txnLastUpdateTimestamp: this.now(),
    };
    if (isEpochExhausted(m.producerEpoch) && (expected === null || expected.producerEpoch === m.producerEpoch)) {
      m.pending = TxnState.EMPTY;
      try {
        const producerId = await this.deps.producerIds.generate();
        return withChanges(m, {
          ...base,
          previousProducerId: m.producerId,
          producerId,
          producerEpoch: 0,
          lastProducerEpoch: expected === null ? -1 : m.producerEpoch,
        });
      } finally {
        m.pending = null;
      }
    }
    const bumped = m.producerEpoch + 1;
    if (expected === null) return withChanges(m, { ...base, producerEpoch: bumped, lastProducerEpoch: -1 });
    if (m.producerEpoch === -1 || expected.producerEpoch === m.producerEpoch)
      return withChanges(m, { ...base, producerEpoch: bumped, lastProducerEpoch: m.producerEpoch });
    if (expected.producerEpoch === m.lastProducerEpoch)
      return withChanges(m, { ...base, producerEpoch: m.producerEpoch, lastProducerEpoch: m.lastProducerEpoch });
    return ErrorCode.PRODUCER_FENCED;
  }

  // ---- AddPartitionsToTxn / AddOffsetsToTxn ----

  /** Checks common to the requests of a running producer: NONE, or the error to answer. */
  private check(m: TxnMetadata | undefined, producerId: bigint, producerEpoch: number): number {
    if (m === undefined || m.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    if (m.producerEpoch !== producerEpoch) return ErrorCode.PRODUCER_FENCED;
    if (m.pending !== null || m.state === TxnState.PREPARE_COMMIT || m.state === TxnState.PREPARE_ABORT)
      return ErrorCode.CONCURRENT_TRANSACTIONS;
    return ErrorCode.NONE;
  }

  /** Adds partitions (existence already checked by the caller) to the producer's transaction. */
  async addPartitions(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partitions: readonly { topic: string; partition: number }[],
  ): Promise<number> {
    const status = this.status(transactionalId);
    if (status !== ErrorCode.NONE) return status;
    const m = this.txns.get(transactionalId);
    const e = this.check(m, producerId, producerEpoch);
    if (e !== ErrorCode.NONE || m === undefined) return e;
    if (m.state === TxnState.ONGOING && partitions.every((p) => hasPartition(m, p.topic, p.partition))) return ErrorCode.NONE;
    const now = this.now();
    const starting = m.state !== TxnState.ONGOING;
    const next = withChanges(m, {
      state: TxnState.ONGOING,
      txnLastUpdateTimestamp: now,
      txnStartTimestamp: starting ? now : m.txnStartTimestamp,
    });
    if (starting) next.partitions.clear();
    for (const p of partitions) {
      let set = next.partitions.get(p.topic);
      if (set === undefined) next.partitions.set(p.topic, (set = new Set()));
      set.add(p.partition);
    }
    return this.transition(m, next);
  }

  /**
   * KIP-890's check of a transactional write (produce, TxnOffsetCommit): NONE when the partition is
   * in the producer's ongoing transaction. Errors as the coordinator names them (PRODUCER_FENCED,
   * CONCURRENT_TRANSACTIONS, TRANSACTION_ABORTABLE, ...); callers map them for their API.
   */
  verify(transactionalId: string, producerId: bigint, producerEpoch: number, topic: string, partition: number): number {
    if (!this.verification) return ErrorCode.NONE;
    const status = this.status(transactionalId);
    if (status !== ErrorCode.NONE) return status;
    const m = this.txns.get(transactionalId);
    if (m === undefined || m.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    if (m.producerEpoch !== producerEpoch) return ErrorCode.PRODUCER_FENCED;
    // as Kafka's handleVerifyPartitionsInTransaction: a pending transition (another AddPartitionsToTxn
    // being written) is not checked; the partitions count once their Ongoing state is written
    if (m.state === TxnState.PREPARE_COMMIT || m.state === TxnState.PREPARE_ABORT) return ErrorCode.CONCURRENT_TRANSACTIONS;
    return m.state === TxnState.ONGOING && hasPartition(m, topic, partition) ? ErrorCode.NONE : ErrorCode.TRANSACTION_ABORTABLE;
  }

  // ---- EndTxn ----

  /** EndTxn from a client: the transaction is decided, its markers written and it is complete when this resolves NONE. */
  async endTxn(transactionalId: string, producerId: bigint, producerEpoch: number, commit: boolean): Promise<number> {
    const status = this.status(transactionalId);
    if (status !== ErrorCode.NONE) return status;
    const m = this.txns.get(transactionalId);
    if (m === undefined || m.producerId !== producerId) return ErrorCode.INVALID_PRODUCER_ID_MAPPING;
    if (m.producerEpoch !== producerEpoch) return ErrorCode.PRODUCER_FENCED;
    if (m.pending !== null) return ErrorCode.CONCURRENT_TRANSACTIONS;
    switch (m.state) {
      case TxnState.ONGOING:
        return this.endOngoing(m, commit, m.producerEpoch);
      case TxnState.COMPLETE_COMMIT:
        return commit ? ErrorCode.NONE : ErrorCode.INVALID_TXN_STATE;
      case TxnState.COMPLETE_ABORT:
        return commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.NONE;
      case TxnState.PREPARE_COMMIT:
        return commit ? ErrorCode.CONCURRENT_TRANSACTIONS : ErrorCode.INVALID_TXN_STATE;
      case TxnState.PREPARE_ABORT:
        return commit ? ErrorCode.INVALID_TXN_STATE : ErrorCode.CONCURRENT_TRANSACTIONS;
      default:
        return ErrorCode.INVALID_TXN_STATE;
    }
  }

  /** Ongoing → Prepare* (written) → markers → Complete*. NONE once the outcome is durable. */
  private async endOngoing(m: TxnMetadata, commit: boolean, epoch: number): Promise<number> {
    const next = withChanges(m, {
      state: commit ? TxnState.PREPARE_COMMIT : TxnState.PREPARE_ABORT,
      producerEpoch: epoch,
      txnLastUpdateTimestamp: this.now(),
    });
    if (epoch !== m.producerEpoch) next.lastProducerEpoch = -1;
    const e = await this.transition(m, next);
    if (e !== ErrorCode.NONE) return e;
    if (!(await this.complete(m))) this.completeInBackground(m);
    return ErrorCode.NONE;
  }

  /** Fences the current producer (epoch + 1) and aborts its open transaction. */
  private fenceAndAbort(m: TxnMetadata): Promise<number> {
    this.logger.info(
      { transactionalId: m.transactionalId, producerId: m.producerId.toString(), epoch: m.producerEpoch },
      'fencing the producer and aborting its open transaction',
    );
    return this.endOngoing(m, false, m.producerEpoch + 1);
  }

  /** Writes the markers of a Prepare* transaction and then Complete*; false when something must be retried. */
  private async complete(m: TxnMetadata): Promise<boolean> {
    const commit = m.state === TxnState.PREPARE_COMMIT;
    if (!commit && m.state !== TxnState.PREPARE_ABORT) return true;
    const coordinatorEpoch = this.routing.coordinatorEpoch(m.transactionalId);
    const writes: Promise<boolean>[] = [];
    for (const [topic, parts] of m.partitions)
      for (const partition of parts)
        writes.push(this.markers.write(topic, partition, m.producerId, m.producerEpoch, commit, coordinatorEpoch));
    if (!(await Promise.all(writes)).every((ok) => ok)) return false;
    const done = withChanges(m, {
      state: commit ? TxnState.COMPLETE_COMMIT : TxnState.COMPLETE_ABORT,
      partitions: new Map(),
      txnLastUpdateTimestamp: this.now(),
    });
    return (await this.transition(m, done)) === ErrorCode.NONE;
  }

  private completeInBackground(m: TxnMetadata): void {
    if (this.completing.has(m.transactionalId)) return;
    this.completing.add(m.transactionalId);
    const attempt = async (): Promise<void> => {
      if (!this.routing.isActive || this.txns.get(m.transactionalId) !== m) {
        this.completing.delete(m.transactionalId);
        return;
      }
      if (await this.complete(m)) {
        this.completing.delete(m.transactionalId);
        return;
      }
      setTimeout(() => void attempt(), MARKER_RETRY_MS).unref();
    };
    void attempt();
  }

  // ---- timeouts and expiry ----

  /** transaction.timeout.ms: Ongoing transactions older than their timeout are fenced and aborted. */
  async abortTimedOutTransactions(): Promise<number> {
    const now = this.now();
    const expired = [...this.txns.values()].filter(
      (m) => m.state === TxnState.ONGOING && m.pending === null && m.txnStartTimestamp + m.txnTimeoutMs < now,
    );
    for (const m of expired) {
      this.logger.info({ transactionalId: m.transactionalId, timeoutMs: m.txnTimeoutMs }, 'aborting a transaction past its timeout');
      await this.fenceAndAbort(m);
    }
    return expired.length;
  }

  /** transactional.id.expiration.ms: ids idle that long with no transaction open are forgotten (tombstone). */
  async removeExpiredTransactionalIds(): Promise<number> {
    const limit = this.now() - this.deps.config.int('transactional.id.expiration.ms');
    let n = 0;
    for (const m of [...this.txns.values()]) {
      const idle = m.state === TxnState.EMPTY || m.state === TxnState.COMPLETE_COMMIT || m.state === TxnState.COMPLETE_ABORT;
      if (!idle || m.pending !== null || m.txnLastUpdateTimestamp > limit) continue;
      if ((await this.transition(m, null)) === ErrorCode.NONE && this.txns.get(m.transactionalId) === m) {
        this.txns.delete(m.transactionalId);
        n++;
      }
    }
    return n;
  }
}
