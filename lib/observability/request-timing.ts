/**
 * One request's timing as Kafka splits it (RequestChannel's RequestMetrics), filled in along the way:
 * the connection stamps when the frame was read, when processing started, when the response was
 * handed to the socket and when the socket flushed it; the dispatcher stamps when the response was
 * ready and what the request was; a handler adds the time it spent parked in the purgatory (a Fetch
 * long poll) to `remoteMs`. All times are performance.now() milliseconds.
 *
 *   request queue  = startedAt       - receivedAt       (waiting behind an earlier request of the connection)
 *   local          = responseReadyAt - startedAt - remoteMs
 *   remote         = remoteMs                          (parked in the purgatory)
 *   response queue = sendStartAt     - responseReadyAt
 *   response send  = sendDoneAt      - sendStartAt      (socket write until flushed)
 *   total          = sendDoneAt      - receivedAt
 */

export const RequestOutcome = {
  /** a response was written */
  RESPONSE: 0,
  /** Kafka sends none (Produce with acks=0) */
  NO_RESPONSE: 1,
  /** the connection was closed instead (unsupported version, malformed request, injected fault) */
  CLOSED: 2,
} as const;
export type RequestOutcome = (typeof RequestOutcome)[keyof typeof RequestOutcome];

/** What the connection knows about itself (a subset of ConnectionInfo). */
export interface TimedConnection {
  readonly id: string;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly listenerName: string;
  /** Kafka's principal of the connection (User:ANONYMOUS without a client certificate) */
  readonly principal?: string;
  /** From the client's ApiVersions v3+ request, remembered for the connection. */
  clientSoftware?: { name: string; version: string };
}

export class RequestTiming {
  apiKey = -1;
  apiVersion = -1;
  correlationId = -1;
  clientId: string | null = null;
  /** the request was decoded and handled (requests closed before, e.g. of an unsupported version, count in no metric) */
  decoded = false;
  /** a Fetch from a follower replica (replica id >= 0): FetchFollower rather than FetchConsumer */
  follower = false;
  /** the response's top-level error code (0 when it has none) */
  errorCode = 0;
  /** Produce and Fetch: the first non-zero partition error code, else 0 */
  partitionErrorCode = 0;
  remoteMs = 0;
  startedAt = 0;
  responseReadyAt = 0;
  sendStartAt = 0;
  sendDoneAt = 0;
  responseBytes = 0;
  outcome: RequestOutcome = RequestOutcome.RESPONSE;
  /** why the connection was closed (outcome CLOSED) */
  closeReason: string | null = null;

  constructor(
    public conn: TimedConnection,
    /** when the whole frame had been read */
    public receivedAt: number,
    public requestBytes: number,
  ) {}

  /** Makes a recycled record new (the request log hands evicted records back for reuse). */
  reset(conn: TimedConnection, receivedAt: number, requestBytes: number): this {
    this.conn = conn;
    this.receivedAt = receivedAt;
    this.requestBytes = requestBytes;
    this.apiKey = this.apiVersion = this.correlationId = -1;
    this.clientId = null;
    this.decoded = this.follower = false;
    this.errorCode = this.partitionErrorCode = 0;
    this.remoteMs = this.startedAt = this.responseReadyAt = this.sendStartAt = this.sendDoneAt = this.responseBytes = 0;
    this.outcome = RequestOutcome.RESPONSE;
    this.closeReason = null;
    return this;
  }

  get totalMs(): number {
    return this.sendDoneAt - this.receivedAt;
  }
  get requestQueueMs(): number {
    return this.startedAt - this.receivedAt;
  }
  get localMs(): number {
    return Math.max(0, this.responseReadyAt - this.startedAt - this.remoteMs);
  }
  get responseQueueMs(): number {
    return this.sendStartAt - this.responseReadyAt;
  }
  get responseSendMs(): number {
    return this.sendDoneAt - this.sendStartAt;
  }
}

/** Times requests: hands out a record per request, and receives it once its response has been flushed (or it ended without one). */
export interface RequestObserver {
  begin(conn: TimedConnection, receivedAt: number, requestBytes: number): RequestTiming;
  completed(t: RequestTiming): void;
}
