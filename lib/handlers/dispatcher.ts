/**
 * Turns a request frame into a response frame: header checks, the ApiVersions special cases, the
 * handler call, UNKNOWN_SERVER_ERROR for anything a handler throws. Unknown APIs, unsupported versions
 * and undecodable requests close the connection, as Kafka does, and so does a handler that returns
 * closeConnection() (a failed acks=0 Produce) or throws on a request that has no response. An
 * optional FaultInjector (tests) is consulted once the request is decoded: see lib/network/faults.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ProtocolError } from '../../protocol/codec/errors.js';
import type { Chunk } from '../../protocol/codec/writer.js';
import { decodeRequest, encodeResponse, encodeResponseChunks, peekRequestHeader } from '../../protocol/frame.js';
import { fetchRequestReuseFor } from '../../protocol/fetch-request-reuse.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { mergeScopedError, withoutPartitions } from '../network/fault-scope.js';
import type { FaultInjector, PickedFault } from '../network/faults.js';
import type { BrokerMetrics } from '../observability/broker-metrics.js';
import type { RequestTiming } from '../observability/request-timing.js';
import type { BrokerServices } from '../services.js';
import { releaseAll } from '../log/read-buffer-pool.js';
import { applyClientQuotas, clientThrottles, prepareForQuotas } from '../quota/request-quotas.js';
import { type ConnectionDetails, type Handler, isCloseConnection, NO_RESPONSE, type RequestContext } from './types.js';

/**
 * `throttleMs` (client quotas, KIP-219): the connection is muted that long after the response (or,
 * with none, after the request). A pre-KIP-219 version's response is held back that long instead.
 */
export type DispatchResult =
  { response: Buffer | Chunk[]; throttleMs?: number; written?: () => void } | { noResponse: true; throttleMs?: number } | { close: string };

export class Dispatcher {
  private readonly handlers = new Map<number, Handler>();
  /** gregor.fetch.zero.copy, read at the first response */
  private zeroCopy: boolean | undefined;
  private readonly advertised = new Map<number, { minVersion: number; maxVersion: number }>();

  constructor(
    handlers: readonly Handler[],
    private readonly services: () => BrokerServices,
    private readonly faults: FaultInjector | null = null,
    /** request and topic meters: shown every response before it is encoded */
    private readonly metrics: BrokerMetrics | null = null,
  ) {
    for (const h of handlers) this.handlers.set(h.apiKey, h);
  }

  /** Sets the ranges served (from the registry, or narrowed by version emulation). */
  setAdvertised(ranges: readonly { apiKey: number; minVersion: number; maxVersion: number }[]): void {
    this.advertised.clear();
    for (const r of ranges) this.advertised.set(r.apiKey, { minVersion: r.minVersion, maxVersion: r.maxVersion });
  }

