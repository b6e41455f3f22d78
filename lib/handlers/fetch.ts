import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchRequest, FetchResponse, FetchResponsePartitionData } from '../../protocol/generated/fetch.js';
import { LogError, type PartitionLog } from '../log/partition-log.js';
import { fetchWatchFor } from '../replica/fetch-watch.js';
import { fetchVersionError, recordsForFetchVersion } from './fetch-down-convert.js';
import { defineHandler, type RequestContext } from './types.js';

const READ_COMMITTED = 1;
const ZERO_UUID = '0'.repeat(32);
const EMPTY = Buffer.alloc(0);

interface Wanted {
  topicIndex: number;
  partition: number;
  fetchOffset: bigint;
  partitionMaxBytes: number;
  log: PartitionLog | undefined;
  errorCode: number;
}

interface TopicOut {
  topic: string;
  topicId: string;
  wanted: Wanted[];
}

function partitionResult(w: Wanted, readCommitted: boolean, errorCode: number, records: Buffer): FetchResponsePartitionData {
  const hw = w.log?.highWatermark ?? -1n;
  return {
    partitionIndex: w.partition,
    errorCode,
    highWatermark: hw,
    lastStableOffset: hw,
    logStartOffset: w.log?.logStartOffset ?? -1n,
    abortedTransactions: readCommitted ? [] : null,
    preferredReadReplica: -1,
    records,
  };
}

function resolve(req: FetchRequest, ctx: RequestContext): TopicOut[] {
  const s = ctx.services;
  return req.topics.map((t, topicIndex) => {
    const byId = ctx.apiVersion >= 13;
    const rec = byId ? s.metadata.topicById(t.topicId ?? ZERO_UUID) : s.metadata.topic(t.topic ?? '');
    const missing = byId ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    const name = rec?.name ?? t.topic ?? '';
    return {
      topic: name,
      topicId: rec?.topicId ?? t.topicId ?? ZERO_UUID,
      wanted: t.partitions.map((p) => {
        const log = rec === undefined ? undefined : s.topics.partition(rec.name, p.partition);
        return {
          topicIndex,
          partition: p.partition,
          fetchOffset: p.fetchOffset,
          partitionMaxBytes: p.partitionMaxBytes,
          log,
          errorCode: rec === undefined ? missing : log === undefined ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.NONE,
        };
      }),
    };
  });
}

/** Reads every partition within the byte limits; returns the response parts and the bytes read. */
async function readAll(topics: TopicOut[], maxBytes: number, allowOversized: boolean, readCommitted: boolean, apiVersion: number) {
  let budget = maxBytes;
  let total = 0;
  let errors = 0;
  const out: FetchResponse['responses'] = [];
  for (const t of topics) {
    const partitions: FetchResponsePartitionData[] = [];
    for (const w of t.wanted) {
      if (w.log === undefined || w.errorCode !== ErrorCode.NONE) {
        errors++;
        partitions.push(partitionResult(w, readCommitted, w.errorCode, EMPTY));
        continue;
      }
      const versionError = fetchVersionError(w.log, apiVersion);
      if (versionError !== ErrorCode.NONE) {
        errors++;
        partitions.push(partitionResult(w, readCommitted, versionError, EMPTY));
        continue;
      }
      const log = w.log;
      if (w.fetchOffset >= log.highWatermark && w.fetchOffset <= log.logEndOffset && w.fetchOffset >= log.logStartOffset) {
        // Caught up: nothing to read, so no read call (an idle consumer on thousands of partitions is all this).
        partitions.push(partitionResult(w, readCommitted, ErrorCode.NONE, EMPTY));
        continue;
      }
      try {
        const limit = Math.max(0, Math.min(w.partitionMaxBytes, budget));
        const { records, size } = await w.log.read(w.fetchOffset, limit, { minOneMessage: allowOversized && total === 0, maxOffset: w.log.highWatermark });
        budget -= size;
        total += size;
        if (apiVersion <= 3) {
          // old readers get magic 0/1 (down-converted on the append pool when stored newer)
          const r = await recordsForFetchVersion(w.log, records, apiVersion, w.fetchOffset);
          if (r.errorCode !== ErrorCode.NONE) errors++;
          partitions.push(partitionResult(w, readCommitted, r.errorCode, r.records));
          continue;
        }
        const bytes = records.length === 0 ? EMPTY : records.length === 1 ? (records[0] ?? EMPTY) : Buffer.concat(records, size);
        partitions.push(partitionResult(w, readCommitted, ErrorCode.NONE, bytes));
      } catch (e) {
        if (!(e instanceof LogError)) throw e;
        errors++;
        partitions.push(partitionResult(w, readCommitted, e.errorCode, EMPTY));
      }
    }
    out.push({ topic: t.topic, topicId: t.topicId, partitions });
  }
  return { responses: out, total, errors };
}

