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

/** Checks the shape; returns the problems (empty when valid). */
export function validateBench(v: unknown): string[] {
  const p: string[] = [];
  const b = v as Partial<BenchFile>;
  if (typeof v !== 'object' || v === null) return ['not a JSON object'];
  if (b.schema !== BENCH_SCHEMA) p.push(`schema must be "${BENCH_SCHEMA}"`);
  if (typeof b.id !== 'string' || !/^[a-zA-Z0-9._-]+$/.test(b.id)) p.push('id must be a file-safe string');
  if (typeof b.title !== 'string') p.push('title must be a string');
  for (const [i, c] of (b.charts ?? []).entries()) {
    if (c.kind !== 'bar' && c.kind !== 'line') p.push(`charts[${i}].kind must be "bar" or "line"`);
    if (
      !Array.isArray(c.series) ||
      c.series.some((s) => typeof s.name !== 'string' || !Array.isArray(s.points) || s.points.some((pt) => typeof pt.y !== 'number'))
    ) {
      p.push(`charts[${i}].series must be [{ name, points: [{ x, y: number }] }]`);
    }
    if (c.kind === 'line' && c.series?.some((s) => s.points.some((pt) => typeof pt.x !== 'number')))
      p.push(`charts[${i}]: line charts need numeric x`);
  }
  if (b.table !== undefined && (!Array.isArray(b.table.columns) || !Array.isArray(b.table.rows)))
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
