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

/** errno codes of a full file system (EDQUOT: a user's or project's quota is used up). */
const NO_SPACE_CODES: ReadonlySet<string> = new Set(['ENOSPC', 'EDQUOT']);

/** Whether `err` (or its cause) says the file system is full. */
export function isNoSpace(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NO_SPACE_CODES.has(code)) return true;
  }
  return false;
}

/**
 * The error a failed log write is answered with: KAFKA_STORAGE_ERROR, as Kafka answers a partition
 * whose log dir failed (full disk included), so producers see a retriable storage error.
 */
export function writeFailure(dir: string, err: unknown): LogError {
  const what = isNoSpace(err) ? 'the file system is full' : 'the write failed';
  return storageError(`writing ${dir} failed (${what}): ${(err as Error).message}`, err);
}

/**
 * Logs a class of events at most once per `intervalMs`, counting the ones it held back (a full
 * disk fails every append to every partition: one line per interval says so, not one per request).
 */
export class RateLimitedLog {
  private last = -Infinity;
  private held = 0;
  constructor(private readonly intervalMs: number) {}

  /** Calls `log` with the number of events held back since the last line, or holds this one back. */
  event(log: (suppressed: number) => void, now: number = Date.now()): void {
    if (now - this.last < this.intervalMs) {
      this.held++;
      return;
    }
    this.last = now;
    const held = this.held;
    this.held = 0;
    log(held);
  }
}
