/**
 * Benchmark results the report can show: any `<run dir>/bench/*.json` of this shape (see
 * compat/README.md, "Benchmark JSON"). The report draws each chart as SVG and prints the table.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MachineInfo } from './results.js';
import type { ChartSpec } from './svg-chart.js';

export const BENCH_SCHEMA = 'gregor-bench/1';

export interface BenchFile {
  schema: typeof BENCH_SCHEMA;
  /** file-safe id, unique within a run (chart files are named after it) */
  id: string;
  title: string;
  description?: string;
  machine?: MachineInfo;
  /** one-line figures quoted at the top of the report */
  headline?: string[];
  charts?: ChartSpec[];
  table?: { columns: string[]; rows: (string | number | null)[][] };
  notes?: string[];
}

type JsonObject = Record<string, unknown>;
const isObject = (x: unknown): x is JsonObject => typeof x === 'object' && x !== null;
const isArray = (x: unknown): x is unknown[] => Array.isArray(x);
/** The points of a series, when it has an array of them. */
const pointsOf = (s: unknown): unknown[] | undefined => (isObject(s) && isArray(s.points) ? s.points : undefined);

/** Checks the shape of a parsed JSON value; returns the problems (empty when valid). */
export function validateBench(v: unknown): string[] {
  if (!isObject(v)) return ['not a JSON object'];
  const p: string[] = [];
  if (v.schema !== BENCH_SCHEMA) p.push(`schema must be "${BENCH_SCHEMA}"`);
  if (typeof v.id !== 'string' || !/^[a-zA-Z0-9._-]+$/.test(v.id)) p.push('id must be a file-safe string');
  if (typeof v.title !== 'string') p.push('title must be a string');
  const charts = v.charts ?? [];
  if (!isArray(charts)) p.push('charts must be an array');
  for (const [i, c] of (isArray(charts) ? charts : []).entries()) {
    const kind = isObject(c) ? c.kind : undefined;
    const series = isObject(c) ? c.series : undefined;
    if (kind !== 'bar' && kind !== 'line') p.push(`charts[${i}].kind must be "bar" or "line"`);
    const yNotNumber = (pt: unknown) => !isObject(pt) || typeof pt.y !== 'number';
    if (!isArray(series) || series.some((s) => !isObject(s) || typeof s.name !== 'string' || pointsOf(s)?.some(yNotNumber) !== false))
      p.push(`charts[${i}].series must be [{ name, points: [{ x, y: number }] }]`);
    const xNotNumber = (pt: unknown) => isObject(pt) && typeof pt.x !== 'number';
    if (kind === 'line' && isArray(series) && series.some((s) => pointsOf(s)?.some(xNotNumber) === true))
      p.push(`charts[${i}]: line charts need numeric x`);
  }
  if (v.table !== undefined && (!isObject(v.table) || !isArray(v.table.columns) || !isArray(v.table.rows)))
    p.push('table must be { columns: string[], rows: [][] }');
  return p;
}

export interface LoadedBench {
  file: string;
  bench?: BenchFile;
  problems: string[];
}

export function loadBenches(runDir: string): LoadedBench[] {
  const dir = join(runDir, 'bench');
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      try {
        const v: unknown = JSON.parse(readFileSync(join(dir, file), 'utf8'));
        const problems = validateBench(v);
        return problems.length === 0 ? { file, bench: v as BenchFile, problems } : { file, problems };
      } catch (e) {
        return { file, problems: [(e as Error).message] };
      }
    });
}
