/**
 * Runs scenarios × clients. Decides each cell's outcome before running it (client missing an
 * operation, broker missing an API), runs it with a time limit, and prints one line per cell.
 */
import type { Scenario, ScenarioContext, BrokerTarget } from '../scenarios/context.js';
import { NeedsGregorError } from '../scenarios/context.js';
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import { withTimeout } from './records.js';
import { type CellResult, type Client, NotSupportedError } from './types.js';

export interface MatrixOptions {
  main: BrokerTarget;
  legacy?: BrokerTarget;
  scenarios: Scenario[];
  clients: Client[];
  cellTimeoutMs?: number;
  /** one progress line per cell (default: stdout) */
  progress?: (line: string) => void;
}

const MARK: Record<CellResult['outcome'], string> = {
  pass: '✓',
  fail: '✗',
  'unsupported-client': '—',
  'unsupported-broker': '—',
  'needs-gregor': '—',
};

function apiName(target: BrokerTarget, key: number): string {
  return target.apis.find((a) => a.apiKey === key)?.name ?? `API key ${key}`;
}

export async function runCell(opts: MatrixOptions, scenario: Scenario, client: Client, runTag: string): Promise<CellResult> {
  const started = Date.now();
  const cell = (outcome: CellResult['outcome'], fields: { reason?: string; details?: string }): CellResult => ({
    scenario: scenario.id,
    client: client.id,
    outcome,
    ...fields,
    durationMs: Date.now() - started,
  });
  const unavailable = await client.unavailable();
  if (unavailable !== null) return cell('fail', { reason: `client unavailable: ${unavailable}` });
  const missingOp = scenario.ops.find((op) => client.ops[op] === undefined);
  if (missingOp !== undefined)
    return cell('unsupported-client', { reason: client.unsupported[missingOp] ?? `${client.title} has no ${missingOp} operation` });
  const missingApis = (scenario.brokerApis ?? []).filter((k) => !opts.main.apis.some((a) => a.apiKey === k));
  if (missingApis.length > 0) {
    const names = missingApis.map((k) => `${API_KEYS.get(k)?.name ?? apiName(opts.main, k)} (${k})`);
    return cell('unsupported-broker', { reason: `not implemented by broker: ${names.join(', ')} not advertised in ApiVersions` });
  }
  let n = 0;
  const ctx: ScenarioContext = {
    main: opts.main,
    ...(opts.legacy !== undefined ? { legacy: opts.legacy } : {}),
    topic: (name) => `compat-${scenario.id}-${client.id}-${name}-${runTag}-${n++}`.replace(/[^a-zA-Z0-9._-]/g, '-'),
  };
  try {
    const details = await withTimeout(`${scenario.id} × ${client.id}`, opts.cellTimeoutMs ?? 150000, scenario.run(ctx, client));
    return cell('pass', { details });
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    if (e instanceof NotSupportedError) return cell('unsupported-client', { reason: msg });
    if (e instanceof NeedsGregorError) return cell('needs-gregor', { reason: msg });
    return cell('fail', { reason: msg.replace(/\s+/g, ' ').slice(0, 1000) });
  }
}

export async function runMatrix(opts: MatrixOptions): Promise<CellResult[]> {
  const progress = opts.progress ?? ((l: string) => console.log(l));
  const total = opts.scenarios.length * opts.clients.length;
  const runTag = Date.now().toString(36);
  const out: CellResult[] = [];
  for (const scenario of opts.scenarios) {
    for (const client of opts.clients) {
      const r = await runCell(opts, scenario, client, runTag);
      out.push(r);
      const why = r.outcome === 'pass' ? '' : `  ${r.reason ?? ''}`;
      progress(
        `[${String(out.length).padStart(String(total).length)}/${total}] ${MARK[r.outcome]} ${scenario.id} × ${client.id} (${(r.durationMs / 1000).toFixed(1)} s)${why}`,
      );
    }
  }
  return out;
}

export function symbol(outcome: CellResult['outcome']): string {
  return MARK[outcome];
}
