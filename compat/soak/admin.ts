/**
 * The soak's admin traffic (a kafkajs admin creating and deleting a scratch topic, describing
 * configs and groups, listing groups and offsets, and DeleteRecords on the retained topic) and the
 * end of the run: waiting for the groups to catch up, the log start offsets, and the final read of
 * every soak topic from its start with a fresh librdkafka consumer.
 */
import kafkajs from 'kafkajs';
import { asError } from '../../lib/as-error.js';
import { connectRd, rdkafka, sleep, type RdMessage } from '../bench/proc-stats.js';
import { TopicKind, type Ledger } from './ledger.js';
import { disconnectOrReport, type SoakTopic, type WorkloadContext, type Worker } from './producers.js';

export function adminClient(bootstrap: string): kafkajs.Admin {
  return new kafkajs.Kafka({ clientId: 'soak-admin', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
}

export async function createSoakTopics(admin: kafkajs.Admin, topics: readonly SoakTopic[]): Promise<void> {
  await admin.createTopics({
    waitForLeaders: true,
    topics: topics.map((t) => ({
      topic: t.name,
      numPartitions: t.partitions,
      configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
    })),
  });
}

/** Admin calls every `periodMs`; counts them, reports failures as problems. */
export function adminChurn(
  ctx: WorkloadContext,
  groups: readonly string[],
  periodMs: number,
  stats: { adminCalls: number; deleteRecords: number },
): Worker {
  return {
    name: 'admin',
    async run() {
      const admin = adminClient(ctx.bootstrap);
      await admin.connect();
      const retained = ctx.topics.find((t) => t.kind === TopicKind.retained);
      const keep = ctx.topics.find((t) => t.kind === TopicKind.keep);
      const call = async <T>(what: string, f: () => Promise<T>): Promise<T | undefined> => {
        try {
          const r = await f();
          stats.adminCalls++;
          return r;
        } catch (e) {
          ctx.problem('admin-failed', `${what}: ${asError(e).message}`);
          return undefined;
        }
      };
      try {
        for (let round = 0; !ctx.stopped(); round++) {
          const scratch = `soak-scratch-${round}`;
          await call('createTopics', () => admin.createTopics({ topics: [{ topic: scratch, numPartitions: 2 }], waitForLeaders: true }));
          if (keep !== undefined)
            await call('describeConfigs', () =>
              admin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: keep.name }], includeSynonyms: false }),
            );
          const listed = await call('listGroups', () => admin.listGroups());
          if (listed !== undefined && groups.length > 0) await call('describeGroups', () => admin.describeGroups([...groups]));
          await call('fetchTopicMetadata', () => admin.fetchTopicMetadata({ topics: [] }));
          if (retained !== undefined) {
            const offsets = await call('fetchTopicOffsets', () => admin.fetchTopicOffsets(retained.name));
            const p = offsets?.[round % retained.partitions];
            if (p !== undefined && round % 2 === 1) {
              const low = Number(p.low);
              const high = Number(p.high);
              if (high - low > 20) {
                const to = low + Math.floor((high - low) / 3);
                const done = await call('deleteTopicRecords', async () => {
                  await admin.deleteTopicRecords({ topic: retained.name, partitions: [{ partition: p.partition, offset: String(to) }] });
                  return true;
                });
                if (done === true) stats.deleteRecords++;
              }
            }
          }
          await call('deleteTopics', () => admin.deleteTopics({ topics: [scratch] }));
          for (let waited = 0; waited < periodMs && !ctx.stopped(); waited += 250) await sleep(250);
        }
      } finally {
        await admin.disconnect();
      }
    },
  };
}

/** Low (logStartOffset) and high watermark of every partition of the soak topics. */
export async function watermarks(
  admin: kafkajs.Admin,
  topics: readonly SoakTopic[],
): Promise<Map<string, { low: number; high: number }[]>> {
  const out = new Map<string, { low: number; high: number }[]>();
  for (const t of topics) {
    const parts: { low: number; high: number }[] = [];
    for (const p of await admin.fetchTopicOffsets(t.name)) parts[p.partition] = { low: Number(p.low), high: Number(p.high) };
    out.set(t.name, parts);
  }
  return out;
}

/** Waits until `group` has committed the high watermark of every partition of `topics` (or the timeout). */
export async function waitForGroup(admin: kafkajs.Admin, group: string, topics: readonly SoakTopic[], timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const marks = await watermarks(admin, topics);
    const committed = await admin.fetchOffsets({ groupId: group, topics: topics.map((t) => t.name) });
    const behind = committed.some(({ topic, partitions }) =>
      partitions.some(({ partition, offset }) => {
        const m = marks.get(topic)?.[partition];
        return m !== undefined && m.high > m.low && Number(offset) < m.high;
      }),
    );
    if (!behind) return true;
    if (performance.now() > deadline) return false;
    await sleep(1000);
  }
}

interface RdAssignConsumer {
  assign(tps: { topic: string; partition: number; offset?: number }[]): void;
  consume(n: number, cb: (err: unknown, msgs: RdMessage[]) => void): void;
  connect(opts: { timeout?: number }, cb: (err: unknown) => void): void;
  disconnect(cb: () => void): void;
}

/** Reads every partition of `topics` from its start to the high watermark in `marks`, into the ledger. */
export async function finalRead(
  bootstrap: string,
  ledger: Ledger,
  topics: readonly SoakTopic[],
  marks: Map<string, { low: number; high: number }[]>,
  timeoutMs: number,
  problem: (kind: string, detail: string) => void,
): Promise<{ records: number; complete: boolean }> {
  const Consumer = rdkafka().KafkaConsumer as unknown as new (c: Record<string, unknown>, t: Record<string, unknown>) => RdAssignConsumer;
  const consumer = new Consumer(
    { 'bootstrap.servers': bootstrap, 'group.id': `soak-final-${Date.now()}`, 'enable.auto.commit': false, log_level: 0 },
    { 'auto.offset.reset': 'earliest' },
  );
  await connectRd(consumer);
  const pending = new Map<string, number>(); // "topic/partition" -> high watermark still to reach
  const assignment: { topic: string; partition: number; offset: number }[] = [];
  for (const t of topics)
    (marks.get(t.name) ?? []).forEach((m, partition) => {
      if (m.high > m.low) {
        pending.set(`${t.name}/${partition}`, m.high);
        assignment.push({ topic: t.name, partition, offset: -2 }); // OFFSET_BEGINNING
      }
    });
  let records = 0;
  const deadline = performance.now() + timeoutMs;
  try {
    consumer.assign(assignment);
    while (pending.size > 0 && performance.now() < deadline) {
      const batch = await new Promise<RdMessage[]>((resolve, reject) =>
        consumer.consume(1000, (e, msgs) => (e ? reject(asError(e)) : resolve(msgs))),
      );
      for (const m of batch) {
        const key = `${m.topic}/${m.partition}`;
        const high = pending.get(key);
        if (high === undefined || m.offset >= high) continue; // written after the watermarks were taken: none should be
        records++;
        ledger.read(m.topic, m.partition, m.offset, m.value);
        if (m.offset >= high - 1) pending.delete(key);
      }
    }
  } finally {
    await disconnectOrReport(consumer, 'final read', problem);
  }
  return { records, complete: pending.size === 0 };
}
