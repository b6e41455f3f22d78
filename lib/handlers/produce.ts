import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode, errorName } from '../../protocol/generated/error-codes.js';
import type { ProduceRequest, ProduceResponse, ProduceResponsePartitionProduceResponse } from '../../protocol/generated/produce.js';
import { BatchAttribute, BatchField, RECORD_BATCH_OVERHEAD } from '../../protocol/records/index.js';
import { LogError, type PartitionLog } from '../log/partition-log.js';
import { AclOperation, byTopicAllowed, transactionalIdAllowed } from '../security/acl/checks.js';
import { type CloseConnection, closeConnection, defineHandler, NO_RESPONSE, type RequestContext } from './types.js';

/** Byte offset of the magic in both a v2 batch and a v0/v1 message (after offset, length and epoch/crc). */
const MAGIC_OFFSET = 16;
const ZSTD = 4;

/** The producer of a transactional v2 batch (the first batch decides: v3+ sends exactly one). */
function transactionalProducer(records: Buffer | null): { producerId: bigint; producerEpoch: number } | null {
  if (records === null || records.length < RECORD_BATCH_OVERHEAD || records.readInt8(MAGIC_OFFSET) !== 2) return null;
  if ((records.readInt16BE(BatchField.ATTRIBUTES) & BatchAttribute.TRANSACTIONAL) === 0) return null;
  return { producerId: records.readBigInt64BE(BatchField.PRODUCER_ID), producerEpoch: records.readInt16BE(BatchField.PRODUCER_EPOCH) };
}

/**
 * KIP-890: a transactional batch is written only to a partition of its producer's ongoing
 * transaction. The coordinator's answer as Produce gives it: a fenced producer gets
 * INVALID_PRODUCER_EPOCH, a retriable coordinator state NOT_ENOUGH_REPLICAS (clients retry it),
 * a partition not in the transaction INVALID_TXN_STATE (TRANSACTION_ABORTABLE from v11).
 */
function verifyTransactional(
  ctx: RequestContext,
  transactionalId: string,
  p: { producerId: bigint; producerEpoch: number },
  topic: string,
  partition: number,
  log: PartitionLog,
): number | Promise<number> {
  // clusters: a transactional id another broker coordinates is checked there (once per transaction and partition)
  const code = ctx.services.txn.routing.verifyForWrite(transactionalId, p.producerId, p.producerEpoch, topic, partition, () => {
    const e = log.producers.producers.get(p.producerId);
    return e !== undefined && e.producerEpoch === p.producerEpoch && e.currentTxnFirstOffset !== null;
  });
  return typeof code === 'number' ? produceVerifyError(ctx, code) : code.then((c) => produceVerifyError(ctx, c));
}

/** The coordinator's answer as Produce reports it (Kafka's AddPartitionsToTxnManager mapping). */
function produceVerifyError(ctx: RequestContext, code: number): number {
  switch (code) {
    case ErrorCode.PRODUCER_FENCED:
      return ErrorCode.INVALID_PRODUCER_EPOCH;
    case ErrorCode.TRANSACTION_ABORTABLE:
      return ctx.apiVersion >= 11 ? code : ErrorCode.INVALID_TXN_STATE;
    case ErrorCode.CONCURRENT_TRANSACTIONS:
    case ErrorCode.COORDINATOR_NOT_AVAILABLE:
    case ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
    case ErrorCode.NOT_COORDINATOR:
      return ErrorCode.NOT_ENOUGH_REPLICAS;
    default:
      return code;
  }
}

function failed(index: number, errorCode: number, errorMessage: string | null = null): ProduceResponsePartitionProduceResponse {
  return { index, errorCode, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n, recordErrors: [], errorMessage };
}

