/**
 * OffsetForLeaderEpoch (API 23) against a real in-process broker over a raw connection, compared with
 * what Kafka's leader answers (Partition.lastOffsetForLeaderEpoch + LeaderEpochFileCache.endOffsetFor):
 * - the current epoch: its end offset is the log end offset;
 * - current_leader_epoch newer than the leader's: UNKNOWN_LEADER_EPOCH; older: FENCED_LEADER_EPOCH;
 *   -1: no check;
 * - a requested epoch newer than any the log knows, or -1 (undefined): NONE with epoch -1, offset -1;
 * - an unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
 * A single node never changes leader, so its leader epoch is 0 for good (Metadata says so too); the
 * stored batches carry it, and the answer survives a restart.
 */
import { expect } from 'chai';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { MetadataResponse } from '../../../protocol/generated/metadata.js';
import type { OffsetForLeaderEpochResponse } from '../../../protocol/generated/offset-for-leader-epoch.js';
import { buildRecordBatch, logEntries } from '../../../protocol/records/index.js';
import { startTestBroker, tempDir, type TestBroker } from '../../helpers/broker.js';
import { RawClient, rawCreateTopics, rawFetch, rawListOffset, rawProduce } from '../../helpers/raw-client.js';
import { rmSync } from 'node:fs';
import { Cleanup } from '../../helpers/cleanup.js';

const TOPIC = 'olep';
const ZERO_ID = '0'.repeat(32);

interface Ask {
  partition: number;
  leaderEpoch: number;
  currentLeaderEpoch?: number;
}
type Answer = [errorCode: number, leaderEpoch: number | undefined, endOffset: bigint];

function batch(n: number): Buffer {
  const now = BigInt(Date.now());
  return buildRecordBatch(Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`v${i}`), timestamp: now })));
}

