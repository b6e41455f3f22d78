/**
 * Kafka's RequestMetrics per request name: RequestsPerSec by version, ErrorsPerSec by error, and the
 * six time histograms (TotalTimeMs, RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs,
 * ResponseQueueTimeMs, ResponseSendTimeMs). As in Kafka, a Fetch counts under "Fetch" and under
 * "FetchConsumer" (or "FetchFollower" for a replica's fetch). Recording is done once per request when
 * its response has been flushed: a few array increments, no allocation after the first request of
 * each name.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { BUCKETS, WindowedHistograms, bucketOfMs } from './histogram.js';
import { type RequestTiming } from './request-timing.js';

/** Kafka's request names (ApiKeys.name), by API key. */
export const API_NAMES: readonly (string | undefined)[] = (() => {
  const names: (string | undefined)[] = [];
  for (const [name, key] of Object.entries(ApiKey)) names[key] = name;
  return names;
})();

/** Kafka's error names (Errors enum), by code. */
const ERROR_NAMES = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

export function errorName(code: number): string {
  return ERROR_NAMES.get(code) ?? `UNKNOWN_ERROR_CODE_${code}`;
}

/** Yammer's snapshot percentiles and the quantile label the JMX exporter rules give each (`0.$N` from NthPercentile). */
export const QUANTILES: readonly { q: number; label: string }[] = [
  { q: 0.5, label: '0.50' },
  { q: 0.75, label: '0.75' },
  { q: 0.95, label: '0.95' },
  { q: 0.98, label: '0.98' },
  { q: 0.99, label: '0.99' },
  { q: 0.999, label: '0.999' },
];

/** The six timers in Kafka's order, by their JMX name lowercased (as the JMX exporter rules emit them). */
export const TIMERS = [
  'totaltimems',
  'requestqueuetimems',
  'localtimems',
  'remotetimems',
  'responsequeuetimems',
  'responsesendtimems',
] as const;
export type TimerName = (typeof TIMERS)[number];

const MAX_VERSION = 64;
/** error codes -1 (UNKNOWN_SERVER_ERROR) .. ERROR_SLOTS - 2 are counted in an array; others together */
const ERROR_SLOTS = 256;

export class RequestStats {
  /** the six histograms, in TIMERS order */
  readonly timers = new WindowedHistograms(TIMERS.length);
  /** requests by API version */
  readonly versions = new Float64Array(MAX_VERSION);
  /** responses by error code + 1 (the top-level one, else the first partition error; NONE included) */
  private readonly errorCounts = new Float64Array(ERROR_SLOTS);
  private readonly otherErrors = new Map<number, number>();

  constructor(readonly name: string) {}

  observe(t: RequestTiming): void {
    const received = t.receivedAt;
    const started = t.startedAt;
    const ready = t.responseReadyAt;
    const sendStart = t.sendStartAt;
    const done = t.sendDoneAt;
    const remote = t.remoteMs;
    const local = ready - started - remote;
    const h = this.timers.observe(done);
    h[bucketOfMs(done - received)]!++;
    h[BUCKETS + bucketOfMs(started - received)]!++;
    h[2 * BUCKETS + bucketOfMs(local)]!++;
    h[3 * BUCKETS + bucketOfMs(remote)]!++;
    h[4 * BUCKETS + bucketOfMs(sendStart - ready)]!++;
    h[5 * BUCKETS + bucketOfMs(done - sendStart)]!++;
    const v = t.apiVersion;
    if (v >= 0 && v < MAX_VERSION) this.versions[v]!++;
    const code = t.errorCode !== 0 ? t.errorCode : t.partitionErrorCode;
    if (code >= -1 && code < ERROR_SLOTS - 1) this.errorCounts[code + 1]!++;
    else this.otherErrors.set(code, (this.otherErrors.get(code) ?? 0) + 1);
  }

  /** [error code, responses] with at least one response */
  *errors(): Generator<[number, number]> {
    for (let i = 0; i < ERROR_SLOTS; i++) if (this.errorCounts[i]! > 0) yield [i - 1, this.errorCounts[i]!];
    yield* this.otherErrors;
  }

  get count(): number {
    return this.timers.count;
  }
}

export class RequestMetrics {
  private readonly byKey: (RequestStats | undefined)[] = [];
  private readonly fetchConsumer = new RequestStats('FetchConsumer');
  private readonly fetchFollower = new RequestStats('FetchFollower');

  /** Records a request that was decoded and handled (requests closed before decoding are not counted, as in Kafka). */
  record(t: RequestTiming): void {
    const key = t.apiKey;
    let stats = this.byKey[key];
    if (stats === undefined) {
      const name = API_NAMES[key];
      if (name === undefined) return;
      this.byKey[key] = stats = new RequestStats(name);
    }
    stats.observe(t);
    if (key === ApiKey.Fetch) (t.follower ? this.fetchFollower : this.fetchConsumer).observe(t);
  }

  /** Every request name with data, for the exposition. */
  *all(): Generator<RequestStats> {
    for (const s of this.byKey) if (s !== undefined) yield s;
    if (this.fetchConsumer.count > 0) yield this.fetchConsumer;
    if (this.fetchFollower.count > 0) yield this.fetchFollower;
  }

  get(name: string): RequestStats | undefined {
    for (const s of this.all()) if (s.name === name) return s;
    return undefined;
  }
}
