import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { buildMessageSet, buildRecordBatch } from '../../../protocol/records/index.js';
import type { BuildBatchOptions, BuildMessageSetOptions, RecordInput } from '../../../protocol/records/index.js';
import { LogError } from '../../../lib/log/errors.js';
import { defaultLogConfig } from '../../../lib/log/log-config.js';
import type { LogConfig } from '../../../lib/log/log-config.js';
import { PartitionLog } from '../../../lib/log/partition-log.js';
import type { BrokerConfig } from '../../../lib/config.js';
import { LogManager } from '../../../lib/log/log-dirs.js';
import { makeTempDir } from '../../helpers/temp-dirs.js';

export const T0 = 1_700_000_000_000n;

export function tmpDir(name = 'log'): string {
  return makeTempDir(`gregor-${name}-`);
}

export function rmDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export function records(n: number, opts: { prefix?: string; ts?: bigint; size?: number } = {}): RecordInput[] {
  return Array.from({ length: n }, (_, i) => ({
    key: Buffer.from(`${opts.prefix ?? 'k'}-${i}`),
    value: Buffer.alloc(opts.size ?? 20, `${opts.prefix ?? 'v'}-${i}`),
    timestamp: (opts.ts ?? T0) + BigInt(i),
  }));
}

export function v2(n: number, opts: BuildBatchOptions & { prefix?: string; ts?: bigint; size?: number } = {}): Buffer {
  const { prefix, ts, size, ...rest } = opts;
  return buildRecordBatch(
    records(n, {
      ...(prefix === undefined ? {} : { prefix }),
      ...(ts === undefined ? {} : { ts }),
      ...(size === undefined ? {} : { size }),
    }),
    rest,
  );
}

export function legacy(n: number, opts: BuildMessageSetOptions & { ts?: bigint }): Buffer {
  const ts = opts.ts ?? T0;
  return buildMessageSet(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k-${i}`), value: Buffer.from(`value-${i}`), timestamp: ts + BigInt(i) })),
    opts,
  );
}

export function config(over: Partial<LogConfig> = {}): LogConfig {
  return defaultLogConfig({ fileDeleteDelayMs: 0, ...over });
}

export async function openLog(
  dir: string,
  over: Partial<LogConfig> = {},
  recover = false,
  extra: { recentCacheBytes?: number } = {},
): Promise<PartitionLog> {
  return PartitionLog.open(dir, 'topic', 0, config(over), { recover, ...extra });
}

export function expectLogError(fn: () => unknown, errorCode: number): LogError {
  try {
    fn();
  } catch (err) {
    expect(err, String(err)).to.be.instanceOf(LogError);
    expect((err as LogError).errorCode, (err as Error).message).to.equal(errorCode);
    return err as LogError;
  }
  expect.fail(`expected LogError ${errorCode}`);
}

export async function expectLogErrorAsync(p: Promise<unknown>, errorCode: number): Promise<LogError> {
  try {
    await p;
  } catch (err) {
    expect(err, String(err)).to.be.instanceOf(LogError);
    expect((err as LogError).errorCode, (err as Error).message).to.equal(errorCode);
    return err as LogError;
  }
  expect.fail(`expected LogError ${errorCode}`);
}

/** Reads everything from `from` to the end, in order. */
export async function readAll(log: PartitionLog, from = log.logStartOffset): Promise<Buffer[]> {
  const out: Buffer[] = [];
  let offset = from;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20, { minOneMessage: true });
    if (r.records.length === 0) break;
    for (const b of r.records) out.push(...splitEntries(b));
    offset = lastOffsetOf(out[out.length - 1] as Buffer) + 1n;
  }
  return out;
}

/** A read result's Buffer (one entry, or a run of uncompressed magic 0/1 messages) as whole entries. */
export function splitEntries(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let p = 0; p + 12 <= buf.length;) {
    const end = p + 12 + buf.readInt32BE(p + 8);
    out.push(buf.subarray(p, end));
    p = end;
  }
  return out;
}

/** Last offset of a stored entry (v2 batch or magic 0/1 message). */
export function lastOffsetOf(entry: Buffer): bigint {
  const magic = entry.readInt8(16);
  return magic === 2 ? entry.readBigInt64BE(0) + BigInt(entry.readInt32BE(23)) : entry.readBigInt64BE(0);
}

export function segmentFiles(dir: string): string[] {
  return fs.readdirSync(path.join(dir, 'topic-0')).sort();
}

/** A logger for LogManager that keeps each line's message, for asserting what was logged. */
export function captureLog(): {
  lines: string[];
  logger: { info: (o: object, m?: string) => void; warn: (o: object, m?: string) => void; error: (o: object, m?: string) => void };
} {
  const lines: string[] = [];
  const push = (_: object, m?: string): void => void lines.push(m ?? '');
  return { lines, logger: { info: push, warn: push, error: push } };
}

/** A torn write: cuts the last `tail` bytes of the partition directory's active segment in half and appends garbage. */
export function tearTail(dir: string, tail: number): void {
  const seg = fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.log'))
    .sort()
    .pop() as string;
  const file = path.join(dir, seg);
  fs.truncateSync(file, fs.statSync(file).size - Math.ceil(tail / 2));
  fs.appendFileSync(file, Buffer.from('torn \x00\x01\x02 garbage garbage'));
}

/**
 * Runs of a LogManager over one data directory per test (made before each test, removed after it):
 * `open` starts a run, `crash` drops one without a shutdown (as a kill -9 would), and every run still
 * open is shut down after the test. Call inside a describe().
 */
export function managerRuns(
  name: string,
  broker: BrokerConfig,
): {
  readonly dir: string;
  open: (logger?: ReturnType<typeof captureLog>['logger']) => Promise<LogManager>;
  crash: (m: LogManager) => void;
} {
  let dir = '';
  const managers: LogManager[] = [];
  beforeEach(() => {
    dir = tmpDir(name);
  });
  afterEach(async () => {
    for (const m of managers.splice(0)) await m.shutdown().catch(() => undefined);
    rmDir(dir);
  });
  return {
    get dir() {
      return dir;
    },
    open: async (logger) => {
      const m = await LogManager.open(dir, broker, logger);
      managers.push(m);
      return m;
    },
    crash: (m) => void managers.splice(managers.indexOf(m), 1),
  };
}
