/**
 * ListOffsets (API 2) at the handler, through a real in-process broker and raw requests, against what
 * Kafka answers (Partition.fetchOffsetForTimestamp / UnifiedLog.fetchOffsetByTimestamp):
 * - EARLIEST (-2): the log start offset, timestamp -1; LATEST (-1): the high watermark, timestamp -1;
 * - MAX_TIMESTAMP (-3, v7+): the record with the largest timestamp (not the last one) and that timestamp;
 * - a timestamp: the first offset whose record timestamp is at or after it, with that record's
 *   timestamp; past the last record: offset -1, timestamp -1 (and no error);
 * - leader epoch (v4+) of the answer: 0 (a single node's leader epoch), -1 when nothing was found.
 * Batches are written with out-of-order timestamps so "first at or after" and "largest" differ from
 * "last".
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import { ApiKey } from '../../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import type { ListOffsetsResponse } from '../../../protocol/generated/list-offsets.js';
import { buildRecordBatch } from '../../../protocol/records/index.js';
import { startTestBroker, tempDir, type TestBroker } from '../../helpers/broker.js';
import { RawClient, rawCreateTopics, rawProduce } from '../../helpers/raw-client.js';
import { Cleanup } from '../../helpers/cleanup.js';

const TOPIC = 'list-offsets-ts';
const EARLIEST = -2n;
const LATEST = -1n;
const MAX_TIMESTAMP = -3n;
/** an hour ago: well inside any timestamp window */
const T = BigInt(Date.now() - 3_600_000);

/** [offset, timestamp] of each record of partition 0, in offset order (three batches). */
const P0: [number, bigint][] = [
  [0, T + 1000n],
  [1, T + 1001n],
  [2, T + 1002n],
  [3, T + 2000n],
  [4, T + 2005n],
  [5, T + 2001n],
  [6, T + 1100n],
];

function batch(timestamps: bigint[]): Buffer {
  return buildRecordBatch(timestamps.map((timestamp, i) => ({ key: null, value: Buffer.from(`r${i}`), timestamp })));
}

type Found = { errorCode: number; offset: bigint; timestamp: bigint; leaderEpoch?: number | undefined };

