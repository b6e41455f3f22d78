/**
 * @confluentinc/kafka-javascript 1.10.1 (librdkafka 2.15.1) loaded from compat/clients/confluent, and
 * the node-rdkafka-style building blocks both confluent columns share (partition reads by assign()).
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ROOT } from '../../lib/paths.js';
import { sleep } from '../../lib/records.js';
import type { FlowMember } from '../../lib/group-flows.js';
import type { ConsumeSpec, GroupProtocol, ReadRecord } from '../../lib/types.js';

export type Any = any;

let loaded: Any;
export function ck(): Any {
  loaded ??= createRequire(join(ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript');
  return loaded;
}

export function ckUnavailable(): string | null {
  try {
    ck();
    return null;
  } catch (e) {
    return `@confluentinc/kafka-javascript cannot be loaded (${(e as Error).message.split('\n')[0]}); run \`bash scripts/setup-test-deps.sh\``;
  }
}

export function ckVersions(): Record<string, string> {
  const pkg = createRequire(join(ROOT, 'compat/clients/confluent/package.json'))('@confluentinc/kafka-javascript/package.json') as {
    version: string;
  };
  return { '@confluentinc/kafka-javascript': pkg.version, librdkafka: String(ck().librdkafkaVersion) };
}

export const cb = <T,>(fn: (done: (err: Any, v?: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) =>
    fn((err, v) => (err ? reject(err instanceof Error ? err : new Error(String(err?.message ?? err))) : resolve(v as T))),
  );

export function headerPairs(h: Any): [string, string][] {
  const out: [string, string][] = [];
  for (const entry of h ?? []) for (const [k, v] of Object.entries(entry)) out.push([k, String(v)]);
  return out;
}

export function toRead(m: Any): ReadRecord {
  return {
    partition: m.partition,
    offset: Number(m.offset),
    key: m.key == null ? null : String(m.key),
    value: m.value == null ? null : String(m.value),
    headers: headerPairs(m.headers),
    timestamp: Number(m.timestamp),
  };
}

export async function nativeConsumer(bootstrap: string, conf: Record<string, unknown> = {}): Promise<Any> {
  const c = new (ck().KafkaConsumer)(
    {
      'bootstrap.servers': bootstrap,
      'group.id': `gregor-compat-${process.pid}-${Date.now()}`,
      'enable.auto.commit': false,
      'fetch.wait.max.ms': 100,
      log_level: 0,
      ...conf,
    },
    { 'auto.offset.reset': 'earliest' },
  );
  await cb((d) => c.connect({ timeout: 10000 }, d));
  return c;
}

/** Reads `count` records per partition from `from` with assign() (no group join). */
export async function readByAssign(bootstrap: string, spec: ConsumeSpec, conf: Record<string, unknown> = {}): Promise<ReadRecord[]> {
  const c = await nativeConsumer(bootstrap, conf);
  const out: ReadRecord[] = [];
  try {
    c.assign(spec.partitions.map((p) => ({ topic: spec.topic, partition: p.partition, offset: p.from })));
    const want = new Map(spec.partitions.map((p) => [p.partition, p.count]));
    const got = new Map<number, number>();
    const deadline = Date.now() + spec.timeoutMs;
    while ([...want].some(([p, n]) => (got.get(p) ?? 0) < n) && Date.now() < deadline) {
      const msgs: Any[] = await cb((d) => c.consume(500, d));
      for (const m of msgs) {
        out.push(toRead(m));
        got.set(m.partition, (got.get(m.partition) ?? 0) + 1);
      }
      if (msgs.length === 0) await sleep(20);
    }
  } finally {
    await cb((d) => c.disconnect(d)).catch(() => undefined);
  }
  return out;
}

/** Reads everything a read_committed consumer is served up to each partition's end (for transactions). */
export async function readCommitted(bootstrap: string, topic: string, partitions: number[]): Promise<ReadRecord[]> {
  const c = await nativeConsumer(bootstrap, { 'isolation.level': 'read_committed', 'enable.partition.eof': true });
  const out: ReadRecord[] = [];
  try {
    c.assign(partitions.map((partition) => ({ topic, partition, offset: 0 })));
    const eof = new Set<number>();
    c.on('partition.eof', (e: Any) => eof.add(e.partition));
    const deadline = Date.now() + 15000;
    while (eof.size < partitions.length && Date.now() < deadline) {
      const msgs: Any[] = await cb((d) => c.consume(500, d));
      for (const m of msgs) out.push(toRead(m));
      if (msgs.length === 0) await sleep(20);
    }
  } finally {
    await cb((d) => c.disconnect(d)).catch(() => undefined);
  }
  return out;
}

export function nativeAdmin(bootstrap: string): Any {
  return ck().AdminClient.create({ 'bootstrap.servers': bootstrap, log_level: 0 });
}

export async function withNativeAdmin<T>(bootstrap: string, fn: (a: Any) => Promise<T>): Promise<T> {
  const a = nativeAdmin(bootstrap);
  try {
    return await fn(a);
  } finally {
    a.disconnect();
  }
}

