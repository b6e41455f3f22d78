/**
 * kcat 1.7.1 (Debian, librdkafka 2.0.2) driven as a subprocess: -P to produce (tab-separated key and
 * value on stdin, headers with -H per call), -C -J to read, -L -J for metadata, -Q for offsets by
 * time, -G for the balanced consumer, -X transactional.id for transactions (see transaction()).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cooperativeFlow, type FlowMember, regexFlow, staticFlow, type TopicPartition } from '../../lib/group-flows.js';
import { sleep } from '../../lib/records.js';
import { rawListOffset } from '../../lib/raw.js';
import {
  type Client,
  type GroupObservation,
  type GroupSpec,
  NotSupportedError,
  type ReadRecord,
  type TestRecord,
} from '../../lib/types.js';

const KCAT = process.env['KCAT'] ?? '/usr/bin/kcat';
const NO_ADMIN = 'kcat has no admin mode (only -L metadata and -Q offset queries)';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs kcat; `input` goes to stdin; killed after `timeoutMs`. `onStart` may write more/close stdin itself. */
function kcat(
  args: string[],
  opts: {
    input?: string;
    timeoutMs?: number;
    killSignal?: NodeJS.Signals;
    keepStdin?: (child: ReturnType<typeof spawn>) => Promise<void>;
  } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(KCAT, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => child.kill(opts.killSignal ?? 'SIGKILL'), opts.timeoutMs ?? 30000);
    child.on('error', reject);
    // kcat may exit before reading stdin (e.g. -V): that shows in the exit code, not as an EPIPE.
    child.stdin.on('error', () => {});
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
    if (opts.keepStdin !== undefined) void opts.keepStdin(child);
    else child.stdin.end(opts.input ?? '');
  });
}

