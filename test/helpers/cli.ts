/**
 * Runs the `gregor` tool commands as child processes (asynchronously: the broker under test usually
 * runs in this process) and compares their output with goldens under test/fixtures/cli/. Volatile
 * parts (ports, topic and cluster ids, timestamps of "now") are replaced before comparing. Set
 * UPDATE_GOLDENS=1 to rewrite the goldens from the current output.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { runProcess } from './process.js';
import { PROJECT_ROOT } from './project.js';

export const GOLDEN_DIR = join(PROJECT_ROOT, 'test/fixtures/cli');
const BIN = join(PROJECT_ROOT, 'bin/gregor.js');

export interface CliResult {
  code: number | null;
  stdout: Buffer;
  out: string;
  err: string;
  ms: number;
}

export interface CliOptions {
  input?: string | Buffer;
  env?: Record<string, string>;
  timeoutMs?: number;
}

export async function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  const started = performance.now();
  const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
  delete env['KAFKA_BOOTSTRAP_SERVERS'];
  if (opts.env?.['KAFKA_BOOTSTRAP_SERVERS'] !== undefined) env['KAFKA_BOOTSTRAP_SERVERS'] = opts.env['KAFKA_BOOTSTRAP_SERVERS'];
  const r = await runProcess(process.execPath, [BIN, ...args], opts.input ?? '', opts.timeoutMs ?? 30000, env);
  return { code: r.code, stdout: r.stdout, out: r.stdout.toString('utf8'), err: r.stderr, ms: performance.now() - started };
}

/** Like runCli, but expects exit 0 (showing stderr when not). */
export async function cliOk(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  const r = await runCli(args, opts);
  expect(r.code, `gregor ${args.join(' ')} exited ${r.code}; stderr:\n${r.err}`).to.equal(0);
  return r;
}

/** Replacements of volatile text, applied in order. */
export type Normaliser = [RegExp | string, string][];

/** A placeholder as wide as what it replaces (so table columns stay aligned in the golden). */
export function samewidth(label: string, width: number): string {
  return label.length >= width ? label : label + '_'.repeat(width - label.length);
}

export function normalise(text: string, rules: Normaliser): string {
  let s = text;
  for (const [from, to] of rules) s = typeof from === 'string' ? s.split(from).join(to) : s.replace(from, to);
  return s;
}

/** Compares `actual` with test/fixtures/cli/<name> (or writes it with UPDATE_GOLDENS=1). */
export function golden(name: string, actual: string): void {
  const file = join(GOLDEN_DIR, name);
  if (process.env['UPDATE_GOLDENS'] === '1' || !existsSync(file)) {
    if (process.env['UPDATE_GOLDENS'] !== '1' && process.env['CI'] !== undefined) throw new Error(`golden ${name} is missing`);
    mkdirSync(GOLDEN_DIR, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  expect(actual, `output differs from the golden test/fixtures/cli/${name} (UPDATE_GOLDENS=1 rewrites it)`).to.equal(
    readFileSync(file, 'utf8'),
  );
}
