/**
 * kafka-python 2.0.2 (Debian python3-kafka, under /usr/bin/python3) through driver.py, one process
 * per operation. Two columns: protocol versions negotiated from ApiVersions ("auto"), and pinned
 * api_version=(0,10,0) (no ApiVersions probe: Produce v2 / message format 1, Fetch v2, ListOffsets v0).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../lib/paths.js';
import { type FlowMember, regexFlow } from '../../lib/group-flows.js';
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
        reject(
          new Error(
            `kafka-python driver exited with ${code}${code === null ? ' (killed after timeout)' : ''}: ${err.trim().split('\n').slice(-3).join(' | ')}`,
          ),
        );
        return;
      }
      if (res.error === undefined) resolve(res.ok);
      else reject(res.notSupported === true ? new NotSupportedError(res.error) : new Error(res.error));
    });
    child.stdin.on('error', () => {}); // an early exit shows up in the exit code and stderr
    child.stdin.end(JSON.stringify(cmd));
  });
}

/**
 * driver.py's long-running `member` op as a FlowMember (lib/group-flows.ts): it prints one JSON line per
 * rebalance callback (kafka-python's listener; eager, so each carries the whole assignment) and per
 * record; a line on its stdin makes it close the consumer and exit.
 */
function pythonMember(cmd: object): Promise<FlowMember> {
  const child = spawn(PYTHON, [DRIVER], { stdio: ['pipe', 'pipe', 'pipe'] });
  const events: FlowMember['events'] = [];
  const records: FlowMember['records'] = [];
  let held: { topic: string; partition: number }[] = [];
  let err = '';
  let rest = '';
  let failure: string | null = null;
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  child.stdin.on('error', () => {});
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('close', (code) => {
      failure ??= `kafka-python member exited with ${code}: ${err.trim().split('\n').slice(-3).join(' | ')}`;
      reject(new Error(failure));
    });
    child.stdout.on('data', (d: Buffer) => {
      const lines = (rest + d.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (line.trim() === '') continue;
        const j = JSON.parse(line) as {
          event?: string;
          partitions?: [string, number][];
          topic?: string;
          partition?: number;
          offset?: number;
          value?: string | null;
          error?: string;
        };
        if (j.error !== undefined) failure = `kafka-python member: ${j.error}`;
        else if (j.event === 'record')
          records.push({ topic: j.topic!, partition: j.partition!, offset: j.offset!, value: j.value ?? null, at: Date.now() });
        else if (j.event === 'assign' || j.event === 'revoke') {
          const partitions = (j.partitions ?? []).map(([topic, partition]) => ({ topic, partition }));
          events.push({ kind: j.event, partitions });
          held = j.event === 'assign' ? partitions : [];
        } else if (j.event === 'started') {
          resolve({
            assignment: () => {
              if (child.exitCode !== null) throw new Error(failure ?? `kafka-python member exited with ${child.exitCode}`);
              return held;
            },
            events,
            records,
            async stop() {
              if (child.exitCode === null) {
                child.stdin.end('stop\n');
                const t = setTimeout(() => child.kill('SIGKILL'), 15000);
                await exited;
                clearTimeout(t);
              }
            },
          });
        }
      }
    });
    child.stdin.write(JSON.stringify(cmd) + '\n');
  });
}

function ops(apiVersion: [number, number, number] | null): Partial<ClientOps> {
  const run = <T>(op: string, args: object, timeoutMs?: number) =>
    python({ op, api_version: apiVersion, ...args }, timeoutMs) as Promise<T>;
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
    regexGroup: (bootstrap, spec) =>
      regexFlow(spec, () =>
        pythonMember({
          op: 'member',
          api_version: apiVersion,
          bootstrap,
          groupId: spec.groupId,
          pattern: spec.pattern,
          metadataMaxAgeMs: spec.metadataRefreshMs,
        }),
      ),
  };
}

const NO_IDEMPOTENCE =
  'kafka-python 2.0.2 has no idempotent producer: KafkaProducer knows no enable_idempotence and never sends InitProducerId (added in kafka-python 2.2.0, KIP-98)';