describe('ListOffsets (API 2) by timestamp at the handler', function () {
  this.timeout(30_000);
  let dataDir: string;
  let b: TestBroker;
  let c: RawClient;

  async function list(version: number, partition: number, timestamp: bigint, topic = TOPIC): Promise<Found> {
    const res = await c.request<ListOffsetsResponse>(ApiKey.ListOffsets, version, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp, maxNumOffsets: 1 }] }],
      timeoutMs: 1000,
    });
    const p = res.topics[0]?.partitions[0];
    if (p === undefined) throw new Error('empty ListOffsets response');
    expect(p.partitionIndex).to.equal(partition);
    const out: Found = { errorCode: p.errorCode, offset: p.offset ?? -2n, timestamp: p.timestamp ?? -2n };
    if (version >= 4) out.leaderEpoch = p.leaderEpoch;
    return out;
  }

  const hit = (version: number, offset: bigint, timestamp: bigint): Found => ({
    errorCode: ErrorCode.NONE,
    offset,
    timestamp,
    ...(version >= 4 ? { leaderEpoch: 0 } : {}),
  });
  const none = (version: number): Found => ({
    errorCode: ErrorCode.NONE,
    offset: -1n,
    timestamp: -1n,
    ...(version >= 4 ? { leaderEpoch: -1 } : {}),
  });

  const cleanup = new Cleanup();

  before(async () => {
    dataDir = cleanup.add(tempDir('gregor-list-offsets-'), (d) => rmSync(d, { recursive: true, force: true }));
    b = cleanup.add(await startTestBroker({ 'auto.create.topics.enable': false }, { dataDir }), (t) => t.stop());
    c = cleanup.add(await RawClient.connect(b.bootstrap), (r) => r.destroy());
    await rawCreateTopics(c, [{ name: TOPIC, partitions: 3 }]);
    for (const part of [P0.slice(0, 3), P0.slice(3, 6), P0.slice(6)]) {
      const [r] = await rawProduce(c, TOPIC, [[0, batch(part.map(([, ts]) => ts))]]);
      expect(r?.errorCode).to.equal(0);
      expect(r?.baseOffset).to.equal(BigInt(part[0]![0]));
    }
    expect((await rawProduce(c, TOPIC, [[2, batch([T + 1000n, T + 1001n, T + 1002n, T + 1003n])]]))[0]?.errorCode).to.equal(0);
  });

  after(() => cleanup.run());

  for (const v of [1, 4, 7, 9]) {
    it(`v${v}: earliest (-2) is the log start offset and latest (-1) the high watermark, both without a timestamp`, async () => {
      expect(await list(v, 0, EARLIEST)).to.deep.equal(hit(v, 0n, -1n));
      expect(await list(v, 0, LATEST)).to.deep.equal(hit(v, 7n, -1n));
    });

    it(`v${v}: a timestamp finds the first offset at or after it, with that record's timestamp`, async () => {
      // before every record → the first one
      expect(await list(v, 0, T)).to.deep.equal(hit(v, 0n, T + 1000n));
      // exactly a record's timestamp, inside a batch
      expect(await list(v, 0, T + 1001n)).to.deep.equal(hit(v, 1n, T + 1001n));
      // between the first two batches → the first record of the second
      expect(await list(v, 0, T + 1500n)).to.deep.equal(hit(v, 3n, T + 2000n));
      // the later record at offset 6 (T+1100) is not the first at or after T+1050: offset 3 is
      expect(await list(v, 0, T + 1050n)).to.deep.equal(hit(v, 3n, T + 2000n));
      // inside the second batch, whose timestamps are out of order: the first at or after wins
      expect(await list(v, 0, T + 2001n)).to.deep.equal(hit(v, 4n, T + 2005n));
      expect(await list(v, 0, T + 2005n)).to.deep.equal(hit(v, 4n, T + 2005n));
    });

    it(`v${v}: a timestamp after the last record → offset -1, timestamp -1, no error`, async () => {
      expect(await list(v, 0, T + 2006n)).to.deep.equal(none(v));
      expect(await list(v, 0, BigInt(Date.now()) + 86_400_000n)).to.deep.equal(none(v));
    });
  }

  for (const v of [7, 9]) {
    it(`v${v}: max-timestamp (-3) is the record with the largest timestamp, not the last one`, async () => {
      expect(await list(v, 0, MAX_TIMESTAMP)).to.deep.equal(hit(v, 4n, T + 2005n));
    });
  }

  it('an empty partition: earliest = latest = 0; max-timestamp and any timestamp find nothing', async () => {
    expect(await list(9, 1, EARLIEST)).to.deep.equal(hit(9, 0n, -1n));
    expect(await list(9, 1, LATEST)).to.deep.equal(hit(9, 0n, -1n));
    expect(await list(9, 1, MAX_TIMESTAMP)).to.deep.equal(none(9));
    expect(await list(9, 1, T)).to.deep.equal(none(9));
  });

  it('after DeleteRecords: earliest is the new log start, and a timestamp before it finds the log start', async () => {
    const del = await c.request<{ topics: { partitions: { partitionIndex: number; lowWatermark: bigint; errorCode: number }[] }[] }>(
      ApiKey.DeleteRecords,
      2,
      {
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 2, offset: 2n }] }],
        timeoutMs: 5000,
      },
    );
    expect(del.topics[0]?.partitions[0]).to.include({ errorCode: 0, lowWatermark: 2n });
    expect(await list(9, 2, EARLIEST)).to.deep.equal(hit(9, 2n, -1n));
    expect(await list(9, 2, LATEST)).to.deep.equal(hit(9, 4n, -1n));
    // records below the log start are not offered, even if still on disk
    expect(await list(9, 2, T)).to.deep.equal(hit(9, 2n, T + 1002n));
    expect(await list(9, 2, T + 1003n)).to.deep.equal(hit(9, 3n, T + 1003n));
  });

  it('an unknown partition or topic → UNKNOWN_TOPIC_OR_PARTITION', async () => {
    expect((await list(9, 3, LATEST)).errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect((await list(9, 0, T, 'list-offsets-no-such-topic')).errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect((await list(1, 0, EARLIEST, 'list-offsets-no-such-topic')).errorCode).to.equal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  });
});
