/**
 * Zero-copy responses: a records field given as the stored slices (W.RecordsValue) encodes, through
 * encodeResponseChunks and through encodeResponse (one copy), to exactly the bytes encodeResponse
 * gives for the same records joined into one buffer, and the runs of slices of SPLICE_MIN_BYTES or more reach the output as views of their
 * own memory (not copies).
 */
import { expect } from 'chai';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  FileSlice,
  SPLICE_MIN_BYTES,
  Writer,
  recordsBuffer,
  recordsLength,
  recordsSlices,
  takeSplicedBytes,
  type RecordsValue,
} from '../../protocol/codec/writer.js';
import { decodeResponse, encodeResponse, encodeResponseChunks } from '../../protocol/frame.js';
import { buffersOf } from '../helpers/chunks.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { API_CODECS } from '../../protocol/generated/index.js';
import { Rng, SCHEMA, containsValue, randomStruct } from '../helpers/schema-values.js';

/** A records value and what the test knows about it: the memory it lives in and the bytes a splicing writer passes on. */
interface Made {
  value: RecordsValue;
  memory: ArrayBufferLike[];
  spliced: number;
}

/**
 * Random records: groups of adjacent slices of one allocation each (a log read), groups of
 * different allocations never adjacent (the recent-batches cache); sizes around the splice threshold.
 */
function randomRecords(rng: Rng): Made {
  const shape = rng.int(0, 5);
  const sizes = [0, 1, 61, 300, SPLICE_MIN_BYTES - 1, SPLICE_MIN_BYTES, SPLICE_MIN_BYTES + 1, 5000, 20000];
  const fill = (n: number) => {
    const b = Buffer.alloc(n); // never pooled: each group has an allocation of its own
    for (let i = 0; i < n; i++) b[i] = rng.int(0, 255);
    return b;
  };
  if (shape === 0) return { value: [], memory: [], spliced: 0 };
  if (shape === 1) {
    const b = fill(rng.pick(sizes));
    return { value: b, memory: [b.buffer], spliced: b.length >= SPLICE_MIN_BYTES ? b.length : 0 };
  }
  const slices: Buffer[] = [];
  const memory: ArrayBufferLike[] = [];
  let spliced = 0;
  for (let g = rng.int(1, 4); g > 0; g--) {
    const parts = Array.from({ length: rng.int(1, 4) }, () => rng.pick(sizes));
    const whole = fill(parts.reduce((a, b) => a + b, 0));
    let at = 0;
    for (const n of parts) {
      slices.push(whole.subarray(at, at + n));
      at += n;
    }
    memory.push(whole.buffer);
    if (whole.length >= SPLICE_MIN_BYTES) spliced += whole.length;
  }
  return { value: slices, memory, spliced };
}

/** Replaces every records field under `m` with random slices; returns what was put there. */
function withSlices(m: unknown, rng: Rng, made: Made[]): void {
  if (Array.isArray(m)) {
    for (const x of m) withSlices(x, rng, made);
    return;
  }
  if (m === null || typeof m !== 'object' || Buffer.isBuffer(m)) return;
  const o = m as Record<string, unknown>;
  for (const [k, x] of Object.entries(o)) {
    if (k === 'records' && x !== null && x !== undefined) {
      const r = randomRecords(rng);
      made.push(r);
      o[k] = r.value;
    } else withSlices(x, rng, made);
  }
}

/** The same message with every records value joined into one buffer (the copying path). */
function joined(m: unknown): unknown {
  if (Array.isArray(m)) return m.map(joined);
  if (m === null || typeof m !== 'object' || Buffer.isBuffer(m)) return m;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(m as Record<string, unknown>)) {
    out[k] = k === 'records' && x !== null && x !== undefined ? recordsBuffer(x as RecordsValue) : joined(x);
  }
  return out;
}

