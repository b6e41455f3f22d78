/**
 * SaslHandshake (key 17) v0–1. On a SASL listener it picks the connection's mechanism (v0: the
 * exchange continues in raw tokens; v1: in SaslAuthenticate requests) or refuses it with
 * UNSUPPORTED_SASL_MECHANISM and the enabled list, and on an authenticated connection begins
 * re-authentication (KIP-368): lib/security/sasl/session.ts. Anywhere else ILLEGAL_SASL_STATE, as Kafka.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { SaslHandshakeRequest, SaslHandshakeResponse } from '../../protocol/generated/sasl-handshake.js';
import { defineHandler } from './types.js';

export const saslHandshakeHandler = defineHandler<SaslHandshakeRequest, SaslHandshakeResponse>({
  apiKey: ApiKey.SaslHandshake,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const s = ctx.conn.sasl;
    if (s === undefined) return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] };
    return s.handshake(req.mechanism, ctx.apiVersion);
  },
  errorResponse(_req, errorCode, ctx) {
    return { errorCode, mechanisms: [...(ctx.conn.sasl?.settings.mechanisms ?? [])] };
  },
});
