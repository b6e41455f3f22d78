/** The contract every API handler implements; one file per API under lib/handlers/. */
import type { Logger } from 'pino';
import type { ClientIdCache } from '../../protocol/frame.js';
import type { Releasable } from '../log/read-buffer-pool.js';
import type { FaultInjector } from '../network/faults.js';
import type { RequestTiming } from '../observability/request-timing.js';
import type { SaslSession } from '../security/sasl/session.js';
import type { BrokerServices } from '../services.js';

/** Returned by a handler when Kafka sends no response (Produce with acks=0). */
export const NO_RESPONSE: unique symbol = Symbol('no-response');
export type NoResponse = typeof NO_RESPONSE;

const CLOSE: unique symbol = Symbol('close-connection');
/**
 * Returned by a handler when Kafka answers the request by closing the connection instead (a Produce
 * with acks=0 that failed: there is no response to carry the error, so the producer learns it from the
 * disconnect). The dispatcher turns it into its close result; the connection logs `reason` once.
 */
export interface CloseConnection {
  readonly [CLOSE]: true;
  readonly reason: string;
}
export function closeConnection(reason: string): CloseConnection {
  return { [CLOSE]: true, reason };
}
export function isCloseConnection(v: unknown): v is CloseConnection {
  return typeof v === 'object' && v !== null && CLOSE in v;
}

export interface ConnectionDetails {
  id: string;
  remoteAddress: string;
  remotePort: number;
  listenerName: string;
  /** Resolves once the connection has closed: per-connection state a handler keeps is released then. */
  readonly closed: Promise<void>;
  /** The client's software name and version from its ApiVersions v3+ request (the dispatcher remembers it). */
  clientSoftware?: { name: string; version: string };
  /** The connection's client-id cache (lib/network/connection.ts); absent: every client id is decoded. */
  readonly clientIds?: ClientIdCache;
  /** The request in flight is done with its bytes: they leave the broker's request budget (queued.max.request.bytes). */
  readonly requestBytesDone?: () => void;
  /** Kafka's principal of the connection (User:ANONYMOUS, a certificate's, or SASL's User:<name>), for authorization. */
  readonly principal?: string;
  /** On a SASL listener: the connection's SASL state, which SaslHandshake and SaslAuthenticate drive. */
  readonly sasl?: SaslSession;
  /** A Fetch may answer with FileSlices (sent with sendfile): a plain TCP connection, gregor.fetch.sendfile on. */
  readonly sendsFiles?: boolean;
}

export interface RequestContext {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string | null;
  conn: ConnectionDetails;
  services: BrokerServices;
  logger: Logger;
  /**
   * This request's timing record, when requests are observed: a handler that parks the request in
   * the purgatory adds the time it waited to `timing.remoteMs` (Kafka's RemoteTimeMs).
   */
  timing?: RequestTiming | undefined;
  /** The broker's fault injector, when it has one (the Produce handler asks it whether appends are paused). */
  faults?: FaultInjector;
  /**
   * Pooled segment read buffers the response holds views of (Fetch): the dispatcher releases them once
   * the response is copied, or, zero-copy, the connection does once the response is written.
   */
  readLeases?: Releasable[];
}

export interface Handler<Req = never, Res = unknown> {
  readonly apiKey: number;
  /** Versions this handler serves (and so the broker advertises). */
  readonly minVersion: number;
  readonly maxVersion: number;
  handle(req: Req, ctx: RequestContext): Res | NoResponse | CloseConnection | Promise<Res | NoResponse | CloseConnection>;
  /** The response Kafka gives when the whole request fails with `errorCode`. */
  errorResponse(req: Req, errorCode: number, ctx: RequestContext): Res;
}

/** Lets handler modules declare their request/response types and still sit in one registry. */
export function defineHandler<Req, Res>(h: Handler<Req, Res>): Handler<Req, Res> {
  return h;
}
