/**
 * Consumer groups, idempotence and transactions. The broker's ApiVersions decide whether they can run;
 * when the APIs are missing the cells read "not implemented by broker", and they run as soon as the
 * broker advertises them.
 */
import { rawCreateTopic, rawListOffset, rawProduce, rawReadCommittedView } from '../lib/raw.js';
import { checkReadBack, makeRecords, readBackSpec } from '../lib/records.js';
import { NotSupportedError, type ReadRecord, type TestRecord } from '../lib/types.js';
import { API, eventually, replicaNote, type Scenario, type StoredEntry, storedEntries } from './context.js';

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
    await rawProduce(
      ctx.main.bootstrap,
      topic,
      [0, 1].flatMap((partition) =>
        Array.from({ length: 10 }, (_, i) => ({ partition, key: `k${i}`, value: `p${partition}-v${i}`, timestamp: Date.now() })),
      ),
    );
    const obs = await client.ops.group!(ctx.main.bootstrap, {
      topic,
      groupId: `${topic}-group`,
      partitions: 2,
      perPartition: 10,
      commitAt: 5,
      timeoutMs: 30000,
    });
    const problems: string[] = [];
    if (obs.firstAssignment.join() !== '0,1') problems.push(`lone member was assigned [${obs.firstAssignment.join()}], expected [0,1]`);
    const [a = [], b = []] = obs.rebalanced;
    if (a.length === 0 || b.length === 0 || [...a, ...b].sort().join() !== '0,1')
      problems.push(`after the second member joined: [${a.join()}] and [${b.join()}], expected a split of [0,1]`);
    // A partition read to its end before the commit has nothing to resume; the others must resume exactly there.
    for (const p of [0, 1]) {
      const at = obs.committed[p];
      if (at === undefined) problems.push(`nothing committed for partition ${p}`);
      else if (at < 10 && obs.resumed[p] !== at) problems.push(`partition ${p} resumed at ${obs.resumed[p]}, committed ${at}`);
      else if (at >= 10 && obs.resumed[p] !== undefined)
        problems.push(`partition ${p} was read to its end and committed there, yet resumed at ${obs.resumed[p]}`);
    }
    if (Object.values(obs.committed).every((o) => o === 0)) problems.push('every committed offset is 0');
    if (problems.length > 0) throw new Error(problems.join('; '));
    return `alone [0,1]; split [${a.join()}] / [${b.join()}]; committed ${JSON.stringify(obs.committed)}, resumed at ${JSON.stringify(obs.resumed)}`;
  },
};

/** Duplicate reads: the same offset, or the same value, twice in one partition. */
function duplicates(got: ReadRecord[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of got) {
    for (const k of [`${r.partition}@${r.offset}`, `${r.partition}:${r.value}`]) {
      if (seen.has(k)) out.push(`partition ${r.partition} offset ${r.offset} (${JSON.stringify(r.value)}) read twice`);
      seen.add(k);
    }
  }
  return out;
}

/** The log's entries as "txn data 0-2 pid 7", "ABORT 3 pid 7", consecutive data batches merged. */
function layout(stored: StoredEntry[]): string[] {
  const out: { kind: string; first: number; last: number; pid: number }[] = [];
  for (const e of stored) {
    const kind = e.control ?? (e.transactional === true ? 'txn data' : 'data');
    const prev = out[out.length - 1];
    if (e.control === undefined && prev !== undefined && prev.kind === kind && prev.pid === e.producerId && prev.last + 1 === e.offset)
      prev.last = e.offset + e.count - 1;
    else out.push({ kind, first: e.offset, last: e.offset + e.count - 1, pid: e.producerId ?? -1 });
  }
  return out.map((x) => `${x.kind} ${x.first === x.last ? x.first : `${x.first}-${x.last}`} pid ${x.pid}`);
}

const idempotence: Scenario = {
  id: 'idempotent-producer',
  title: 'idempotent producer',
  description:
    '12 records on 2 partitions with enable.idempotence (InitProducerId, sequence numbers), acks=all; read back exactly once, in order (no duplicates, offsets 0..5 per partition); the stored batches carry a producer id and gap-free sequences from 0, and each partition holds exactly 6 records',
  ops: ['produce', 'consume'],
  brokerApis: [API.InitProducerId],
  smoke: true,
  async run(ctx, client) {
    if (!client.caps.idempotence)
      throw new NotSupportedError(client.unsupported.idempotence ?? `${client.title} has no idempotent producer`);
    const topic = ctx.topic('idem');
    await rawCreateTopic(ctx.main.bootstrap, topic, 2);
    const records = makeRecords(topic, 2, 6);
    const started = Date.now();
    await client.ops.produce!(ctx.main.bootstrap, { topic, records, codec: 'none', acks: -1, idempotent: true });
    const got = await client.ops.consume!(ctx.main.bootstrap, readBackSpec(topic, records));
    const dup = duplicates(got);
    if (dup.length > 0) throw new Error(`duplicates: ${dup.slice(0, 4).join('; ')}`);
    const detail = checkReadBack(records, got, client.caps, started);
    // What the broker stored: batches of an idempotent producer (a producer id, sequences 0, n, … without gaps), nothing twice.
    const problems: string[] = [];
    const pids: number[] = [];
    let note = '';
    for (const p of [0, 1]) {
      const stored = await storedEntries(ctx.main, topic, p);
      note = replicaNote(stored);
      const ids = [...new Set(stored.map((e) => e.producerId ?? -1))];
      if (ids.some((id) => id < 0))
        problems.push(`partition ${p}: batches without a producer id (not an idempotent produce): ${layout(stored).join(', ')}`);
      else if (ids.length !== 1) problems.push(`partition ${p}: ${ids.length} producer ids ${ids.join(', ')}, expected one`);
      pids.push(...ids);
      let next = 0;
      for (const e of stored) {
        if (e.baseSequence !== next)
          problems.push(`partition ${p}: batch at offset ${e.offset} has base sequence ${e.baseSequence}, expected ${next}`);
        next = (e.baseSequence ?? next) + e.count;
      }
      const total = stored.reduce((n, e) => n + e.count, 0);
      if (total !== 6) problems.push(`partition ${p}: the log holds ${total} records, 6 were produced`);
    }
    if (problems.length > 0) throw new Error(problems.slice(0, 4).join('; '));
    return `${detail}; no duplicates; stored with producer id(s) ${[...new Set(pids)].join(', ')}, sequences 0-5 gap-free per partition${note}`;
  },
};

