/**
 * Issue 17.3: what the read path's CRC check (lib/log/read-verify.ts) costs. A log of
 * BENCH_RV_MB (default 64) MB of 16 KB v2 batches is written and closed; each round opens it again
 * (a clean start: its bytes came from disk, nothing vouched for them) and reads it whole, 1 MB per
 * read, three ways, taking turns:
 *   - "first read, checked": what a consumer reading a log after a restart pays (each entry's CRC
 *     and offsets checked once);
 *   - "first read, unchecked": the same read with the segments marked verified beforehand (the read
 *     path as it was before the check);
 *   - "read again": a second pass over the same open log (verified by the first: no check).
 * The file is in the page cache throughout: the figures are the CPU cost of the read path, the
 * case where a check shows most. Figures: MB read per CPU-second of the process (user + system; the
 * machine's other load moves wall time), medians over BENCH_RV_ROUNDS (default 15) rounds.
 *
 *   node dist/compat/bench/read-verify.js
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { defaultLogConfig } from '../../lib/log/log-config.js';
import { UnifiedLog } from '../../lib/log/unified-log.js';
import { loadAverage, textTable, writeResult } from './eos-common.js';
import { envInt } from './proc-stats.js';

const MB = envInt('BENCH_RV_MB', 64);
const ROUNDS = envInt('BENCH_RV_ROUNDS', 15);
const RECORDS_PER_BATCH = 100;
const RECORD_BYTES = 160;

const config = defaultLogConfig({ segmentBytes: 64 << 20 });

async function readWhole(log: UnifiedLog): Promise<number> {
  let offset = log.logStartOffset;
  let bytes = 0;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20, { minOneMessage: true });
    if (r.records.length === 0) throw new Error(`nothing read at ${offset}`);
    bytes += r.size;
    const last = r.records[r.records.length - 1] as Buffer;
    offset = last.readBigInt64BE(0) + BigInt(last.readInt32BE(23)) + 1n;
  }
  return bytes;
}

/** MB per CPU-second of this process (user + system): wall time is at the mercy of the machine's other load. */
async function timed(fn: () => Promise<number>): Promise<number> {
  const c0 = process.cpuUsage();
  const bytes = await fn();
  const c = process.cpuUsage(c0);
  return bytes / (1 << 20) / ((c.user + c.system) / 1e6);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gregor-rv-'));
  try {
    const opts = { recover: false, recentCacheBytes: 0 };
    const w = await UnifiedLog.open(dataDir, 'bench', 0, config, opts);
    const value = Buffer.alloc(RECORD_BYTES, 7);
    const batches = Math.ceil((MB << 20) / (RECORDS_PER_BATCH * (RECORD_BYTES + 10)));
    for (let i = 0; i < batches; i++) {
      const timestamp = BigInt(Date.now());
      const records = Array.from({ length: RECORDS_PER_BATCH }, (_, k) => ({ key: Buffer.from(`k${k}`), value, timestamp }));
      const { written } = w.append(buildRecordBatch(records), { leaderEpoch: 0 });
      if (i % 64 === 63) await written;
    }
    await w.close();
    const runs: Record<string, number[]> = { 'first read, checked': [], 'first read, unchecked': [], 'read again': [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? (['checked', 'unchecked'] as const) : (['unchecked', 'checked'] as const)) {
        const log = await UnifiedLog.open(dataDir, 'bench', 0, config, opts);
        if (mode === 'unchecked') for (const s of log.segmentList) s.loadedSize = 0;
        runs[`first read, ${mode}`]?.push(await timed(() => readWhole(log)));
        if (mode === 'checked') runs['read again']?.push(await timed(() => readWhole(log)));
        await log.close();
      }
    }
    const figures = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, Math.round(median(v))]));
    const checked = figures['first read, checked'] ?? NaN;
    const unchecked = figures['first read, unchecked'] ?? NaN;
    const report = {
      id: 'read-verify',
      timestamp: new Date().toISOString(),
      node: process.version,
      loadAverage: loadAverage(),
      logMB: MB,
      batchBytes: RECORDS_PER_BATCH * (RECORD_BYTES + 10),
      rounds: ROUNDS,
      mbPerCpuSecond: figures,
      firstReadCostPercent: Math.round((unchecked / checked - 1) * 1000) / 10,
      runs,
    };
    console.log(
      textTable(
        ['read', 'MB per CPU-second (median)'],
        Object.entries(figures).map(([k, v]) => [k, v]),
      ),
    );
    console.log(`first read: the check costs ${report.firstReadCostPercent}% of the unchecked read's CPU time per byte`);
    console.log(writeResult('read-verify', report.timestamp, report));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
