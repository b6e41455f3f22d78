import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { CompressionCodec, LegacyMessage, RecordBatch, TimestampType, decodeRecords, logEntries } from '../../../protocol/records/index.js';
import type { PartitionLog } from '../../../lib/log/partition-log.js';
import { SYNC_WRITE_MAX_BYTES } from '../../../lib/log/segment.js';
import { T0, expectLogError, expectLogErrorAsync, legacy, openLog, readAll, rmDir, tmpDir, v2 } from './helpers.js';

const CODECS = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4, CompressionCodec.ZSTD];
const LIMIT = { maxOutput: 64 << 20 };

describe('lib/log PartitionLog', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir();
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  it('appends v2 batches with every codec and reads them back with assigned offsets', async () => {
    log = await openLog(dir);
    let expected = 0n;
    for (const codec of CODECS) {
      const { info, written } = log.append(v2(5, { compression: codec, prefix: `c${codec}` }), { leaderEpoch: 3 });
      expect(info.firstOffset).to.equal(expected);
      expect(info.lastOffset).to.equal(expected + 4n);
      expect(info.recordCount).to.equal(5);
      expect(info.logAppendTime).to.equal(-1n);
      expect(info.maxTimestamp).to.equal(T0 + 4n);
      await written;
      expected += 5n;
    }
    expect(log.logEndOffset).to.equal(25n);
    expect(log.highWatermark).to.equal(25n);
    // the same data from the file (a fresh open has no cache) and from the cache
    for (const reopen of [false, true]) {
      if (reopen) {
        await log.close();
        log = await openLog(dir);
      }
      const all = Buffer.concat(await readAll(log));
      const { records } = decodeRecords(all, LIMIT);
      expect(records.map((r) => r.offset)).to.deep.equal(Array.from({ length: 25 }, (_, i) => BigInt(i)));
      expect(records[7]?.value?.toString()).to.match(/^c1-2/);
      for (const e of logEntries(all)) {
        if (e.kind !== 'batch') continue;
        expect(e.batch.isValid()).to.equal(true);
        expect(e.batch.partitionLeaderEpoch).to.equal(3);
      }
    }
  });

  it('reads from any offset inside a batch, returning the whole batch', async () => {
    log = await openLog(dir);
    log.append(v2(10), { leaderEpoch: 0 });
    log.append(v2(10), { leaderEpoch: 0 });
    const r = await log.read(13n, 1 << 20, { minOneMessage: true });
    expect(r.records).to.have.length(1);
    expect(RecordBatch.at(r.records[0] as Buffer).baseOffset).to.equal(10n);
    expect((await log.read(20n, 1000, { minOneMessage: true })).records).to.have.length(0);
    await expectLogErrorAsync(log.read(21n, 1000, { minOneMessage: true }), ErrorCode.OFFSET_OUT_OF_RANGE);
    await expectLogErrorAsync(log.read(-1n, 1000, { minOneMessage: true }), ErrorCode.OFFSET_OUT_OF_RANGE);
  });

  it('honours maxBytes, minOneMessage (KIP-74) and maxOffset', async () => {
    for (const cache of [0, 1 << 20]) {
      const d = tmpDir();
      const l = await openLog(d, {}, false, { recentCacheBytes: cache });
      const batches = [v2(3, { size: 100 }), v2(3, { size: 100 }), v2(3, { size: 100 })];
      for (const b of batches) await l.append(b, { leaderEpoch: 0 }).written;
      const one = (batches[0] as Buffer).length;
      expect((await l.read(0n, one - 1, { minOneMessage: false })).records).to.have.length(0);
      const kip74 = await l.read(0n, 10, { minOneMessage: true });
      expect(kip74.records).to.have.length(1);
      expect(kip74.size).to.equal(one);
      expect((await l.read(0n, one * 2 + 5, { minOneMessage: true })).records).to.have.length(2);
      const capped = await l.read(0n, 1 << 20, { minOneMessage: true, maxOffset: 6n });
      expect(capped.records.map((b) => RecordBatch.at(b).baseOffset)).to.deep.equal([0n, 3n]);
      expect((await l.read(6n, 1 << 20, { minOneMessage: true, maxOffset: 6n })).records).to.have.length(0);
      await l.close();
      rmDir(d);
    }
  });

  it('readers see appended data before it is written; HW moves once written', async () => {
    log = await openLog(dir, {}, false, { recentCacheBytes: 0 });
    const { written } = log.append(v2(4), { leaderEpoch: 0 });
    expect(log.logEndOffset).to.equal(4n);
    expect(log.highWatermark).to.equal(0n);
    const r = await log.read(0n, 1 << 20, { minOneMessage: true });
    expect(r.records).to.have.length(1);
    expect((await log.read(0n, 1 << 20, { minOneMessage: true, maxOffset: log.highWatermark })).records).to.have.length(0);
    await written;
    expect(log.highWatermark).to.equal(4n);
  });

  it('coalesces the appends of one event-loop turn into one write', async () => {
    log = await openLog(dir);
    const before = log.stats.writes;
    const acks = [];
    for (let i = 0; i < 200; i++) acks.push(log.append(v2(2), { leaderEpoch: 0 }).written);
    await Promise.all(acks);
    expect(log.stats.writes - before).to.equal(1);
    expect(fs.statSync(path.join(log.dir, '00000000000000000000.log')).size).to.equal(200 * v2(2).length);
    // A small group is written synchronously when its turn's setImmediate drains it, so it is
    // acknowledged without a thread-pool round trip.
    const small = log.stats.writes;
    const one = log.append(v2(1), { leaderEpoch: 0 }).written;
    await new Promise((r) => setImmediate(r));
    expect(log.highWatermark, 'a small group is on the page cache by the next turn').to.equal(log.logEndOffset);
    await one;
    expect(log.stats.writes - small).to.equal(1);
    // A group larger than SYNC_WRITE_MAX_BYTES (appends of one turn, each within max.message.bytes)
    // is written asynchronously; appends arriving while it is in flight share the next write.
    const mid = log.stats.writes;
    const part = v2(1, { size: 512 * 1024 });
    const parts = Math.ceil((SYNC_WRITE_MAX_BYTES + 1024) / part.length);
    const opened = log;
    const first = Array.from({ length: parts }, () => opened.append(v2(1, { size: 512 * 1024 }), { leaderEpoch: 0 }).written);
    expect(parts * part.length).to.be.greaterThan(SYNC_WRITE_MAX_BYTES);
    await new Promise((r) => setImmediate(r));
    expect(log.highWatermark < log.logEndOffset, 'the large group is still being written').to.equal(true);
    const more = [0, 1, 2].map(() => opened.append(v2(1), { leaderEpoch: 0 }).written);
    await Promise.all([...first, ...more]);
    expect(log.stats.writes - mid, 'the large group and the three appends after it in two writes').to.equal(2);
  });

  it('flush.policy=always fsyncs before acknowledging; flush.messages fsyncs every N', async () => {
    log = await openLog(dir, { flushPolicy: 'always' });
    await log.append(v2(1), { leaderEpoch: 0 }).written;
    expect(log.stats.syncs).to.equal(1);
    await log.close();
    log = await openLog(dir, { flushMessages: 3 });
    await log.append(v2(1), { leaderEpoch: 0 }).written;
    expect(log.stats.syncs).to.equal(0);
    await log.append(v2(2), { leaderEpoch: 0 }).written;
    expect(log.stats.syncs).to.equal(1);
  });

  it('flush.ms flushes on a timer', async () => {
    log = await openLog(dir, { flushMs: 20 });
    await log.append(v2(1), { leaderEpoch: 0 }).written;
    expect(log.stats.syncs).to.equal(0);
    // the timer's flush comes by itself (however late a loaded machine runs it), and only once
    const deadline = Date.now() + 10_000;
    while (log.stats.syncs === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(log.stats.syncs).to.equal(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(log.stats.syncs).to.equal(1);
  });

  it('LogAppendTime rewrites v2 timestamps with a valid CRC', async () => {
    log = await openLog(dir, { messageTimestampType: 'LogAppendTime' });
    const now = Number(T0) + 5000;
    for (const codec of [CompressionCodec.NONE, CompressionCodec.LZ4]) {
      const { info } = log.append(v2(3, { compression: codec }), { leaderEpoch: 0, now });
      expect(info.logAppendTime).to.equal(BigInt(now));
      expect(info.maxTimestamp).to.equal(BigInt(now));
    }
    await log.close();
    log = await openLog(dir);
    for (const b of await readAll(log)) {
      const batch = RecordBatch.at(b);
      expect(batch.isValid()).to.equal(true);
      expect(batch.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
      expect(batch.maxTimestamp).to.equal(BigInt(now));
      expect(batch.records(LIMIT).every((r) => r.timestamp === BigInt(now))).to.equal(true);
    }
  });

  it('magic 0 and 1 uncompressed messages get absolute offsets, stored as they came', async () => {
    log = await openLog(dir);
    for (const magic of [0, 1] as const) {
      const sent = legacy(3, { magic });
      const { info } = log.append(Buffer.from(sent), { leaderEpoch: 0 });
      expect(info.recordCount).to.equal(3);
      const entries = await readAll(log, info.firstOffset);
      const msgs = entries.slice(0, 3).map((b) => LegacyMessage.at(b));
      expect(msgs.map((m) => m.offset)).to.deep.equal([0n, 1n, 2n].map((o) => o + info.firstOffset));
      msgs.forEach((m, i) => {
        expect(m.isValid()).to.equal(true);
        expect(m.magic).to.equal(magic);
        expect(m.value?.toString()).to.equal(`value-${i}`);
      });
    }
  });

  it('magic 1 compressed: wrapper takes the last absolute offset, inner offsets and payload untouched', async () => {
    log = await openLog(dir);
    log.append(v2(7), { leaderEpoch: 0 });
    for (const codec of [CompressionCodec.GZIP, CompressionCodec.SNAPPY, CompressionCodec.LZ4]) {
      const sent = legacy(4, { magic: 1, compression: codec });
      const payload = Buffer.from(LegacyMessage.at(sent).value as Buffer);
      const { info } = log.append(Buffer.from(sent), { leaderEpoch: 0 });
      const [entry] = (await log.read(info.firstOffset, 1 << 20, { minOneMessage: true })).records;
      const wrapper = LegacyMessage.at(entry as Buffer);
      expect(wrapper.offset).to.equal(info.lastOffset);
      expect(wrapper.isValid()).to.equal(true);
      expect(Buffer.compare(wrapper.value as Buffer, payload)).to.equal(0);
      const inner = wrapper.innerMessages(LIMIT);
      expect(inner.map((m) => m.offset)).to.deep.equal([0n, 1n, 2n, 3n]);
      expect(wrapper.records(LIMIT).map((r) => r.offset)).to.deep.equal([0n, 1n, 2n, 3n].map((o) => o + info.firstOffset));
    }
  });

  it('magic 1 compressed under LogAppendTime: wrapper timestamp and type set, CRC recomputed', async () => {
    log = await openLog(dir, { messageTimestampType: 'LogAppendTime' });
    const now = Number(T0) + 99;
    const sent = legacy(3, { magic: 1, compression: CompressionCodec.GZIP });
    const payload = Buffer.from(LegacyMessage.at(sent).value as Buffer);
    log.append(sent, { leaderEpoch: 0, now });
    const [entry] = (await log.read(0n, 1 << 20, { minOneMessage: true })).records;
    const w = LegacyMessage.at(entry as Buffer);
    expect(w.timestampType).to.equal(TimestampType.LOG_APPEND_TIME);
    expect(w.timestamp).to.equal(BigInt(now));
    expect(w.isValid()).to.equal(true);
    expect(Buffer.compare(w.value as Buffer, payload)).to.equal(0);
    expect(w.records(LIMIT).every((r) => r.timestamp === BigInt(now))).to.equal(true);
  });

  it('magic 0 compressed: the inner set is rewritten with absolute offsets', async () => {
    log = await openLog(dir);
    log.append(v2(5), { leaderEpoch: 0 });
    const { info } = log.append(legacy(3, { magic: 0, compression: CompressionCodec.GZIP }), { leaderEpoch: 0 });
    expect([info.firstOffset, info.lastOffset]).to.deep.equal([5n, 7n]);
    const [entry] = (await log.read(5n, 1 << 20, { minOneMessage: true })).records;
    const w = LegacyMessage.at(entry as Buffer);
    expect(w.offset).to.equal(7n);
    expect(w.isValid()).to.equal(true);
    expect(w.innerMessages(LIMIT).map((m) => m.offset)).to.deep.equal([5n, 6n, 7n]);
    expect(w.records(LIMIT).map((r) => r.value?.toString())).to.deep.equal(['value-0', 'value-1', 'value-2']);
  });

  it('rolls segments by size and finds every offset through the sparse index', async () => {
    log = await openLog(dir, { segmentBytes: 4000, indexIntervalBytes: 300 });
    const sizes: bigint[] = [];
    for (let i = 0; i < 120; i++) {
      const n = 1 + (i % 4);
      log.append(v2(n, { size: 30 + (i % 7) * 10, prefix: `b${i}` }), { leaderEpoch: 0 });
      sizes.push(BigInt(n));
    }
    await log.flush();
    expect(log.segmentBaseOffsets.length).to.be.greaterThan(5);
    const check = async (l: PartitionLog): Promise<void> => {
      for (let o = 0n; o < l.logEndOffset; o += 1n) {
        const r = await l.read(o, 1, { minOneMessage: true });
        const b = RecordBatch.at(r.records[0] as Buffer);
        expect(b.baseOffset <= o && o <= b.lastOffset, `offset ${o}`).to.equal(true);
      }
    };
    await check(log);
    await log.close();
    const files = fs.readdirSync(path.join(dir, 'topic-0'));
    expect(files.filter((f) => f.endsWith('.index')).length).to.equal(log.segmentBaseOffsets.length);
    expect(fs.statSync(path.join(dir, 'topic-0', files.find((f) => f.endsWith('.index')) as string)).size).to.be.greaterThan(0);
    log = await openLog(dir, { segmentBytes: 4000, indexIntervalBytes: 300 }, false, { recentCacheBytes: 0 });
    await check(log);
  });

  it('rolls by segment.ms using record timestamps, and in maintenance by wall time', async () => {
    log = await openLog(dir, { segmentMs: 1000 });
    log.append(v2(1, { ts: T0 }), { leaderEpoch: 0 });
    log.append(v2(1, { ts: T0 + 500n }), { leaderEpoch: 0 });
    expect(log.segmentBaseOffsets).to.deep.equal([0n]);
    log.append(v2(1, { ts: T0 + 1500n }), { leaderEpoch: 0 });
    expect(log.segmentBaseOffsets).to.deep.equal([0n, 2n]);
    await log.maintenance(Date.now() + 5000);
    expect(log.segmentBaseOffsets).to.deep.equal([0n, 2n, 3n]);
  });

  it('offsetForTimestamp finds the first record at or after a time; -1/-2/-3 specials', async () => {
    log = await openLog(dir, { segmentBytes: 2000, indexIntervalBytes: 100 });
    // 50 batches of 4, timestamps T0 + 10*i + j, one batch out of order
    for (let i = 0; i < 50; i++) {
      const ts = i === 20 ? T0 + 100_000n : T0 + BigInt(10 * i);
      log.append(v2(4, { ts, compression: i % 2 === 0 ? CompressionCodec.NONE : CompressionCodec.GZIP }), { leaderEpoch: i < 25 ? 1 : 2 });
    }
    for (const l of [log, null]) {
      const cur =
        l ??
        (await (async () => {
          await log.close();
          log = await openLog(dir, { segmentBytes: 2000, indexIntervalBytes: 100 });
          return log;
        })());
      expect(cur.offsetForTimestamp(T0)).to.deep.equal({ offset: 0n, timestamp: T0, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 2n)).to.deep.equal({ offset: 2n, timestamp: T0 + 2n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 4n)).to.deep.equal({ offset: 4n, timestamp: T0 + 10n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 151n)).to.deep.equal({ offset: 61n, timestamp: T0 + 151n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 301n)).to.deep.equal({ offset: 80n, timestamp: T0 + 100_000n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 100_001n)).to.deep.equal({ offset: 81n, timestamp: T0 + 100_001n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(T0 + 200n)?.offset).to.equal(80n);
      expect(cur.offsetForTimestamp(T0 + 1000n)?.offset).to.equal(80n); // the out-of-order batch
      expect(cur.offsetForTimestamp(T0 + 200_000n)).to.equal(null);
      expect(cur.offsetForTimestamp(-1n)).to.deep.equal({ offset: 200n, timestamp: -1n, leaderEpoch: 2 });
      expect(cur.offsetForTimestamp(-2n)).to.deep.equal({ offset: 0n, timestamp: -1n, leaderEpoch: 1 });
      expect(cur.offsetForTimestamp(-3n)).to.deep.equal({ offset: 83n, timestamp: T0 + 100_003n, leaderEpoch: 1 });
    }
  });

  it('max timestamp and timestamps work for magic 1 data', async () => {
    log = await openLog(dir);
    log.append(legacy(3, { magic: 1, ts: T0 }), { leaderEpoch: 0 });
    log.append(legacy(3, { magic: 1, ts: T0 + 100n, compression: CompressionCodec.SNAPPY }), { leaderEpoch: 0 });
    expect(log.offsetForTimestamp(T0 + 101n)).to.deep.equal({ offset: 4n, timestamp: T0 + 101n, leaderEpoch: -1 });
    expect(log.offsetForTimestamp(-3n)).to.deep.equal({ offset: 5n, timestamp: T0 + 102n, leaderEpoch: -1 });
  });

  it('tracks leader epochs (leader-epoch-checkpoint) and answers endOffsetForEpoch', async () => {
    log = await openLog(dir);
    log.append(v2(3), { leaderEpoch: 0 });
    log.append(v2(2), { leaderEpoch: 0 });
    log.append(v2(4), { leaderEpoch: 2 });
    log.append(v2(1), { leaderEpoch: 5 });
    expect(log.endOffsetForEpoch(0)).to.deep.equal({ leaderEpoch: 0, endOffset: 5n });
    expect(log.endOffsetForEpoch(1)).to.deep.equal({ leaderEpoch: 0, endOffset: 5n });
    expect(log.endOffsetForEpoch(2)).to.deep.equal({ leaderEpoch: 2, endOffset: 9n });
    expect(log.endOffsetForEpoch(5)).to.deep.equal({ leaderEpoch: 5, endOffset: 10n });
    expect(log.endOffsetForEpoch(6)).to.deep.equal({ leaderEpoch: -1, endOffset: -1n });
    await log.close();
    expect(fs.readFileSync(path.join(dir, 'topic-0', 'leader-epoch-checkpoint'), 'utf8')).to.equal('0\n3\n0 0\n2 5\n5 9\n');
    log = await openLog(dir);
    expect(log.endOffsetForEpoch(2)).to.deep.equal({ leaderEpoch: 2, endOffset: 9n });
  });

  it('concurrent appends keep arrival order, offsets are contiguous', async () => {
    log = await openLog(dir, { segmentBytes: 3000 });
    const infos = [];
    for (let i = 0; i < 100; i++) {
      infos.push(log.append(v2(1 + (i % 3), { prefix: `p${i}` }), { leaderEpoch: 0 }));
      if (i % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(infos.map((x) => x.written));
    let next = 0n;
    for (const { info } of infos) {
      expect(info.firstOffset).to.equal(next);
      next = info.lastOffset + 1n;
    }
    const recs = decodeRecords(Buffer.concat(await readAll(log)), LIMIT).records;
    expect(recs.map((r) => r.offset)).to.deep.equal(Array.from({ length: Number(next) }, (_, i) => BigInt(i)));
    const opened = log;
    expectLogError(() => opened.deleteRecordsBefore(next + 1n), ErrorCode.OFFSET_OUT_OF_RANGE);
  });
});
