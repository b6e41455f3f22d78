/**
 * Rebalance time of a classic group: three kafkajs 2.2.4 consumers join one group on a 6-partition
 * topic (group.initial.rebalance.delay.ms=0). Measured from the moment the third member starts its
 * JoinGroup to (a) the broker's group being Stable with 3 members and (b) every member having received
 * its assignment (kafkajs GROUP_JOIN). Two client settings: kafkajs defaults (heartbeatInterval 3000,
 * maxWaitTimeInMs 5000: the earlier members only learn of the rebalance at their next heartbeat) and
 * fast ones (100/100). BENCH_REBALANCE_RUNS rounds each (default 5); medians printed as JSON.
 *   node dist/compat/bench/group-rebalance.js
 */
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import type { ClassicGroup } from '../../lib/group/classic-group.js';
import type { GroupCoordinator } from '../../lib/group/coordinator.js';
import { startTestBroker } from '../../test/helpers/broker.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const RUNS = Number(process.env['BENCH_REBALANCE_RUNS'] ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function round(
  kafka: import('kafkajs').Kafka,
  coordinator: GroupCoordinator,
  topic: string,
  groupId: string,
  opts: { heartbeatInterval: number; maxWaitTimeInMs: number },
) {
  const joined: number[] = [];
  const consumers: import('kafkajs').Consumer[] = [];
  let lastJoinAt = 0;
  for (let i = 0; i < 3; i++) {
    const c = kafka.consumer({ groupId, ...opts });
    c.on(c.events.GROUP_JOIN, () => void (joined[i] = performance.now()));
    await c.connect();
    await c.subscribe({ topic });
    if (i === 2) lastJoinAt = performance.now();
    await c.run({ eachMessage: async () => {} });
    consumers.push(c);
  }
  // Broker side: the group Stable with all three (checked every millisecond; this is a benchmark).
  let stableAt = 0;
  while (stableAt === 0) {
    const g = coordinator.groups.get(groupId) as ClassicGroup | undefined;
    if (g !== undefined && g.state === 'Stable' && g.size === 3 && [...g.members.values()].every((m) => m.assignment.length > 0))
      stableAt = performance.now();
    else await new Promise((r) => setTimeout(r, 1));
  }
  while (joined.filter((t) => t >= lastJoinAt).length < 3) await new Promise((r) => setTimeout(r, 1));
  const result = { brokerStableMs: stableAt - lastJoinAt, allMembersAssignedMs: Math.max(...joined) - lastJoinAt };
  await Promise.all(consumers.map((c) => c.disconnect()));
  return result;
}

async function main(): Promise<void> {
  const b = await startTestBroker({ 'group.initial.rebalance.delay.ms': 0 });
  const coordinator = (b.broker as unknown as { services: { groups: GroupCoordinator } }).services.groups;
  const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'bench', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'rebalance', numPartitions: 6 }] });
  await admin.disconnect();
  const out: Record<string, unknown> = { node: process.version, cpus: cpus().length, cpu: cpus()[0]?.model, runs: RUNS };
  for (const [name, opts] of [
    ['kafkajs-defaults', { heartbeatInterval: 3000, maxWaitTimeInMs: 5000 }],
    ['kafkajs-fast-heartbeat', { heartbeatInterval: 100, maxWaitTimeInMs: 100 }],
  ] as const) {
    const rs = [];
    for (let i = 0; i < RUNS; i++) rs.push(await round(kafka, coordinator, 'rebalance', `${name}-${i}`, opts));
    out[name] = {
      brokerStableMsMedian: Math.round(median(rs.map((r) => r.brokerStableMs)) * 10) / 10,
      allMembersAssignedMsMedian: Math.round(median(rs.map((r) => r.allMembersAssignedMs)) * 10) / 10,
      allMembersAssignedMs: rs.map((r) => Math.round(r.allMembersAssignedMs)),
    };
  }
  console.log(JSON.stringify(out, null, 2));
  await b.stop();
}

await main();
