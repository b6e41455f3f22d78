/**
 * Reserve → parallel → commit (KAFKA-1933) in PartitionLog.appendAsync: offsets reserved in arrival
 * order, CPU work finishing in any order (a runner with random delays, then the real worker pool),
 * commits strictly in reservation order, contiguous offsets, and a failed append that leaves no gap.
 */
import { expect } from 'chai';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { CompressionCodec, RecordBatch, buildMessageSet, buildRecordBatch, decodeRecords } from '../../../protocol/records/index.js';
import { AppendPool } from '../../../lib/append/pool.js';
import { convertForAppend } from '../../../lib/log/convert.js';
import { downConvert } from '../../../lib/log/down-convert.js';
import type { ConversionRunner, ConvertedAppend } from '../../../lib/log/convert.js';
import { LogError } from '../../../lib/log/errors.js';
import type { LogConfig } from '../../../lib/log/log-config.js';
import { PartitionLog } from '../../../lib/log/partition-log.js';
import type { AppendResult } from '../../../lib/log/partition-log.js';
import { config, readAll, rmDir, tmpDir, T0 } from '../log/helpers.js';
import { asError } from '../../../lib/as-error.js';

/** A runner that does the real work after a delay chosen per call: completions arrive out of order. */
class DelayedRunner implements ConversionRunner {
  calls = 0;
  completed: number[] = [];
  constructor(private readonly delay: (call: number) => number) {}
  convertForAppend(records: Buffer, cfg: LogConfig, base: bigint, now: number): Promise<ConvertedAppend> {
    const call = this.calls++;
    const copy = Buffer.from(records);
    return new Promise((resolve, reject) => {
      setTimeout(() => {
        this.completed.push(call);
        try {
          resolve(convertForAppend(copy, cfg, base, now));
        } catch (e) {
          reject(asError(e));
        }
      }, this.delay(call));
    });
  }
  downConvert(data: Buffer, toMagic: 0 | 1, fetchOffset: bigint, maxOutput: number): Promise<Buffer> {
    return Promise.resolve(downConvert(data, toMagic, fetchOffset, maxOutput));
  }
}

/** Deterministic pseudo-random numbers (xorshift). */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}

function batch(producer: number, seq: number, n: number, codec: number = CompressionCodec.NONE): Buffer {
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({
      key: Buffer.from(`p${producer}`),
      value: Buffer.from(`p${producer}-s${seq}-r${i}-${'v'.repeat((seq * 7 + i) % 30)}`),
      timestamp: T0 + BigInt(i),
    })),
    { compression: codec },
  );
}

function corrupt(n: number): Buffer {
  const b = buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.alloc(50, i), timestamp: T0 })),
    { compression: CompressionCodec.GZIP },
  );
  b.fill(0x33, 75, 95);
  b.writeUInt32BE(RecordBatch.at(b).computeCrc(), 17); // the CRC matches; only decompression fails
  return b;
}

async function openWith(dir: string, runner: ConversionRunner | undefined, over: Partial<LogConfig>): Promise<PartitionLog> {
  return PartitionLog.open(dir, 'topic', 0, config({ messageFormatVersion: '3.0-IV1', ...over }), {
    recover: false,
    ...(runner === undefined ? {} : { converter: runner }),
  });
}

async function storedValues(log: PartitionLog): Promise<{ offset: bigint; value: string; codec: number }[]> {
  const out: { offset: bigint; value: string; codec: number }[] = [];
  for (const buf of await readAll(log)) {
    const codec = RecordBatch.at(buf).compression;
    for (const r of decodeRecords(buf, { maxOutput: 1 << 26 }).records)
      out.push({ offset: r.offset, value: r.value?.toString() ?? '', codec });
  }
  return out;
}

