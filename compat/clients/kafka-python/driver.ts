/**
 * kafka-python 2.0.2 (Debian python3-kafka, under /usr/bin/python3) through driver.py, one process
 * per operation. Two columns: protocol versions negotiated from ApiVersions ("auto"), and pinned
 * api_version=(0,10,0) (no ApiVersions probe: Produce v2 / message format 1, Fetch v2, ListOffsets v0).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../lib/paths.js';
import { type Client, type ClientOps, NotSupportedError } from '../../lib/types.js';

const PYTHON = process.env['KAFKA_PYTHON'] ?? '/usr/bin/python3';
const DRIVER = join(ROOT, 'compat/clients/kafka-python/driver.py');

function python(cmd: object, timeoutMs = 60000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [DRIVER], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(t);
      const line = out.trim().split('\n').pop() ?? '';
      let res: { ok?: unknown; error?: string; notSupported?: boolean };
      try {
        res = JSON.parse(line) as typeof res;
      } catch {
        return reject(new Error(`kafka-python driver exited with ${code}${code === null ? ' (killed after timeout)' : ''}: ${err.trim().split('\n').slice(-3).join(' | ')}`));
      }
      if (res.error === undefined) resolve(res.ok);
      else reject(res.notSupported === true ? new NotSupportedError(res.error) : new Error(res.error));
    });
    child.stdin.on('error', () => {}); // an early exit shows up in the exit code and stderr
    child.stdin.end(JSON.stringify(cmd));
  });
}

function ops(apiVersion: [number, number, number] | null): Partial<ClientOps> {
  const run = <T>(op: string, args: object, timeoutMs?: number) => python({ op, api_version: apiVersion, ...args }, timeoutMs) as Promise<T>;
  return {
    metadata: (bootstrap, topics) => run('metadata', { bootstrap, topics }),
    produce: (bootstrap, spec) => run('produce', { bootstrap, ...spec, headers: apiVersion === null }),
    consume: (bootstrap, spec) => run('consume', { bootstrap, ...spec }, spec.timeoutMs + 30000),
    offsetForTime: (bootstrap, topic, partition, timestamp) => run('offsetForTime', { bootstrap, topic, partition, timestamp }),
    createTopic: (bootstrap, topic, partitions) => run('createTopic', { bootstrap, topic, partitions }),
    deleteTopic: (bootstrap, topic) => run('deleteTopic', { bootstrap, topic }),
    createPartitions: (bootstrap, topic, total) => run('createPartitions', { bootstrap, topic, total }),
    describeConfigs: (bootstrap, topic, names) => run('describeConfigs', { bootstrap, topic, names }),
    alterConfigs: (bootstrap, topic, entries) => run('alterConfigs', { bootstrap, topic, entries }),
    group: (bootstrap, spec) => run('group', { bootstrap, ...spec }, spec.timeoutMs * 4),
  };
}

const NO_IDEMPOTENCE =
  'kafka-python 2.0.2 has no idempotent producer: KafkaProducer knows no enable_idempotence and never sends InitProducerId (added in kafka-python 2.2.0, KIP-98)';
const NO_TRANSACTIONS =
  'kafka-python 2.0.2 has no transactional producer (no transactional_id, no AddPartitionsToTxn/EndTxn) and its consumer always fetches read_uncommitted (both added in kafka-python 2.2.0)';
const NO_DELETE_RECORDS = 'kafka-python 2.0.2 has no DeleteRecords (KafkaAdminClient.delete_records came in 2.1)';

async function unavailable(): Promise<string | null> {
  if (!existsSync(PYTHON)) return `${PYTHON} is missing`;
  const r = spawnSync(PYTHON, ['-c', 'import kafka'], { encoding: 'utf8' });
  return r.status === 0 ? null : `${PYTHON} cannot import kafka (apt-get install python3-kafka): ${r.stderr.trim().split('\n').pop() ?? ''}`;
}

async function versions(): Promise<Record<string, string>> {
  const r = spawnSync(PYTHON, ['-c', 'import kafka, sys; print(kafka.__version__, sys.version.split()[0])'], { encoding: 'utf8' });
  const [kp, py] = r.stdout.trim().split(' ');
  return { 'kafka-python': kp ?? 'unknown', python: py ?? 'unknown' };
}

export const kafkaPythonClient: Client = {
  id: 'kafka-python',
  title: 'kafka-python',
  description: 'kafka-python 2.0.2 (Debian python3-kafka), api_version negotiated from the broker (ApiVersions v0 probe)',
  caps: { codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'], timestamps: true, headers: 'per-record', idempotence: false },
  unsupported: { idempotence: NO_IDEMPOTENCE, transactions: NO_TRANSACTIONS, deleteRecords: NO_DELETE_RECORDS },
  unavailable,
  versions,
  ops: ops(null),
};

export const kafkaPython010Client: Client = {
  id: 'kafka-python-0.10',
  title: 'kafka-python (0,10,0)',
  description: 'kafka-python 2.0.2 with api_version=(0,10,0): no probe; Produce v2 / message format 1, Fetch v2, ListOffsets v0, Metadata v1, no headers',
  caps: { codecs: ['none', 'gzip', 'snappy', 'lz4'], timestamps: true, headers: 'none', idempotence: false },
  unsupported: {
    zstd: 'kafka-python allows zstd only with api_version >= (2,1,0)',
    idempotence: NO_IDEMPOTENCE,
    transactions: NO_TRANSACTIONS,
    deleteRecords: NO_DELETE_RECORDS,
  },
  unavailable,
  versions,
  ops: ops([0, 10, 0]),
};
