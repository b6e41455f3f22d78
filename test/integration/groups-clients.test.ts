/**
 * Group consumers of kcat (librdkafka 2.0.2) and kafka-python 2.0.2 (auto and api_version=(0,10,0))
 * against a real gregor; committed offsets surviving kill -9 of a child broker (replayed from
 * __consumer_offsets, consumers resume there); and bad input answered with Kafka's error codes while
 * another live group carries on undisturbed.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { defaultJoinGroupRequest } from '../../protocol/generated/join-group.js';
import { defaultOffsetCommitRequest } from '../../protocol/generated/offset-commit.js';
import type { ClassicGroup } from '../../lib/group/classic-group.js';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import { startChildBroker, startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { runKcat } from '../helpers/kcat.js';
import { RawClient } from '../helpers/raw-client.js';
import { Cleanup } from '../helpers/cleanup.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function python(script: string, timeoutMs = 60_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('/usr/bin/python3', ['-c', script], { timeout: timeoutMs }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : Number(err.code ?? 1), stdout, stderr }),
    );
  });
}

async function seed(bootstrap: string, topic: string, partitions: number, n: number): Promise<void> {
  const kafka = new Kafka({ brokers: [bootstrap], clientId: 'seed', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, partition: i % partitions })) });
  await producer.disconnect();
}

async function committed(bootstrap: string, groupId: string, topic: string): Promise<string[]> {
  const admin = new Kafka({ brokers: [bootstrap], clientId: 'check', logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return (
      (await admin.fetchOffsets({ groupId, topics: [topic] }))[0]?.partitions
        .sort((a, b) => a.partition - b.partition)
        .map((p) => p.offset) ?? []
    );
  } finally {
    await admin.disconnect();
  }
}

describe('group consumers of kcat and kafka-python; durability; bad input', function () {
  this.timeout(120_000);
  let b: TestBroker;
  const cleanup = new Cleanup();
  before(async () => {
    b = cleanup.add(await startTestBroker(), (t) => t.stop());
    await seed(b.bootstrap, 'other-clients', 3, 300);
  });
  after(() => cleanup.run());

  it('kcat -G (librdkafka 2.0.2) consumes every record as a group member and commits', async () => {
    const r = await runKcat(['-b', b.bootstrap, '-G', 'kcat-group', '-o', 'beginning', '-e', '-q', '-f', '%p:%o\\n', 'other-clients']);
    expect(r.code, r.stderr).to.equal(0);
    const lines = r.stdout.toString().split('\n').filter(Boolean);
    expect(new Set(lines).size).to.equal(300);
    await until(async () => (await committed(b.bootstrap, 'kcat-group', 'other-clients')).join() === '100,100,100', 10_000, 'kcat commits');
  });

  for (const [name, apiVersion] of [
    ['auto', 'None'],
    ['(0,10,0)', '(0, 10, 0)'],
  ] as const) {
    it(`kafka-python 2.0.2 group consumer, api_version=${name}`, async () => {
      const groupId = `py-${name}`;
      const script = `
import kafka
c = kafka.KafkaConsumer("other-clients", bootstrap_servers="${b.bootstrap}", group_id="${groupId}", auto_offset_reset="earliest",
    consumer_timeout_ms=10000, enable_auto_commit=False, api_version=${apiVersion})
seen = set()
for m in c:
    seen.add((m.partition, m.offset))
    if len(seen) == 300: break
c.commit()
print(len(seen), c.config["api_version"])
c.close()
`;
      const r = await python(script);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout.trim().split(' ')[0]).to.equal('300');
      expect(await committed(b.bootstrap, groupId, 'other-clients')).to.deep.equal(['100', '100', '100']);
    });
  }

  it('commits survive kill -9 of the broker; the group is replayed and consumers resume there', async () => {
    const dataDir = tempDir('gregor-groups-kill-');
    const overrides = { 'group.initial.rebalance.delay.ms': '0', 'offsets.topic.num.partitions': '10' };
    let child = await startChildBroker(dataDir, 0, overrides);
    try {
      await seed(child.bootstrap, 'durable', 2, 200);
      const kafka = new Kafka({ brokers: [child.bootstrap], clientId: 'durable', logLevel: logLevel.NOTHING });
      const c1 = kafka.consumer({ groupId: 'durable-g', heartbeatInterval: 200, maxWaitTimeInMs: 100 });
      await c1.connect();
      await c1.subscribe({ topic: 'durable', fromBeginning: true });
      let n = 0;
      await c1.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          n++;
          if (Number(message.offset) < 30)
            await c1.commitOffsets([{ topic: 'durable', partition, offset: String(Number(message.offset) + 1) }]);
        },
      });
      await until(() => n === 200, 20_000, 'first consumer');
      await c1.disconnect();
      expect(await committed(child.bootstrap, 'durable-g', 'durable')).to.deep.equal(['30', '30']);
      child.child.kill('SIGKILL');
      await child.exited;
      child = await startChildBroker(dataDir, child.port, overrides);
      await until(
        async () => (await committed(child.bootstrap, 'durable-g', 'durable').catch(() => [])).join() === '30,30',
        20_000,
        'offsets after restart',
      );
      const admin = new Kafka({ brokers: [child.bootstrap], clientId: 'durable', logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const d = (await admin.describeGroups(['durable-g'])).groups[0];
      expect(d).to.include({ state: 'Empty', protocolType: 'consumer' });
      await admin.disconnect();
      const firsts = new Map<number, string>();
      const c2 = new Kafka({ brokers: [child.bootstrap], clientId: 'durable', logLevel: logLevel.NOTHING }).consumer({
        groupId: 'durable-g',
        maxWaitTimeInMs: 100,
      });
      await c2.connect();
      await c2.subscribe({ topic: 'durable', fromBeginning: true });
      await c2.run({
        eachMessage: ({ partition, message }) => {
          if (!firsts.has(partition)) firsts.set(partition, message.offset);
          return Promise.resolve();
        },
      });
      await until(() => firsts.size === 2, 20_000, 'resumed consumer');
      expect([...firsts.values()]).to.deep.equal(['30', '30']);
      await c2.disconnect();
    } finally {
      child.child.kill('SIGKILL');
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("bad input gets Kafka's error codes and another live group is unaffected", async () => {
    const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'bystander', logLevel: logLevel.NOTHING });
    const bystander = kafka.consumer({ groupId: 'bystander', heartbeatInterval: 200, maxWaitTimeInMs: 100 });
    await bystander.connect();
    await bystander.subscribe({ topic: 'other-clients', fromBeginning: true });
    await bystander.run({ eachMessage: async () => {} });
    try {
      const coordinator = (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;
      const found = () => coordinator.groups.get('bystander') as ClassicGroup | undefined;
      const group = () => found() ?? expect.fail('group bystander is gone');
      await until(() => found()?.state === 'Stable', 20_000, 'bystander Stable');
      const generation = group().generationId;

      const raw = await RawClient.connect(b.bootstrap);
      const join = (v: number, o: object) =>
        raw.request<{ errorCode: number; memberId: string }>(11, v, {
          ...defaultJoinGroupRequest(),
          sessionTimeoutMs: 10000,
          rebalanceTimeoutMs: 10000,
          protocolType: 'consumer',
          protocols: [{ name: 'range', metadata: Buffer.alloc(0) }],
          ...o,
        });
      expect((await join(5, { groupId: 'no-such', memberId: 'ghost' })).errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
      expect((await join(5, { groupId: '' })).errorCode).to.equal(ErrorCode.INVALID_GROUP_ID);
      expect((await join(5, { groupId: 'g-bad', sessionTimeoutMs: 1 })).errorCode).to.equal(ErrorCode.INVALID_SESSION_TIMEOUT);
      // Protocols are checked first (Kafka's order), then the member.
      expect((await join(5, { groupId: 'bystander', memberId: 'ghost' })).errorCode).to.equal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL);
      expect(
        (await join(5, { groupId: 'bystander', memberId: 'ghost', protocols: [{ name: 'RoundRobinAssigner', metadata: Buffer.alloc(0) }] }))
          .errorCode,
      ).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
      const commit = (o: object, meta: string | null = null) =>
        raw.request<{ topics: { partitions: { errorCode: number }[] }[] }>(8, 5, {
          ...defaultOffsetCommitRequest(),
          topics: [
            {
              name: 'other-clients',
              partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: meta }],
            },
          ],
          ...o,
        });
      const code = async (p: ReturnType<typeof commit>) => (await p).topics[0]?.partitions[0]?.errorCode;
      expect(await code(commit({ groupId: 'bystander', generationIdOrMemberEpoch: generation, memberId: 'ghost' }))).to.equal(
        ErrorCode.UNKNOWN_MEMBER_ID,
      );
      const member = [...group().members.keys()][0] as string;
      expect(await code(commit({ groupId: 'bystander', generationIdOrMemberEpoch: generation - 1, memberId: member }))).to.equal(
        ErrorCode.ILLEGAL_GENERATION,
      );
      expect(await code(commit({ groupId: 'bystander', generationIdOrMemberEpoch: -1, memberId: '' }))).to.equal(
        ErrorCode.UNKNOWN_MEMBER_ID,
      );
      expect(await code(commit({ groupId: 'no-such-2', generationIdOrMemberEpoch: 3, memberId: 'm' }))).to.equal(
        ErrorCode.ILLEGAL_GENERATION,
      );
      expect(await code(commit({ groupId: 'simple-bad', generationIdOrMemberEpoch: -1 }, 'x'.repeat(5000)))).to.equal(
        ErrorCode.OFFSET_METADATA_TOO_LARGE,
      );
      const hb = await raw.request<{ errorCode: number }>(12, 3, {
        groupId: 'no-such',
        generationId: 1,
        memberId: 'ghost',
        groupInstanceId: null,
      });
      expect(hb.errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
      const sync = await raw.request<{ errorCode: number }>(14, 3, {
        groupId: 'bystander',
        generationId: generation,
        memberId: 'ghost',
        groupInstanceId: null,
        assignments: [],
      });
      expect(sync.errorCode).to.equal(ErrorCode.UNKNOWN_MEMBER_ID);
      const del = await raw.request<{ results: { errorCode: number }[] }>(42, 1, { groupsNames: ['no-such', 'bystander'] });
      expect(del.results.map((r) => r.errorCode)).to.deep.equal([ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NON_EMPTY_GROUP]);
      const od = await raw.request<{ errorCode: number }>(47, 0, { groupId: 'no-such', topics: [] });
      expect(od.errorCode).to.equal(ErrorCode.GROUP_ID_NOT_FOUND);
      const od2 = await raw.request<{ errorCode: number; topics: { partitions: { errorCode: number }[] }[] }>(47, 0, {
        groupId: 'bystander',
        topics: [{ name: 'other-clients', partitions: [{ partitionIndex: 0 }] }],
      });
      expect(od2.topics[0]?.partitions[0]?.errorCode).to.equal(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC);
      const fc = await raw.request<{ coordinators: { errorCode: number; nodeId: number }[] }>(10, 4, {
        keyType: 1,
        coordinatorKeys: ['txn'],
      });
      expect(fc.coordinators[0]?.errorCode).to.equal(ErrorCode.NONE);
      expect(fc.coordinators[0]?.nodeId).to.be.at.least(0);
      const fc2 = await raw.request<{ coordinators: { errorCode: number }[] }>(10, 4, { keyType: 7, coordinatorKeys: ['x'] });
      expect(fc2.coordinators[0]?.errorCode).to.equal(ErrorCode.INVALID_REQUEST);
      raw.destroy();

      await new Promise((r) => setTimeout(r, 500));
      expect(group().state).to.equal('Stable');
      expect(group().generationId).to.equal(generation);
    } finally {
      await bystander.disconnect();
    }
  });
});