function ok(what: string, r: Run): Run {
  if (r.code !== 0) throw new Error(`kcat ${what} exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return r;
}

const lines = (records: TestRecord[]) => records.map((r) => (r.key === null ? r.value : `${r.key}\t${r.value}`)).join('\n') + '\n';

/** Groups consecutive records that share a partition and header set (one kcat call each). */
function runsOf(records: TestRecord[]): TestRecord[][] {
  const out: TestRecord[][] = [];
  for (const r of records) {
    const last = out[out.length - 1];
    const same =
      last?.[0] !== undefined && last[0].partition === r.partition && JSON.stringify(last[0].headers) === JSON.stringify(r.headers);
    if (same) last.push(r);
    else out.push([r]);
  }
  return out;
}

function parseJson(out: string): ReadRecord[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      const j = JSON.parse(l) as {
        partition: number;
        offset: number;
        ts: number;
        headers?: string[];
        key: string | null;
        payload: string | null;
      };
      const headers: [string, string][] = [];
      for (let i = 0; i + 1 < (j.headers?.length ?? 0); i += 2) headers.push([j.headers![i]!, j.headers![i + 1]!]);
      return { partition: j.partition, offset: j.offset, key: j.key, value: j.payload, headers, timestamp: j.ts };
    });
}

function produceArgs(bootstrap: string, topic: string, partition: number, headers: [string, string][], extra: string[]): string[] {
  return [
    '-P',
    '-b',
    bootstrap,
    '-t',
    topic,
    '-p',
    String(partition),
    '-K',
    '\t',
    ...headers.flatMap(([k, v]) => ['-H', `${k}=${v}`]),
    ...extra,
  ];
}

async function group(bootstrap: string, spec: GroupSpec): Promise<GroupObservation> {
  // kcat -G prints "% Group <g> rebalanced ... assigned: <topic> [0], <topic> [1]" on stderr.
  const all = Array.from({ length: spec.partitions }, (_, i) => i);
  const assignedIn = (stderr: string): number[] => {
    const m = [...stderr.matchAll(/assigned: (.*)/g)].pop()?.[1] ?? '';
    return [...m.matchAll(/\[(\d+)\]/g)].map((x) => Number(x[1])).sort();
  };
  const common = [
    '-b',
    bootstrap,
    '-G',
    spec.groupId,
    '-J',
    '-X',
    'session.timeout.ms=10000',
    '-X',
    'heartbeat.interval.ms=500',
    '-X',
    'auto.offset.reset=earliest',
    '-X',
    'partition.assignment.strategy=range',
  ];
  // 1. member A alone reads commitAt × partitions records and commits them (auto commit on exit);
  //    kcat cannot choose which partitions they come from, so the committed offsets are what it read.
  const a = ok(
    '-G (first member)',
    await kcat([...common, '-c', String(spec.commitAt * spec.partitions), '-X', 'enable.auto.commit=true', spec.topic], {
      timeoutMs: spec.timeoutMs,
    }),
  );
  const firstAssignment = assignedIn(a.stderr);
  const readA = parseJson(a.stdout);
  const committed = Object.fromEntries(
    all.map((p) => [p, readA.filter((r) => r.partition === p).reduce((n, r) => Math.max(n, r.offset + 1), 0)]),
  );
  // 2. two members together for 8 s: each should end up with part of the topic (no commits); SIGTERM
  //    makes kcat leave the group cleanly, so the next member does not wait for a session timeout.
  const both = ['B1', 'B2'].map(() =>
    kcat([...common, '-X', 'enable.auto.commit=false', '-X', 'enable.auto.offset.store=false', spec.topic], {
      timeoutMs: 8000,
      killSignal: 'SIGTERM',
    }),
  );
  const [b1, b2] = await Promise.all(both);
  const rebalanced = [assignedIn(b1!.stderr), assignedIn(b2!.stderr)];
  // 3. a fresh member resumes at the committed offsets.
  const left = spec.perPartition * spec.partitions - readA.length;
  const c = await kcat([...common, '-c', String(Math.max(1, left)), '-X', 'enable.auto.commit=false', spec.topic], {
    timeoutMs: 15000,
    killSignal: 'SIGTERM',
  });
  const resumed: Record<number, number> = {};
  for (const r of parseJson(c.stdout)) if (resumed[r.partition] === undefined) resumed[r.partition] = r.offset;
  return { firstAssignment, rebalanced, committed, resumed };
}

/**
 * A long-running `kcat -G` balanced consumer for the group flows (lib/group-flows.ts). kcat reports each
 * rebalance callback on stderr, which is followed line by line:
 *   eager:       "% Group G rebalanced (memberid M): assigned: t [0], t [1]"   /  "...: revoked: t [0], t [1]"
 *   cooperative: "% Group G rebalanced: incremental assignment of 2 partition(s) (memberid M, COOPERATIVE
 *                rebalance protocol): t [0], t [3]"   /  "...: incremental revoke of 1 partition(s) (...): t [3]"
 * kcat applies exactly that list (assign/unassign, or incremental_assign/unassign), so the member's
 * assignment is replayed from these lines. Records come as -J lines on stdout, unbuffered (-u).
 * SIGTERM makes kcat close the consumer (LeaveGroup, except for a static member) and exit.
 */
function kcatMember(bootstrap: string, groupId: string, subscription: string, conf: Record<string, string | number>): Promise<FlowMember> {
  const args = [
    '-b',
    bootstrap,
    '-G',
    groupId,
    '-J',
    '-u',
    '-X',
    'auto.offset.reset=earliest',
    '-X',
    'enable.auto.commit=false',
    '-X',
    'enable.auto.offset.store=false',
    '-X',
    'fetch.wait.max.ms=100',
  ];
  for (const [k, v] of Object.entries(conf)) args.push('-X', `${k}=${v}`);
  args.push(subscription);
  const child = spawn(KCAT, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const events: FlowMember['events'] = [];
  const records: FlowMember['records'] = [];
  let held: TopicPartition[] = [];
  let protocol = 'unknown';
  let stderr = '';
  const lineReader = (onLine: (l: string) => void) => {
    let rest = '';
    return (d: Buffer) => {
      const parts = (rest + d.toString()).split('\n');
      rest = parts.pop() ?? '';
      for (const l of parts) onLine(l);
    };
  };
  child.stderr.on(
    'data',
    lineReader((line) => {
      stderr = (stderr + line + '\n').slice(-4000);
      if (!line.includes(' rebalanced')) return;
      const incremental = line.includes('incremental ');
      const kind = /assigned: |incremental assignment /.test(line)
        ? 'assign'
        : /revoked: |incremental revoke /.test(line)
          ? 'revoke'
          : null;
      if (kind === null) return;
      if (incremental) protocol = /, (\w+) rebalance protocol\)/.exec(line)?.[1] ?? protocol;
      else protocol = 'EAGER';
      const list = line.slice(line.lastIndexOf('): ') + 3);
      const partitions = [...list.matchAll(/([^\s,]+) \[(\d+)\]/g)].map((m) => ({ topic: m[1]!, partition: Number(m[2]) }));
      events.push({ kind, partitions });
      const key = (tp: TopicPartition) => `${tp.topic}\u0000${tp.partition}`;
      if (!incremental) held = kind === 'assign' ? partitions : [];
      else if (kind === 'assign') held = [...held, ...partitions];
      else held = held.filter((tp) => !partitions.some((p) => key(p) === key(tp)));
    }),
  );
  child.stdout.on(
    'data',
    lineReader((line) => {
      if (!line.startsWith('{')) return;
      const j = JSON.parse(line) as { topic: string; partition: number; offset: number; payload: string | null };
      records.push({ topic: j.topic, partition: j.partition, offset: j.offset, value: j.payload, at: Date.now() });
    }),
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('spawn', () =>
      resolve({
        assignment: () => {
          if (child.exitCode !== null)
            throw new Error(`kcat -G exited with ${child.exitCode}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`);
          return held;
        },
        events,
        records,
        rebalanceProtocol: () => protocol,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGTERM');
            const t = setTimeout(() => child.kill('SIGKILL'), 10000);
            await exited;
            clearTimeout(t);
          }
        },
      }),
    );
  });
}

const KCAT_CLASSIC = { 'session.timeout.ms': 10000, 'heartbeat.interval.ms': 500 };

/**
 * One kcat transaction (`-X transactional.id`): kcat begins it at start, commits when stdin ends and
 * aborts when it got SIGINT/SIGTERM. Two quirks of kcat 1.7.1 decide how the abort is driven:
 * - it acts on stdin only once ~1 KiB has arrived or stdin ended (fixed in kcat 1.8.0, kcat#343), so
 *   the lines are followed by 4 KiB of empty lines, which kcat skips (no empty messages are sent);
 * - its signal handler only sets a flag: a pending stdin read is restarted, so kcat aborts once that
 *   read returns (stdin closed), and a line still unread then ends it with "Program terminated while
 *   producing message" (exit 1, no abort). Delivery reports are served only after stdin ends too.
 * So: send the records, wait until the broker's high watermark shows them, SIGINT, close stdin.
 */
async function transaction(
  bootstrap: string,
  topic: string,
  transactionalId: string,
  records: TestRecord[],
  end: 'commit' | 'abort',
): Promise<void> {
  const runs = runsOf(records);
  if (runs.length !== 1)
    throw new NotSupportedError('kcat runs one transaction per process, with one partition and one header set per call');
  const first = records[0]!;
  const args = produceArgs(bootstrap, topic, first.partition, first.headers, [
    '-X',
    `transactional.id=${transactionalId}`,
    '-X',
    'acks=all',
  ]);
  if (end === 'commit') {
    const r = ok('-P (transaction)', await kcat(args, { input: lines(records) }));
    if (!r.stderr.includes('Transaction successfully committed')) throw new Error(`kcat -P did not commit: ${r.stderr.trim()}`);
    return;
  }
  const before = await rawListOffset(bootstrap, topic, first.partition, -1);
  let waited = '';
  const r = await kcat(args, {
    keepStdin: async (child) => {
      child.stdin?.write(lines(records) + '\n'.repeat(4096));
      const deadline = Date.now() + 15000;
      while ((await rawListOffset(bootstrap, topic, first.partition, -1)) < before + records.length && child.exitCode === null) {
        if (Date.now() > deadline) {
          waited = ` (the broker's high watermark stayed below ${before + records.length} for 15 s)`;
          break;
        }
        await sleep(50);
      }
      child.kill('SIGINT');
      child.stdin?.end();
    },
  });
  if (r.code !== 0 || !r.stderr.includes('Aborting transaction due to termination signal')) {
    throw new Error(`kcat -P did not abort${waited}: exit ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  }
}

export const kcatClient: Client = {
  id: 'kcat',
  title: 'kcat',
  description: 'kcat 1.7.1 (Debian), librdkafka 2.0.2, as a subprocess',
  caps: {
    codecs: ['none', 'gzip', 'snappy', 'lz4', 'zstd'],
    timestamps: false,
    headers: 'per-call',
    idempotence: true,
    consumerProtocol: false,
  },
  unsupported: {
    shareGroup: 'kcat 1.7.1 (librdkafka 2.0.2) has no share consumer mode; librdkafka got one (rd_kafka_share_*, preview) in 2.15',
    consumerProtocol:
      'kcat 1.7.1 runs on librdkafka 2.0.2, which has no group.protocol setting ("No such configuration property"): the KIP-848 consumer protocol came with librdkafka 2.4.0 (early access), GA in 2.12.0',
    createTopic: NO_ADMIN,
    deleteTopic: NO_ADMIN,
    createPartitions: NO_ADMIN,
    describeConfigs: NO_ADMIN,
    alterConfigs: NO_ADMIN,
    deleteRecords: NO_ADMIN,
  },
  unavailable() {
    return existsSync(KCAT) ? null : `${KCAT} is missing (apt-get install kcat)`;
  },
  async versions() {
    const r = await kcat(['-V']);
    const m = /Version (\S+) .*librdkafka (\S+)/.exec(r.stdout + r.stderr);
    return { kcat: m?.[1] ?? 'unknown', librdkafka: m?.[2] ?? 'unknown' };
  },
  ops: {
    async metadata(bootstrap, topics) {
      const out = {
        brokers: [] as { nodeId: number; host: string; port: number }[],
        topics: [] as { name: string; partitions: { partition: number; leader: number }[] }[],
      };
      for (const topic of topics) {
        const r = ok('-L', await kcat(['-L', '-J', '-b', bootstrap, '-t', topic]));
        const j = JSON.parse(r.stdout) as {
          brokers: { id: number; name: string }[];
          topics: { topic: string; partitions: { partition: number; leader: number }[] }[];
        };
        out.brokers = j.brokers.map((b) => ({
          nodeId: b.id,
          host: b.name.slice(0, b.name.lastIndexOf(':')),
          port: Number(b.name.slice(b.name.lastIndexOf(':') + 1)),
        }));
        for (const t of j.topics)
          out.topics.push({ name: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, leader: p.leader })) });
      }
      return out;
    },
    async produce(bootstrap, spec) {
      const extra = [
        '-X',
        `compression.codec=${spec.codec}`,
        '-X',
        `acks=${spec.acks}`,
        ...(spec.idempotent === true ? ['-X', 'enable.idempotence=true'] : []),
      ];
      for (const run of runsOf(spec.records)) {
        ok('-P', await kcat(produceArgs(bootstrap, spec.topic, run[0]!.partition, run[0]!.headers, extra), { input: lines(run) }));
      }
    },
    async consume(bootstrap, spec) {
      const out: ReadRecord[] = [];
      for (const p of spec.partitions) {
        const r = ok(
          '-C',
          await kcat(
            [
              '-C',
              '-J',
              '-b',
              bootstrap,
              '-t',
              spec.topic,
              '-p',
              String(p.partition),
              '-o',
              String(p.from),
              '-c',
              String(p.count),
              '-X',
              'fetch.wait.max.ms=100',
            ],
            { timeoutMs: spec.timeoutMs },
          ),
        );
        out.push(...parseJson(r.stdout));
      }
      return out;
    },
    async offsetForTime(bootstrap, topic, partition, timestamp) {
      const r = ok('-Q', await kcat(['-Q', '-b', bootstrap, '-t', `${topic}:${partition}:${timestamp}`]));
      const m = /\[\d+\] offset (-?\d+)/.exec(r.stdout);
      if (m?.[1] === undefined) throw new Error(`kcat -Q printed no offset: ${r.stdout.trim()} ${r.stderr.trim()}`);
      return Number(m[1]);
    },
    group,
    regexGroup: (b, spec) =>
      regexFlow(spec, () =>
        kcatMember(b, spec.groupId, spec.pattern, { ...KCAT_CLASSIC, 'topic.metadata.refresh.interval.ms': spec.metadataRefreshMs }),
      ),
    staticGroup: (b, spec) =>
      staticFlow(spec, (id) =>
        kcatMember(b, spec.groupId, spec.topic, {
          ...KCAT_CLASSIC,
          'session.timeout.ms': spec.sessionTimeoutMs,
          'partition.assignment.strategy': 'range',
          'group.instance.id': `${spec.groupId}-${id}`,
        }),
      ),
    cooperativeGroup: (b, spec) =>
      cooperativeFlow(spec, () =>
        kcatMember(b, spec.groupId, spec.topic, { ...KCAT_CLASSIC, 'partition.assignment.strategy': 'cooperative-sticky' }),
      ),
    async transactions(bootstrap, spec) {
      await transaction(bootstrap, spec.topic, spec.transactionalId, spec.aborted, 'abort');
      await transaction(bootstrap, spec.topic, spec.transactionalId, spec.committed, 'commit');
      const out: ReadRecord[] = [];
      for (const p of [...new Set([...spec.aborted, ...spec.committed].map((r) => r.partition))]) {
        const r = ok(
          '-C (read_committed)',
          await kcat([
            '-C',
            '-J',
            '-e',
            '-b',
            bootstrap,
            '-t',
            spec.topic,
            '-p',
            String(p),
            '-o',
            'beginning',
            '-X',
            'isolation.level=read_committed',
          ]),
        );
        out.push(...parseJson(r.stdout));
      }
      return out;
    },
  },
};