const transactions: Scenario = {
  id: 'transactions',
  title: 'transactions (abort + commit, read_committed)',
  description:
    "a transactional producer sends 3 records and aborts, then 3 more and commits; the client's read_committed consumer returns exactly the committed 3 at offsets 4-6 (aborted records at 0-2 and the ABORT marker at 3 skipped; COMMIT marker at 7); the log holds exactly that layout under one producer id, and read_committed Fetch/ListOffsets show LSO = high watermark = 8 with that producer's aborted transaction from offset 0",
  ops: ['transactions'],
  brokerApis: [API.FindCoordinator, API.InitProducerId, API.AddPartitionsToTxn, API.EndTxn],
  smoke: true,
  async run(ctx, client) {
    const topic = ctx.topic('txn');
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    const base = Date.now() - 60_000;
    const rec = (kind: string, i: number): TestRecord => ({
      partition: 0,
      key: i === 1 ? null : `${kind}-k${i}`,
      value: `${kind}-v${i}`,
      headers: [['phase', kind]],
      timestamp: base + (kind === 'committed' ? 10 : 0) + i,
    });
    const aborted = [0, 1, 2].map((i) => rec('aborted', i));
    const committed = [0, 1, 2].map((i) => rec('committed', i));
    const started = Date.now();
    const got = await client.ops.transactions!(ctx.main.bootstrap, { topic, transactionalId: `${topic}-txn`, aborted, committed });
    const leaked = got.filter((r) => aborted.some((a) => a.value === r.value) || r.offset === 3 || r.offset === 7);
    if (leaked.length > 0)
      throw new Error(
        `read_committed returned aborted records or markers: ${leaked.map((r) => `${r.offset}=${JSON.stringify(r.value)}`).join(', ')}`,
      );
    const dup = duplicates(got);
    if (dup.length > 0) throw new Error(`duplicates: ${dup.slice(0, 4).join('; ')}`);
    // Kafka's layout: aborted data 0-2, ABORT marker 3, committed data 4-6, COMMIT marker 7; the client must have read past 0-3.
    const detail = checkReadBack(committed, got, client.caps, started, 4);
    // The reader needed the COMMIT marker written, not replicated: on a replicated partition the high watermark may still be 7.
    await eventually('the high watermark did not reach 8 (past the COMMIT marker at 7)', async () => {
      return (await rawListOffset(ctx.main.bootstrap, topic, 0, -1)) >= 8;
    });
    const stored = await storedEntries(ctx.main, topic, 0);
    const pid = stored[0]?.producerId ?? -1;
    const want = [`txn data 0-2 pid ${pid}`, `ABORT 3 pid ${pid}`, `txn data 4-6 pid ${pid}`, `COMMIT 7 pid ${pid}`];
    const have = layout(stored);
    if (pid < 0 || have.join() !== want.join())
      throw new Error(`log layout [${have.join(', ')}], expected [${want.join(', ')}] (pid >= 0)`);
    const view = await rawReadCommittedView(ctx.main.bootstrap, topic, 0);
    const seen = { hw: view.highWatermark, lso: view.lastStableOffset, listOffsets: view.latestCommitted, aborted: view.aborted };
    const expected = { hw: 8, lso: 8, listOffsets: 8, aborted: [{ producerId: pid, firstOffset: 0 }] };
    if (JSON.stringify(seen) !== JSON.stringify(expected))
      throw new Error(`read_committed view ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}`);
    return `aborted 0-2 and the ABORT marker at 3 skipped, committed read at offsets 4-6 (${detail.replace(/^3 records on 1 partition\(s\): /, '')}); log [${have.join(', ')}]${replicaNote(stored)}; LSO = HW = 8, aborted list [pid ${pid} from 0]`;
  },
};

export const consumerGroupScenario: Scenario = groups;
export const eosScenarios: Scenario[] = [idempotence, transactions];
