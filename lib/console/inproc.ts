/**
 * The console's way into the broker: Kafka's own request handlers (lib/handlers/), called in-process
 * with typed requests, so that creating a topic, altering configs, producing, fetching, listing
 * offsets and committing group offsets behave exactly as they do for a Kafka client (same checks,
 * same error codes), without a loop-back connection and without the dispatcher (the console's calls
 * are not counted in the request metrics and fault rules do not apply to them).
 */
import { randomUUID } from 'node:crypto';
import { errorName } from '../../protocol/generated/error-codes.js';
import { type Handler, isCloseConnection, NO_RESPONSE, type RequestContext } from '../handlers/types.js';
import type { BrokerServices } from '../services.js';
import { ConsoleError, ConsoleErrorCode } from './http.js';

export interface InprocConnection {
  /** resolves the connection's `closed` (a live tail ends: the fetch sessions it held are released) */
  close(): void;
  call<Req, Res>(handler: Handler<Req, Res>, version: number, req: Req): Promise<Res>;
}

let correlation = 0;

export function inprocConnection(services: BrokerServices, listenerName: string): InprocConnection {
  let close!: () => void;
  const closed = new Promise<void>((resolve) => (close = resolve));
  const conn = { id: `console-${randomUUID()}`, remoteAddress: '127.0.0.1', remotePort: 0, listenerName, closed };
  return {
    close,
    async call<Req, Res>(handler: Handler<Req, Res>, version: number, req: Req): Promise<Res> {
      const ctx: RequestContext = {
        apiKey: handler.apiKey,
        apiVersion: version,
        correlationId: (correlation = (correlation + 1) | 0),
        clientId: 'gregor-console',
        conn,
        services,
        logger: services.logger,
      };
      const res = await handler.handle(req, ctx);
      if (res === NO_RESPONSE || isCloseConnection(res)) throw new Error(`API ${handler.apiKey} gave no response`);
      return res;
    },
  };
}

/** 502-less mapping of a Kafka error code in a response to the console's error (400 for what the caller asked). */
export function kafkaError(code: number, message: string | null | undefined, what: string): ConsoleError {
  const name = errorName(code);
  const status = name === 'UNKNOWN_TOPIC_OR_PARTITION' || name === 'GROUP_ID_NOT_FOUND' ? 404 : 400;
  return new ConsoleError(status, ConsoleErrorCode.KAFKA, `${what}: ${name}${message ? `: ${message}` : ''}`, {
    kafkaError: name,
    kafkaCode: code,
  });
}