/** Kafka's per-version checks of a produce payload before it reaches the log. */
function checkRecordsForVersion(records: Buffer, version: number): { errorCode: number; message: string } | undefined {
  if (records.length <= MAGIC_OFFSET) return undefined; // the log's own validation reports truncation
  const magic = records.readInt8(MAGIC_OFFSET);
  if (version >= 3 && magic !== 2)
    return { errorCode: ErrorCode.INVALID_RECORD, message: `Produce v${version} requires record batches (magic 2), got magic ${magic}` };
  if (version >= 3 && records.length >= 12 && records.readInt32BE(8) + 12 < records.length) {
    return { errorCode: ErrorCode.INVALID_RECORD, message: `Produce v${version} carries exactly one record batch per partition` };
  }
  if (magic === 2 && version < 7 && records.length >= 23 && (records.readInt16BE(21) & 0x07) === ZSTD) {
    return { errorCode: ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, message: `zstd needs Produce v7 or later, got v${version}` };
  }
  return undefined;
}

/** Partitions named in an acks=0 close reason; the rest are counted. */
const CLOSE_REASON_PARTITIONS = 5;

/**
 * Kafka's answer to an acks=0 Produce that failed: no response can carry the error, so the connection
 * is closed and the producer, seeing the disconnect, refreshes its metadata (KafkaApis.handleProduceRequest).
 */
function closeForAcksZero(ctx: RequestContext, failures: readonly string[]): CloseConnection {
  const shown = failures.slice(0, CLOSE_REASON_PARTITIONS).join(', ');
  const more = failures.length > CLOSE_REASON_PARTITIONS ? ` and ${failures.length - CLOSE_REASON_PARTITIONS} more` : '';
  return closeConnection(
    `Produce with acks=0 failed (correlation id ${ctx.correlationId}, client id ${JSON.stringify(ctx.clientId)}): ${shown}${more}`,
  );
}

function minInsyncReplicas(ctx: RequestContext, topic: string): number {
  const v = ctx.services.metadata.topic(topic)?.configs['min.insync.replicas'];
  return v !== undefined ? Number(v) : ctx.services.config.int('min.insync.replicas');
}