describe('OffsetForLeaderEpoch (API 23) at the handler', function () {
  this.timeout(30_000);
  let dataDir: string;
  let b: TestBroker;
  let c: RawClient;

  async function ask(version: number, asks: Ask[], topic = TOPIC): Promise<Answer[]> {
    const res = await c.request<OffsetForLeaderEpochResponse>(ApiKey.OffsetForLeaderEpoch, version, {
      replicaId: -1,
      topics: [
        {
          topic,
          partitions: asks.map((a) => ({
            partition: a.partition,
            currentLeaderEpoch: a.currentLeaderEpoch ?? -1,
            leaderEpoch: a.leaderEpoch,
          })),
        },
      ],
    });
    expect(res.topics.map((t) => t.topic)).to.deep.equal([topic]);
    const parts = res.topics[0]!.partitions;
    expect(parts.map((p) => p.partition)).to.deep.equal(asks.map((a) => a.partition));
    return parts.map((p) => [p.errorCode, p.leaderEpoch, p.endOffset]);
  }

  const cleanup = new Cleanup();

  before(async () => {
    dataDir = cleanup.add(tempDir('gregor-olep-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir }), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(c, [{ name: TOPIC, partitions: 3 }]);
    expect((await rawProduce(c, TOPIC, [[0, batch(4)]]))[0]?.errorCode).to.equal(0);
    expect((await rawProduce(c, TOPIC, [[0, batch(2)]]))[0]?.errorCode).to.equal(0);
    expect((await rawProduce(c, TOPIC, [[1, batch(1)]]))[0]?.errorCode).to.equal(0);
  });

  after(() => cleanup.run());

  it('the current epoch (0, as Metadata and the stored batches say) ends at the log end offset, in v2, v3 and v4', async () => {
    const md = await c.request<MetadataResponse>(ApiKey.Metadata, 12, {
      topics: [{ topicId: ZERO_ID, name: TOPIC }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    expect(md.topics[0]?.partitions.map((p) => p.leaderEpoch)).to.deep.equal([0, 0, 0]);
    const fetched = await rawFetch(c, TOPIC, 0, 0n);
    const epochs = [...logEntries(fetched.records ?? Buffer.alloc(0))].map((e) =>
      e.kind === 'batch' ? e.batch.partitionLeaderEpoch : null,
    );
    expect(epochs).to.deep.equal([0, 0]);
    expect(await rawListOffset(c, TOPIC, 0)).to.equal(6n);
    for (const v of [2, 3, 4]) {
      expect(
        await ask(v, [
          { partition: 0, leaderEpoch: 0 },
          { partition: 0, leaderEpoch: 0, currentLeaderEpoch: 0 },
          { partition: 1, leaderEpoch: 0, currentLeaderEpoch: 0 },
        ]),
        `v${v}`,
      ).to.deep.equal([
        [ErrorCode.NONE, 0, 6n],
        [ErrorCode.NONE, 0, 6n],
        [ErrorCode.NONE, 0, 1n],
      ]);
    }
  });

  it('follows the log end offset as records are appended', async () => {
    const before = await rawListOffset(c, TOPIC, 1);
    expect((await rawProduce(c, TOPIC, [[1, batch(3)]]))[0]?.errorCode).to.equal(0);
    expect(await ask(4, [{ partition: 1, leaderEpoch: 0 }])).to.deep.equal([[ErrorCode.NONE, 0, before + 3n]]);
  });

  it('current_leader_epoch newer than the leader → UNKNOWN_LEADER_EPOCH; older → FENCED_LEADER_EPOCH; -1 → not checked', async () => {
    // the leader's epoch is 0, so the only older current_leader_epoch is a negative one other than -1 (unset)
    expect(
      await ask(4, [
        { partition: 0, leaderEpoch: 0, currentLeaderEpoch: 1 },
        { partition: 0, leaderEpoch: 0, currentLeaderEpoch: 7 },
        { partition: 0, leaderEpoch: 0, currentLeaderEpoch: -2 },
        { partition: 0, leaderEpoch: 0, currentLeaderEpoch: -1 },
      ]),
    ).to.deep.equal([
      [ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1n],
      [ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1n],
      [ErrorCode.FENCED_LEADER_EPOCH, -1, -1n],
      [ErrorCode.NONE, 0, 6n],
    ]);
  });

  it('a requested epoch newer than any in the log, or undefined (-1): no error, epoch -1 and end offset -1', async () => {
    expect(
      await ask(4, [
        { partition: 0, leaderEpoch: 1 },
        { partition: 0, leaderEpoch: 1000 },
        { partition: 0, leaderEpoch: -1 },
      ]),
    ).to.deep.equal([
      [ErrorCode.NONE, -1, -1n],
      [ErrorCode.NONE, -1, -1n],
      [ErrorCode.NONE, -1, -1n],
    ]);
  });

  it('an unknown partition or topic → UNKNOWN_TOPIC_OR_PARTITION, answered next to the known ones', async () => {
    expect(
      await ask(4, [
        { partition: 3, leaderEpoch: 0 },
        { partition: 0, leaderEpoch: 0 },
        { partition: -1, leaderEpoch: 0 },
      ]),
    ).to.deep.equal([
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n],
      [ErrorCode.NONE, 0, 6n],
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n],
    ]);
    expect(await ask(3, [{ partition: 0, leaderEpoch: 0 }], 'olep-no-such-topic')).to.deep.equal([
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1n],
    ]);
  });

  it('an empty partition answers the current epoch with end offset 0, as Kafka', async () => {
    // Kafka's leader assigns its epoch at the log end offset when it becomes leader
    // (Partition.makeLeader → maybeAssignEpochStartOffset), so a never-written partition answers it too.
    expect(await ask(4, [{ partition: 2, leaderEpoch: 0 }])).to.deep.equal([[ErrorCode.NONE, 0, 0n]]);
    expect(await ask(4, [{ partition: 2, leaderEpoch: 0, currentLeaderEpoch: 0 }])).to.deep.equal([[ErrorCode.NONE, 0, 0n]]);
    // an epoch newer than the current one is still unknown there
    expect(await ask(4, [{ partition: 2, leaderEpoch: 1 }])).to.deep.equal([[ErrorCode.NONE, -1, -1n]]);
  });

  it('answers the same after a restart on the same data dir (the epoch cache is persisted)', async () => {
    const before = await ask(4, [
      { partition: 0, leaderEpoch: 0 },
      { partition: 1, leaderEpoch: 0 },
    ]);
    c.destroy();
    await b.stop();
    b = cleanup.add(await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir }), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    expect(before.map((x) => x[0])).to.deep.equal([ErrorCode.NONE, ErrorCode.NONE]);
    expect(
      await ask(4, [
        { partition: 0, leaderEpoch: 0 },
        { partition: 1, leaderEpoch: 0 },
      ]),
    ).to.deep.equal(before);
  });
});
