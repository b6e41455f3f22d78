/** Helpers shared by the command implementations. */
import { ClientError, ClientErrorCode, describeKafkaCode, kafkaError } from '../../client/errors.js';
import { errorName } from '../../../protocol/generated/error-codes.js';
import type { Context } from '../context.js';
import { ExitCode, formatError } from '../errors.js';

/** A Kafka error as JSON output shows it. */
export interface JsonError {
  code: number | string;
  name: string;
  message: string;
}

export function jsonKafkaError(code: number, message: string | null): JsonError {
  return { code, name: errorName(code), message: message ?? '' };
}

export function jsonClientError(e: unknown): JsonError {
  if (e instanceof ClientError && e.kafkaCode !== undefined) return { code: e.kafkaCode, name: errorName(e.kafkaCode), message: e.message };
  if (e instanceof ClientError) return { code: e.code, name: e.code, message: e.message };
  return { code: 'GREGOR_ERR_CLI_FAILED', name: 'ERROR', message: e instanceof Error ? e.message : String(e) };
}

/** The STATUS cell: OK, or "NAME (code)". */
export function statusCell(code: number): string {
  return code === 0 ? 'OK' : describeKafkaCode(code);
}

/** An admin item's failure as the error stderr shows. */
export function itemError(api: string, broker: string, subject: string, code: number, message: string | null): ClientError {
  return kafkaError(code, { api, broker, subject, message });
}

/** Writes each failure to stderr; the exit code is 1 when there was any. */
export function reportFailures(failures: readonly unknown[]): number {
  for (const f of failures) process.stderr.write(`${formatError(f).text}\n`);
  return failures.length > 0 ? ExitCode.ERROR : ExitCode.OK;
}

/** Text tables or one JSON document. */
export function emit(ctx: Context, json: unknown, text: () => string): void {
  if (ctx.json) ctx.out.json(json);
  else ctx.out.line(text());
}

export function notFound(what: string): ClientError {
  return new ClientError(ClientErrorCode.NOT_FOUND, what);
}

/** Sorted by name (code-unit order: stable whatever the locale). */
export function byName<T>(key: (t: T) => string): (a: T, b: T) => number {
  return (a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
}
