/**
 * The leader state a follower's fetch session keeps per partition (lib/handlers/fetch-replica.ts,
 * LeaderSlot): looked up by the first Fetch, reused by the next ones while the topic manager's and the
 * replication layer's generations stay, and looked up again once either moves. What moves with the
 * data (high watermark, log end, log start) is read on every Fetch, so a follower whose session kept
 * the state still sees a high watermark move, a truncation and a log start move; a leader epoch bump
 * or a lost leadership (which move a generation) are answered at once. The session cache is the real
 * one; stand-ins for the logs, the topic manager and the replication layer count their lookups.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { RecordsValue } from '../../../protocol/codec/writer.js';
import type { FetchRequest, FetchResponsePartitionData } from '../../../protocol/generated/fetch.js';
import { replicaFetch } from '../../../lib/handlers/fetch-replica.js';
import type { RequestContext } from '../../../lib/handlers/types.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { type ChangeMark, ChangeMarks } from '../../../lib/log/change-marks.js';
import { FetchSessionCache } from '../../../lib/replica/fetch-sessions.js';
import { type FollowerProgress, foldIdleClock, lastCaughtUpMs } from '../../../lib/replica/led-partition.js';
import { Purgatory } from '../../../lib/replica/purgatory.js';
import type { Replication } from '../../../lib/replica/replication.js';

const TOPIC = 'replicated';
const REPLICA = 2;

/** A log's fields the handler reads, and its change marks as PartitionLog keeps them. */
class MutableLog {
  servable = true;
  logEndOffset = 10n;
  logStartOffset = 0n;
  highWatermark = 10n;
  lastStableOffset = 10n;
  private readonly marks = new ChangeMarks(this);
  /** what whoever moves the log end, the high watermark or the log start announces */
  noteChange(): void {
    this.marks.changed();
  }
  markUntilChange(m: ChangeMark): void {
    this.marks.mark(m);
  }
}

function setup(partitions: number) {
  const logs: MutableLog[] = [];
  for (let i = 0; i < partitions; i++) logs.push(new MutableLog());
  const lookups = { leaderEpoch: 0, follower: 0, topic: 0 };
  const topics = {
    generation: 0,
    epoch: 3,
    led: true,
    logsOf: (t: string) => (t === TOPIC && topics.led ? (logs as unknown as PartitionLog[]) : undefined),
    leaderEpoch: () => {
      lookups.leaderEpoch++;
      return topics.epoch;
    },
    notHereError: () => ErrorCode.NOT_LEADER_OR_FOLLOWER,
  };
  const fetched: bigint[] = [];
  const isr = [1, REPLICA];
  const clock = { now: 1000 };
  /** the follower's progress per partition, as the replication layer keeps it */
  const progress = logs.map((): FollowerProgress => ({
    logEndOffset: -1n,
    logStartOffset: -1n,
    lastCaughtUpMs: 0,
    lastFetchMs: 0,
    leaderEndAtLastFetch: -1n,
    idleClock: null,
    idleOf: null,
  }));
  let lookedUp = 0;
  const replication = {
    generation: 0,
    now: () => clock.now,
    follower: () => {
      lookups.follower++;
      return topics.led ? { led: { state: { isr } }, progress: progress[lookedUp++ % logs.length] } : undefined;
    },
    fetchedBy: ({ progress: f }: { progress: FollowerProgress }, _r: number, offset: bigint, now: number) => {
      foldIdleClock(f);
      f.lastCaughtUpMs = now;
      fetched.push(offset);
    },
  };
  const purgatory = new Purgatory();
  const ctx = {
    apiVersion: 12,
    conn: { closed: new Promise<void>(() => undefined) },
    services: {
      purgatory,
      metadata: {
        topic: (name: string) => {
          lookups.topic++;
          return name === TOPIC ? { name, topicId: 'a'.repeat(32) } : undefined;
        },
      },
      topics,
    },
  } as unknown as RequestContext;
  const cache = new FetchSessionCache(10);
  let sessionId = 0;
  let epoch = 0;
  const forgotten: number[] = [];
  /** the next Fetch forgets partition `i` */
  const forget = (i: number) => forgotten.push(i);
  /** One Fetch of the session (the first opens it): the answers the response sends, by partition. */
  const fetch = async (fetchOffsets: Map<number, bigint> = new Map(), replicaId = REPLICA, leaderEpoch = 3) => {
    const request: FetchRequest = {
      replicaId,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      sessionId,
      sessionEpoch: epoch,
      topics:
        epoch === 0
          ? [{ topic: TOPIC, partitions: logs.map((_, i) => part(i, fetchOffsets.get(i) ?? 10n, leaderEpoch)) }]
          : fetchOffsets.size === 0
            ? []
            : [{ topic: TOPIC, partitions: [...fetchOffsets].map(([i, o]) => part(i, o, leaderEpoch)) }],
      forgottenTopicsData: forgotten.splice(0).map((i) => ({ topic: TOPIC, partitions: [i] })),
    };
    const session = cache.newContext(request, 12, true);
    expect(session.kind).to.equal(epoch === 0 ? 'full' : 'incremental');
    sessionId = session.sessionId;
    epoch = epoch === 0 ? 1 : epoch + 1;
    const req = { ...request, topics: session.topics };
    const responses = session.respond(await replicaFetch(req, ctx, replicaId, replication as unknown as Replication, session));
    const sent = new Map<number, FetchResponsePartitionData<RecordsValue>>();
    for (const t of responses) for (const p of t.partitions) sent.set(p.partitionIndex, p);
    return sent;
  };
  return { logs, topics, replication, lookups, fetched, isr, clock, progress, fetch, forget };
}