export const fetchHandler = defineHandler<FetchRequest, FetchResponse>({
  apiKey: ApiKey.Fetch,
  minVersion: 0,
  maxVersion: 17,
  async handle(req, ctx) {
    const s = ctx.services;
    if (ctx.apiVersion >= 7 && (req.sessionId ?? 0) !== 0) {
      // No fetch sessions yet: an incremental fetch names a session we never created.
      return { throttleTimeMs: 0, errorCode: ErrorCode.FETCH_SESSION_ID_NOT_FOUND, sessionId: 0, responses: [] };
    }
    const topics = resolve(req, ctx);
    const maxBytes = ctx.apiVersion >= 3 ? (req.maxBytes ?? 0x7fffffff) : 0x7fffffff;
    const allowOversized = ctx.apiVersion >= 3;
    const readCommitted = (req.isolationLevel ?? 0) === READ_COMMITTED;
    const logs: PartitionLog[] = [];
    let caughtUp = true;
    for (const t of topics) {
      for (const w of t.wanted) {
        if (w.log === undefined || w.errorCode !== ErrorCode.NONE) caughtUp = false;
        else {
          logs.push(w.log);
          if (w.fetchOffset < w.log.highWatermark || w.fetchOffset > w.log.logEndOffset || w.fetchOffset < w.log.logStartOffset) caughtUp = false;
        }
      }
    }
    const longPoll = req.maxWaitMs > 0 && req.minBytes > 0;
    // Long poll: wait in the purgatory (on the connection's standing watch of these partitions) until
    // enough bytes were appended to them. A consumer that is caught up everywhere waits before any
    // response is built, so an idle consumer on thousands of partitions holds no response objects
    // across the wait.
    const waitForBytes = async (needed: number) => {
      let appended = 0;
      await fetchWatchFor(s.purgatory, ctx.conn).wait(logs, req.maxWaitMs, (bytes) => (appended += bytes ?? 0) >= needed);
    };
    if (longPoll && caughtUp) await waitForBytes(req.minBytes);
    let result = await readAll(topics, maxBytes, allowOversized, readCommitted, ctx.apiVersion);
    if (longPoll && !caughtUp && result.total < req.minBytes && result.errors === 0) {
      await waitForBytes(req.minBytes - result.total);
      result = await readAll(topics, maxBytes, allowOversized, readCommitted, ctx.apiVersion);
    }
    return { throttleTimeMs: 0, errorCode: ErrorCode.NONE, sessionId: 0, responses: result.responses };
  },
  errorResponse(req, errorCode) {
    return {
      throttleTimeMs: 0,
      errorCode,
      sessionId: 0,
      responses: req.topics.map((t) => ({
        topic: t.topic ?? '',
        topicId: t.topicId ?? ZERO_UUID,
        partitions: t.partitions.map((p) => ({ partitionIndex: p.partition, errorCode, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, abortedTransactions: null, preferredReadReplica: -1, records: EMPTY })),
      })),
    };
  },
});
