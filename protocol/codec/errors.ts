/**
 * Stable internal error codes. They appear in logs and in thrown errors; never renumber or rename one.
 */
export const GregorErrorCode = {
  TRUNCATED: 'GREGOR_ERR_TRUNCATED',
  LENGTH_EXCEEDS_FRAME: 'GREGOR_ERR_LENGTH_EXCEEDS_FRAME',
  NEGATIVE_LENGTH: 'GREGOR_ERR_NEGATIVE_LENGTH',
  VARINT_TOO_LONG: 'GREGOR_ERR_VARINT_TOO_LONG',
  NULL_NOT_ALLOWED: 'GREGOR_ERR_NULL_NOT_ALLOWED',
  INVALID_UTF8: 'GREGOR_ERR_INVALID_UTF8',
  UNSUPPORTED_VERSION: 'GREGOR_ERR_UNSUPPORTED_VERSION',
  UNKNOWN_API_KEY: 'GREGOR_ERR_UNKNOWN_API_KEY',
  FIELD_NOT_IN_VERSION: 'GREGOR_ERR_FIELD_NOT_IN_VERSION',
  TRAILING_BYTES: 'GREGOR_ERR_TRAILING_BYTES',
  INVALID_RECORD: 'GREGOR_ERR_INVALID_RECORD',
  CORRUPT_RECORD: 'GREGOR_ERR_CORRUPT_RECORD',
  UNSUPPORTED_MAGIC: 'GREGOR_ERR_UNSUPPORTED_MAGIC',
  UNSUPPORTED_COMPRESSION: 'GREGOR_ERR_UNSUPPORTED_COMPRESSION',
  COMPRESSION_FAILED: 'GREGOR_ERR_COMPRESSION_FAILED',
} as const;
export type GregorErrorCode = (typeof GregorErrorCode)[keyof typeof GregorErrorCode];

/** Raised for any malformed or truncated input on the wire. Never a RangeError. */
export class ProtocolError extends Error {
  readonly code: GregorErrorCode;
  constructor(code: GregorErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.name = 'ProtocolError';
    this.code = code;
  }
}