function part(partition: number, fetchOffset: bigint, currentLeaderEpoch: number) {
  return { partition, currentLeaderEpoch, fetchOffset, logStartOffset: 0n, partitionMaxBytes: 1 << 20 };
}

describe('Fetch from a follower (leader side): the leader state a fetch session keeps', () => {
  it('an idle incremental Fetch looks nothing up again and sends nothing; the follower is still told of each fetch', async () => {
    const s = setup(3);
    expect((await s.fetch()).size).to.equal(3);
    expect(s.lookups).to.deep.equal({ leaderEpoch: 6, follower: 3, topic: 2 }); // both passes check the epoch; the first keeps it
    const before = { ...s.lookups, topic: 0 };
    s.fetched.length = 0;
    expect((await s.fetch()).size).to.equal(0);
    expect({ ...s.lookups, topic: 0 }, 'looked up again with no change').to.deep.equal(before);
    expect(s.fetched).to.deep.equal([10n, 10n, 10n]);
  });

  it('a high watermark move, a truncation and a log start move after the state was kept are answered', async () => {
    const s = setup(3);
    await s.fetch();
    await s.fetch();
    s.logs[0]!.highWatermark = 11n;
    s.logs[1]!.logEndOffset = 8n; // the leader's log ends before the follower's fetch offset now
    s.logs[2]!.logStartOffset = 5n;
    for (const log of s.logs) log.noteChange();
    const sent = await s.fetch();
    expect(sent.get(0)?.errorCode).to.equal(ErrorCode.NONE);
    expect(sent.get(0)?.highWatermark).to.equal(11n);
    expect(sent.get(1)?.errorCode).to.equal(ErrorCode.OFFSET_OUT_OF_RANGE);
    expect(sent.get(2)?.logStartOffset).to.equal(5n);
    expect(s.lookups.follower, 'the kept state was used').to.equal(3);
  });

  it('a leader epoch bump (a metadata change) is answered with FENCED_LEADER_EPOCH to a follower of the old epoch', async () => {
    const s = setup(2);
    await s.fetch();
    await s.fetch();
    s.topics.epoch = 4;
    s.topics.generation++;
    const sent = await s.fetch();
    expect(sent.get(0)?.errorCode).to.equal(ErrorCode.FENCED_LEADER_EPOCH);
    expect(sent.get(1)?.errorCode).to.equal(ErrorCode.FENCED_LEADER_EPOCH);
    // the follower comes back at the new epoch: served, looked up and kept again
    const again = await s.fetch(
      new Map([
        [0, 10n],
        [1, 10n],
      ]),
      REPLICA,
      4,
    );
    expect(again.get(0)?.errorCode).to.equal(ErrorCode.NONE);
    expect(again.get(1)?.errorCode).to.equal(ErrorCode.NONE);
    const kept = { ...s.lookups, topic: 0 };
    expect((await s.fetch()).size).to.equal(0);
    expect({ ...s.lookups, topic: 0 }).to.deep.equal(kept);
  });

  it('a lost leadership (the replication layer moved on) is answered with NOT_LEADER_OR_FOLLOWER', async () => {
    const s = setup(2);
    await s.fetch();
    await s.fetch();
    s.topics.led = false;
    s.replication.generation++;
    const sent = await s.fetch();
    expect(sent.get(0)?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(sent.get(1)?.errorCode).to.equal(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    expect(s.fetched.length, 'no fetch state handed over once not led').to.equal(4);
  });

  it('the state one replica kept is not used for another replica using the session', async () => {
    const s = setup(1);
    await s.fetch();
    const followers = s.lookups.follower;
    await s.fetch(new Map(), 3);
    expect(s.lookups.follower).to.equal(followers + 1);
  });

  it('a partition found idle is skipped until its log announces a change or the request names it', async () => {
    const s = setup(3);
    await s.fetch(); // opens the session (a full Fetch: nothing is idle)
    await s.fetch(); // finds all three idle
    s.fetched.length = 0;
    s.clock.now = 2000;
    expect((await s.fetch()).size).to.equal(0);
    expect(s.fetched, 'no partition checked again').to.deep.equal([]);
    expect(s.progress.map(lastCaughtUpMs), 'each caught up as of the session clock').to.deep.equal([2000, 2000, 2000]);
    // a high watermark move on partition 0 (announced), and the follower's fetch of partition 1 named anew
    s.logs[0]!.highWatermark = 11n;
    s.logs[0]!.noteChange();
    const sent = await s.fetch(new Map([[1, 10n]]));
    expect(s.fetched).to.deep.equal([10n, 10n]);
    expect([...sent.keys()], 'partition 0 has news to send').to.deep.equal([0]);
    expect(sent.get(0)?.highWatermark).to.equal(11n);
    // a move the log did not announce is not looked for: an unannounced high watermark stays unsent
    s.logs[2]!.highWatermark = 9n;
    expect((await s.fetch()).has(2)).to.equal(false);
    // a log start move is announced too
    s.logs[2]!.logStartOffset = 4n;
    s.logs[2]!.noteChange();
    expect((await s.fetch()).get(2)?.logStartOffset).to.equal(4n);
  });

  it('a forgotten partition stops being caught up with the session clock', async () => {
    const s = setup(2);
    await s.fetch();
    await s.fetch();
    s.clock.now = 2000;
    await s.fetch();
    s.forget(1);
    s.clock.now = 3000;
    await s.fetch();
    expect(s.progress.map(lastCaughtUpMs)).to.deep.equal([3000, 1000]);
  });

  it('a follower outside the ISR is never idle: each Fetch checks whether it may join', async () => {
    const s = setup(2);
    s.isr.splice(s.isr.indexOf(REPLICA), 1);
    await s.fetch();
    await s.fetch();
    s.fetched.length = 0;
    await s.fetch();
    expect(s.fetched).to.deep.equal([10n, 10n]);
  });

  it('a session found all idle is answered without a pass over its partitions until one is named, changes or is forgotten', async () => {
    const s = setup(3);
    await s.fetch(); // full
    await s.fetch(); // finds all idle, and remembers it
    const topicLookups = s.lookups.topic;
    expect((await s.fetch()).size).to.equal(0);
    expect((await s.fetch()).size).to.equal(0);
    expect(s.lookups.topic, 'no pass looked the topic up').to.equal(topicLookups);
    // an announced change: answered, then all idle again
    s.logs[1]!.highWatermark = 11n;
    s.logs[1]!.noteChange();
    expect((await s.fetch()).get(1)?.highWatermark).to.equal(11n);
    expect(s.lookups.topic).to.be.greaterThan(topicLookups);
    await s.fetch(); // finds it idle again
    const again = s.lookups.topic;
    expect((await s.fetch()).size).to.equal(0);
    expect(s.lookups.topic).to.equal(again);
    // a partition named anew: looked at (its fetch handed to the replication layer)
    s.fetched.length = 0;
    await s.fetch(new Map([[2, 10n]]));
    expect(s.fetched).to.deep.equal([10n]);
    // a metadata change (a generation): every partition looked at again
    await s.fetch();
    await s.fetch();
    s.replication.generation++;
    s.fetched.length = 0;
    await s.fetch();
    expect(s.fetched).to.deep.equal([10n, 10n, 10n]);
  });
});
