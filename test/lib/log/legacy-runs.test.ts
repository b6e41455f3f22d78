/**
 * Uncompressed magic 0/1 message sets are appended as one chunk (one segment write, one recent-cache
 * entry) while every message keeps its own offset and CRC: reads, the sparse index and recovery must
 * still behave message by message, as Kafka's do.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { CompressionCodec, LegacyMessage, MessageField, TimestampType, buildMessageSet } from '../../../protocol/records/index.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { T0, expectLogError, legacy, openLog, readAll, rmDir, splitEntries, tmpDir } from './helpers.js';

/** Messages of `n` offsets with values of varying size (so positions are irregular). */
function set(n: number, magic: 0 | 1, from = 0, ts = T0): Buffer {
  return buildMessageSet(
    Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`k${from + i}`),
      value: Buffer.alloc(10 + ((from + i) % 7) * 13, `v${from + i}`),
      timestamp: ts + BigInt(i),
    })),
    { magic },
  );
}

function offsets(bufs: Buffer[]): bigint[] {
  return bufs.flatMap(splitEntries).map((b) => LegacyMessage.at(b).offset);
}

describe('lib/log uncompressed magic 0/1 runs', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('runs');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  for (const cache of [0, 1 << 20]) {
    for (const magic of [0, 1] as const) {
      it(`a read at every offset inside multi-message chunks starts at that message (magic ${magic}, ${cache === 0 ? 'segment' : 'recent cache'})`, async () => {
        log = await openLog(dir, { indexIntervalBytes: 150 }, false, { recentCacheBytes: cache });
        const sizes = [1, 7, 40, 3, 25];
        let from = 0;
        for (const n of sizes) {
          const { info } = log.append(set(n, magic, from), { leaderEpoch: 0 });
          expect(info.firstOffset).to.equal(BigInt(from));
          expect(info.lastOffset).to.equal(BigInt(from + n - 1));
          from += n;
        }
        await log.flush();
        const end = log.logEndOffset;
        expect(end).to.equal(BigInt(from));
        for (let o = 0n; o < end; o++) {
          const r = await log.read(o, 1 << 20, { minOneMessage: true });
          const got = offsets(r.records);
          expect(got[0], `read at ${o}`).to.equal(o);
          expect(got).to.deep.equal(Array.from({ length: Number(end - o) }, (_, i) => o + BigInt(i)));
          expect(r.size).to.equal(r.records.reduce((a, b) => a + b.length, 0));
          for (const b of r.records.flatMap(splitEntries)) {
            const m = LegacyMessage.at(b);
            expect(m.isValid()).to.equal(true);
            expect(m.value?.subarray(0, 2).toString()).to.equal(`v${m.offset}`.slice(0, 2));
          }
          // limits inside a chunk: whole messages only, the high watermark (maxOffset) respected
          const one = await log.read(o, 1, { minOneMessage: true });
          expect(offsets(one.records)).to.deep.equal([o]);
          expect(one.size).to.equal(splitEntries(one.records[0] as Buffer)[0]?.length);
          expect((await log.read(o, 1, { minOneMessage: false })).records).to.have.length(0);
          const capped = await log.read(o, 1 << 20, { minOneMessage: true, maxOffset: o + 2n });
          expect(offsets(capped.records)).to.deep.equal(o + 1n < end ? [o, o + 1n] : [o]);
          const bounded = await log.read(o, 300, { minOneMessage: true });
          const b = offsets(bounded.records);
          expect(bounded.size).to.be.at.most(300);
          expect(b[0]).to.equal(o);
          if (b.length > 0 && (b[b.length - 1] as bigint) + 1n < end) {
            // the next message would not have fitted
            const next = await log.read((b[b.length - 1] as bigint) + 1n, 1, { minOneMessage: true });
            expect(bounded.size + (next.records[0] as Buffer).length).to.be.greaterThan(300);
          }
        }
      });
    }
  }

  it('the offset index points at message boundaries inside chunks, as appending message by message would', async () => {
    const over = { indexIntervalBytes: 200 };
    log = await openLog(dir, over, false, { recentCacheBytes: 0 });
    let from = 0;
    for (const n of [5, 30, 1, 12, 60]) {
      log.append(set(n, 1, from), { leaderEpoch: 0 });
      from += n;
    }
    await log.close();
    const indexFile = path.join(dir, 'topic-0', '00000000000000000000.index');
    const logFile = path.join(dir, 'topic-0', '00000000000000000000.log');
    const live = fs.readFileSync(indexFile);
    const data = fs.readFileSync(logFile);
    expect(live.length / 8).to.be.greaterThan(10);
    for (let p = 0; p < live.length; p += 8) {
      const rel = live.readInt32BE(p);
      const pos = live.readInt32BE(p + 4);
      // an entry names a message start whose offset is the entry's offset
      expect(LegacyMessage.at(data, pos).offset).to.equal(BigInt(rel));
    }
    // a rebuild from the log (recovery, message by message) gives the very same index
    fs.rmSync(indexFile);
    log = await openLog(dir, over, true, { recentCacheBytes: 0 });
    await log.close();
    expect(Buffer.compare(fs.readFileSync(indexFile), live)).to.equal(0);
    log = await openLog(dir, over, false, { recentCacheBytes: 0 });
    // lookups across chunks: every offset reads from its own message
    for (let o = 0n; o < log.logEndOffset; o += 3n) {
      expect(offsets((await log.read(o, 1, { minOneMessage: true })).records)).to.deep.equal([o]);
    }
  });

  it('recovery of a torn chunk truncates to the last whole message', async () => {
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
    log.append(set(4, 1, 0), { leaderEpoch: 0 });
    const chunk = set(20, 1, 4);
    log.append(chunk, { leaderEpoch: 0 });
    await log.close();
    const logFile = path.join(dir, 'topic-0', '00000000000000000000.log');
    const size = fs.statSync(logFile).size;
    // cut inside message 13 of the chunk (offset 4 + 13 = 17)
    const msgs = splitEntries(chunk);
    const keep = msgs.slice(0, 13).reduce((a, b) => a + b.length, 0);
    fs.truncateSync(logFile, size - chunk.length + keep + 7);
    log = await openLog(dir, {}, true, { recentCacheBytes: 0 });
    expect(log.logEndOffset).to.equal(17n);
    expect(fs.statSync(logFile).size).to.equal(size - chunk.length + keep);
    expect(offsets(await readAll(log))).to.deep.equal(Array.from({ length: 17 }, (_, i) => BigInt(i)));
    // appends continue from there
    const { info } = log.append(set(2, 1, 17), { leaderEpoch: 0 });
    expect(info.firstOffset).to.equal(17n);
  });

  it('a bad CRC in the middle of a set refuses the whole set; nothing is appended', async () => {
    {
      log = await openLog(dir);
      const bad = set(10, 1);
      const msgs = splitEntries(bad);
      const at = msgs.slice(0, 5).reduce((a, b) => a + b.length, 0);
      const flip = at + MessageField.TIMESTAMP + 12; // inside the key of message 5
      bad.writeUInt8(bad.readUInt8(flip) ^ 0x20, flip);
      expectLogError(() => log?.append(bad, { leaderEpoch: 0 }), ErrorCode.CORRUPT_MESSAGE);
      expect(log.logEndOffset).to.equal(0n);
      const cut = set(3, 1).subarray(0, 50);
      expectLogError(() => log?.append(Buffer.from(cut), { leaderEpoch: 0 }), ErrorCode.CORRUPT_MESSAGE);
      expect(log.logEndOffset).to.equal(0n);
    }
  });

  it('LogAppendTime stamps every message of a run (CRCs recomputed); CreateTime checks each timestamp', async () => {
    log = await openLog(dir, { messageTimestampType: 'LogAppendTime' });
    const now = Number(T0) + 5000;
    const { info } = log.append(set(6, 1), { leaderEpoch: 0, now });
    expect(info.maxTimestamp).to.equal(BigInt(now));
    for (const b of await readAll(log)) {
      const m = LegacyMessage.at(b);
      expect(m.isValid()).to.equal(true);
      expect(m.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
      expect(m.timestamp).to.equal(BigInt(now));
    }
    await log.close();
    rmDir(dir);
    log = await openLog(dir, { timestampBeforeMaxMs: 1000 });
    const late = buildMessageSet(
      [0, 1, 2].map((i) => ({
        key: null,
        value: Buffer.from(`x${i}`),
        timestamp: i === 2 ? BigInt(Date.now() - 60_000) : BigInt(Date.now()),
      })),
      { magic: 1 },
    );
    expectLogError(() => log?.append(late, { leaderEpoch: 0 }), ErrorCode.INVALID_TIMESTAMP);
    expect(log.logEndOffset).to.equal(0n);
  });

  it('max timestamp and ListOffsets by timestamp inside a chunk', async () => {
    log = await openLog(dir, { indexIntervalBytes: 100 });
    const recs = Array.from({ length: 30 }, (_, i) => ({
      key: null,
      value: Buffer.alloc(30, i),
      timestamp: T0 + BigInt([5, 1, 9, 9, 3][i % 5] as number) + BigInt(i),
    }));
    const { info } = log.append(buildMessageSet(recs, { magic: 1 }), { leaderEpoch: 0 });
    const max = recs.reduce((a, r) => (r.timestamp > a ? r.timestamp : a), -1n);
    expect(info.maxTimestamp).to.equal(max);
    const maxAt = recs.findIndex((r) => r.timestamp === max);
    expect(log.offsetForTimestamp(-3n)?.offset).to.equal(BigInt(maxAt));
    for (let i = 0; i < recs.length; i++) {
      const target = (recs[i] as { timestamp: bigint }).timestamp;
      const want = recs.findIndex((r) => r.timestamp >= target);
      expect(log.offsetForTimestamp(target)?.offset).to.equal(BigInt(want));
    }
  });

  it('a set mixing uncompressed messages and a wrapper keeps Kafka offsets (runs around the wrapper)', async () => {
    log = await openLog(dir);
    const wrapper = legacy(4, { magic: 1, compression: CompressionCodec.GZIP });
    const mixed = Buffer.concat([set(3, 1), wrapper, set(2, 1, 3)]);
    const { info } = log.append(mixed, { leaderEpoch: 0 });
    expect(info.recordCount).to.equal(9);
    const entries = await readAll(log);
    expect(entries.map((b) => LegacyMessage.at(b).offset)).to.deep.equal([0n, 1n, 2n, 6n, 7n, 8n]);
    expect(
      LegacyMessage.at(entries[3] as Buffer)
        .records({ maxOutput: 1 << 20 })
        .map((r) => r.offset),
    ).to.deep.equal([3n, 4n, 5n, 6n]);
    // a read at an offset inside the wrapper returns the wrapper (the whole batch holding it)
    expect(offsets((await log.read(4n, 1 << 20, { minOneMessage: true })).records)).to.deep.equal([6n, 7n, 8n]);
  });
});