  async dispatch(frame: Buffer, conn: ConnectionDetails, logger: Logger, timing?: RequestTiming): Promise<DispatchResult> {
    const peek = peekRequestHeader(frame);
    if (peek === null) return { close: `request of ${frame.length} bytes is too short for a header` };
    const { apiKey, apiVersion, correlationId } = peek;
    if (timing !== undefined) {
      timing.apiKey = apiKey;
      timing.apiVersion = apiVersion;
      timing.correlationId = correlationId;
    }
    const range = this.advertised.get(apiKey);
    const handler = this.handlers.get(apiKey);
    if (apiKey === ApiKey.ApiVersions && range !== undefined && (apiVersion < range.minVersion || apiVersion > range.maxVersion)) {
      // Unsupported ApiVersions: a v0 body with UNSUPPORTED_VERSION and the key list, so the client can retry lower.
      const body = {
        errorCode: ErrorCode.UNSUPPORTED_VERSION,
        apiKeys: this.services().apiVersions.map((a) => ({ ...a })),
        throttleTimeMs: 0,
      };
      return { response: encodeResponse(ApiKey.ApiVersions, 0, correlationId, body, { sizePrefix: true }) };
    }
    if (handler === undefined || range === undefined) return { close: `unsupported API key ${apiKey}` };
    if (apiVersion < range.minVersion || apiVersion > range.maxVersion) {
      return { close: `unsupported version ${apiVersion} of API key ${apiKey} (served ${range.minVersion}-${range.maxVersion})` };
    }
    let decoded;
    try {
      decoded = decodeRequest(frame, conn.clientIds, apiKey === ApiKey.Fetch ? fetchRequestReuseFor(conn) : undefined);
    } catch (e) {
      if (e instanceof ProtocolError) return { close: `malformed request (API ${apiKey} v${apiVersion}): ${e.message}` };
      throw e;
    }
    if (timing !== undefined) {
      timing.decoded = true;
      timing.clientId = decoded.header.clientId;
    }
    if (apiKey === ApiKey.ApiVersions && apiVersion >= 3) rememberClientSoftware(conn, decoded.body);
    const ctx: RequestContext = {
      apiKey,
      apiVersion,
      correlationId,
      clientId: decoded.header.clientId,
      conn,
      services: this.services(),
      logger,
      timing,
      ...(this.faults !== null ? { faults: this.faults } : {}),
    };
    if (this.faults !== null) {
      const fault = this.faults.pick(apiKey, decoded.body, ctx);
      if (fault !== null) return this.dispatchFault(fault, handler, decoded.body as never, ctx);
    }
    let body: unknown;
    const quotas = ctx.services.quotas.enabled;
    const pre = quotas ? prepareForQuotas(decoded.body, ctx) : null;
    const started = quotas ? performance.now() : 0;
    try {
      const res = await handler.handle((pre?.request ?? decoded.body) as never, ctx);
      if (res === NO_RESPONSE) {
        const throttleMs = quotas ? applyClientQuotas(decoded.body, null, ctx, frame.length, 0) : 0;
        return throttleMs > 0 ? { noResponse: true, throttleMs } : { noResponse: true };
      }
      if (isCloseConnection(res)) return { close: res.reason };
      body = res;
    } catch (e) {
      const unanswered = failedWithoutResponse(apiKey, decoded.body);
      logger.error(
        { err: e, apiKey, apiVersion, correlationId },
        `request handler failed: ${unanswered === null ? 'answering UNKNOWN_SERVER_ERROR' : 'closing the connection'}`,
      );
      if (unanswered !== null) return { close: unanswered };
      body = handler.errorResponse(decoded.body as never, ErrorCode.UNKNOWN_SERVER_ERROR, ctx);
    }
    if (!quotas) return this.encode(handler, decoded.body as never, body, ctx);
    const handlerMs = performance.now() - started - (timing?.remoteMs ?? 0);
    const throttleMs = applyClientQuotas(decoded.body, body, ctx, frame.length, Math.max(0, handlerMs), pre?.plan ?? null);
    const out = this.encode(handler, decoded.body as never, body, ctx);
    if (throttleMs <= 0 || !('response' in out)) return out;
    // KIP-219: a client that throttles itself gets the response at once; an older one, after the throttle
    if (clientThrottles(apiKey, apiVersion)) return { ...out, throttleMs };
    await sleep(throttleMs);
    return out;
  }

  /**
   * The request under an injected fault (when 'before': the handler may never run; 'after': it ran).
   * A scoped 'error' (topic filter, Produce/Fetch) errs only the partitions the rule names: 'before',
   * the handler runs on the request without them; either way the answer merges both (fault-scope.ts).
   */
  private async dispatchFault(fault: PickedFault, handler: Handler, req: never, ctx: RequestContext): Promise<DispatchResult> {
    const { apiKey, apiVersion, correlationId, logger } = ctx;
    const what = `${fault.action} ${fault.when} API ${apiKey} v${apiVersion}`;
    const delayMs = fault.action === 'delay' ? fault.nextDelayMs() : 0;
    logger.debug(
      {
        apiKey,
        apiVersion,
        correlationId,
        action: fault.action,
        when: fault.when,
        errorCode: fault.errorCode,
        delayMs,
        applied: fault.applied,
      },
      `fault injection: ${what}`,
    );
    const resolve = (id: string) => ctx.services.metadata.topicById(id)?.name;
    const hit = (topic: string, partition: number) => fault.hits(topic, partition);
    let run: never = req;
    if (fault.when === 'before') {
      if (fault.action === 'close') return { close: `fault injection: ${what} (handler not run)` };
      if (fault.action === 'error') {
        const rest = fault.scoped ? withoutPartitions(apiKey, req, hit, resolve) : null;
        if (rest === null) {
          // A request Kafka never answers (Produce acks=0) gets nothing back: it is simply not handled.
          if (apiKey === ApiKey.Produce && (req as { acks?: unknown }).acks === 0) return { noResponse: true };
          return this.encode(handler, req, handler.errorResponse(req, fault.errorCode, ctx), ctx);
        }
        run = rest as never;
      } else await sleep(delayMs);
    }
    let body: unknown;
    try {
      const res = await handler.handle(run, ctx);
      // the handler's own close (a failed acks=0 Produce) wins over whatever the fault would do after it
      if (isCloseConnection(res)) return { close: res.reason };
      if (res === NO_RESPONSE) {
        if (fault.when === 'after' && fault.action === 'close') return { close: `fault injection: ${what} (handler ran, no response)` };
        if (fault.when === 'after' && fault.action === 'delay') await sleep(delayMs);
        return { noResponse: true };
      }
      body = res;
    } catch (e) {
      const unanswered = failedWithoutResponse(apiKey, run);
      logger.error(
        { err: e, apiKey, apiVersion, correlationId },
        `request handler failed: ${unanswered === null ? 'answering UNKNOWN_SERVER_ERROR' : 'closing the connection'}`,
      );
      if (unanswered !== null) return { close: unanswered };
      body = handler.errorResponse(run, ErrorCode.UNKNOWN_SERVER_ERROR, ctx);
    }
    if (fault.action === 'error' && (fault.when === 'after' || run !== req)) {
      const errorBody = handler.errorResponse(req, fault.errorCode, ctx);
      body = fault.scoped ? mergeScopedError(apiKey, req, errorBody, body, hit, resolve) : errorBody;
    } else if (fault.when === 'after') {
      if (fault.action === 'close') return { close: `fault injection: ${what} (handler ran, response dropped)` };
      if (fault.action === 'delay') await sleep(delayMs);
    }
    return this.encode(handler, req, body, ctx);
  }

