/**
 * Kafka's BrokerTopicMetrics, per topic and for all topics together: MessagesInPerSec,
 * BytesInPerSec, BytesOutPerSec, Total/FailedProduceRequestsPerSec and Total/FailedFetchRequestsPerSec,
 * kept as plain counters and exposed as `kafka_server_brokertopicmetrics_*_total` at scrape time.
 * Messages and bytes in are counted by the Produce handler per successful append (records appended,
 * payload bytes); the request counts come from one walk over each Produce / Fetch response, which
 * also finds the response's first partition error for the request log. As in Kafka, a request counts
 * once per partition it names, and bytes out are the record bytes a consumer fetch returned.
 */
import { FileSlice, recordsLength, recordsSlices, type RecordsValue } from '../../protocol/codec/writer.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { FetchResponse } from '../../protocol/generated/fetch.js';
import type { ProduceResponse } from '../../protocol/generated/produce.js';

export class TopicStats {
  messagesIn = 0;
  bytesIn = 0;
  bytesOut = 0;
  /** records consumer fetches returned (no Kafka meter has it; the web console's charts show it) */
  messagesOut = 0;
  totalProduceRequests = 0;
  failedProduceRequests = 0;
  totalFetchRequests = 0;
  failedFetchRequests = 0;
}

/** Errors that name no topic of this broker: counted for all topics only (Kafka does not make a topic's meters for them). */
function unknownTopic(code: number): boolean {
  return code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION || code === ErrorCode.UNKNOWN_TOPIC_ID;
}

/**
 * Records in a fetched records section, from the entry headers alone: a v2 batch's record count, one
 * per magic 0/1 entry (a compressed wrapper counts once); a partial entry at the end is not counted.
 */
export function countRecords(buf: Buffer): number {
  let n = 0;
  let pos = 0;
  while (pos + 17 <= buf.length) {
    const end = pos + 12 + buf.readInt32BE(pos + 8);
    if (end > buf.length || end < pos + 12) break;
    n += buf[pos + 16] === 2 && pos + 61 <= end ? buf.readInt32BE(pos + 57) : 1;
    pos = end;
  }
  return n;
}

/** Fetch topic answers whose every partition is error-free with no records (see countedAsCaughtUp). */
const caughtUpAnswers = new WeakSet();

/**
 * Marks a topic's Fetch answer as caught up in every partition (no error, no records), so counting it
 * is one addition, not a walk of its partitions. The fetch handler marks the answers it keeps for
 * idle consumers; the answer must not change afterwards.
 */
export function countedAsCaughtUp(answer: object): void {
  caughtUpAnswers.add(answer);
}

export class BrokerTopicMetrics {
  /** the broker-wide meters (Kafka's allTopicsStats: the series without a topic label) */
  readonly all = new TopicStats();
  private readonly byTopic = new Map<string, TopicStats>();

  topic(name: string): TopicStats {
    let s = this.byTopic.get(name);
    if (s === undefined) this.byTopic.set(name, (s = new TopicStats()));
    return s;
  }

  /** A topic's meters, without making them (undefined: nothing counted yet). */
  peek(name: string): TopicStats | undefined {
    return this.byTopic.get(name);
  }

  topics(): IterableIterator<[string, TopicStats]> {
    return this.byTopic.entries();
  }

  /** A deleted topic's meters go away (Kafka removes them too). */
  forget(topic: string): void {
    this.byTopic.delete(topic);
  }

  /** One successful append of a Produce request (a retried duplicate appends nothing: records 0, not counted). */
  produced(topic: string, records: number, bytes: number): void {
    if (records === 0) return;
    const s = this.topic(topic);
    s.messagesIn += records;
    s.bytesIn += bytes;
    this.all.messagesIn += records;
    this.all.bytesIn += bytes;
  }

  /** Counts a Produce response's partitions; returns its first partition error code (0: none). */
  produceResponse(res: ProduceResponse): number {
    let first = 0;
    const all = this.all;
    for (const t of res.responses) {
      const parts = t.partitionResponses;
      all.totalProduceRequests += parts.length;
      let s: TopicStats | undefined;
      for (const p of parts) {
        const code = p.errorCode;
        if (code === 0) {
          (s ??= this.topic(t.name)).totalProduceRequests++;
          continue;
        }
        if (first === 0) first = code;
        all.failedProduceRequests++;
        if (unknownTopic(code)) continue;
        s ??= this.topic(t.name);
        s.totalProduceRequests++;
        s.failedProduceRequests++;
      }
    }
    return first;
  }

  /** Counts a Fetch response's partitions and record bytes; returns its first partition error code (0: none). */
  fetchResponse(res: FetchResponse<RecordsValue>, follower: boolean): number {
    let first = 0;
    const all = this.all;
    for (const t of res.responses) {
      const parts = t.partitions;
      all.totalFetchRequests += parts.length;
      const name = t.topic ?? '';
      if (caughtUpAnswers.has(t)) {
        // no errors, no records: only the partitions count (an idle consumer's poll is thousands of them)
        if (name !== '' && parts.length > 0) this.topic(name).totalFetchRequests += parts.length;
        continue;
      }
      let s: TopicStats | undefined;
      let bytes = 0;
      let records = 0;
      for (const p of parts) {
        const code = p.errorCode;
        if (code !== 0) {
          if (first === 0) first = code;
          all.failedFetchRequests++;
          if (unknownTopic(code) || name === '') continue;
          s ??= this.topic(name);
          s.failedFetchRequests++;
        } else if (p.records !== null) {
          const r = p.records;
          const n = recordsLength(r);
          bytes += n;
          // stored slices (zero-copy) hold whole entries: counted one by one (an idle partition's
          // empty answer has none, and makes no slice list: thousands of them in an idle consumer's poll)
          // (a FileSlice's records were counted from the headers when it was made)
          if (!follower && n > 0) {
            if (r instanceof FileSlice) records += r.recordCount;
            else for (const b of recordsSlices(r)) records += countRecords(b);
          }
        }
        if (name !== '') (s ??= this.topic(name)).totalFetchRequests++;
      }
      // a follower's fetch is replication traffic (ReplicationBytesOutPerSec), not BytesOut
      if (!follower && bytes > 0) {
        all.bytesOut += bytes;
        all.messagesOut += records;
        if (name !== '') {
          s ??= this.topic(name);
          s.bytesOut += bytes;
          s.messagesOut += records;
        }
      }
    }
    return first;
  }
}
