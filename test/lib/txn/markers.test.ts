/**
 * A transaction marker's wake-up (lib/txn/markers.ts): the fetches waiting on the partition are told
 * the marker's own bytes as appended, and, for read_committed fetches, exactly the bytes the last
 * stable offset moved past (the log's bytesBetween over the entries between the old and the new last
 * stable offset), not a made-up "any amount". A real log on disk with small segments and a small index
 * interval (the positions are found across segments and between index entries).
 */
import { expect } from 'chai';
import pino from 'pino';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { TxnMarkerWriter } from '../../../lib/txn/markers.js';
import { openLog, rmDir, tmpDir, v2 } from '../log/helpers.js';

const P = 7001n;
const Q = 7002n;

describe('transaction markers: the bytes they make readable', () => {
  let dir: string;
  let log: PartitionLog;
  let notified: { bytes: number; stable: number | undefined }[];
  let writer: TxnMarkerWriter;
  const seq = new Map<bigint, number>();

  /** Appends a batch (transactional for a producer id) and returns its size in bytes. */
  async function append(n: number, producerId?: bigint): Promise<number> {
    const s = producerId === undefined ? 0 : (seq.get(producerId) ?? 0);
    const buf =
      producerId === undefined
        ? v2(n, { size: 60 })
        : v2(n, { size: 60, producerId, producerEpoch: 0, baseSequence: s, isTransactional: true });
    if (producerId !== undefined) seq.set(producerId, s + n);
    const r = await log.appendAsync(buf, { leaderEpoch: 0 });
    await r.written;
    return buf.length;
  }

  beforeEach(async () => {
    dir = tmpDir('markers');
    log = await openLog(dir, { segmentBytes: 1000, indexIntervalBytes: 200 });
    notified = [];
    seq.clear();
    writer = new TxnMarkerWriter({
      partitionLog: () => log,
      notifyAppend: (_t, _p, bytes, stable) => notified.push({ bytes, stable }),
      offsetsTopic: '__consumer_offsets',
      onOffsetsMarker: () => undefined,
      logger: pino({ level: 'silent' }),
    });
  });

  afterEach(async () => {
    await log.close();
    rmDir(dir);
  });

  it('a commit tells the bytes of the transaction and of everything appended after its first batch, and its own size', async () => {
    await append(3);
    const start = log.logEndOffset;
    let moved = await append(4, P);
    moved += await append(5); // not transactional, but above the open transaction: not stable yet
    moved += await append(6, P);
    expect(log.lastStableOffset).to.equal(start);
    const before = log.size;
    expect(await writer.append('topic', 0, P, 0, true, 0)).to.equal(0);
    const marker = log.size - before;
    expect(marker).to.be.above(0);
    expect(log.lastStableOffset).to.equal(log.logEndOffset);
    expect(notified).to.deep.equal([{ bytes: marker, stable: moved + marker }]);
    expect(moved, 'spans more than one segment').to.be.above(1000);
  });

  it("an earlier open transaction holds the last stable offset: a later one's commit makes nothing readable to read_committed", async () => {
    await append(2);
    const qStart = log.logEndOffset;
    let moved = await append(3, Q);
    moved += await append(3, P);
    moved += await append(2, Q);
    let before = log.size;
    expect(await writer.append('topic', 0, P, 0, false, 0)).to.equal(0);
    const pMarker = log.size - before;
    expect(log.lastStableOffset).to.equal(qStart);
    expect(notified).to.deep.equal([{ bytes: pMarker, stable: 0 }]);
    before = log.size;
    expect(await writer.append('topic', 0, Q, 0, true, 0)).to.equal(0);
    const qMarker = log.size - before;
    expect(notified[1]).to.deep.equal({ bytes: qMarker, stable: moved + pMarker + qMarker });
  });

  it('bytesBetween counts from the start of the entry holding one offset to the start of the one holding the other', async () => {
    await append(2);
    const first = log.logEndOffset;
    const a = await append(10);
    const b = await append(10);
    expect(log.bytesBetween(first, first + 20n)).to.equal(a + b);
    expect(log.bytesBetween(first + 5n, first + 10n)).to.equal(a);
    expect(log.bytesBetween(first + 5n, first + 11n)).to.equal(a);
    expect(log.bytesBetween(first - 1n, first + 10n)).to.be.above(a);
    expect(log.bytesBetween(first + 10n, first + 10n)).to.equal(0);
  });
});
