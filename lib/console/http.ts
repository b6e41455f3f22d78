/** JSON in and out for the console's API: errors carry a status and a stable GREGOR_ERR_CONSOLE_* code. */
import type { ServerResponse } from 'node:http';

export const ConsoleErrorCode = {
  BAD_REQUEST: 'GREGOR_ERR_CONSOLE_BAD_REQUEST',
  NOT_FOUND: 'GREGOR_ERR_CONSOLE_NOT_FOUND',
  /** a mutating request without the console's CSRF token, or from another origin */
  CSRF: 'GREGOR_ERR_CONSOLE_CSRF',
  /** a Host header that is not the admin listener's (DNS rebinding) */
  HOST: 'GREGOR_ERR_CONSOLE_HOST',
  /** Kafka answered the in-process request with an error code */
  KAFKA: 'GREGOR_ERR_CONSOLE_KAFKA',
  /** an offset reset on a group that has members */
  GROUP_NOT_EMPTY: 'GREGOR_ERR_CONSOLE_GROUP_NOT_EMPTY',
  /** the broker has SASL enabled and the request has no session (log in), or a login failed */
  UNAUTHENTICATED: 'GREGOR_ERR_CONSOLE_UNAUTHENTICATED',
  /** a message filter that does not parse or failed to evaluate */
  FILTER: 'GREGOR_ERR_CONSOLE_FILTER',
} as const;
export type ConsoleErrorCode = (typeof ConsoleErrorCode)[keyof typeof ConsoleErrorCode];

export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly code: ConsoleErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ConsoleError';
  }
}

export function badRequest(message: string, details: Record<string, unknown> = {}): ConsoleError {
  return new ConsoleError(400, ConsoleErrorCode.BAD_REQUEST, message, details);
}

export function notFound(message: string): ConsoleError {
  return new ConsoleError(404, ConsoleErrorCode.NOT_FOUND, message);
}

/** JSON.stringify with bigints as strings (offsets), which the UI shows as they are. */
export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = `${toJson(value)}\n`;
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}

export function sendError(res: ServerResponse, e: ConsoleError): void {
  sendJson(res, e.status, { error: e.code, message: e.message, ...e.details });
}

/** The JSON object a mutating request carries (400 otherwise). */
export function bodyObject(body: Buffer): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(body.length === 0 ? '{}' : body.toString('utf8'));
  } catch (e) {
    throw badRequest(`request body is not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest('request body must be a JSON object');
  return v as Record<string, unknown>;
}

export function str(o: Record<string, unknown>, key: string, fallback?: string): string {
  const v = o[key];
  if (v === undefined && fallback !== undefined) return fallback;
  if (typeof v !== 'string') throw badRequest(`"${key}" must be a string`, { field: key });
  return v;
}

export function int(o: Record<string, unknown>, key: string, fallback?: number): number {
  const v = o[key];
  if (v === undefined && fallback !== undefined) return fallback;
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw badRequest(`"${key}" must be an integer`, { field: key });
  return n;
}

/** An integer query parameter within [min, max] (400 otherwise). */
export function queryInt(url: URL, key: string, fallback: number, min: number, max: number): number {
  const raw = url.searchParams.get(key);
  if (raw === null || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw badRequest(`query parameter ${key} must be an integer in [${min}, ${max}]`);
  return n;
}
