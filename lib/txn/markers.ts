/**
 * Transaction markers (Kafka's TransactionMarkerChannelManager on one node): the coordinator's COMMIT or
 * ABORT control batch appended to each partition of a completing transaction, and WriteTxnMarkers'
 * per-partition append.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { LogError } from '../log/errors.js';
import type { TxnCoordinatorDeps } from './coordinator.js';

export class TxnMarkerWriter {
  constructor(
    private readonly deps: Pick<TxnCoordinatorDeps, 'partitionLog' | 'notifyAppend' | 'offsetsTopic' | 'onOffsetsMarker'> & {
      readonly logger: Logger;
    },
  ) {}

  /**
   * The coordinator's marker write to one partition; true when done. A partition that is gone, or
   * whose producer state refuses the marker (a newer epoch or coordinator wrote there), needs no
   * marker any more: done, as Kafka drops it. Anything else is retried.
   */
  async write(
    topic: string,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    coordinatorEpoch: number,
  ): Promise<boolean> {
    const code = await this.append(topic, partition, producerId, producerEpoch, commit, coordinatorEpoch);
    switch (code) {
      case ErrorCode.NONE:
        return true;
      case ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
      case ErrorCode.INVALID_PRODUCER_EPOCH:
      case ErrorCode.TRANSACTION_COORDINATOR_FENCED:
        this.deps.logger.info(
          { topic, partition, producerId: producerId.toString(), errorCode: code },
          'transaction marker not needed there; dropping it',
        );
        return true;
      default:
        this.deps.logger.warn(
          { topic, partition, producerId: producerId.toString(), errorCode: code, code: 'GREGOR_ERR_TXN_MARKER' },
          'writing a transaction marker failed; will retry',
        );
        return false;
    }
  }

  /**
   * Appends a COMMIT/ABORT marker to a partition and waits until it is written (WriteTxnMarkers does
   * this per partition). Returns a Kafka error code: NONE, UNKNOWN_TOPIC_OR_PARTITION, or what the
   * partition's producer state or log refused it with.
   */
  async append(
    topic: string,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    coordinatorEpoch: number,
  ): Promise<number> {
    const log = this.deps.partitionLog(topic, partition);
    if (log === undefined) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    try {
      const r = await log.appendMarker({ producerId, producerEpoch, coordinatorEpoch, commit }, { leaderEpoch: 0 });
      await r.written;
      // the last stable offset may have moved past any amount of data: wake every waiting fetch
      this.deps.notifyAppend(topic, partition, Number.MAX_SAFE_INTEGER);
      if (topic === this.deps.offsetsTopic) this.deps.onOffsetsMarker(partition, producerId, commit);
      return ErrorCode.NONE;
    } catch (err) {
      if (err instanceof LogError) return err.errorCode;
      this.deps.logger.error({ err, topic, partition }, 'appending a transaction marker failed');
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    }
  }
}