/** The node-rdkafka-style group run (subscribe, commit, rebalance, resume); shared by both columns. */
export async function nativeGroup(
  bootstrap: string,
  spec: import('../../lib/types.js').GroupSpec,
): Promise<import('../../lib/types.js').GroupObservation> {
  const all = Array.from({ length: spec.partitions }, (_, i) => i);
  const members: { c: Any; first: Map<number, number>; seen: Map<number, number>; stop: boolean; loop?: Promise<void> }[] = [];
  const member = async () => {
    const c = await nativeConsumer(bootstrap, {
      'group.id': spec.groupId,
      'session.timeout.ms': 10000,
      'heartbeat.interval.ms': 500,
      'partition.assignment.strategy': 'range',
    });
    const m = { c, first: new Map<number, number>(), seen: new Map<number, number>(), stop: false } as (typeof members)[number];
    c.subscribe([spec.topic]);
    m.loop = (async () => {
      while (!m.stop) {
        const msgs: Any[] = await cb<Any[]>((d) => c.consume(50, d)).catch(() => []);
        for (const r of msgs) {
          if (!m.first.has(r.partition)) m.first.set(r.partition, Number(r.offset));
          m.seen.set(r.partition, Number(r.offset) + 1);
        }
        await sleep(5);
      }
    })();
    members.push(m);
    return m;
  };
  const assigned = (m: (typeof members)[number]): number[] =>
    m.c
      .assignments()
      .filter((a: Any) => a.topic === spec.topic)
      .map((a: Any) => a.partition)
      .sort();
  const until = async (what: string, cond: () => boolean) => {
    const deadline = Date.now() + spec.timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`librdkafka group: timed out waiting for ${what}`);
      await sleep(50);
    }
  };
  const close = async (ms: typeof members) => {
    for (const m of ms) m.stop = true;
    await Promise.all(
      ms.map(async (m) => {
        await m.loop;
        await cb((d) => m.c.disconnect(d)).catch(() => undefined);
      }),
    );
  };
  try {
    const a = await member();
    await until(
      'member A to get every partition and read them',
      () => assigned(a).length === spec.partitions && all.every((p) => (a.seen.get(p) ?? 0) >= spec.commitAt),
    );
    const firstAssignment = assigned(a);
    a.c.commitSync(all.map((p) => ({ topic: spec.topic, partition: p, offset: spec.commitAt })));
    const b = await member();
    await until(
      'the rebalance to split the partitions',
      () => assigned(a).length > 0 && assigned(b).length > 0 && assigned(a).length + assigned(b).length === spec.partitions,
    );
    const rebalanced = [assigned(a), assigned(b)];
    await close(members.splice(0));
    const c = await member();
    await until('a fresh member to resume every partition', () => all.every((p) => c.first.has(p)));
    return {
      firstAssignment,
      rebalanced,
      committed: Object.fromEntries(all.map((p) => [p, spec.commitAt])),
      resumed: Object.fromEntries(c.first),
    };
  } finally {
    await close(members.splice(0));
  }
}

/** librdkafka settings of a group member in either protocol (classic ones are refused with group.protocol=consumer). */
export function groupConf(
  protocol: GroupProtocol,
  classic: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return protocol === 'consumer'
    ? { 'group.protocol': 'consumer', ...extra }
    : { 'session.timeout.ms': 10000, 'heartbeat.interval.ms': 500, ...classic, ...extra };
}

const ASSIGN = -175; // ERR__ASSIGN_PARTITIONS
const REVOKE = -174; // ERR__REVOKE_PARTITIONS

/**
 * A node-rdkafka-style KafkaConsumer group member for the group flows (lib/group-flows.ts):
 * `rebalance_cb: true` (the package applies each assignment, eager or incremental, and emits
 * 'rebalance', which is recorded), subscribe(), a consume loop.
 */
export async function nativeFlowMember(
  bootstrap: string,
  groupId: string,
  subscription: string[],
  conf: Record<string, unknown>,
): Promise<FlowMember> {
  const events: FlowMember['events'] = [];
  const records: FlowMember['records'] = [];
  const c = new (ck().KafkaConsumer)(
    {
      'bootstrap.servers': bootstrap,
      'group.id': groupId,
      'enable.auto.commit': false,
      'fetch.wait.max.ms': 100,
      log_level: 0,
      rebalance_cb: true,
      ...conf,
    },
    { 'auto.offset.reset': 'earliest' },
  );
  c.on('rebalance', (err: Any, assignment: Any[]) => {
    if (err?.code === ASSIGN || err?.code === REVOKE)
      events.push({
        kind: err.code === ASSIGN ? 'assign' : 'revoke',
        partitions: assignment.map((a) => ({ topic: a.topic, partition: a.partition })),
      });
  });
  await cb((d) => c.connect({ timeout: 10000 }, d));
  c.setDefaultConsumeTimeout(100);
  c.subscribe(subscription);
  let stop = false;
  const consumeUntilStopped = async () => {
    while (!stop) {
      const msgs: Any[] = await cb<Any[]>((d) => c.consume(20, d)).catch(() => []);
      const at = Date.now();
      for (const m of msgs)
        records.push({
          topic: m.topic,
          partition: m.partition,
          offset: Number(m.offset),
          value: m.value == null ? null : String(m.value),
          at,
        });
      await sleep(5);
    }
  };
  const loop = consumeUntilStopped();
  return {
    assignment: () => (c.assignments() as Any[]).map((a) => ({ topic: a.topic, partition: a.partition })),
    events,
    records,
    rebalanceProtocol: () => String(c.rebalanceProtocol()),
    async stop() {
      stop = true;
      await loop;
      await cb((d) => c.disconnect(d)).catch(() => undefined);
    },
  };
}
