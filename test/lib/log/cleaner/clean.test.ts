import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { buildRecordBatch, CompressionCodec, RecordBatch } from '../../../../protocol/records/index.js';
import { BYTES_PER_ENTRY, OffsetMap, mapBytesFor } from '../../../../lib/log/cleaner/offset-map.js';
import type { PartitionLog } from '../../../../lib/log/partition-log.js';
import { T0, legacy, openLog, readAll, rmDir, segmentFiles, tmpDir } from '../helpers.js';
import { allRecords, batch, expectCompacted, inlineCleaner, latest, settled } from './helpers.js';

const COMPACT = { cleanupPolicy: ['compact'], segmentBytes: 1500 };

/** A batch too large for the active segment: everything before it is in inactive segments. */
async function rollNow(l: PartitionLog): Promise<void> {
  l.append(buildRecordBatch([{ key: Buffer.from('filler'), value: Buffer.alloc(1300), timestamp: T0 }]), { leaderEpoch: 0 });
  await settled(l);
}

const KEYS = Array.from({ length: 10 }, (_, i) => `k${i}`);

describe('lib/log/cleaner: cleaning one log', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('clean');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  async function writeRounds(l: PartitionLog, rounds: number, opts: Parameters<typeof buildRecordBatch>[1] = {}): Promise<void> {
    for (let r = 0; r < rounds; r++) l.append(batch(KEYS, r, opts), { leaderEpoch: 0 });
    await settled(l);
  }

  it('keeps one record per key, the latest, at its original offset and timestamp; small segments merge', async () => {
    log = await openLog(dir, COMPACT);
    await writeRounds(log, 60);
    const before = await allRecords(log);
    const want = latest(before);
    const segsBefore = log.segmentBaseOffsets.length;
    expect(segsBefore).to.be.greaterThan(5);
    const { cleaner } = inlineCleaner(dir, [log]);
    expect(await cleaner.runOnce()).to.equal(1);
    const after = await allRecords(log);
    // the active segment is never cleaned: only its keys may repeat
    const activeBase = log.segmentBaseOffsets[log.segmentBaseOffsets.length - 1] as bigint;
    expectCompacted(after.filter((r) => r.offset < activeBase));
    expect(latest(after)).to.deep.equal(want);
    for (const r of after) {
      const orig = before.find((b) => b.offset === r.offset);
      expect(orig, `offset ${r.offset}`).to.not.equal(undefined);
      expect(r.timestamp).to.equal(orig?.timestamp);
      expect(String(r.value)).to.equal(String(orig?.value));
    }
    expect(log.segmentBaseOffsets[0]).to.equal(0n);
    expect(cleaner.firstDirtyOffset('topic', 0)).to.equal(activeBase);
    await cleaner.checkpointWritten();
    expect(fs.readFileSync(path.join(dir, 'cleaner-offset-checkpoint'), 'utf8')).to.equal(`0\n1\ntopic 0 ${activeBase}\n`);
    // nothing dirty is left below the active segment: a second round cleans nothing
    expect(await cleaner.runOnce()).to.equal(0);
    expect(segmentFiles(dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).to.deep.equal([]);
    // the cleaned segments are small now: the next cleaning merges them (grouped by segment.bytes)
    await writeRounds(log, 60);
    const want2 = latest(await allRecords(log));
    const segs2 = log.segmentBaseOffsets.length;
    expect(await cleaner.runOnce()).to.equal(1);
    expect(log.segmentBaseOffsets.length).to.be.lessThan(segs2 - 3);
    expect(latest(await allRecords(log))).to.deep.equal(want2);
    // the log reopens from the cleaned files with the same content
    await log.close();
    log = await openLog(dir, COMPACT, true);
    expect(latest(await allRecords(log))).to.deep.equal(want2);
  });

  for (const [name, codec] of Object.entries(CompressionCodec)) {
    it(`rewrites ${name} batches with their codec and attributes`, async () => {
      log = await openLog(dir, COMPACT);
      // half the keys per round: each batch loses some records and is rebuilt
      for (let r = 0, seq = 0; r < 40; r++) {
        const keys = r % 2 === 0 ? KEYS : KEYS.slice(0, 5);
        log.append(batch(keys, r, { compression: codec, producerId: 42n, producerEpoch: 3, baseSequence: seq }), { leaderEpoch: 0 });
        seq += keys.length;
      }
      await settled(log);
      const want = latest(await allRecords(log));
      const { cleaner } = inlineCleaner(dir, [log]);
      expect(await cleaner.runOnce()).to.equal(1);
      expect(latest(await allRecords(log))).to.deep.equal(want);
      for (const e of await readAll(log)) {
        const b = RecordBatch.at(e);
        expect(b.isValid(), 'CRC').to.equal(true);
        expect(b.compression).to.equal(b.recordCount === 0 ? 0 : codec);
        expect(b.producerId).to.equal(42n);
        expect(b.producerEpoch).to.equal(3);
      }
    });
  }

  it('keeps a tombstone until delete.retention.ms after the cleaning that reached it, then drops it', async () => {
    log = await openLog(dir, { ...COMPACT, deleteRetentionMs: 60_000 });
    await writeRounds(log, 30);
    const tombstone = (k: string): Buffer => buildRecordBatch([{ key: Buffer.from(k), value: null, timestamp: T0 + 9999n }]);
    log.append(tombstone('k3'), { leaderEpoch: 0 });
    await writeRounds(log, 30);
    // k4's last word is a tombstone
    log.append(tombstone('k4'), { leaderEpoch: 0 });
    await rollNow(log);
    const now = Date.now();
    const { cleaner } = inlineCleaner(dir, [log]);
    expect(await cleaner.runOnce(now)).to.equal(1);
    const recs = await allRecords(log);
    // a tombstone superseded by later values goes with the values before it
    expect(recs.filter((r) => String(r.key) === 'k3').map((r) => String(r.value))).to.deep.equal(['k3=29']);
    expect(recs.filter((r) => String(r.key) === 'k4').map((r) => r.value)).to.deep.equal([null]);
    // within delete.retention.ms nothing is due; after it, the tombstone goes
    expect(await cleaner.runOnce(now + 30_000)).to.equal(0);
    expect(await cleaner.runOnce(now + 61_000)).to.equal(1);
    expect((await allRecords(log)).filter((r) => String(r.key) === 'k4')).to.deep.equal([]);
    expect((await allRecords(log)).filter((r) => String(r.key) === 'k5').map((r) => String(r.value))).to.deep.equal(['k5=29']);
  });

  it('drops keyless records, and cleans magic 1 message sets', async () => {
    log = await openLog(dir, { ...COMPACT, messageFormatVersion: '0.10.2' });
    for (let r = 0; r < 40; r++) log.append(legacy(10, { magic: 1 }), { leaderEpoch: 0 });
    await settled(log);
    const want = latest(await allRecords(log));
    const { cleaner } = inlineCleaner(dir, [log]);
    expect(await cleaner.runOnce()).to.equal(1);
    const after = await allRecords(log);
    expect(latest(after)).to.deep.equal(want);
    expect(after.length).to.be.lessThan((40 * 10) / 2);
  });

  it('stops the map where log.cleaner.dedupe.buffer.size runs out and cleans up to there', async () => {
    log = await openLog(dir, COMPACT);
    for (let r = 0; r < 40; r++)
      log.append(
        batch(
          KEYS.map((k) => `${k}-${r}`),
          r,
        ),
        { leaderEpoch: 0 },
      );
    await settled(log);
    const want = latest(await allRecords(log));
    // 24 bytes per slot: 100 slots, 90 usable: nine batches of ten distinct keys
    const { cleaner } = inlineCleaner(dir, [log], { dedupeBufferSize: 2400 });
    expect(await cleaner.runOnce()).to.equal(1);
    expect(cleaner.firstDirtyOffset('topic', 0)).to.equal(90n);
    expect(latest(await allRecords(log))).to.deep.equal(want);
  });
});

describe('lib/log/cleaner: the offset map', () => {
  it('sizes a job to its dirty offsets, up to the dedupe buffer share, and keeps the latest offset per key', () => {
    expect(mapBytesFor(1000n, 128 << 20)).to.equal(Math.ceil(1000 / 0.9 + 2) * BYTES_PER_ENTRY);
    expect(mapBytesFor(10_000_000_000n, 128 << 20)).to.equal(128 << 20);
    const m = new OffsetMap(mapBytesFor(10n, 1 << 20));
    expect(m.hasRoomFor(10)).to.equal(true);
    m.put(Buffer.from('a'), 0n);
    m.put(Buffer.from('b'), 1n);
    m.put(Buffer.from('a'), 2n);
    expect([m.get(Buffer.from('a')), m.get(Buffer.from('b')), m.get(Buffer.from('c'))]).to.deep.equal([2n, 1n, -1n]);
    expect(m.size).to.equal(2);
    m.clear();
    expect([m.size, m.get(Buffer.from('a'))]).to.deep.equal([0, -1n]);
  });
});
