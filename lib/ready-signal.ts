/**
 * How `gregor start` tells tools and people that the broker is ready: one machine-readable stdout line
 * `GREGOR_READY {"bootstrap":"host:port","admin":"host:port"|null}`, the same JSON in `--ready-file`
 * (written atomically: a temporary file in the same directory, then renamed; removed when the broker
 * stops cleanly, and a stale one from an earlier run is removed before start-up), and a short banner on
 * stderr when stderr is a terminal.
 */
import { accessSync, constants, readFileSync, rmSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pino } from 'pino';
import type { Logger } from './observability/logger.js';

export const READY_PREFIX = 'GREGOR_READY ';

export interface ReadyInfo {
  bootstrap: string;
  admin: string | null;
}

export function readyLine(info: ReadyInfo): string {
  return `${READY_PREFIX}${JSON.stringify({ bootstrap: info.bootstrap, admin: info.admin })}\n`;
}

/**
 * Before start-up: removes a ready file left by an earlier run and checks that its directory is
 * writable, so a bad path fails before the broker starts. Throws an Error with a message for people.
 */
export function prepareReadyFile(path: string): void {
  try {
    rmSync(path, { force: true });
    accessSync(dirname(path), constants.W_OK);
  } catch (e) {
    throw new Error(`--ready-file ${path}: ${(e as Error).message}`, { cause: e });
  }
}

/** Writes `data` to `path` through a temporary file in the same directory, so readers see all or nothing. */
export async function writeFileAtomically(path: string, data: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  await writeFile(tmp, data);
  await rename(tmp, path);
}

export function removeReadyFile(path: string): Promise<void> {
  return rm(path, { force: true });
}

/**
 * Writes the ready file (if any), then the GREGOR_READY line. The line goes through the JSON log's own
 * stdout stream (pino's asynchronous destination) when there is one, so it comes after every log line
 * written before it: a tool that reads up to the ready line has seen the start-up warnings.
 */
export async function announceReady(info: ReadyInfo, opts: { logger: Logger; readyFile?: string | undefined }): Promise<void> {
  if (opts.readyFile !== undefined)
    await writeFileAtomically(opts.readyFile, `${JSON.stringify({ bootstrap: info.bootstrap, admin: info.admin })}\n`);
  const logStream = (opts.logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    { write?: unknown; fd?: unknown } | undefined;
  if (logStream !== undefined && typeof logStream.write === 'function' && logStream.fd === 1) {
    (logStream.write as (s: string) => void).call(logStream, readyLine(info));
    return;
  }
  await new Promise<void>((resolve) => process.stdout.write(readyLine(info), () => resolve()));
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version !== undefined ? ` ${pkg.version}` : '';
  } catch {
    return '';
  }
}

/** The human banner (stderr, terminals only): addresses, data dir, declared topics, a line to copy. */
export function banner(
  info: ReadyInfo,
  opts: { dataDir: string; topics: readonly { name: string; partitions: number }[]; readyMs: number },
): string {
  const rows: [string, string][] = [
    ['Kafka', info.bootstrap],
    ['admin', info.admin === null ? '(none)' : `http://${info.admin}  (/metrics, /v1/status/ready)`],
    ['data', opts.dataDir],
  ];
  if (opts.topics.length > 0) rows.push(['topics', opts.topics.map((t) => `${t.name} (${t.partitions})`).join(', ')]);
  const lines = [
    `gregor${version()} ready in ${Math.round(opts.readyMs)} ms`,
    ...rows.map(([k, v]) => `  ${k.padEnd(7)} ${v}`),
    '',
    `  export KAFKA_BOOTSTRAP_SERVERS=${info.bootstrap}`,
    '',
  ];
  return `${lines.join('\n')}\n`;
}
