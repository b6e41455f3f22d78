/**
 * SaslAuthenticate (key 36) v0–2: the next token of the connection's SASL exchange (after a SaslHandshake
 * v1), answered with the mechanism's token, or SASL_AUTHENTICATION_FAILED and a message (the connection
 * then closes: lib/security/sasl/gate.ts); v1+ carries the session lifetime (KIP-368). Outside an
 * exchange: ILLEGAL_SASL_STATE, as Kafka.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { SaslAuthenticateRequest, SaslAuthenticateResponse } from '../../protocol/generated/sasl-authenticate.js';
import { defineHandler } from './types.js';

export const saslAuthenticateHandler = defineHandler<SaslAuthenticateRequest, SaslAuthenticateResponse>({
  apiKey: ApiKey.SaslAuthenticate,
  minVersion: 0,
  maxVersion: 2,
  handle(req, ctx) {
    const s = ctx.conn.sasl;
    if (s === undefined)
      return {
        errorCode: ErrorCode.ILLEGAL_SASL_STATE,
        errorMessage: 'SaslAuthenticate request received after successful authentication',
        authBytes: Buffer.alloc(0),
        sessionLifetimeMs: 0n,
      };
    return s.authenticate(req.authBytes, ctx.apiVersion);
  },
  errorResponse(_req, errorCode) {
    return { errorCode, errorMessage: null, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n };
  },
});
