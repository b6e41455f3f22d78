/**
 * The tables of compat/bench/mock-vs-gregor.ts: the summary rows (medians over rounds) drawn from a
 * run's per-round figures, the markdown table (workload | <brokers> | ratio | broker CPU columns | client
 * CPU and cores busy), and
 * `--compare A.json B.json` (before -> after, Δ%).
 */
import { readFileSync } from 'node:fs';
import type { E2EResult, TargetName } from './mock-vs-gregor-brokers.js';
import { latencyStats } from './mock-vs-gregor-brokers.js';
import { round } from './proc-stats.js';

export const SCHEMA = 'gregor-mock-vs-gregor/1';

export interface Throughput {
  records: number;
  seconds: number;
  recordsPerSec: number;
  /** broker CPU seconds per million records: whole process, and its serving thread */
  brokerCpuSPerM: number | null;
  servingCpuSPerM: number | null;
  /** the client program's CPU seconds per million records */
  clientCpuSPerM: number;
  /** consume only: ms from the assign to the first record delivered (the start, before records flow) */
  firstRecordMs?: number;
}

/** One broker's figures in one round. */
/** One broker's figures in one round (a workload that failed is missing; see the run's errors). */
export interface TargetRound {
  produceAcks1?: Throughput;
  produceAcksAll?: Throughput;
  consume?: Throughput;
  e2e: E2EResult[];
  rssIdleMB: number | null;
  rssAfterProduceConsumeMB: number | null;
  rssEndMB: number | null;
  peakRssMB: number | null;
}

export interface Round {
  round: number;
  order: TargetName[];
  startedAt: string;
  results: Partial<Record<TargetName, TargetRound>>;
}

export interface StartupRun {
  order: string[];
  ms: Record<string, number>;
}

/** A row of the summary: one figure per broker (median over rounds), with the broker CPU beside it. */
export interface Row {
  id: string;
  label: string;
  unit: string;
  higherIsBetter: boolean;
  values: Partial<Record<string, number | null>>;
  cpuUnit?: string;
  brokerCpu?: Partial<Record<string, number | null>>;
  servingCpu?: Partial<Record<string, number | null>>;
  /**
   * gregor / mock within each round (the two ran back to back, so the load of the shared machine
   * at that minute hits both): the median over rounds and the range. Throughput rows of a paired run.
   */
  perRoundRatio?: { median: number; min: number; max: number; rounds: number };
  /** Throughput rows: the client program's CPU seconds per 1M records (median over rounds). */
  clientCpu?: Partial<Record<string, number | null>>;
  /**
   * Throughput rows: cores the broker and the client kept busy together, (broker + client CPU-s per
   * record) x records/s (median over rounds). Near 2 on this 2-core machine, the workload is bound by
   * CPU: the ratio of two brokers' rates is then that of their CPU per record plus the client's.
   */
  coresBusy?: Partial<Record<string, number | null>>;
}

export interface ResultFile {
  schema: string;
  targets: TargetName[];
  summary: Row[];
  [k: string]: unknown;
}

