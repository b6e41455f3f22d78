/**
 * The broker's request and topic meters in one place: the network layer hands every finished request
 * to `completed` (request metrics + request log), the dispatcher shows it every response body before
 * encoding (`responded`: error codes, per-topic request counts, bytes out), and the Produce handler
 * counts what it appended (`topics.produced`). /metrics and /v1/requests read from here.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { RecordsValue } from '../../protocol/codec/writer.js';
import type { FetchRequest, FetchResponse } from '../../protocol/generated/fetch.js';
import type { ProduceResponse } from '../../protocol/generated/produce.js';
import { RequestLog } from './request-log.js';
import { RequestMetrics } from './request-metrics.js';
import { type RequestObserver, RequestTiming, type TimedConnection } from './request-timing.js';
import { KeyedHistory } from './keyed-history.js';
import { SERIES, ThroughputHistory } from './throughput-history.js';
import { BrokerTopicMetrics } from './topic-metrics.js';

/** A Fetch sent by a follower replica (replica id in the request before v15, in ReplicaState after). */
export function isFollowerFetch(req: FetchRequest): boolean {
  return (req.replicaId ?? -1) >= 0 || (req.replicaState?.replicaId ?? -1) >= 0;
}

/** how long the per-topic and per-group histories reach back */
export const KEYED_HISTORY_SECONDS = 900;

export interface GroupOffsets {
  groupId: string;
  offsets(): Iterable<{ topic: string; partition: number; offset: bigint }>;
}

function* topicTotals(meters: BrokerTopicMetrics): Iterable<readonly [string, number[]]> {
  for (const [name, t] of meters.topics()) yield [name, [t.messagesIn, t.bytesIn, t.messagesOut, t.bytesOut]];
}

function* groupLags(
  groups: Iterable<GroupOffsets>,
  highWatermark: (topic: string, partition: number) => bigint | undefined,
): Iterable<readonly [string, number[]]> {
  for (const g of groups) {
    let lag = 0;
    let any = false;
    for (const o of g.offsets()) {
      any = true;
      const hw = highWatermark(o.topic, o.partition);
      if (hw !== undefined && o.offset >= 0n && hw > o.offset) lag += Number(hw - o.offset);
    }
    if (any) yield [g.groupId, [lag]];
  }
}

export class BrokerMetrics implements RequestObserver {
  readonly requests = new RequestMetrics();
  readonly topics = new BrokerTopicMetrics();
  readonly requestLog: RequestLog;
  /** the last hour of throughput, a sample a second (started and stopped with the broker) */
  readonly history = new ThroughputHistory(this.topics.all);

  /** per topic, the last 15 minutes of messages and bytes in and out a second (the console's topic page) */
  readonly topicHistory = new KeyedHistory(SERIES, { kind: 'counter', capacity: KEYED_HISTORY_SECONDS, maxKeys: 256 });
  /** per group with committed offsets, its total lag a second over the last 15 minutes (the console's group page) */
  readonly groupLag = new KeyedHistory(['lag'], { kind: 'gauge', capacity: KEYED_HISTORY_SECONDS, maxKeys: 256 });

  constructor(opts: { requestLogSize: number }) {
    this.requestLog = new RequestLog(opts.requestLogSize);
    this.history.addSampler((now) => this.topicHistory.sample(now, topicTotals(this.topics)));
  }

  /**
   * Samples each group's total lag (high watermark - committed, over its committed partitions) with
   * the throughput history, from the broker's groups and logs.
   */
  trackGroupLag(groups: () => Iterable<GroupOffsets>, highWatermark: (topic: string, partition: number) => bigint | undefined): void {
    this.history.addSampler((now) => this.groupLag.sample(now, groupLags(groups(), highWatermark)));
  }

  /** a record the request log let go of, reused for the next request (no allocation in steady state) */
  private spare: RequestTiming | undefined;

  begin(conn: TimedConnection, receivedAt: number, requestBytes: number): RequestTiming {
    const t = this.spare;
    if (t === undefined) return new RequestTiming(conn, receivedAt, requestBytes);
    this.spare = undefined;
    return t.reset(conn, receivedAt, requestBytes);
  }

  completed(t: RequestTiming): void {
    if (t.decoded) this.requests.record(t);
    this.spare = this.requestLog.add(t);
  }

  /** The response about to be encoded for a decoded request (`timing` absent when nothing observes requests). */
  responded(apiKey: number, req: unknown, body: unknown, timing: RequestTiming | undefined): void {
    let partitionError = 0;
    if (apiKey === ApiKey.Produce) {
      partitionError = this.topics.produceResponse(body as ProduceResponse);
    } else if (apiKey === ApiKey.Fetch) {
      const follower = isFollowerFetch(req as FetchRequest);
      partitionError = this.topics.fetchResponse(body as FetchResponse<RecordsValue>, follower);
      if (timing !== undefined) timing.follower = follower;
    }
    if (timing === undefined) return;
    const top = (body as { errorCode?: unknown }).errorCode;
    timing.errorCode = typeof top === 'number' ? top : 0;
    timing.partitionErrorCode = partitionError;
  }
}
