/** `gregor debug dump-log` on segment files written here byte by byte (goldens in test/fixtures/cli/). */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEndTxnBatch, buildRecordBatch, CompressionCodec, ControlRecordType } from '../../../protocol/records/index.js';
import { cliOk, golden, normalise, runCli } from '../../helpers/cli.js';

const TS = 1700000000000n;

function segment(): { log: Buffer; positions: number[] } {
  const rec = (i: number, extra: Partial<{ key: Buffer | null }> = {}) => ({
    key: extra.key === undefined ? Buffer.from(`key-${i}`) : extra.key,
    value: Buffer.from(`value-${i}`),
    timestamp: TS + BigInt(i),
    headers: i % 2 === 0 ? [{ key: 'h', value: Buffer.from(`v${i}`) }] : [],
  });
  const b1 = buildRecordBatch([rec(0), rec(1), rec(2, { key: null })], { baseOffset: 0n, partitionLeaderEpoch: 0 });
  const b2 = buildRecordBatch([rec(3), rec(4)], {
    baseOffset: 3n,
    partitionLeaderEpoch: 1,
    isTransactional: true,
    producerId: 7n,
    producerEpoch: 0,
    baseSequence: 0,
  });
  const b3 = buildEndTxnBatch({
    type: ControlRecordType.COMMIT,
    producerId: 7n,
    producerEpoch: 0,
    coordinatorEpoch: 5,
    timestamp: TS + 10n,
    baseOffset: 5n,
    partitionLeaderEpoch: 1,
  });
  const b4 = buildRecordBatch([rec(6)], { baseOffset: 6n, partitionLeaderEpoch: 1, producerId: 9n, producerEpoch: 2, baseSequence: 12 });
  b4[b4.length - 1] = (b4[b4.length - 1] as number) ^ 0xff; // corrupt: the CRC no longer matches
  const tail = Buffer.from([0, 0, 0, 0, 0, 0, 0, 7, 0, 0]); // a cut-short entry
  const parts = [b1, b2, b3, b4];
  const positions: number[] = [];
  let p = 0;
  for (const b of parts) {
    positions.push(p);
    p += b.length;
  }
  return { log: Buffer.concat([...parts, tail]), positions };
}

describe('cli: debug dump-log', function () {
  this.timeout(30_000);
  let dir: string;
  let files: { log: string; index: string; timeindex: string; txnindex: string };
  const norm = (s: string) => normalise(s, [[dir, '<dir>']]);

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gregor-dump-'));
    const base = '00000000000000000000';
    files = {
      log: join(dir, `${base}.log`),
      index: join(dir, `${base}.index`),
      timeindex: join(dir, `${base}.timeindex`),
      txnindex: join(dir, `${base}.txnindex`),
    };
    const { log, positions } = segment();
    writeFileSync(files.log, log);
    const index = Buffer.alloc(8 * 3);
    [
      [2, positions[0]],
      [5, positions[2]],
    ].forEach(([rel, pos], i) => {
      index.writeInt32BE(rel ?? 0, i * 8);
      index.writeInt32BE(pos ?? 0, i * 8 + 4);
    }); // the third entry stays zero: preallocated space
    writeFileSync(files.index, index);
    const time = Buffer.alloc(12 * 2);
    time.writeBigInt64BE(TS + 2n, 0);
    time.writeInt32BE(2, 8);
    time.writeBigInt64BE(TS + 10n, 12);
    time.writeInt32BE(5, 20);
    writeFileSync(files.timeindex, time);
    const txn = Buffer.alloc(34);
    txn.writeInt16BE(0, 0);
    txn.writeBigInt64BE(7n, 2);
    txn.writeBigInt64BE(3n, 10);
    txn.writeBigInt64BE(5n, 18);
    txn.writeBigInt64BE(6n, 26);
    writeFileSync(files.txnindex, txn);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('batches of a .log: offsets, positions, producer fields, CRC validity, invalid bytes at the end (text)', async () => {
    const r = await cliOk(['debug', 'dump-log', files.log]);
    golden('dump-log.txt', norm(r.out));
    expect(r.out).to.match(/isvalid: false/);
    expect(r.out).to.match(/Found 10 invalid bytes at the end of 00000000000000000000.log/);
  });

  it('--print-data: every record, control records as their marker (text and JSON)', async () => {
    const r = await cliOk(['debug', 'dump-log', '--print-data', files.log]);
    golden('dump-log-print-data.txt', norm(r.out));
    expect(r.out).to.contain(
      '| offset: 5 CreateTime: 1700000000010 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5',
    );
    const j = await cliOk(['debug', 'dump-log', '--print-data', '--format', 'json', files.log]);
    golden('dump-log-print-data.json', norm(j.out));
    const doc = JSON.parse(j.out) as { entries: { records?: { value?: string }[] }[]; invalidBytes: number }[];
    expect(doc[0]?.entries[0]?.records?.map((x) => x.value)).to.deep.equal(['value-0', 'value-1', 'value-2']);
    expect(doc[0]?.invalidBytes).to.equal(10);
  });

  it('.index, .timeindex and .txnindex entries (text and JSON)', async () => {
    const r = await cliOk(['debug', 'dump-log', files.index, files.timeindex, files.txnindex]);
    golden('dump-log-indexes.txt', norm(r.out));
    const j = await cliOk(['debug', 'dump-log', '--format', 'json', files.index, files.timeindex, files.txnindex]);
    golden('dump-log-indexes.json', norm(j.out));
  });

  it('compressed batches are decoded; --encoding applies to keys and values', async () => {
    const f = join(dir, '00000000000000000100.log');
    const recs = [0, 1].map((i) => ({ key: Buffer.from([0, i]), value: Buffer.from(`zz-${i}`), timestamp: TS }));
    writeFileSync(
      f,
      Buffer.concat([
        buildRecordBatch(recs, { baseOffset: 100n, compression: CompressionCodec.GZIP }),
        buildRecordBatch(recs, { baseOffset: 102n, compression: CompressionCodec.ZSTD }),
      ]),
    );
    const r = await cliOk(['debug', 'dump-log', '-d', '-E', 'hex', f]);
    expect(r.out).to.contain('Log starting offset: 100');
    expect(r.out).to.match(/compresscodec: gzip crc: \d+ isvalid: true/);
    expect(r.out).to.match(/compresscodec: zstd crc: \d+ isvalid: true/);
    expect(r.out).to.contain(
      '| offset: 103 CreateTime: 1700000000000 keySize: 2 valueSize: 4 sequence: -1 headerKeys: [] key: 0001 payload: 7a7a2d31',
    );
  });

  it('files that are not segments, or missing, fail with exit 1', async () => {
    const bad = await runCli(['debug', 'dump-log', join(dir, 'notes.txt')]);
    expect(bad.code).to.equal(1);
    expect(bad.err).to.match(/not a segment file .*\[GREGOR_ERR_CLI_FILE\]/);
    const missing = await runCli(['debug', 'dump-log', join(dir, '00000000000000000999.log')]);
    expect(missing.code).to.equal(1);
    expect(missing.err).to.match(/ENOENT \[GREGOR_ERR_CLI_FILE\]/);
  });
});