describe('lib/append: reserve → parallel → commit in PartitionLog.appendAsync', function () {
  this.timeout(60_000);
  let dir: string;
  beforeEach(() => {
    dir = tmpDir('append');
  });
  afterEach(() => rmDir(dir));

  it('300 appends finishing in random order commit in arrival order with contiguous offsets', async () => {
    const rand = rng(42);
    const delays = Array.from({ length: 300 }, () => Math.floor(rand() * 15));
    const runner = new DelayedRunner((i) => delays[i] ?? 0);
    const log = await openWith(dir, runner, { compressionType: 'gzip' });
    const sizes = Array.from({ length: 300 }, () => 1 + Math.floor(rand() * 40));
    const resolvedOrder: number[] = [];
    const results = await Promise.all(
      sizes.map((n, i) =>
        log.appendAsync(batch(i % 7, i, n), { leaderEpoch: 3 }).then((r) => {
          resolvedOrder.push(i);
          return r;
        }),
      ),
    );
    expect(runner.completed).to.not.deep.equal([...runner.completed].sort((a, b) => a - b)); // really out of order
    expect(resolvedOrder).to.deep.equal(sizes.map((_, i) => i));
    let next = 0n;
    results.forEach((r, i) => {
      expect(r.info.firstOffset).to.equal(next);
      expect(r.info.recordCount).to.equal(sizes[i]);
      next += BigInt(sizes[i] ?? 0);
    });
    await Promise.all(results.map((r) => r.written));
    expect(log.logEndOffset).to.equal(next);
    expect(log.highWatermark).to.equal(next);
    const stored = await storedValues(log);
    expect(stored.map((s) => s.offset)).to.deep.equal(Array.from({ length: Number(next) }, (_, i) => BigInt(i)));
    expect(stored.every((s) => s.codec === CompressionCodec.GZIP)).to.equal(true);
    const want = sizes.flatMap((n, i) => Array.from({ length: n }, (_, j) => `p${i % 7}-s${i}-r${j}-${'v'.repeat((i * 7 + j) % 30)}`));
    expect(stored.map((s) => s.value)).to.deep.equal(want);
    await log.close();
  });

  it('a corrupt append in the middle fails alone; the appends reserved after it move down with no gap', async () => {
    // the corrupt one (call 1) finishes last; call 2 finishes first
    const runner = new DelayedRunner((i) => [10, 40, 0, 5][i] ?? 0);
    const log = await openWith(dir, runner, { compressionType: 'lz4' });
    const p = [
      log.appendAsync(batch(0, 0, 5), { leaderEpoch: 0 }),
      log.appendAsync(corrupt(8), { leaderEpoch: 0 }),
      log.appendAsync(batch(0, 2, 3), { leaderEpoch: 0 }),
      log.appendAsync(batch(0, 3, 4), { leaderEpoch: 0 }),
    ];
    const settled = await Promise.allSettled(p);
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const err: unknown = (settled[1] as PromiseRejectedResult).reason;
    expect(err).to.be.instanceOf(LogError);
    expect((err as LogError).errorCode).to.equal(ErrorCode.CORRUPT_MESSAGE);
    const ok = settled.filter((s): s is PromiseFulfilledResult<AppendResult> => s.status === 'fulfilled').map((s) => s.value.info);
    expect(ok.map((i) => [i.firstOffset, i.lastOffset])).to.deep.equal([
      [0n, 4n],
      [5n, 7n],
      [8n, 11n],
    ]);
    await Promise.all(settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value.written] : [])));
    const stored = await storedValues(log);
    expect(stored.map((s) => s.offset)).to.deep.equal([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 10n, 11n]);
    expect(stored.map((s) => s.value.split('-')[1])).to.deep.equal([
      's0',
      's0',
      's0',
      's0',
      's0',
      's2',
      's2',
      's2',
      's3',
      's3',
      's3',
      's3',
    ]);
    // the next reservation starts where the log ends
    const r = await log.appendAsync(batch(0, 4, 2), { leaderEpoch: 0 });
    expect(r.info.firstOffset).to.equal(12n);
    await log.close();
  });

  it('a fast-path append queues behind pending pool work; sync append is refused meanwhile', async () => {
    const runner = new DelayedRunner(() => 20);
    const log = await openWith(dir, runner, { compressionType: 'gzip' });
    const slow = log.appendAsync(batch(1, 0, 6, CompressionCodec.LZ4), { leaderEpoch: 0 }); // needs recompression
    const fast = log.appendAsync(batch(2, 0, 2, CompressionCodec.GZIP), { leaderEpoch: 0 }); // already gzip
    expect(log.pendingAppends).to.equal(2);
    expect(() => log.append(batch(3, 0, 1, CompressionCodec.GZIP), { leaderEpoch: 0 }))
      .to.throw(LogError)
      .with.property('errorCode', ErrorCode.REQUEST_TIMED_OUT);
    const [a, b] = await Promise.all([slow, fast]);
    expect([a.info.firstOffset, b.info.firstOffset]).to.deep.equal([0n, 6n]);
    expect(runner.calls).to.equal(1); // the gzip batch never went to the runner
    expect(log.pendingAppends).to.equal(0);
    expect(log.append(batch(3, 0, 1, CompressionCodec.GZIP), { leaderEpoch: 0 }).info.firstOffset).to.equal(8n);
    await log.close();
  });

  it('compressed magic 1 sets into a format-1 topic are validated on the runner, not the main thread, and stored as sent', async () => {
    const runner = new DelayedRunner((i) => [30, 0, 10][i] ?? 0);
    const log = await PartitionLog.open(dir, 'topic', 0, config({ messageFormatVersion: '0.10.0' }), { recover: false, converter: runner });
    const set = (n: number, tag: string, codec: number): Buffer =>
      buildMessageSet(
        Array.from({ length: n }, (_, i) => ({ key: null, value: Buffer.from(`${tag}-${i}`), timestamp: T0 + BigInt(i) })),
        { magic: 1, compression: codec },
      );
    const sent = [set(5, 'a', CompressionCodec.GZIP), set(3, 'b', CompressionCodec.SNAPPY), set(4, 'c', CompressionCodec.LZ4)];
    // a producer that sets the wrapper offset wrongly: the count estimate is off, the commit corrects it
    (sent[1] as Buffer).writeBigInt64BE(0n, 0);
    const plain = buildMessageSet([{ key: null, value: Buffer.from('plain'), timestamp: T0 }], { magic: 1 });
    const results = await Promise.all([
      ...sent.map((b) => log.appendAsync(Buffer.from(b), { leaderEpoch: 0 })),
      log.appendAsync(plain, { leaderEpoch: 0 }),
    ]);
    expect(runner.calls).to.equal(3); // the uncompressed set stayed on the fast path
    expect(results.map((r) => [r.info.firstOffset, r.info.lastOffset])).to.deep.equal([
      [0n, 4n],
      [5n, 7n],
      [8n, 11n],
      [12n, 12n],
    ]);
    const stored = await readAll(log);
    expect(stored).to.have.length(4);
    stored.slice(0, 3).forEach((b, i) => {
      // the wrapper's bytes after its offset are the producer's, unchanged (no recompression)
      expect(b.subarray(8).equals((sent[i] as Buffer).subarray(8))).to.equal(true);
      expect(b.readBigInt64BE(0)).to.equal(results[i]?.info.lastOffset);
    });
    await log.close();
  });

  it('validation errors of fast-path appends are immediate and reserve nothing', async () => {
    const runner = new DelayedRunner(() => 10);
    const log = await openWith(dir, runner, { compressionType: 'gzip' });
    const slow = log.appendAsync(batch(1, 0, 3), { leaderEpoch: 0 });
    const bad = Buffer.from(batch(1, 1, 2, CompressionCodec.GZIP));
    bad.writeUInt8((bad.at(-1) ?? 0) ^ 0xff, bad.length - 1); // CRC mismatch
    let refused: unknown;
    await log.appendAsync(bad, { leaderEpoch: 0 }).catch((e: unknown) => (refused = e));
    expect((refused as LogError).errorCode).to.equal(ErrorCode.CORRUPT_MESSAGE);
    const after = await log.appendAsync(batch(1, 2, 2), { leaderEpoch: 0 });
    expect((await slow).info.firstOffset).to.equal(0n);
    expect(after.info.firstOffset).to.equal(3n);
    await log.close();
  });

  it('close() lets reserved appends commit first', async () => {
    const runner = new DelayedRunner(() => 30);
    const log = await openWith(dir, runner, { compressionType: 'snappy' });
    const p = log.appendAsync(batch(1, 0, 4), { leaderEpoch: 0 });
    await log.close();
    expect((await p).info.lastOffset).to.equal(3n);
    const again = await openWith(dir, undefined, {});
    expect(again.logEndOffset).to.equal(4n);
    await again.close();
  });

  for (const workers of [0, 2]) {
    it(`the real pool (${workers} workers): 5 producers × 40 random batches, forced recompression, a corrupt batch each round`, async () => {
      const pool = new AppendPool(workers);
      const log = await openWith(dir, pool, { compressionType: 'zstd' });
      const rand = rng(7 + workers);
      const pending: { producer: number; seq: number; n: number; p: Promise<AppendResult> }[] = [];
      const failures: Promise<unknown>[] = [];
      for (let round = 0; round < 40; round++) {
        for (let producer = 0; producer < 5; producer++) {
          const n = 1 + Math.floor(rand() * 60);
          const codec = [CompressionCodec.NONE, CompressionCodec.GZIP, CompressionCodec.LZ4, CompressionCodec.SNAPPY][
            Math.floor(rand() * 4)
          ] as number;
          pending.push({ producer, seq: round, n, p: log.appendAsync(batch(producer, round, n, codec), { leaderEpoch: 1 }) });
          if (producer === 2)
            failures.push(
              log.appendAsync(corrupt(5), { leaderEpoch: 1 }).then(
                () => 'ok',
                (e: unknown) => (e as LogError).errorCode,
              ),
            );
        }
        if (round % 10 === 9) await new Promise((r) => setImmediate(r));
      }
      const results = await Promise.all(pending.map((x) => x.p));
      expect(await Promise.all(failures)).to.deep.equal(Array(40).fill(ErrorCode.CORRUPT_MESSAGE));
      let next = 0n;
      results.forEach((r, i) => {
        expect(r.info.firstOffset).to.equal(next);
        next += BigInt(pending[i]?.n ?? 0);
      });
      await Promise.all(results.map((r) => r.written));
      const stored = await storedValues(log);
      expect(stored.map((s) => s.offset)).to.deep.equal(Array.from({ length: Number(next) }, (_, i) => BigInt(i)));
      expect(stored.every((s) => s.codec === CompressionCodec.ZSTD)).to.equal(true);
      // per producer: its records in its order
      for (let producer = 0; producer < 5; producer++) {
        const mine = stored.filter((s) => s.value.startsWith(`p${producer}-`)).map((s) => s.value.split('-').slice(1, 3).join('-'));
        const want = pending
          .filter((x) => x.producer === producer)
          .flatMap((x) => Array.from({ length: x.n }, (_, j) => `s${x.seq}-r${j}`));
        expect(mine).to.deep.equal(want);
      }
      if (workers > 0) expect(pool.stats.jobs).to.equal(240);
      else expect(pool.stats.inline).to.equal(240);
      await log.close();
      await pool.stop();
    });
  }
});

