/**
 * The request log behind GET /v1/requests: the last `size` requests in a ring buffer (always on
 * unless admin.requests.log.size=0; it holds the timing records themselves, so adding one is an array
 * store), and on demand a complete recording of every request from a moment on ("record all", up to
 * RECORD_ALL_MAX requests; more are counted as dropped). Entries become JSON only when read.
 */
import { API_NAMES, errorName } from './request-metrics.js';
import { RequestOutcome, type RequestTiming } from './request-timing.js';

export const RECORD_ALL_MAX = 250_000;

export interface RequestLogEntry {
  /** when the request had been read (ISO 8601) */
  time: string;
  api: string;
  apiKey: number;
  version: number;
  correlationId: number;
  clientId: string | null;
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
  connection: string;
  listener: string;
  /** Kafka's principal of the connection (User:ANONYMOUS, or User:CN=... from a client certificate) */
  principal: string;
  remoteAddress: string;
  remotePort: number;
  /** response | no-response | closed */
  outcome: 'response' | 'no-response' | 'closed';
  closeReason?: string;
  errorCode: number;
  error: string;
  /** Produce and Fetch: the first partition error (0 when none) */
  partitionErrorCode: number;
  partitionError: string;
  requestBytes: number;
  responseBytes: number;
  /** milliseconds, split as Kafka's RequestMetrics */
  latencyMs: { total: number; requestQueue: number; local: number; remote: number; responseQueue: number; responseSend: number };
}

export interface RequestLogFilter {
  /** API name (any case) or key */
  api?: string;
  /** substring of the client id or the client software name */
  client?: string;
  /** only requests answered with an error (top-level or partition) or closed */
  errors?: boolean;
  /** substring of the connection id */
  connection?: string;
  /** only requests whose total time is at least this many ms */
  minMs?: number;
  /** the newest this many matches (default: all) */
  limit?: number;
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
const OUTCOMES = ['response', 'no-response', 'closed'] as const;

export function toEntry(t: RequestTiming): RequestLogEntry {
  const sw = t.conn.clientSoftware;
  const e: RequestLogEntry = {
    time: new Date(performance.timeOrigin + t.receivedAt).toISOString(),
    api: API_NAMES[t.apiKey] ?? `ApiKey${t.apiKey}`,
    apiKey: t.apiKey,
    version: t.apiVersion,
    correlationId: t.correlationId,
    clientId: t.clientId,
    clientSoftwareName: sw?.name ?? null,
    clientSoftwareVersion: sw?.version ?? null,
    connection: t.conn.id,
    listener: t.conn.listenerName,
    principal: t.conn.principal ?? 'User:ANONYMOUS',
    remoteAddress: t.conn.remoteAddress,
    remotePort: t.conn.remotePort,
    outcome: OUTCOMES[t.outcome],
    errorCode: t.errorCode,
    error: errorName(t.errorCode),
    partitionErrorCode: t.partitionErrorCode,
    partitionError: errorName(t.partitionErrorCode),
    requestBytes: t.requestBytes,
    responseBytes: t.responseBytes,
    latencyMs: {
      total: round(t.totalMs),
      requestQueue: round(t.requestQueueMs),
      local: round(t.localMs),
      remote: round(t.remoteMs),
      responseQueue: round(t.responseQueueMs),
      responseSend: round(t.responseSendMs),
    },
  };
  if (t.closeReason !== null) e.closeReason = t.closeReason;
  return e;
}

function matcher(f: RequestLogFilter): (t: RequestTiming) => boolean {
  let apiKey: number | null = null;
  if (f.api !== undefined && f.api !== '') {
    const n = Number(f.api);
    apiKey = Number.isInteger(n) ? n : API_NAMES.findIndex((name) => name !== undefined && name.toLowerCase() === f.api?.toLowerCase());
  }
  const client = f.client === '' ? undefined : f.client;
  const conn = f.connection === '' ? undefined : f.connection;
  return (t) => {
    if (apiKey !== null && t.apiKey !== apiKey) return false;
    if (client !== undefined && !(t.clientId ?? '').includes(client) && !(t.conn.clientSoftware?.name ?? '').includes(client)) return false;
    if (f.errors === true && t.errorCode === 0 && t.partitionErrorCode === 0 && t.outcome !== RequestOutcome.CLOSED) return false;
    if (conn !== undefined && !t.conn.id.includes(conn)) return false;
    if (f.minMs !== undefined && t.totalMs < f.minMs) return false;
    return true;
  };
}

export class RequestLog {
  private ring: (RequestTiming | undefined)[];
  private next = 0;
  private recording: RequestTiming[] | null = null;
  private recordingOn = false;
  private dropped = 0;

  constructor(private size: number) {
    this.ring = new Array<RequestTiming | undefined>(size);
  }

  /**
   * Adds a finished request; returns the record it pushed out of the ring when nothing else holds
   * that one (no recording), for reuse, else undefined.
   */
  add(t: RequestTiming): RequestTiming | undefined {
    let evicted: RequestTiming | undefined;
    if (this.size > 0) {
      evicted = this.ring[this.next];
      this.ring[this.next] = t;
      this.next = this.next + 1 === this.size ? 0 : this.next + 1;
    } else {
      evicted = t;
    }
    if (this.recording === null) return evicted;
    if (this.recordingOn) {
      if (this.recording.length < RECORD_ALL_MAX) this.recording.push(t);
      else this.dropped++;
    }
    return undefined;
  }

  /** Starts a fresh complete recording (on) or stops it, keeping what it holds readable (off). */
  recordAll(on: boolean): void {
    if (on) {
      this.recording = [];
      this.dropped = 0;
    }
    this.recordingOn = on;
  }

  /** Empties the ring and drops the recording (recording stays on if it was). */
  clear(): void {
    this.ring = new Array<RequestTiming | undefined>(this.size);
    this.next = 0;
    if (this.recording !== null) this.recording = this.recordingOn ? [] : null;
    this.dropped = 0;
  }

  get status(): { ringSize: number; recordAll: boolean; source: 'ring' | 'recording'; held: number; dropped: number } {
    const source = this.recording !== null ? 'recording' : 'ring';
    return { ringSize: this.size, recordAll: this.recordingOn, source, held: this.chronological().length, dropped: this.dropped };
  }

  /** The complete recording when there is one (on, or stopped and not cleared), else the ring: oldest first. */
  private chronological(): RequestTiming[] {
    if (this.recording !== null) return this.recording;
    const out: RequestTiming[] = [];
    for (let i = 0; i < this.size; i++) {
      const t = this.ring[(this.next + i) % this.size];
      if (t !== undefined) out.push(t);
    }
    return out;
  }

  /** Matching requests, oldest first (the newest `limit` of them). */
  query(f: RequestLogFilter = {}): RequestLogEntry[] {
    const match = matcher(f);
    const hits = this.chronological().filter(match);
    const limited = f.limit !== undefined && f.limit >= 0 && hits.length > f.limit ? hits.slice(hits.length - f.limit) : hits;
    return limited.map(toEntry);
  }
}