export function median(xs: readonly (number | null)[]): number | null {
  const s = xs.filter((x): x is number => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s.length % 2 === 1 ? (s[(s.length - 1) / 2] ?? null) : ((s[s.length / 2 - 1] ?? 0) + (s[s.length / 2] ?? 0)) / 2;
}

const perTarget = (targets: readonly TargetName[], f: (t: TargetName) => number | null): Partial<Record<string, number | null>> =>
  Object.fromEntries(targets.map((t) => [t, f(t)]));

/** The summary rows of a run. */
export function summarize(
  targets: readonly TargetName[],
  rounds: readonly Round[],
  startup: readonly StartupRun[],
  records: number,
): Row[] {
  const of = (t: TargetName) => rounds.map((r) => r.results[t]).filter((x): x is TargetRound => x !== undefined);
  const med = (t: TargetName, f: (r: TargetRound) => number | null) => {
    const m = median(of(t).map(f));
    return m === null ? null : round(m, 3);
  };
  const rows: Row[] = [];
  const M = `${records / 1e6}M`;
  for (const [id, label, pick] of [
    ['produce-acks1', `produce acks=1, ${M} records (records/s)`, (r: TargetRound) => r.produceAcks1],
    ['produce-acksall', `produce acks=all, ${M} records (records/s)`, (r: TargetRound) => r.produceAcksAll],
    ['consume', 'consume from the start, the acks=1 records (records/s)', (r: TargetRound) => r.consume],
  ] as const) {
    const row: Row = {
      id,
      label,
      unit: 'records/s',
      higherIsBetter: true,
      values: perTarget(targets, (t) => med(t, (r) => pick(r)?.recordsPerSec ?? null)),
      cpuUnit: 'CPU-s per 1M records',
      brokerCpu: perTarget(targets, (t) => med(t, (r) => pick(r)?.brokerCpuSPerM ?? null)),
      servingCpu: perTarget(targets, (t) => med(t, (r) => pick(r)?.servingCpuSPerM ?? null)),
      clientCpu: perTarget(targets, (t) => med(t, (r) => pick(r)?.clientCpuSPerM ?? null)),
      coresBusy: perTarget(targets, (t) =>
        med(t, (r) => {
          const x = pick(r);
          return x === undefined || x.brokerCpuSPerM === null ? null : ((x.brokerCpuSPerM + x.clientCpuSPerM) * x.recordsPerSec) / 1e6;
        }),
      ),
    };
    const ratios: number[] = [];
    for (const r of rounds) {
      const g = r.results.gregor === undefined ? undefined : pick(r.results.gregor)?.recordsPerSec;
      const m = r.results.mock === undefined ? undefined : pick(r.results.mock)?.recordsPerSec;
      if (g !== undefined && m !== undefined && m > 0) ratios.push(g / m);
    }
    const mid = median(ratios);
    if (mid !== null) {
      row.perRoundRatio = {
        median: round(mid, 3),
        min: round(Math.min(...ratios), 3),
        max: round(Math.max(...ratios), 3),
        rounds: ratios.length,
      };
    }
    rows.push(row);
  }
  const waits = [...new Set(rounds.flatMap((r) => Object.values(r.results).flatMap((x) => x.e2e.map((e) => e.fetchWaitMaxMs))))];
  for (const w of waits) {
    // percentiles over every round's samples pooled; CPU per round: median over rounds
    const cells = (t: TargetName) => of(t).flatMap((r) => r.e2e.filter((e) => e.fetchWaitMaxMs === w));
    const pooled = (t: TargetName) => latencyStats(cells(t).flatMap((e) => e.latenciesUs));
    const n = (t: TargetName) => cells(t).reduce((a, e) => a + e.rounds, 0);
    const samples = targets.map((t) => `${t} ${n(t)}`).join(', ');
    for (const [p, key] of [
      ['p50', 'p50Ms'],
      ['p99', 'p99Ms'],
      ['p99.9', 'p999Ms'],
      ['mean', 'avgMs'],
    ] as const) {
      const row: Row = {
        id: `e2e-w${w}-${p}`,
        label: `e2e acks=all, fetch.wait.max.ms=${w}: ${p} (ms)${p === 'p50' ? `; rounds: ${samples}` : ''}`,
        unit: 'ms',
        higherIsBetter: false,
        values: perTarget(targets, (t) => (n(t) === 0 ? null : pooled(t)[key])),
      };
      if (p === 'p50') {
        row.cpuUnit = 'CPU µs per round';
        row.brokerCpu = perTarget(targets, (t) => median(cells(t).map((e) => e.brokerCpuUsPerRound)));
        row.servingCpu = perTarget(targets, (t) => median(cells(t).map((e) => e.servingCpuUsPerRound)));
      }
      rows.push(row);
    }
  }
  if (startup.length > 0) {
    const st = (k: string) => {
      const m = median(startup.map((s) => s.ms[k] ?? null));
      return m === null ? null : round(m, 1);
    };
    rows.push({
      id: 'start-ready',
      label: `process start → ready (ms, median of ${startup.length}; gregor: GREGOR_READY, mock: bootstrap line)`,
      unit: 'ms',
      higherIsBetter: false,
      values: perTarget(targets, (t) => st(t)),
    });
    const base = st('node -e 0');
    rows.push({
      id: 'node-e0',
      label: 'baseline in the same run: `node -e 0`, spawn → exit (ms)',
      unit: 'ms',
      higherIsBetter: false,
      values: perTarget(targets, () => base),
    });
  }
  for (const [id, label, f] of [
    [
      'rss-idle',
      targets.includes('broker') ? 'RSS before the workloads (MB)' : 'RSS idle, 5 s after start (MB)',
      (r: TargetRound) => r.rssIdleMB,
    ],
    ['rss-after', `RSS after producing and consuming ${M} records (MB)`, (r: TargetRound) => r.rssAfterProduceConsumeMB],
    ['rss-end', `RSS at the end (${M} more acks=all records, e2e) (MB)`, (r: TargetRound) => r.rssEndMB],
    ['rss-peak', 'peak RSS, VmHWM (MB)', (r: TargetRound) => r.peakRssMB],
  ] as const) {
    const values = perTarget(targets, (t) => med(t, f));
    if (Object.values(values).some((v) => v !== null)) rows.push({ id, label, unit: 'MB', higherIsBetter: false, values });
  }
  return rows;
}

function fmt(x: number | null | undefined, unit: string): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '–';
  if (unit === 'records/s') return Math.round(x).toLocaleString('en-US');
  if (unit === 'MB') return x.toFixed(1);
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
}

