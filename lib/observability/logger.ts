/**
 * pino JSON logger: one line per event, child loggers per connection (`logger.child({ conn: id })`).
 * The level comes from opts.level, else LOG_LEVEL, else 'info'.
 */
import { pino } from 'pino';

export type Logger = pino.Logger;
export type LogDestination = pino.DestinationStream | NodeJS.WritableStream;

export interface LoggerOptions {
  /** trace | debug | info | warn | error | fatal | silent */
  level?: string;
  /** where lines go; default stdout (through pino's fast sonic-boom destination) */
  destination?: LogDestination;
  /** static fields on every line, e.g. { broker: 1 } */
  base?: Record<string, unknown>;
  /** logger name (the `name` field) */
  name?: string;
}

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']);

/** Normalizes a level name; unknown values fall back to 'info' rather than throwing at startup. */
export function resolveLevel(level: string | undefined = process.env['LOG_LEVEL']): string {
  const l = (level ?? '').trim().toLowerCase();
  return LEVELS.has(l) ? l : 'info';
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options: pino.LoggerOptions = {
    level: resolveLevel(opts.level ?? process.env['LOG_LEVEL']),
    base: { pid: process.pid, ...(opts.base ?? {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (opts.name !== undefined) options.name = opts.name;
  const dest = opts.destination ?? pino.destination({ dest: 1, sync: false });
  return pino(options, dest);
}

/** A logger that discards everything (tests, embedded use without logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
