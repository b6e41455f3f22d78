/**
 * The live tail's lean reading of a Fetch answer (tail-decode.ts) gives the same records at or after
 * a position as the client's checked decoder (decodePartition), for plain, compressed, compacted
 * (offset gaps), control and magic 1 entries, and with large records whose length takes more than
 * one varint byte.
 */
import { expect } from 'chai';
import { decodePartition, type FetchedRecord } from '../../../lib/client/fetcher.js';
import { recordsFrom } from '../../../lib/console/tail-decode.js';
import type { FetchResponsePartitionData } from '../../../protocol/generated/fetch.js';
import {
  buildEndTxnBatch,
  buildMessageSet,
  buildRecordBatch,
  CompressionCodec,
  ControlRecordType,
} from '../../../protocol/records/index.js';

function partition(...entries: Buffer[]): FetchResponsePartitionData {
  return {
    partitionIndex: 3,
    errorCode: 0,
    highWatermark: 1_000_000n,
    lastStableOffset: 1_000_000n,
    logStartOffset: 0n,
    abortedTransactions: null,
    preferredReadReplica: -1,
    records: Buffer.concat(entries),
  };
}

const recs = (n: number, size = 20, at = 0) =>
  Array.from({ length: n }, (_v, i) => ({
    key: i % 3 === 0 ? null : Buffer.from(`k${at + i}`),
    value: Buffer.from(`v${at + i}-`.padEnd(size, 'x')),
    timestamp: 1_700_000_000_000n + BigInt(at + i),
    headers: i % 2 === 0 ? [{ key: 'h', value: Buffer.from(String(i)) }] : [],
  }));

const shape = (rs: FetchedRecord[]) =>
  rs.map((r) => ({
    offset: r.offset,
    timestamp: r.timestamp,
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    headers: r.headers.map((h) => `${h.key}=${h.value?.toString() ?? ''}`),
    partition: r.partition,
    timestampType: r.timestampType,
  }));

function sameAsChecked(data: FetchResponsePartitionData, position: bigint): FetchedRecord[] {
  const lean = recordsFrom('t', data, position, 1 << 20);
  const checked = decodePartition('t', data, position, { isolationLevel: 0, maxDecompressed: 1 << 28, partitionMaxBytes: 1 << 20 });
  expect(shape(lean.records)).to.deep.equal(shape(checked.records));
  expect(lean.nextOffset).to.equal(checked.nextOffset);
  return lean.records;
}

describe('console live tail: lean decode from a position', () => {
  it('passes over the records before the position in a plain batch, at every position', () => {
    const data = partition(buildRecordBatch(recs(100), { baseOffset: 1000n }), buildRecordBatch(recs(10, 20, 100), { baseOffset: 1100n }));
    for (const position of [0n, 1000n, 1001n, 1049n, 1099n, 1100n, 1105n, 1109n, 1110n]) {
      const got = sameAsChecked(data, position);
      expect(got.length).to.equal(Math.max(0, 1110 - Math.max(1000, Number(position))));
    }
  });

  it('reads records of 1 KB and 300 KB (two- and three-byte length varints)', () => {
    for (const size of [1024, 300_000]) {
      const data = partition(buildRecordBatch(recs(8, size), { baseOffset: 0n }));
      expect(sameAsChecked(data, 5n).map((r) => r.value?.length)).to.deep.equal([size, size, size]);
    }
  });

  it('goes by offsets where compaction left gaps', () => {
    const data = partition(buildRecordBatch(recs(5), { baseOffset: 10n, offsetDeltas: [0, 3, 4, 8, 9] }));
    expect(sameAsChecked(data, 12n).map((r) => r.offset)).to.deep.equal([13n, 14n, 18n, 19n]);
    expect(sameAsChecked(data, 15n).map((r) => r.offset)).to.deep.equal([18n, 19n]);
  });

  it('decodes compressed batches, leaves control batches out, and hands magic 1 message sets to the checked decoder', () => {
    const gz = partition(buildRecordBatch(recs(50), { baseOffset: 0n, compression: CompressionCodec.GZIP }));
    expect(sameAsChecked(gz, 40n)).to.have.length(10);
    const marker = buildEndTxnBatch({
      type: ControlRecordType.COMMIT,
      producerId: 7n,
      producerEpoch: 0,
      coordinatorEpoch: 0,
      timestamp: 1n,
      baseOffset: 20n,
    });
    const withMarker = partition(
      buildRecordBatch(recs(20), { baseOffset: 0n }),
      marker,
      buildRecordBatch(recs(5, 20, 21), { baseOffset: 21n }),
    );
    expect(sameAsChecked(withMarker, 18n).map((r) => r.offset)).to.deep.equal([18n, 19n, 21n, 22n, 23n, 24n, 25n]);
    const legacy = partition(buildMessageSet(recs(6), { magic: 1, baseOffset: 0n }));
    expect(sameAsChecked(legacy, 4n)).to.have.length(2);
  });

  it('stops at a batch cut short at the end of the answer', () => {
    const whole = buildRecordBatch(recs(10), { baseOffset: 0n });
    const next = buildRecordBatch(recs(10, 20, 10), { baseOffset: 10n });
    const data = partition(whole, next.subarray(0, next.length - 7));
    expect(sameAsChecked(data, 5n).map((r) => r.offset)).to.deep.equal([5n, 6n, 7n, 8n, 9n]);
  });
});