const cpuFmt = (x: number | null | undefined, unit: string | undefined): string =>
  unit === undefined ? '' : x === null || x === undefined ? '–' : unit.startsWith('CPU-s') ? `${x.toFixed(2)} s/M` : `${Math.round(x)} µs`;

const ratioFmt = (x: number): string => (x >= 10 ? x.toFixed(1) : x >= 0.1 ? x.toFixed(2) : x.toPrecision(2));

/** The run's markdown table. */
export function markdownTable(targets: readonly TargetName[], rows: readonly Row[], serving: Record<string, string>): string {
  const pair = targets.includes('gregor') && targets.includes('mock');
  const who = (t: string) => (t === 'broker' ? '' : `${t} `);
  const clients = rows.some((r) => r.clientCpu !== undefined);
  const clientCells = (r: Row): string[] =>
    !clients
      ? []
      : [
          ...targets.map((t) => (r.clientCpu === undefined ? '' : cpuFmt(r.clientCpu[t], r.cpuUnit))),
          ...targets.map((t) => {
            if (r.coresBusy === undefined) return '';
            const c = r.coresBusy[t];
            return c === null || c === undefined ? '–' : c.toFixed(2);
          }),
        ];
  const head = [
    'workload',
    ...targets,
    ...(pair ? ['ratio gregor/mock', 'ratio per round: median (min–max)'] : []),
    ...targets.map((t) => `${who(t)}broker CPU`),
    ...targets.map((t) => `${who(t)}${serving[t] ?? 'main thread'}`),
    ...(clients ? [...targets.map((t) => `${who(t)}client CPU`), ...targets.map((t) => `${who(t)}cores busy (broker + client)`)] : []),
  ];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) {
    const g = r.values['gregor'];
    const m = r.values['mock'];
    const ratio =
      pair && r.id !== 'node-e0' && g !== null && g !== undefined && m !== null && m !== undefined && m !== 0 ? ratioFmt(g / m) : '';
    const q = r.perRoundRatio;
    const perRound = q === undefined ? '' : `${ratioFmt(q.median)} (${ratioFmt(q.min)}–${ratioFmt(q.max)})`;
    lines.push(
      `| ${[r.label, ...targets.map((t) => fmt(r.values[t], r.unit)), ...(pair ? [ratio, perRound] : []), ...targets.map((t) => cpuFmt(r.brokerCpu?.[t], r.cpuUnit)), ...targets.map((t) => cpuFmt(r.servingCpu?.[t], r.cpuUnit)), ...clientCells(r)].join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** `--compare A.json B.json`: every figure of both files, before → after and the change. */
export function compareFiles(a: string, b: string): string {
  const load = (p: string) => {
    const f = JSON.parse(readFileSync(p, 'utf8')) as ResultFile;
    if (f.schema !== SCHEMA) throw new Error(`${p}: schema ${f.schema}, expected ${SCHEMA}`);
    return f;
  };
  const A = load(a);
  const B = load(b);
  const lines = [
    `before: ${a}`,
    `after:  ${b}`,
    '',
    '| workload | broker | figure | before | after | Δ% |',
    '|---|---|---|---:|---:|---:|',
  ];
  const delta = (x: number, y: number) => (x === 0 ? '' : `${((y - x) / x) * 100 >= 0 ? '+' : ''}${(((y - x) / x) * 100).toFixed(1)}%`);
  // the same brokers; a --bootstrap run's "broker" pairs with the other file's gregor
  let pairs: [string, string][] = A.targets.filter((t) => B.targets.includes(t)).map((t) => [t, t]);
  if (pairs.length === 0) {
    const pick = (f: ResultFile) => f.targets.find((t) => t === 'broker' || t === 'gregor');
    const [ta, tb] = [pick(A), pick(B)];
    if (ta !== undefined && tb !== undefined) pairs = [[ta, tb]];
  }
  for (const ra of A.summary) {
    const rb = B.summary.find((r) => r.id === ra.id);
    if (rb === undefined) continue;
    const label = ra.label.replace(/; rounds: .*$/, '').replace(/ \((records\/s|ms|MB)\)$/, '');
    for (const [ta, tb] of pairs) {
      const t = ta === tb ? ta : `${ta} → ${tb}`;
      const figures: [string, number | null | undefined, number | null | undefined, string][] = [
        [ra.unit, ra.values[ta], rb.values[tb], ra.unit],
        ...(ra.cpuUnit !== undefined
          ? ([
              [`broker ${ra.cpuUnit}`, ra.brokerCpu?.[ta], rb.brokerCpu?.[tb], ra.cpuUnit],
              [`serving thread ${ra.cpuUnit}`, ra.servingCpu?.[ta], rb.servingCpu?.[tb], ra.cpuUnit],
            ] as [string, number | null | undefined, number | null | undefined, string][])
          : []),
      ];
      for (const [fig, x, y, unit] of figures) {
        if (x === null || x === undefined || y === null || y === undefined) continue;
        const f = (v: number) => (unit.startsWith('CPU') ? v.toFixed(unit.startsWith('CPU-s') ? 2 : 0) : fmt(v, unit));
        lines.push(`| ${label} | ${t} | ${fig} | ${f(x)} | ${f(y)} | ${delta(x, y)} |`);
      }
    }
  }
  const info = (f: ResultFile) => {
    const m = f['machine'] as { loadBefore?: number[]; loadAfter?: number[] } | undefined;
    return `${m?.loadBefore?.join(' ') ?? '?'} → ${m?.loadAfter?.join(' ') ?? '?'}`;
  };
  lines.push(
    '',
    `Load average (1/5/15 min) at the start → the end of each run: before ${info(A)}; after ${info(B)}. The records/s of a busy machine move by ±20% or more between runs; the CPU per record moves less.`,
  );
  return lines.join('\n');
}