function randomResponse(apiKey: number, v: number, rng: Rng): { body: Record<string, unknown>; made: Made[] } {
  const name = apiKey === ApiKey.Fetch ? 'FetchResponse' : 'ShareFetchResponse';
  const schema = SCHEMA[name];
  if (schema === undefined) throw new Error(`no schema for ${name}`);
  for (;;) {
    const body = randomStruct(schema, schema.root, v, rng);
    const made: Made[] = [];
    withSlices(body, rng, made);
    if (made.length > 0 || rng.next() < 0.1) return { body, made };
  }
}

describe('zero-copy responses (records as stored slices)', () => {
  for (const apiKey of [ApiKey.Fetch, ApiKey.ShareFetch]) {
    const api = API_CODECS.get(apiKey);
    if (api === undefined) throw new Error(`no codec for API ${apiKey}`);
    it(`${api.name} v${api.minVersion}-${api.maxVersion}: the chunks are byte-identical to the joined-buffer encoding`, () => {
      const rng = new Rng(0x5eed + apiKey);
      let multiSlice = 0;
      let splicedRuns = 0;
      let nulls = 0;
      for (let v = api.minVersion; v <= api.maxVersion; v++) {
        for (let i = 0; i < 60; i++) {
          const { body, made } = randomResponse(apiKey, v, rng);
          const correlationId = rng.int(0, 1 << 30);
          const expected = encodeResponse(apiKey, v, correlationId, joined(body), { sizePrefix: true });
          const chunks = buffersOf(encodeResponseChunks(apiKey, v, correlationId, body, { sizePrefix: true }));
          const got = Buffer.concat(chunks);
          if (!got.equals(expected)) expect.fail(`${api.name} v${v} case ${i}: chunked encoding differs from the joined one`);
          // the copying path (gregor.fetch.zero.copy=false): the slices copied once by the plain encoder
          const copied = encodeResponse(apiKey, v, correlationId, body, { sizePrefix: true });
          if (!copied.equals(expected)) expect.fail(`${api.name} v${v} case ${i}: slices copied by the plain encoder differ`);
          // what reached the output by reference: exactly the runs of at least SPLICE_MIN_BYTES
          const memory = new Set(made.flatMap((m) => m.memory));
          const byReference = chunks.filter((c) => memory.has(c.buffer)).reduce((n, c) => n + c.length, 0);
          const spliced = made.reduce((n, m) => n + m.spliced, 0);
          expect(byReference, `${api.name} v${v} case ${i}: bytes passed by reference`).to.equal(spliced);
          if (spliced === 0) expect(chunks, 'nothing spliced: one buffer').to.have.length(1);
          // and what a client reads back is the records joined
          const decoded = decodeResponse(apiKey, v, got.subarray(4)).body;
          const diff = containsValue(joined(body), decoded);
          if (diff !== null) expect.fail(`${api.name} v${v} case ${i}: read back ${diff}`);
          multiSlice += made.filter((m) => !Buffer.isBuffer(m.value) && m.value.length > 1).length;
          splicedRuns += made.filter((m) => m.spliced > 0).length;
          nulls += countNullRecords(body);
        }
      }
      // the cases covered what they are meant to cover
      expect(multiSlice, 'multi-slice records').to.be.greaterThan(20);
      expect(splicedRuns, 'spliced records').to.be.greaterThan(20);
      if (apiKey === ApiKey.Fetch) expect(nulls, 'null records').to.be.greaterThan(0);
    });
  }

  it('a plain Writer copies records given as slices (as it copies one buffer)', () => {
    const a = Buffer.alloc(3000, 1);
    const slices = [a.subarray(0, 1000), a.subarray(1000), Buffer.from('xyz')];
    const w = Writer.alloc(4 + 3003);
    w.records(slices);
    const out = w.done();
    expect(out.readInt32BE(0)).to.equal(3003);
    expect(out.subarray(4).equals(Buffer.concat(slices))).to.equal(true);
    expect(out.buffer).to.not.equal(a.buffer);
  });

  describe('FileSlice records (sent from a file with sendfile)', () => {
    let dir: string;
    let fd: number;
    const content = Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i * 7 + 3) & 0xff));
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'gregor-slice-'));
      const file = join(dir, 'seg.log');
      writeFileSync(file, content);
      fd = openSync(file, 'r');
    });
    after(() => {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    });

    for (const v of [11, 12]) {
      it(`Fetch v${v}: a splicing writer passes the slice on as a chunk of its own; a plain one copies its bytes`, () => {
        const slice = new FileSlice(fd, 1000, 15_000, 3);
        const bytes = content.subarray(1000, 16_000);
        const expected = encodeResponse(ApiKey.Fetch, v, 5, oneFetchPartition(bytes, 9n), { sizePrefix: true });
        const chunks = encodeResponseChunks(ApiKey.Fetch, v, 5, oneFetchPartition(slice, 9n), { sizePrefix: true });
        // [size, header and fields up to the records] [the slice] [what follows the records]
        expect(chunks.filter((c) => c instanceof FileSlice)).to.deep.equal([slice]);
        expect(Buffer.isBuffer(chunks[0]), 'the response starts with bytes in memory').to.equal(true);
        const joinedChunks = Buffer.concat(chunks.map((c) => (c instanceof FileSlice ? c.read() : c)));
        expect(joinedChunks.equals(expected)).to.equal(true);
        expect(chunks.reduce((n, c) => n + c.length, 0)).to.equal(expected.length);
        // the plain encoder (gregor.fetch.zero.copy=false) reads the slice's bytes and copies them
        expect(encodeResponse(ApiKey.Fetch, v, 5, oneFetchPartition(slice, 9n), { sizePrefix: true }).equals(expected)).to.equal(true);
        takeSplicedBytes();
      });
    }

    it('records helpers read a FileSlice from its file; a slice past the end of the file throws', () => {
      const slice = new FileSlice(fd, 19_000, 1000, 1);
      expect(recordsLength(slice)).to.equal(1000);
      expect(recordsBuffer(slice).equals(content.subarray(19_000))).to.equal(true);
      expect(recordsSlices(slice).map((b) => b.toString('hex'))).to.deep.equal([content.subarray(19_000).toString('hex')]);
      expect(() => new FileSlice(fd, 19_500, 1000, 1).read()).to.throw(RangeError, /ends after 500/);
    });
  });

  it('a count of spliced bytes left by another size pass does not leak into the next chunked encoding', () => {
    const big = Buffer.alloc(8000, 7);
    const body = oneFetchPartition([big], 1n);
    // a size pass with nothing read after it (as the plain encoder leaves one)
    encodeResponse(ApiKey.Fetch, 11, 1, body, { sizePrefix: true });
    const chunks = buffersOf(encodeResponseChunks(ApiKey.Fetch, 11, 1, body, { sizePrefix: true }));
    expect(chunks.some((c) => c.buffer === big.buffer)).to.equal(true);
    expect(Buffer.concat(chunks).equals(encodeResponse(ApiKey.Fetch, 11, 1, body, { sizePrefix: true }))).to.equal(true);
    takeSplicedBytes();
  });
});

/** A Fetch v11/v12 answer for one partition whose records are `records`, at high watermark `hw`. */
function oneFetchPartition(records: RecordsValue, hw: bigint) {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [
      {
        topic: 't',
        topicId: '0'.repeat(32),
        partitions: [
          {
            partitionIndex: 0,
            errorCode: 0,
            highWatermark: hw,
            lastStableOffset: hw,
            logStartOffset: 0n,
            abortedTransactions: null,
            preferredReadReplica: -1,
            records,
          },
        ],
      },
    ],
  };
}

function countNullRecords(m: unknown): number {
  if (Array.isArray(m)) return m.reduce((n: number, x) => n + countNullRecords(x), 0);
  if (m === null || typeof m !== 'object' || Buffer.isBuffer(m)) return 0;
  let n = 0;
  for (const [k, x] of Object.entries(m as Record<string, unknown>)) n += k === 'records' && x === null ? 1 : countNullRecords(x);
  return n;
}
