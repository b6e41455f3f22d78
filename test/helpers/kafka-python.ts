/**
 * Drives kafka-python 2.0.2 (Debian python3-kafka, importable only by /usr/bin/python3) through
 * test/helpers/py/produce_consume.py: JSON in on stdin, JSON lines out. Asynchronous, because the
 * broker under test usually runs in this same process.
 */
import { runProcess } from './process.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './project.js';

export const PYTHON = '/usr/bin/python3';
export const PRODUCE_CONSUME_SCRIPT = join(PROJECT_ROOT, 'test/helpers/py/produce_consume.py');

/** One record to produce; key, value and header values hex-encoded (so any bytes pass through JSON). */
export interface PyRecord {
  p: number;
  k: string;
  v: string;
  ts: number;
  /** Omitted: no headers argument at all (required for magic 0/1). */
  h?: [string, string][];
}

export interface PyRun {
  topic: string;
  codec: 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';
  records: PyRecord[];
}

export interface PyInput {
  bootstrap: string;
  /** null: kafka-python probes the broker; e.g. [0, 10, 0] forces that protocol generation. */
  api_version: number[] | null;
  acks: number;
  /** extra KafkaProducer/KafkaConsumer arguments, e.g. security_protocol, ssl_cafile */
  client?: Record<string, string | boolean>;
  runs: PyRun[];
}

/** [partition, offset, timestamp] per record, in input order, from the producer's RecordMetadata. */
export type PySent = [number, number, number][];
/** [partition, offset, timestamp, timestamp_type, key hex, value hex, [[name, hex], ...]] per ConsumerRecord. */
export type PyRead = [number, number, number, number, string | null, string | null, [string, string | null][]][];

export interface PyResult {
  sent: PySent;
  read: PyRead;
}

/** Runs one python process for all runs; resolves per topic with what it produced and read back. */
export async function runKafkaPython(input: PyInput, timeoutMs = 170_000): Promise<Map<string, PyResult>> {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: kafka-python tests need Debian's python3 with python3-kafka`);
  const r = await runProcess(PYTHON, [PRODUCE_CONSUME_SCRIPT], JSON.stringify(input), timeoutMs);
  if (r.code !== 0) {
    const hint = /No module named 'kafka'/.test(r.stderr) ? ` (${PYTHON} lacks kafka-python: install python3-kafka)` : '';
    throw new Error(`kafka-python exited with ${r.code}${hint}; stderr:\n${r.stderr.slice(-4000)}`);
  }
  const results = new Map<string, PyResult>();
  for (const line of r.stdout.toString().split('\n')) {
    if (line.trim() === '') continue;
    const msg = JSON.parse(line) as { topic: string; phase: 'sent'; meta: PySent } | { topic: string; phase: 'read'; records: PyRead };
    const res = results.get(msg.topic) ?? { sent: [], read: [] };
    if (msg.phase === 'sent') res.sent = msg.meta;
    else res.read = msg.records;
    results.set(msg.topic, res);
  }
  return results;
}

export const hex = (b: Buffer | string): string => (typeof b === 'string' ? Buffer.from(b) : b).toString('hex');

export const BROKER_CONFIGS_SCRIPT = join(PROJECT_ROOT, 'test/helpers/py/broker_configs.py');

/** [value, config source (DescribeConfigs v1+) or is_default (v0), read_only, sensitive] per key. */
export type PyConfigEntry = [string | null, number | boolean, boolean, boolean];

/** kafka-python's KafkaAdminClient: optionally AlterConfigs on BROKER `broker`, then DescribeConfigs of `describe` keys. */
export async function kafkaPythonBrokerConfigs(req: {
  bootstrap: string;
  broker: string;
  alter: Record<string, string> | null;
  describe: string[];
}): Promise<{ alter: [number, string | null] | null; describe: Record<string, PyConfigEntry> }> {
  const r = await runProcess(PYTHON, [BROKER_CONFIGS_SCRIPT], JSON.stringify(req), 60_000);
  if (r.code !== 0) throw new Error(`kafka-python exited with ${r.code}; stderr:\n${r.stderr.slice(-4000)}`);
  return JSON.parse(r.stdout.toString()) as { alter: [number, string | null] | null; describe: Record<string, PyConfigEntry> };
}
