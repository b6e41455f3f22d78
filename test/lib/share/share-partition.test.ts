import { expect } from 'chai';
import { type PersistedRecordState, RecordState, SharePartition } from '../../../lib/share/share-partition.js';
import { snapshotValue, StateRecordType, StateReplay, stateKey, updateValue } from '../../../lib/share/state-records.js';
import { PerOffsetSharePartition } from './per-offset-model.js';

const TOPIC_ID = '0123456789abcdef0123456789abcdef';
const MEMBERS = ['m1', 'm2', 'm3'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A small seeded generator (mulberry32), so that a failure can be replayed. */
function rng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** A log of stored batches: data batches of 1..40 records, now and then a control batch or a gap (compaction). */
function makeLog(rand: (n: number) => number, records: number): [bigint, bigint, boolean][] {
  const out: [bigint, bigint, boolean][] = [];
  let o = 0n;
  while (o < BigInt(records)) {
    if (rand(12) === 0) o += BigInt(1 + rand(5)); // gap
    const control = rand(10) === 0;
    const n = control ? 1n : BigInt(1 + rand(40));
    out.push([o, o + n - 1n, control]);
    o += n;
  }
  return out;
}

/** Offset → "state/count" of persisted batches within [from, to). */
function expand(batches: readonly PersistedRecordState[], from: bigint, to: bigint): Map<bigint, string> {
  const m = new Map<bigint, string>();
  for (const b of batches)
    for (let o = b.firstOffset < from ? from : b.firstOffset; o <= b.lastOffset && o < to; o++) m.set(o, `${b.state}/${b.deliveryCount}`);
  return m;
}

/** A share partition with Kafka's default limits and no listeners. */
const plain = (): SharePartition =>
  new SharePartition(
    'g',
    TOPIC_ID,
    0,
    0n,
    { deliveryCountLimit: () => 5, maxRecordLocks: () => 2000 },
    () => {},
    () => {},
  );

describe('share partition: in-flight batches', () => {
  const limits = { deliveryCountLimit: () => 3, maxRecordLocks: () => 200 };

  for (const seed of [1, 2, 3, 4]) {
    it(`answers and keeps the state as the per-offset model does (seed ${seed})`, async function () {
      this.timeout(30_000);
      const rand = rng(seed);
      const log = makeLog(rand, 3000);
      let hw = 0n;
      let releasedNew = 0;
      let releasedOld = 0;
      const sp = new SharePartition(
        'g',
        TOPIC_ID,
        0,
        0n,
        limits,
        () => releasedNew++,
        () => undefined,
      );
      const model = new PerOffsetSharePartition(
        'g',
        TOPIC_ID,
        0,
        0n,
        limits,
        () => releasedOld++,
        () => undefined,
      );
      const held = new Map<string, [bigint, bigint][]>(MEMBERS.map((m) => [m, []]));
      const replay = new StateReplay();
      const key = (type: 0 | 1) => stateKey(type, 'g', TOPIC_ID, 0);
      const persist = () => {
        const changes = sp.takeChanges();
        if (changes === null)
          replay.apply(
            key(StateRecordType.SHARE_SNAPSHOT),
            snapshotValue({ stateEpoch: 0, startOffset: sp.startOffset, batches: sp.stateBatches() }),
          );
        else replay.apply(key(StateRecordType.SHARE_UPDATE), updateValue(0, sp.startOffset, changes));
      };
      const compare = (step: string) => {
        expect(sp.startOffset, `${step}: start`).to.equal(model.startOffset);
        expect(sp.endOffset, `${step}: end`).to.equal(model.endOffset);
        expect(sp.counts(), `${step}: counts`).to.deep.equal(model.counts());
        expect(sp.fetchOffset(), `${step}: fetch offset`).to.equal(model.fetchOffset());
        expect(sp.hasAcquirable(hw), `${step}: acquirable`).to.equal(model.hasAcquirable(hw));
        expect(releasedNew, `${step}: releases signalled`).to.equal(releasedOld);
        // the model leaves gaps out; the batches write them as ARCHIVED with no delivery
        const mine = expand(sp.stateBatches(), sp.startOffset, sp.endOffset);
        const theirs = expand(model.stateBatches(), sp.startOffset, sp.endOffset);
        for (const [o, v] of mine) expect(v, `${step}: offset ${o}`).to.equal(theirs.get(o) ?? `${RecordState.ARCHIVED}/0`);
        for (const o of theirs.keys()) expect(mine.has(o), `${step}: offset ${o} kept`).to.equal(true);
        // what persistence wrote (a snapshot, then updates) replays to the same state
        persist();
        const replayed = replay.result()[0];
        expect(replayed?.startOffset, `${step}: replayed start`).to.equal(sp.startOffset);
        const back = expand(replayed?.batches ?? [], sp.startOffset, sp.endOffset);
        for (const [o, v] of mine) expect(back.get(o), `${step}: replayed offset ${o}`).to.equal(v);
        expect(back.size, `${step}: replayed offsets`).to.equal(mine.size);
      };
      for (let step = 0; step < 600; step++) {
        const member = MEMBERS[rand(MEMBERS.length)] as string;
        const op = rand(20);
        if (hw < 3000n && rand(3) === 0) hw += BigInt(rand(150));
        if (op < 9) {
          // a log read from the fetch offset up to the high watermark
          const from = sp.fetchOffset();
          const present = log.filter(([f, l]) => l >= from && f < hw).slice(0, 1 + rand(25));
          const maxRecords = 1 + rand(120);
          const hardCap = [0, maxRecords, maxRecords + rand(100)][rand(3)] as number;
          const lockMs = rand(4) === 0 ? 15 : 60_000;
          const a = sp.acquire(member, present, maxRecords, lockMs, hardCap);
          const b = model.acquire(member, present, maxRecords, lockMs, hardCap);
          expect(a, `step ${step}: acquired`).to.deep.equal(b);
          for (const r of a) held.get(member)?.push([r.firstOffset, r.lastOffset]);
        } else if (op < 17) {
          // acknowledge part of what a member got (or, now and then, something it does not hold)
          const mine = held.get(member) ?? [];
          const pick = mine.length > 0 && rand(8) !== 0 ? mine.splice(rand(mine.length), 1)[0] : undefined;
          const first = pick?.[0] ?? BigInt(rand(Number(hw) + 1));
          let last = pick?.[1] ?? first + BigInt(rand(30));
          if (pick !== undefined && rand(3) === 0 && last > first) {
            const cut = first + BigInt(rand(Number(last - first)));
            mine.push([cut + 1n, last]);
            last = cut;
          }
          const n = Number(last - first) + 1;
          const types = rand(2) === 0 ? [rand(4)] : Array.from({ length: n }, () => (rand(40) === 0 ? 7 : rand(4)));
          expect(sp.acknowledge(member, first, last, types), `step ${step}: ack ${first}-${last} ${types.join(',')}`).to.equal(
            model.acknowledge(member, first, last, types),
          );
        } else if (op < 19) {
          expect(sp.releaseMember(member), `step ${step}: release`).to.equal(model.releaseMember(member));
          held.set(member, []);
        } else if (rand(4) === 0) {
          const to = sp.endOffset - BigInt(rand(50));
          sp.resetTo(to < 0n ? 0n : to);
          model.resetTo(to < 0n ? 0n : to);
          for (const m of MEMBERS) held.set(m, []);
        } else {
          await sleep(30); // short locks expire in both
        }
        compare(`step ${step} op ${op}`);
      }
      sp.close();
      model.close();
    });
  }

  it('keeps an acquisition as one batch until an acknowledgement splits it, with one lock per acquisition', () => {
    const sp = plain();
    const got = sp.acquire('m1', [[0n, 499n, false]], 500, 60_000);
    expect(got).to.deep.equal([{ firstOffset: 0n, lastOffset: 499n, deliveryCount: 1 }]);
    expect(sp.batchCount).to.equal(1);
    expect(sp.acknowledge('m1', 100n, 199n, [2])).to.equal(true); // release a slice
    expect(sp.batchCount).to.equal(3);
    expect(sp.counts()).to.deep.equal({ available: 100, acquired: 400, acknowledged: 0, archived: 0 });
    expect(sp.acknowledge('m1', 0n, 99n, [1])).to.equal(true);
    expect(sp.startOffset).to.equal(100n);
    expect(sp.acquire('m2', [[0n, 499n, false]], 500, 60_000)).to.deep.equal([{ firstOffset: 100n, lastOffset: 199n, deliveryCount: 2 }]);
    expect(sp.acknowledge('m1', 100n, 100n, [1])).to.equal(false); // m2 holds it now
    sp.close();
  });

  it('writes only the changed ranges in an update', () => {
    const sp = plain();
    sp.acquire('m1', [[0n, 999n, false]], 1000, 60_000);
    expect(sp.takeChanges()).to.equal(null); // the first write is a snapshot
    expect(sp.acknowledge('m1', 500n, 599n, [1])).to.equal(true);
    expect(sp.takeChanges()).to.deep.equal([{ firstOffset: 500n, lastOffset: 599n, deliveryCount: 1, state: RecordState.ACKNOWLEDGED }]);
    expect(sp.takeChanges()).to.deep.equal([]);
    sp.close();
  });
});
