/** results.json: the schema written by every run, and the machine details it records. */
import { cpus, totalmem, type as osType, release, platform, arch } from 'node:os';
import type { Scenario } from '../scenarios/context.js';
import type { ApiRange } from './raw.js';
import type { CellResult, Client } from './types.js';

/** /2 added `broker.cluster`; /1 files (single-node or external runs) are still read, for --compare. */
export const RESULTS_SCHEMA = 'gregor-compat-results/2';
const OLDER_SCHEMAS: readonly string[] = ['gregor-compat-results/1'];

export interface MachineInfo {
  node: string;
  os: { type: string; platform: string; release: string; arch: string };
  cpu: { model: string; cores: number };
  memoryBytes: number;
}

export interface BrokerInfo {
  /** "gregor" when the suite started it, "external" with --bootstrap */
  kind: 'gregor' | 'external';
  bootstrap: string;
  /** gregor's package version and commit; "unknown" for external brokers */
  version: string;
  apiVersions: ApiRange[];
  /** the emulate=0.10.0 gregor used by the format-v1 scenario, when started */
  legacy?: { bootstrap: string; emulate: string; apiVersions: ApiRange[] };
  /** set when the broker under test is a gregor cluster the suite started (--cluster N); absent: one broker */
  cluster?: ClusterInfo;
}

export interface ClusterInfo {
  /** number of brokers */
  brokers: number;
  nodes: { nodeId: number; bootstrap: string }[];
  /** the metadata store the brokers share, e.g. "etcd 3.4.23" */
  metadataStore: string;
  /** the broker config every broker ran with (replication factors, min.insync.replicas, …) */
  overrides: Record<string, string>;
}

export interface ResultsFile {
  schema: typeof RESULTS_SCHEMA;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  machine: MachineInfo;
  broker: BrokerInfo;
  clients: { id: string; title: string; description: string; versions: Record<string, string> }[];
  scenarios: { id: string; title: string; description: string }[];
  cells: CellResult[];
  summary: Record<CellResult['outcome'], number>;
}

export function machineInfo(): MachineInfo {
  const c = cpus();
  return {
    node: process.version,
    os: { type: osType(), platform: platform(), release: release(), arch: arch() },
    cpu: { model: c[0]?.model.trim() ?? 'unknown', cores: c.length },
    memoryBytes: totalmem(),
  };
}

export function summarize(cells: CellResult[]): ResultsFile['summary'] {
  const s = { pass: 0, fail: 0, 'unsupported-client': 0, 'unsupported-broker': 0, 'needs-gregor': 0 };
  for (const c of cells) s[c.outcome]++;
  return s;
}

/** A client's versions, or the error that asking for them threw or rejected with. */
async function versionsOf(c: Client): Promise<Record<string, string>> {
  try {
    return await c.versions();
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

export async function clientInfo(clients: Client[]): Promise<ResultsFile['clients']> {
  return Promise.all(
    clients.map(async (c) => ({
      id: c.id,
      title: c.title,
      description: c.description,
      versions: (await c.unavailable()) === null ? await versionsOf(c) : { unavailable: 'yes' },
    })),
  );
}

export function scenarioInfo(scenarios: Scenario[]): ResultsFile['scenarios'] {
  return scenarios.map((s) => ({ id: s.id, title: s.title, description: s.description }));
}

/** Reads a results.json of this or an older schema (an older file is read as this one: it has no cluster), refusing others. */
export function parseResults(text: string, from: string): ResultsFile {
  const r = JSON.parse(text) as Partial<Record<keyof ResultsFile, unknown>>;
  if (r.schema === RESULTS_SCHEMA) return r as ResultsFile;
  if (typeof r.schema === 'string' && OLDER_SCHEMAS.includes(r.schema)) return { ...(r as ResultsFile), schema: RESULTS_SCHEMA };
  throw new Error(`${from}: schema ${String(r.schema)}, expected ${[RESULTS_SCHEMA, ...OLDER_SCHEMAS].join(' or ')}`);
}