  private encode(handler: Handler, req: never, body: unknown, ctx: RequestContext): DispatchResult {
    const { apiKey, apiVersion, correlationId } = ctx;
    this.metrics?.responded(apiKey, req, body, ctx.timing);
    let out: DispatchResult;
    // pooled read buffers the records are views of (Fetch): free once the response no longer needs them
    const leases = ctx.readLeases !== undefined && ctx.readLeases.length > 0 ? ctx.readLeases : null;
    try {
      // Records are the stored slices read from the log: with gregor.fetch.zero.copy they go to the
      // socket as they are (the rest of the response in buffers between them; the connection releases
      // the read buffers once the write completes), otherwise the encoder copies them once into the
      // response buffer (and the read buffers go back at once).
      this.zeroCopy ??= ctx.services.config.bool('gregor.fetch.zero.copy');
      if (this.zeroCopy) {
        const chunks = encodeResponseChunks(apiKey, apiVersion, correlationId, body, { sizePrefix: true });
        const only = chunks.length === 1 ? chunks[0] : undefined;
        const response = Buffer.isBuffer(only) ? only : chunks;
        out = leases === null ? { response } : { response, written: () => releaseAll(leases) };
      } else {
        out = { response: encodeResponse(apiKey, apiVersion, correlationId, body, { sizePrefix: true }) };
        if (leases !== null) releaseAll(leases);
      }
    } catch (e) {
      if (leases !== null) releaseAll(leases);
      ctx.logger.error({ err: e, apiKey, apiVersion, correlationId }, 'response encoding failed: answering UNKNOWN_SERVER_ERROR');
      const fallback = handler.errorResponse(req, ErrorCode.UNKNOWN_SERVER_ERROR, ctx);
      out = { response: encodeResponse(apiKey, apiVersion, correlationId, fallback, { sizePrefix: true }) };
    }
    if (ctx.timing !== undefined) ctx.timing.responseReadyAt = performance.now();
    return out;
  }
}

/**
 * A request Kafka never answers (Produce with acks=0) whose handler failed: Kafka closes the connection
 * (ProduceRequest.getErrorResponse is null for acks=0), so the producer notices. The close reason, or
 * null when the request has a response to carry the error.
 */
function failedWithoutResponse(apiKey: number, req: unknown): string | null {
  if (apiKey !== ApiKey.Produce || (req as { acks?: unknown }).acks !== 0) return null;
  return 'Produce with acks=0 failed in the handler (UNKNOWN_SERVER_ERROR)';
}

/** Remembers the client software an ApiVersions v3+ request names, for the connection's later requests. */
function rememberClientSoftware(conn: ConnectionDetails, body: unknown): void {
  const { clientSoftwareName: name, clientSoftwareVersion: version } = body as {
    clientSoftwareName?: string;
    clientSoftwareVersion?: string;
  };
  if (name !== undefined && name !== '') conn.clientSoftware = { name, version: version ?? '' };
}
