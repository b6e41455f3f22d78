/**
 * Transaction markers (Kafka's TransactionMarkerChannelManager): the coordinator's COMMIT or ABORT
 * control batch for each partition of a completing transaction, and WriteTxnMarkers' per-partition
 * append. A partition this broker leads gets it appended here; in a cluster, one another broker
 * leads gets it through WriteTxnMarkers to that leader (inter-broker.ts). In a cluster an append
 * carries the partition's leader epoch and counts once the ISR has it (acks=all, as Kafka writes
 * markers).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { LogError } from '../log/errors.js';
import type { TxnCoordinatorDeps } from './coordinator.js';

export class TxnMarkerWriter {
  constructor(
    private readonly deps: Pick<
      TxnCoordinatorDeps,
      | 'partitionLog'
      | 'notifyAppend'
      | 'offsetsTopic'
      | 'onOffsetsMarker'
      | 'leaderEpoch'
      | 'checkIsr'
      | 'awaitCommitted'
      | 'notHereError'
      | 'remoteMarker'
    > & {
      readonly logger: Logger;
    },
  ) {}

  /**
   * The coordinator's marker write to one partition; true when done. A partition that is gone, or
   * whose producer state refuses the marker (a newer epoch or coordinator wrote there), needs no
   * marker any more: done, as Kafka drops it. Anything else is retried (in a cluster: no leader,
   * another leader now, the leader unreachable, the ISR too small or too slow).
   */
  async write(
    topic: string,
    partition: number,
    producerId: bigint,
    producerEpoch: number,
    commit: boolean,
    coordinatorEpoch: number,
  ): Promise<boolean> {
    const remote = this.deps.remoteMarker;
    const code =
      remote !== undefined && this.deps.partitionLog(topic, partition) === undefined
        ? await remote({ topic, partition, producerId, producerEpoch, commit, coordinatorEpoch })
        : await this.append(topic, partition, producerId, producerEpoch, commit, coordinatorEpoch);
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
   * partition's producer state or log refused it with; in a cluster also NOT_LEADER_OR_FOLLOWER /
   * LEADER_NOT_AVAILABLE for a partition not led here, NOT_ENOUGH_REPLICAS before the append and
   * NOT_ENOUGH_REPLICAS_AFTER_APPEND / REQUEST_TIMED_OUT when the ISR did not get it.
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
    if (log === undefined) return this.deps.notHereError?.(topic, partition) ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    // acks=all: refused before the append when the ISR is below min.insync.replicas
    const isr = this.deps.checkIsr?.(topic, partition) ?? ErrorCode.NONE;
    if (isr !== ErrorCode.NONE) return isr;
    try {
      const leaderEpoch = this.deps.leaderEpoch?.(topic, partition) ?? 0;
      let stable = log.lastStableOffset;
      const r = await log.appendMarker({ producerId, producerEpoch, coordinatorEpoch, commit }, { leaderEpoch });
      await r.written;
      // the marker's own bytes, and the data the last stable offset moved past (the transaction's, on
      // one node; in a cluster it moves once the ISR has the marker)
      const markerBytes = log.bytesBetween(r.info.lastOffset, r.info.lastOffset + 1n);
      this.deps.notifyAppend(topic, partition, markerBytes, log.bytesBetween(stable, (stable = log.lastStableOffset)));
      if (this.deps.awaitCommitted !== undefined) {
        const committed = await this.deps.awaitCommitted(topic, partition, r.info.lastOffset + 1n);
        if (committed !== ErrorCode.NONE) return committed;
        this.deps.notifyAppend(topic, partition, 0, log.bytesBetween(stable, log.lastStableOffset));
      }
      if (topic === this.deps.offsetsTopic) this.deps.onOffsetsMarker(partition, producerId, commit);
      return ErrorCode.NONE;
    } catch (err) {
      if (err instanceof LogError) return err.errorCode;
      this.deps.logger.error({ err, topic, partition }, 'appending a transaction marker failed');
      return ErrorCode.UNKNOWN_SERVER_ERROR;
    }
  }
}
