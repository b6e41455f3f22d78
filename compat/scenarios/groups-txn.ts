/**
 * Consumer groups, idempotence and transactions. The broker's ApiVersions decide whether they can run;
 * when the APIs are missing the cells read "not implemented by broker", and they run as soon as the
 * broker advertises them.
 */
import { rawCreateTopic, rawProduce } from '../lib/raw.js';
import { checkReadBack, makeRecords, readBackSpec } from '../lib/records.js';
import { NotSupportedError, type TestRecord } from '../lib/types.js';
import { API, type Scenario } from './context.js';

const groups: Scenario = {
  id: 'consumer-group',
  title: 'consumer group: join, rebalance, commit, resume',
  description:
    'member A joins alone (gets both partitions of a 2-partition topic with 10 records each), reads, commits offset 5 per partition; member B joins and the partitions are split between A and B; both leave; a fresh member resumes at the committed offsets',
  ops: ['group'],
  brokerApis: [API.FindCoordinator, API.JoinGroup, API.SyncGroup, API.Heartbeat, API.LeaveGroup, API.OffsetCommit, API.OffsetFetch],
  async run(ctx, client) {
    const topic = ctx.topic('grp');
    await rawCreateTopic(ctx.main.bootstrap, topic, 2);
    await rawProduce(ctx.main.bootstrap, topic, [0, 1].flatMap((partition) => Array.from({ length: 10 }, (_, i) => ({ partition, key: `k${i}`, value: `p${partition}-v${i}`, timestamp: Date.now() }))));
    const obs = await client.ops.group!(ctx.main.bootstrap, { topic, groupId: `${topic}-group`, partitions: 2, perPartition: 10, commitAt: 5, timeoutMs: 30000 });
    const problems: string[] = [];
    if (obs.firstAssignment.join() !== '0,1') problems.push(`lone member was assigned [${obs.firstAssignment.join()}], expected [0,1]`);
    const [a = [], b = []] = obs.rebalanced;
    if (a.length === 0 || b.length === 0 || [...a, ...b].sort().join() !== '0,1') problems.push(`after the second member joined: [${a.join()}] and [${b.join()}], expected a split of [0,1]`);
    // A partition read to its end before the commit has nothing to resume; the others must resume exactly there.
    for (const p of [0, 1]) {
      const at = obs.committed[p];
      if (at === undefined) problems.push(`nothing committed for partition ${p}`);
      else if (at < 10 && obs.resumed[p] !== at) problems.push(`partition ${p} resumed at ${obs.resumed[p]}, committed ${at}`);
      else if (at >= 10 && obs.resumed[p] !== undefined) problems.push(`partition ${p} was read to its end and committed there, yet resumed at ${obs.resumed[p]}`);
    }
    if (Object.values(obs.committed).every((o) => o === 0)) problems.push('every committed offset is 0');
    if (problems.length > 0) throw new Error(problems.join('; '));
    return `alone [0,1]; split [${a.join()}] / [${b.join()}]; committed ${JSON.stringify(obs.committed)}, resumed at ${JSON.stringify(obs.resumed)}`;
  },
};

const idempotence: Scenario = {
  id: 'idempotent-producer',
  title: 'idempotent producer',
  description: '12 records on 2 partitions with enable.idempotence (InitProducerId, sequence numbers), acks=all; read back exactly once, in order',
  ops: ['produce', 'consume'],
  brokerApis: [API.InitProducerId],
  async run(ctx, client) {
    if (!client.caps.idempotence) throw new NotSupportedError(client.unsupported.idempotence ?? `${client.title} has no idempotent producer`);
    const topic = ctx.topic('idem');
    await rawCreateTopic(ctx.main.bootstrap, topic, 2);
    const records = makeRecords(topic, 2, 6);
    const started = Date.now();
    await client.ops.produce!(ctx.main.bootstrap, { topic, records, codec: 'none', acks: -1, idempotent: true });
    return checkReadBack(records, await client.ops.consume!(ctx.main.bootstrap, readBackSpec(topic, records)), client.caps, started);
  },
};

const transactions: Scenario = {
  id: 'transactions',
  title: 'transactions (abort + commit, read_committed)',
  description: 'a transactional producer sends 3 records and aborts, then 3 more and commits; a read_committed read of the partition returns exactly the committed 3',
  ops: ['transactions'],
  brokerApis: [API.FindCoordinator, API.InitProducerId, API.AddPartitionsToTxn, API.EndTxn],
  async run(ctx, client) {
    const topic = ctx.topic('txn');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    const rec = (kind: string, i: number): TestRecord => ({ partition: 0, key: `${kind}-k${i}`, value: `${kind}-v${i}`, headers: [], timestamp: Date.now() });
    const aborted = [0, 1, 2].map((i) => rec('aborted', i));
    const committed = [0, 1, 2].map((i) => rec('committed', i));
    const got = await client.ops.transactions!(ctx.main.bootstrap, { topic, transactionalId: `${topic}-txn`, aborted, committed });
    const values = got.map((r) => r.value);
    if (values.join() !== committed.map((r) => r.value).join()) throw new Error(`read_committed returned [${values.join(', ')}], expected [${committed.map((r) => r.value).join(', ')}]`);
    return 'aborted records hidden, committed records read in order';
  },
};

export const groupTxnScenarios: Scenario[] = [groups, idempotence, transactions];
