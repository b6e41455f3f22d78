import { ErrorCode } from '../../protocol/generated/error-codes.js';

/** Stable internal codes for log failures (they appear in logs; never rename one). */
export const GregorLogErrorCode = {
  /** An append or read was refused with a Kafka error code (validation, range). */
  REFUSED: 'GREGOR_ERR_LOG_REFUSED',
  /** Corruption that recovery cannot repair by truncating the tail. */
  CORRUPT: 'GREGOR_ERR_LOG_CORRUPT',
  /** A write, fsync or open failed; the log is offline. */
  STORAGE: 'GREGOR_ERR_LOG_STORAGE',
  /** The log was closed or deleted. */
  CLOSED: 'GREGOR_ERR_LOG_CLOSED',
  /** A synchronous call needs the open log, which is still opening (open() it first). */
  NOT_OPEN: 'GREGOR_ERR_LOG_NOT_OPEN',
} as const;
export type GregorLogErrorCode = (typeof GregorLogErrorCode)[keyof typeof GregorLogErrorCode];

/** A log failure with the Kafka error code a client should see. */
export class LogError extends Error {
  readonly errorCode: number;
  readonly code: GregorLogErrorCode;
  constructor(errorCode: number, message: string, code: GregorLogErrorCode = GregorLogErrorCode.REFUSED, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = 'LogError';
    this.errorCode = errorCode;
    this.code = code;
  }
}

export function storageError(message: string, cause?: unknown): LogError {
  return new LogError(ErrorCode.KAFKA_STORAGE_ERROR, message, GregorLogErrorCode.STORAGE, { cause });
}

export function closedError(what: string): LogError {
  return new LogError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${what} is closed`, GregorLogErrorCode.CLOSED);
}
