/**
 * What a SASL listener lets through, in front of the dispatcher: before authentication only
 * ApiVersions and SaslHandshake, then SaslAuthenticate (or, after SaslHandshake v0, raw tokens,
 * answered here with raw size-prefixed tokens); any other request closes the connection with one
 * line, as Kafka does. A failed step is answered (after connection.failed.authentication.delay.ms)
 * and the connection closes with one warning. Once authenticated, a session past its lifetime
 * (connections.max.reauth.ms, a token's expiry) is closed at its next request other than the
 * SaslHandshake that re-authenticates it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Chunk } from '../../../protocol/codec/writer.js';
import { peekRequestHeader } from '../../../protocol/frame.js';
import { API_KEYS, ApiKey } from '../../../protocol/generated/api-keys.js';
import type { ConnectionInfo, Dispatch, DispatchResult } from '../../network/connection.js';
import type { RequestTiming } from '../../observability/request-timing.js';

const apiName = (k: number): string => API_KEYS.get(k)?.name ?? `API key ${k}`;

function sizePrefixed(token: Buffer): Buffer {
  const out = Buffer.allocUnsafe(4 + token.length);
  out.writeInt32BE(token.length, 0);
  token.copy(out, 4);
  return out;
}

export function saslGate(dispatch: Dispatch): Dispatch {
  return (frame: Buffer, conn: ConnectionInfo, timing?: RequestTiming) => {
    const s = conn.sasl;
    if (s === undefined) return dispatch(frame, conn, timing);
    if (s.state === 'legacy') {
      if (timing !== undefined) {
        timing.apiKey = ApiKey.SaslAuthenticate;
        timing.apiVersion = 0;
      }
      const answer = s.legacyToken(frame);
      if (s.principal !== null) conn.principal = s.principal;
      return answer === null ? failed(conn, null) : { response: sizePrefixed(answer) };
    }
    const peek = peekRequestHeader(frame);
    if (peek === null) return dispatch(frame, conn, timing); // the dispatcher closes it
    const { apiKey } = peek;
    if (timing !== undefined) {
      timing.apiKey = apiKey;
      timing.apiVersion = peek.apiVersion;
      timing.correlationId = peek.correlationId;
    }
    if (s.state === 'complete') {
      if (apiKey === ApiKey.SaslHandshake && s.canReauthenticate) return answer(dispatch(frame, conn, timing), conn);
      if (s.expired())
        return {
          close: `SASL session expired: ${apiName(apiKey)} request without re-authentication (connections.max.reauth.ms)`,
          level: 'info',
          fields: { principal: s.principal },
        };
      return dispatch(frame, conn, timing);
    }
    const allowed =
      s.state === 'handshake' ? apiKey === ApiKey.ApiVersions || apiKey === ApiKey.SaslHandshake : apiKey === ApiKey.SaslAuthenticate;
    if (!allowed)
      return {
        close: `unexpected ${apiName(apiKey)} request ${s.state === 'handshake' ? 'before the SASL handshake' : 'during SASL authentication'}`,
        level: 'warn',
        fields: { apiKey, listener: conn.listenerName },
      };
    return answer(dispatch(frame, conn, timing), conn);
  };
}

/** The answer to a SaslHandshake / SaslAuthenticate: as it is, or, when the step failed, delayed and followed by the close. */
async function answer(result: DispatchResult | Promise<DispatchResult>, conn: ConnectionInfo): Promise<DispatchResult> {
  const r = await result;
  const s = conn.sasl;
  if (s === undefined) return r;
  if (s.principal !== null) conn.principal = s.principal;
  if (s.failure === null) return r;
  return failed(conn, 'response' in r ? r.response : null);
}

async function failed(conn: ConnectionInfo, response: Buffer | Chunk[] | null): Promise<DispatchResult> {
  const s = conn.sasl;
  const failure = s?.failure ?? { reason: 'SASL authentication failed', fields: {} };
  const delay = s?.settings.failedAuthDelayMs ?? 0;
  if (delay > 0) await sleep(delay);
  const close = { close: failure.reason, level: 'warn' as const, fields: failure.fields };
  return response === null ? close : { response, ...close };
}
