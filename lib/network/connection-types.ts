/**
 * The shapes a Connection (lib/network/connection.ts) shares with the dispatcher and the listener:
 * what a request handler sees of its connection, what it returns, and the connection's limits.
 */
import type { Chunk } from '../../protocol/codec/writer.js';
import type { ClientIdCache } from '../../protocol/frame.js';
import type { Logger } from '../observability/logger.js';
import type { RequestTiming } from '../observability/request-timing.js';
import type { SaslSession } from '../security/sasl/session.js';
import type { RequestBudget } from './request-budget.js';

export interface ConnectionInfo {
  /** Kafka-style connection id: "localHost:localPort-remoteHost:remotePort-index" */
  id: string;
  remoteAddress: string;
  remotePort: number;
  listenerName: string;
  /** Kafka's principal: User:ANONYMOUS, from the client certificate on an SSL listener (ssl.principal.mapping.rules), or User:<name> once SASL authenticated */
  principal: string;
  /** SASL_PLAINTEXT / SASL_SSL listeners: the connection's SASL state (lib/security/sasl/session.ts) */
  sasl?: SaslSession;
  logger: Logger;
  /** resolves once the socket has closed */
  closed: Promise<void>;
  /** the client's software name and version, from its ApiVersions v3+ request (set by the dispatcher) */
  clientSoftware?: { name: string; version: string };
  /** the client id of the connection's last request, reused while the next ones repeat it (protocol/frame.ts) */
  readonly clientIds: ClientIdCache;
  /**
   * The request in flight no longer needs its bytes (a Produce that appended locally and waits for
   * the ISR): they leave the broker-wide budget now rather than when the response is ready.
   */
  readonly requestBytesDone: () => void;
  /** Fetch responses may carry FileSlices: the connection sends them with sendfile (set by the Connection) */
  sendsFiles?: boolean;
}

/**
 * What the dispatcher wants done with a request. `response` buffers are written verbatim and must
 * already carry the 4-byte size prefix (encodeResponse(..., { sizePrefix: true })); a list of chunks
 * is written with one cork/uncork (writev), without concatenating, and a FileSlice among them is sent
 * from its file (see response-writer.ts).
 */
export type DispatchResult =
  | {
      response: Buffer | Chunk[];
      close?: string;
      level?: CloseLevel;
      fields?: Record<string, unknown>;
      throttleMs?: number;
      /** called once the response's write completed (or failed), or the connection closed: its buffers may be reused */
      written?: () => void;
    }
  | { noResponse: true; throttleMs?: number }
  | { close: string; level?: CloseLevel; fields?: Record<string, unknown> };

/** How a close is logged (default info); a response with a `close` is written first, then the connection closes. */
export type CloseLevel = 'warn' | 'info' | 'debug';

/**
 * Handles one request frame (without its 4-byte size prefix). `timing` is present when the listener
 * has a RequestObserver: the dispatcher fills in what the request was and when its response was ready.
 */
export type Dispatch = (frame: Buffer, conn: ConnectionInfo, timing?: RequestTiming) => DispatchResult | Promise<DispatchResult>;

export interface ConnectionLimits {
  /** socket.request.max.bytes: larger (or negative) sizes close the connection unread */
  socketRequestMaxBytes: number;
  /** looks at the first bytes read; false closes the connection unread (it logged why) */
  screenFirstChunk?: (chunk: Buffer) => boolean;
  /** connections.max.idle.ms: close after this long without socket activity; <= 0 disables */
  connectionsMaxIdleMs: number;
  /** stop reading while this many complete requests wait behind the one in flight */
  maxQueuedRequests: number;
  /** ... or while the waiting requests hold this many bytes */
  maxQueuedBytes: number;
  /** the broker-wide budget of requests read and not yet handled (queued.max.requests, queued.max.request.bytes) */
  budget: RequestBudget;
  /** gregor.socket.read.direct on a plain TCP socket: read into the frame being assembled (direct-read.ts) */
  readDirect?: boolean;
  /** gregor.socket.write.direct on a plain TCP socket: responses go to its descriptor while the stream holds nothing (direct-write.ts) */
  writeDirect?: boolean;
  /** gregor.fetch.sendfile on a plain TCP socket: stored batches are sent from their files (response-writer.ts) */
  sendFile?: boolean;
}