describe('lib/append: AppendPool', function () {
  this.timeout(30_000);
  it('runs jobs on workers, transfers results, maps errors to LogError, leaves the caller’s buffer intact', async () => {
    const pool = new AppendPool(2);
    const cfg = config({ messageFormatVersion: '3.0-IV1', compressionType: 'lz4' });
    const input = batch(1, 1, 100);
    const copy = Buffer.from(input);
    const c = await pool.convertForAppend(input, cfg, 10n, Number(T0));
    expect(input.equals(copy)).to.equal(true);
    expect(c.buf.byteOffset).to.equal(0);
    expect(RecordBatch.at(c.buf).compression).to.equal(CompressionCodec.LZ4);
    expect(RecordBatch.at(c.buf).baseOffset).to.equal(10n);
    let err: unknown;
    await pool.convertForAppend(corrupt(3), cfg, 0n, Number(T0)).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(LogError);
    expect((err as LogError).errorCode).to.equal(ErrorCode.CORRUPT_MESSAGE);
    const many = await Promise.all(Array.from({ length: 20 }, (_, i) => pool.convertForAppend(batch(1, i, 50), cfg, 0n, Number(T0))));
    expect(many.every((m) => m.recordCount === 50)).to.equal(true);
    expect(pool.threads).to.equal(2);
    const down = await pool.downConvert(batch(1, 1, 3), 1, 0n, 1 << 20);
    expect(down.readInt8(16)).to.equal(1);
    await pool.stop();
    expect(pool.threads).to.equal(0);
    let stopped: unknown;
    await pool.convertForAppend(input, cfg, 0n, Number(T0)).catch((e: unknown) => (stopped = e));
    expect((stopped as LogError).errorCode).to.equal(ErrorCode.KAFKA_STORAGE_ERROR);
  });
});