export const produceHandler = defineHandler<ProduceRequest, ProduceResponse>({
  apiKey: ApiKey.Produce,
  minVersion: 0,
  maxVersion: 11,
  async handle(req, ctx) {
    const s = ctx.services;
    const validAcks = req.acks === -1 || req.acks === 0 || req.acks === 1;
    const transactionalId = req.transactionalId ?? null;
    if (transactionalId === null && req.topicData.some((td) => td.partitionData.some((pd) => transactionalProducer(pd.records) !== null))) {
      // transactional records need a transactional id: the whole request is refused, as Kafka does
      if (req.acks === 0)
        return closeForAcksZero(ctx, [
          `${errorName(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)} (transactional records without a transactional id)`,
        ]);
      return this.errorResponse(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ctx);
    }
    if (transactionalId !== null && !transactionalIdAllowed(ctx, AclOperation.WRITE, transactionalId)) {
      if (req.acks === 0) return closeForAcksZero(ctx, [errorName(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]);
      return this.errorResponse(req, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ctx);
    }
    const writable = byTopicAllowed(ctx, AclOperation.WRITE, req.topicData, (td) => td.name);
    const writes: Promise<void>[] = [];
    // Partitions are appended in request order: each appendAsync call reserves its offsets (or
    // commits a fast-path batch) synchronously, before the next partition's call. One flat list of
    // per-partition answers (one Promise.all, not one per topic plus one over the topics), grouped
    // back by topic below.
    const perPartition: Promise<ProduceResponsePartitionProduceResponse>[] = [];
    for (const td of req.topicData) {
      for (const pd of td.partitionData) {
        perPartition.push(
          (async (): Promise<ProduceResponsePartitionProduceResponse> => {
            // A 'pause' fault rule holds this partition's appends (in arrival order) before any check: they run on release.
            if (writable.denied.includes(td)) return failed(pd.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED);
            const held = ctx.faults?.appendGate(td.name, pd.index, ctx.clientId);
            if (held !== undefined && held !== null) await held;
            const log = s.topics.partition(td.name, pd.index);
            if (log === undefined) return failed(pd.index, s.topics.notHereError(td.name, pd.index));
            if (pd.records === null || pd.records.length === 0) return failed(pd.index, ErrorCode.CORRUPT_MESSAGE, 'empty produce payload');
            const bad = checkRecordsForVersion(pd.records, ctx.apiVersion);
            if (bad !== undefined) return failed(pd.index, bad.errorCode, bad.message);
            // as Kafka: unknown partitions and invalid records are answered before the acks check (ReplicaManager's)
            if (!validAcks) return failed(pd.index, ErrorCode.INVALID_REQUIRED_ACKS);
            const minIsr = req.acks === -1 ? minInsyncReplicas(ctx, td.name) : 0;
            const isrSize = s.replication === undefined ? 1 : s.replication.isrSize(td.name, pd.index);
            if (minIsr > isrSize) {
              return failed(
                pd.index,
                ErrorCode.NOT_ENOUGH_REPLICAS,
                `The size of the current ISR ${isrSize} is insufficient to satisfy the min.isr requirement of ${minIsr}`,
              );
            }
            const txnProducer = transactionalId === null ? null : transactionalProducer(pd.records);
            if (txnProducer !== null && transactionalId !== null) {
              const verified = verifyTransactional(ctx, transactionalId, txnProducer, td.name, pd.index, log);
              const code = typeof verified === 'number' ? verified : await verified;
              if (code !== ErrorCode.NONE)
                return failed(pd.index, code, 'Partition was not added to the transaction, or the producer is not its current one');
            }
            const size = pd.records.length;
            try {
              const { info, written } = await log.appendAsync(pd.records, { leaderEpoch: s.topics.leaderEpoch(td.name, pd.index) });
              s.metrics.topics.produced(td.name, info.recordCount, size);
              const res: ProduceResponsePartitionProduceResponse = {
                index: pd.index,
                errorCode: ErrorCode.NONE,
                baseOffset: info.firstOffset,
                logAppendTimeMs: info.logAppendTime,
                logStartOffset: info.logStartOffset,
                recordErrors: [],
                errorMessage: null,
              };
              const replication = s.replication;
              // a write that fails (a full disk) answers this partition with its error (KAFKA_STORAGE_ERROR)
              const writeFailed = (e: unknown): void => {
                if (!(e instanceof LogError)) throw e;
                Object.assign(res, failed(pd.index, e.errorCode, e.message));
              };
              if (req.acks === -1 && replication !== undefined) {
                // a cluster's acks=all: answered once the ISR has it (the high watermark passed it)
                writes.push(
                  written.then(async () => {
                    s.notifyAppend(td.name, pd.index, size);
                    // waiting for followers needs none of the request's bytes (Kafka releases them once the handler returns)
                    ctx.conn.requestBytesDone?.();
                    const code = await replication.awaitCommitted(td.name, pd.index, info.lastOffset + 1n, req.timeoutMs, minIsr);
                    if (code !== ErrorCode.NONE) Object.assign(res, failed(pd.index, code));
                  }, writeFailed),
                );
              } else writes.push(written.then(() => s.notifyAppend(td.name, pd.index, size), writeFailed));
              return res;
            } catch (e) {
              if (e instanceof LogError) {
                ctx.logger.debug({ topic: td.name, partition: pd.index, errorCode: e.errorCode, msg: e.message }, 'produce rejected');
                return failed(pd.index, e.errorCode, e.message);
              }
              throw e;
            }
          })(),
        );
      }
    }
    const answers = await Promise.all(perPartition);
    let next = 0;
    const responses = req.topicData.map((td) => ({
      name: td.name,
      partitionResponses: answers.slice(next, (next += td.partitionData.length)),
    }));
    // (the usual single partition waits for its one write without a Promise.all around it)
    await (writes.length === 1 ? writes[0] : Promise.all(writes));
    if (req.acks === 0) {
      const failures = responses.flatMap((t) =>
        t.partitionResponses.filter((p) => p.errorCode !== ErrorCode.NONE).map((p) => `${t.name}-${p.index} ${errorName(p.errorCode)}`),
      );
      return failures.length === 0 ? NO_RESPONSE : closeForAcksZero(ctx, failures);
    }
    return { responses, throttleTimeMs: 0 };
  },
  errorResponse(req, errorCode) {
    return {
      responses: req.topicData.map((td) => ({
        name: td.name,
        partitionResponses: td.partitionData.map((pd) => failed(pd.index, errorCode)),
      })),
      throttleTimeMs: 0,
    };
  },
});
