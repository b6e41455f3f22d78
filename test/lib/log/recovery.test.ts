import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { RecordBatch, decodeRecords } from '../../../protocol/records/index.js';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { GregorLogErrorCode } from '../../../lib/log/errors.js';
import { REPAIR_MARKER } from '../../../lib/log/read-verify.js';
import { defaultLogConfig } from '../../../lib/log/log-config.js';
import { PartitionLog } from '../../../lib/log/partition-log.js';
import { childBatch } from './fixtures/child-batch.js';
import { config, expectLogError, expectLogErrorAsync, openLog, readAll, rmDir, tmpDir, v2 } from './helpers.js';

const LIMIT = { maxOutput: 1 << 24 };
const OVER = { segmentBytes: 3000, indexIntervalBytes: 200 };

describe('lib/log recovery', () => {
  let dir: string;
  let log: PartitionLog | undefined;
  beforeEach(() => {
    dir = tmpDir('rec');
  });
  afterEach(async () => {
    await log?.close().catch(() => undefined);
    log = undefined;
    rmDir(dir);
  });

  const segPath = (l: PartitionLog, base: bigint, ext = '.log'): string => path.join(l.dir, base.toString().padStart(20, '0') + ext);

  async function writeBatches(n: number): Promise<{ l: PartitionLog; sent: Buffer[] }> {
    const l = await openLog(dir, OVER);
    const sent: Buffer[] = [];
    for (let i = 0; i < n; i++) {
      const b = v2(1 + (i % 3), { prefix: `r${i}`, size: 40 });
      l.append(b, { leaderEpoch: i < n / 2 ? 1 : 2 });
      sent.push(Buffer.from(b));
    }
    await l.close();
    return { l, sent };
  }

  it('truncates a torn tail (half a batch plus garbage) and keeps exactly the whole batches', async () => {
    const { l, sent } = await writeBatches(60);
    const bases = l.segmentBaseOffsets;
    const lastSeg = segPath(l, bases[bases.length - 1] as bigint);
    const size = fs.statSync(lastSeg).size;
    const lastLen = (sent[sent.length - 1] as Buffer).length;
    fs.truncateSync(lastSeg, size - Math.floor(lastLen / 2));
    fs.appendFileSync(lastSeg, Buffer.from('garbage garbage garbage garbage garbage garbage garbage'));
    log = await openLog(dir, OVER, true);
    const kept = await readAll(log);
    expect(kept).to.have.length(59);
    kept.forEach((b, i) => {
      const orig = RecordBatch.at(Buffer.from(sent[i] as Buffer));
      const got = RecordBatch.at(b);
      orig.setBaseOffset(got.baseOffset);
      orig.setPartitionLeaderEpoch(got.partitionLeaderEpoch);
      expect(Buffer.compare(b, orig.bytes)).to.equal(0);
    });
    expect(log.logEndOffset).to.equal(RecordBatch.at(kept[58] as Buffer).nextOffset);
    expect(fs.statSync(lastSeg).size).to.equal(size - lastLen);
    // appends continue right after the last whole batch
    const { info } = log.append(v2(2), { leaderEpoch: 3 });
    expect(info.firstOffset).to.equal(RecordBatch.at(kept[58] as Buffer).nextOffset);
    const recs = decodeRecords(Buffer.concat(await readAll(log)), LIMIT).records;
    expect(recs.map((r) => r.offset)).to.deep.equal(Array.from({ length: recs.length }, (_, i) => BigInt(i)));
  });

  it('truncates at a corrupt batch in the last segment and drops leader epochs past the end', async () => {
    const { l } = await writeBatches(40);
    const bases = l.segmentBaseOffsets;
    const last = bases[bases.length - 1] as bigint;
    const file = segPath(l, last);
    const buf = fs.readFileSync(file);
    const first = RecordBatch.at(buf, 0);
    buf.writeUInt8(buf.readUInt8(first.end + 70) ^ 0xff, first.end + 70); // second batch's records
    fs.writeFileSync(file, buf);
    log = await openLog(dir, OVER, true);
    expect(log.logEndOffset).to.equal(first.nextOffset);
    expect(log.endOffsetForEpoch(log.latestEpoch).endOffset).to.equal(log.logEndOffset);
    const cp = fs.readFileSync(path.join(log.dir, 'leader-epoch-checkpoint'), 'utf8').trim().split('\n');
    for (const line of cp.slice(2)) expect(BigInt(line.split(' ')[1] ?? '0') < log.logEndOffset).to.equal(true);
  });

  it('after an unclean shutdown, truncates at a corrupt batch in an earlier segment and keeps the cut bytes and later segments aside', async () => {
    const { l } = await writeBatches(40);
    const bases = l.segmentBaseOffsets;
    const end = l.logEndOffset;
    expect(bases.length).to.be.greaterThan(2);
    const first = segPath(l, 0n);
    const buf = fs.readFileSync(first);
    const b0 = RecordBatch.at(buf, 0);
    const b1 = RecordBatch.at(buf, b0.end);
    buf.writeUInt8(buf.readUInt8(b1.end - 5) ^ 0xff, b1.end - 5); // the second batch's last record
    fs.writeFileSync(first, buf);
    const lines: { o: object; m: string }[] = [];
    const push = (o: object, m?: string): void => void lines.push({ o, m: m ?? '' });
    log = await PartitionLog.open(dir, 'topic', 0, config(OVER), {
      recover: true,
      recoveryPoint: 0n,
      logger: { info: push, warn: push, error: push },
    });
    expect(log.logEndOffset).to.equal(b0.nextOffset);
    expect(log.segmentBaseOffsets).to.deep.equal([0n]);
    const kept = fs.readdirSync(log.dir).filter((n) => n.includes('.corrupt-'));
    // the cut part of the first segment, and every later .log renamed
    expect(kept.length).to.equal(bases.length);
    const cutFile = kept.find((n) => n.startsWith('00000000000000000000.log.corrupt-')) as string;
    expect(fs.readFileSync(path.join(log.dir, cutFile)).equals(buf.subarray(b0.end))).to.equal(true);
    const line = lines.find((x) => x.m === 'truncating log at an invalid entry, and the segments after it')?.o as Record<string, unknown>;
    expect(line).to.not.equal(undefined);
    const keptBytes = kept.reduce((n, k) => n + fs.statSync(path.join(log?.dir ?? '', k)).size, 0);
    expect(line['droppedBytes']).to.equal(keptBytes);
    expect(line['droppedOffsets']).to.deep.equal([b0.nextOffset.toString(), (end - 1n).toString()]);
    expect(line['segment']).to.equal('0');
    expect(line['position']).to.equal(b0.end);
    // what is left is served unchanged, and appends continue at the cut
    const got = await readAll(log);
    expect(got.length).to.equal(1);
    expect(got[0]?.subarray(12).equals(buf.subarray(12, b0.end))).to.equal(true);
    const { info } = log.append(v2(1), { leaderEpoch: 3 });
    expect(info.firstOffset).to.equal(b0.nextOffset);
  });

  it('corruption below the recovery point that no load check meets: a read refuses it (CORRUPT_MESSAGE), appends get KAFKA_STORAGE_ERROR, the next open repairs the log', async () => {
    const { l } = await writeBatches(40);
    const end = l.logEndOffset;
    const first = segPath(l, 0n);
    const buf = fs.readFileSync(first);
    const b0 = RecordBatch.at(buf, 0);
    const b1 = RecordBatch.at(buf, b0.end);
    buf.writeUInt8(buf.readUInt8(b1.end - 5) ^ 0xff, b1.end - 5);
    fs.writeFileSync(first, buf);
    // a clean start (no recovery): only the tails after the last index entries are checked
    log = await openLog(dir, OVER, false, { recentCacheBytes: 0 });
    expect(log.logEndOffset).to.equal(end);
    const ok = await log.read(0n, 1 << 20, { minOneMessage: true });
    // the read stops before the corrupt batch: the first is served
    expect(ok.records.length).to.equal(1);
    expect(ok.records[0]?.equals(buf.subarray(0, b0.end))).to.equal(true);
    const err = await expectLogErrorAsync(log.read(b0.nextOffset, 1 << 20, { minOneMessage: true }), ErrorCode.CORRUPT_MESSAGE);
    expect(err.code).to.equal(GregorLogErrorCode.CORRUPT);
    // nothing after it either, and appends are refused
    await expectLogErrorAsync(log.read(end - 1n, 1 << 20, { minOneMessage: true }), ErrorCode.CORRUPT_MESSAGE);
    expectLogError(() => log?.append(v2(1), { leaderEpoch: 3 }), ErrorCode.KAFKA_STORAGE_ERROR);
    expect(log.needsRepair).to.equal(true);
    await log.close();
    expect(fs.readFileSync(path.join(log.dir, REPAIR_MARKER), 'utf8')).to.match(/^0 \d+ \d+ CRC mismatch/);
    log = await openLog(dir, OVER, false, { recentCacheBytes: 0 });
    expect(log.logEndOffset).to.equal(b0.nextOffset);
    expect(fs.existsSync(path.join(log.dir, REPAIR_MARKER))).to.equal(false);
    expect(log.needsRepair).to.equal(false);
    expect((await readAll(log)).length).to.equal(1);
  });

  it('a batch whose CRC still holds but whose base offset was garbled is refused too (the v2 CRC does not cover it)', async () => {
    const { l } = await writeBatches(40);
    const first = segPath(l, 0n);
    const buf = fs.readFileSync(first);
    const b0 = RecordBatch.at(buf, 0);
    buf.writeBigInt64BE(b0.baseOffset + 100n, b0.end); // the second batch claims other offsets
    fs.writeFileSync(first, buf);
    log = await openLog(dir, OVER, false, { recentCacheBytes: 0 });
    await expectLogErrorAsync(log.read(b0.nextOffset, 1 << 20, { minOneMessage: true }), ErrorCode.CORRUPT_MESSAGE);
  });

  it('rebuilds a missing or damaged index on a clean start', async () => {
    const { l } = await writeBatches(40);
    fs.rmSync(segPath(l, 0n, '.index'));
    fs.rmSync(segPath(l, 0n, '.timeindex'));
    fs.appendFileSync(segPath(l, l.segmentBaseOffsets[1] as bigint, '.index'), Buffer.from([1, 2, 3]));
    log = await openLog(dir, OVER, false, { recentCacheBytes: 0 });
    expect(fs.existsSync(segPath(l, 0n, '.index'))).to.equal(true);
    expect(fs.statSync(segPath(l, 0n, '.index')).size % 8).to.equal(0);
    for (let o = 0n; o < log.logEndOffset; o++) {
      const b = RecordBatch.at((await log.read(o, 1, { minOneMessage: true })).records[0] as Buffer);
      expect(b.baseOffset <= o && o <= b.lastOffset).to.equal(true);
    }
    expect(log.offsetForTimestamp(1_700_000_000_001n)?.offset).to.equal(2n);
  });

  it('loses no acknowledged append when the process is killed with SIGKILL', async function () {
    this.timeout(20_000);
    const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'append-child.js');
    const acked = new Map<number, { first: bigint; last: bigint }>();
    let seq = 0;
    for (let round = 0; round < 2; round++) {
      const child = spawn(process.execPath, [script, dir, round === 0 ? '0' : '1', String(seq)], { stdio: ['ignore', 'pipe', 'inherit'] });
      let buffered = '';
      await new Promise<void>((resolve, reject) => {
        child.on('error', reject);
        child.on('exit', () => resolve());
        child.stdout.on('data', (d: Buffer) => {
          buffered += d.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          for (const line of lines) {
            const [kind, s, f, la] = line.split(' ');
            if (kind !== 'ack') continue;
            acked.set(Number(s), { first: BigInt(f ?? '-1'), last: BigInt(la ?? '-1') });
            seq = Math.max(seq, Number(s) + 1);
          }
          if (acked.size >= 1500 * (round + 1)) child.kill('SIGKILL');
        });
        setTimeout(() => child.kill('SIGKILL'), 8000).unref();
      });
    }
    expect(acked.size).to.be.greaterThan(1000);
    log = await PartitionLog.open(dir, 'topic', 0, defaultLogConfig({ segmentBytes: 64 * 1024, indexIntervalBytes: 512 }), {
      recover: true,
      recentCacheBytes: 0,
    });
    for (const [s, { first, last }] of acked) {
      expect(log.logEndOffset > last).to.equal(true);
      const r = await log.read(first, 1, { minOneMessage: true });
      const got = RecordBatch.at(r.records[0] as Buffer);
      const want = RecordBatch.at(childBatch(s));
      want.setBaseOffset(first);
      want.setPartitionLeaderEpoch(1);
      expect(got.lastOffset).to.equal(last);
      expect(Buffer.compare(got.bytes, want.bytes), `seq ${s} at ${first}`).to.equal(0);
    }
    const recs = decodeRecords(Buffer.concat(await readAll(log)), LIMIT).records;
    expect(recs.map((r) => r.offset)).to.deep.equal(Array.from({ length: recs.length }, (_, i) => BigInt(i)));
  });
});