const NO_TRANSACTIONS =
  'kafka-python 2.0.2 has no transactional producer (no transactional_id, no AddPartitionsToTxn/EndTxn) and its consumer always fetches read_uncommitted (both added in kafka-python 2.2.0)';
const NO_CONSUMER_PROTOCOL =
  'kafka-python 2.0.2 speaks only the classic group protocol (JoinGroup v0-v2, SyncGroup, Heartbeat); it has no ConsumerGroupHeartbeat (KIP-848)';
const NO_STATIC =
  'kafka-python 2.0.2 has no static membership (KIP-345): KafkaConsumer takes no group_instance_id and its coordinator sends JoinGroup v0-v2, while group.instance.id needs JoinGroup v5';
const NO_COOPERATIVE =
  "kafka-python 2.0.2 has only the eager rebalance protocol: ConsumerCoordinator._on_join_prepare revokes every assigned partition before each rejoin, and its assignors (range, roundrobin, and KIP-54's eager sticky) have no COOPERATIVE protocol (KIP-429)";
const NO_DELETE_RECORDS = 'kafka-python 2.0.2 has no DeleteRecords (KafkaAdminClient.delete_records came in 2.1)';

function unavailable(): string | null {
  if (!existsSync(PYTHON)) return `${PYTHON} is missing`;
  const r = spawnSync(PYTHON, ['-c', 'import kafka'], { encoding: 'utf8' });
  return r.status === 0
    ? null
    : `${PYTHON} cannot import kafka (apt-get install python3-kafka): ${r.stderr.trim().split('\n').pop() ?? ''}`;
}

function versions(): Record<string, string> {
  const r = spawnSync(PYTHON, ['-c', 'import kafka, sys; print(kafka.__version__, sys.version.split()[0])'], { encoding: 'utf8' });
  const [kp, py] = r.stdout.trim().split(' ');
  return { 'kafka-python': kp ?? 'unknown', python: py ?? 'unknown' };
}

export const kafkaPythonClient: Client = {
  id: 'kafka-python',
  title: 'kafka-python',
  description: 'kafka-python 2.0.2 (Debian python3-kafka), api_version negotiated from the broker (ApiVersions v0 probe)',
  caps: {
    codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'],
    timestamps: true,
    headers: 'per-record',
    idempotence: false,
    consumerProtocol: false,
  },
  unsupported: {
    shareGroup: 'kafka-python has no share consumer (KIP-932)',
    idempotence: NO_IDEMPOTENCE,
    transactions: NO_TRANSACTIONS,
    deleteRecords: NO_DELETE_RECORDS,
    consumerProtocol: NO_CONSUMER_PROTOCOL,
    staticGroup: NO_STATIC,
    cooperativeGroup: NO_COOPERATIVE,
  },
  unavailable,
  versions,
  ops: ops(null),
};

export const kafkaPython010Client: Client = {
  id: 'kafka-python-0.10',
  title: 'kafka-python (0,10,0)',
  description:
    'kafka-python 2.0.2 with api_version=(0,10,0): no probe; Produce v2 / message format 1, Fetch v2, ListOffsets v0, Metadata v1, no headers',
  caps: { codecs: ['none', 'gzip', 'snappy', 'lz4'], timestamps: true, headers: 'none', idempotence: false, consumerProtocol: false },
  unsupported: {
    shareGroup: 'kafka-python has no share consumer (KIP-932)',
    zstd: 'kafka-python allows zstd only with api_version >= (2,1,0)',
    idempotence: NO_IDEMPOTENCE,
    transactions: NO_TRANSACTIONS,
    deleteRecords: NO_DELETE_RECORDS,
    consumerProtocol: NO_CONSUMER_PROTOCOL,
    staticGroup: NO_STATIC,
    cooperativeGroup: NO_COOPERATIVE,
  },
  unavailable,
  versions,
  ops: ops([0, 10, 0]),
};
