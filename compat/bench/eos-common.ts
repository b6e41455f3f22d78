/**
 * Pieces shared by the exactly-once benchmarks (eos-cost.ts, read-committed.ts): CPU of the broker
 * and of a client process over a timed window (whole process, the broker's main thread, the busiest
 * threads), medians and paired ratios over interleaved rounds, topic create/delete over the raw
 * protocol, knobs, the result file and a plain-text table.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { ROOT } from '../lib/paths.js';
import { busiest, cpuSeconds, mainThreadCpuSeconds, threadsByName, type ThreadBusy } from './proc-stats.js';

export type { ThreadBusy } from './proc-stats.js';

/** CPU over one timed window. */
export interface WindowCpu {
  /** the broker process, all threads (utime + stime) */
  brokerCpu: number;
  /** the broker's main thread alone (its event loop: the serial part) */
  brokerMainCpu: number;
  /** the client process (a C producer or consumer), all threads */
  clientCpu: number;
  clientThreads: ThreadBusy[];
  brokerThreads: ThreadBusy[];
}

/** Starts reading the counters of a timed window; the returned function ends it after `seconds`. */
export function cpuWindow(brokerPid: number, clientPid: number): (seconds: number) => WindowCpu {
  const cpu0 = cpuSeconds(brokerPid);
  const main0 = mainThreadCpuSeconds(brokerPid);
  const client0 = cpuSeconds(clientPid);
  const clientThreads0 = threadsByName(clientPid, 'main');
  const brokerThreads0 = threadsByName(brokerPid, 'main');
  return (seconds) => ({
    brokerCpu: cpuSeconds(brokerPid) - cpu0,
    brokerMainCpu: mainThreadCpuSeconds(brokerPid) - main0,
    clientCpu: cpuSeconds(clientPid) - client0,
    clientThreads: busiest(threadsByName(clientPid, 'main'), clientThreads0, seconds),
    brokerThreads: busiest(threadsByName(brokerPid, 'main'), brokerThreads0, seconds),
  });
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Ratio of two variants measured in the same rounds: each round's a/b, and their median. */
export function pairedRatio(
  a: readonly { round: number; value: number }[],
  b: readonly { round: number; value: number }[],
): { perRound: number[]; median: number } {
  const perRound = a.flatMap((x) => {
    const y = b.find((z) => z.round === x.round);
    return y === undefined || y.value === 0 ? [] : [x.value / y.value];
  });
  return { perRound, median: median(perRound) };
}

/** (max - min) / median of a row's per-round figures: how much that row moved between rounds. */
export function spread(xs: readonly number[]): number {
  return xs.length < 2 ? 0 : (Math.max(...xs) - Math.min(...xs)) / median(xs);
}

export function fixed(x: number, digits: number): number {
  return Number.isFinite(x) ? Number(x.toFixed(digits)) : NaN;
}

/** A comma-separated list knob. */
export function envList(name: string, dflt: string): string[] {
  const v = process.env[name];
  return (v === undefined || v.trim() === '' ? dflt : v)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

export function envNumber(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name}=${v} is not a number`);
  return n;
}

export async function createTopic(bootstrap: string, name: string, partitions: number): Promise<void> {
  const c = await RawClient.connect(bootstrap);
  try {
    await rawCreateTopics(c, [{ name, partitions }]);
  } finally {
    c.destroy();
  }
}

/** DeleteTopics v4 (frees the disk between runs). */
export async function deleteTopic(bootstrap: string, name: string): Promise<void> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{ responses: { name: string; errorCode: number }[] }>(
      20,
      4,
      { topicNames: [name], timeoutMs: 30000 },
      60000,
    );
    for (const r of res.responses) if (r.errorCode !== 0) throw new Error(`DeleteTopics ${r.name}: error ${r.errorCode}`);
  } finally {
    c.destroy();
  }
}

export function loadAverage(): number[] {
  return loadavg().map((x) => fixed(x, 2));
}

/** Writes compat/results/<id>-<ISO timestamp>.json; returns its path relative to the checkout. */
export function writeResult(id: string, timestamp: string, report: unknown): string {
  const dir = join(ROOT, 'compat/results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${id}-${timestamp.replace(/:/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  return relative(ROOT, file);
}

/** A plain-text table: columns padded to their widest cell, numbers right-aligned. */
export function textTable(columns: string[], rows: (string | number | null)[][]): string {
  const cells = [
    columns,
    ...rows.map((r) => r.map((c) => (c === null ? '-' : typeof c === 'number' && Number.isNaN(c) ? '-' : String(c)))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r, ri) =>
      r
        .map((c, i) => {
          const numeric = ri > 0 && typeof rows[ri - 1]?.[i] === 'number';
          return numeric ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0);
        })
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
