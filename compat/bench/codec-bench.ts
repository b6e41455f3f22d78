/**
 * Protocol codec benchmark: gregor's codec against kafkajs 2.2.4's own protocol code, on the same
 * messages. Not a test: it prints a table and writes compat/results/codec-<timestamp>.json.
 *
 *   1. produce-encode: a whole Produce v7 request frame (acks 1, size prefix included) carrying one
 *      uncompressed v2 batch of RECORDS records in one partition.
 *        gregor  = buildRecordBatch + encodeRequest
 *        kafkajs = produce v7 request encode() (builds the batch) + its request-frame wrapper
 *   2. fetch-decode: a Fetch v11 response with one partition holding one batch of the same records.
 *        gregor  = decodeResponse + decodeRecords (CRC checked, every record materialised)
 *        kafkajs = fetch v11 response decode() + parse() (decodes the batch into messages; no CRC check)
 *
 * Both sides run interleaved in one process (alternating which goes first) after a warm-up; each
 * figure is the median ops/s over ROUNDS rounds of ROUND_MS each.
 *
 * Environment knobs: BENCH_ROUNDS, BENCH_ROUND_MS, BENCH_WARMUP_MS.
 */
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../protocol/frame.js';
import type { FetchResponse } from '../../protocol/generated/fetch.js';
import type { ProduceRequest } from '../../protocol/generated/produce.js';
import { buildRecordBatch, decodeRecords } from '../../protocol/records/index.js';
import type { BuildBatchOptions, Record, RecordInput } from '../../protocol/records/index.js';

// ---------------------------------------------------------------------------------------------
// kafkajs internals (CommonJS, untyped): just the shapes we use.

interface KjsEncoder {
  readonly buffer: Buffer;
}
interface KjsMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers: { [key: string]: Buffer };
  timestamp: number;
}
interface KjsProduceRequest {
  apiKey: number;
  apiVersion: number;
  encode(): Promise<KjsEncoder>;
}
type KjsProduceV7 = (args: {
  acks: number;
  timeout: number;
  transactionalId: string | null;
  topicData: { topic: string; partitions: { partition: number; firstSequence?: number; messages: KjsMessage[] }[] }[];
}) => KjsProduceRequest;
type KjsRequestFrame = (args: { correlationId: number; clientId: string; request: KjsProduceRequest }) => Promise<KjsEncoder>;
interface KjsDecodedMessage {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: { [key: string]: Buffer | Buffer[] };
}
interface KjsFetchV11 {
  responses: { topicName: string; partitions: { partition: number; messages: KjsDecodedMessage[] }[] }[];
}
interface KjsFetchV11Response {
  decode(raw: Buffer): Promise<KjsFetchV11>;
  parse(data: KjsFetchV11): Promise<KjsFetchV11>;
}
type KjsDecoderCtor = new (buf: Buffer) => unknown;
type KjsRecordBatchDecoder = (decoder: unknown) => Promise<{ records: KjsDecodedMessage[] }>;

const require = createRequire(import.meta.url);
const kjsProduceV7 = require('kafkajs/src/protocol/requests/produce/v7/request.js') as KjsProduceV7;
const kjsRequestFrame = require('kafkajs/src/protocol/request.js') as KjsRequestFrame;
const kjsFetchV11 = require('kafkajs/src/protocol/requests/fetch/v11/response.js') as KjsFetchV11Response;
const KjsDecoder = require('kafkajs/src/protocol/decoder.js') as KjsDecoderCtor;
const kjsRecordBatchDecoder = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as KjsRecordBatchDecoder;
const kjsVersion = (require('kafkajs/package.json') as { version: string }).version;

// ---------------------------------------------------------------------------------------------
// The workload.

const RECORDS = 1000;
const VALUE_BYTES = 100;
const TOPIC = 'bench-topic';
const PARTITION = 3;
const CLIENT_ID = 'codec-bench';
const BASE_TS = 1_700_000_000_000;
const PRODUCE = 0;
const FETCH = 1;

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 10);
const ROUND_MS = Number(process.env['BENCH_ROUND_MS'] ?? 500);
const WARMUP_MS = Number(process.env['BENCH_WARMUP_MS'] ?? 4000);

/** Deterministic pseudo-random bytes (xorshift32). */
function bytes(n: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}

interface Source {
  key: Buffer;
  value: Buffer;
  headerKey: string;
  headerValue: Buffer;
  timestamp: number;
}

const sources: Source[] = [];
for (let i = 0; i < RECORDS; i++) {
  sources.push({
    key: Buffer.from(`key-${String(i).padStart(6, '0')}`),
    value: bytes(VALUE_BYTES, i + 1),
    headerKey: 'trace-id',
    headerValue: bytes(16, 100_000 + i),
    timestamp: BASE_TS + i,
  });
}

/** Each library's native input form, prepared once (conversion is not timed). */
const ourRecords: RecordInput[] = sources.map((s) => ({
  key: s.key,
  value: s.value,
  timestamp: BigInt(s.timestamp),
  headers: [{ key: s.headerKey, value: s.headerValue }],
}));
const kjsMessages: KjsMessage[] = sources.map((s) => ({
  key: s.key,
  value: s.value,
  headers: { [s.headerKey]: s.headerValue },
  timestamp: s.timestamp,
}));

/** Batch fields set to what kafkajs writes for a non-idempotent producer, so both frames can match byte for byte. */
const batchOpts: BuildBatchOptions = { partitionLeaderEpoch: 0, producerId: -1n, producerEpoch: 0, baseSequence: 0 };

const correlationId = 1;

function oursEncodeProduce(): Buffer {
  const batch = buildRecordBatch(ourRecords, batchOpts);
  const body: ProduceRequest = {
    transactionalId: null,
    acks: 1,
    timeoutMs: 30000,
    topicData: [{ name: TOPIC, partitionData: [{ index: PARTITION, records: batch }] }],
  };
  return encodeRequest({ apiKey: PRODUCE, apiVersion: 7, correlationId, clientId: CLIENT_ID }, body, { sizePrefix: true });
}

async function kjsEncodeProduce(): Promise<Buffer> {
  const request = kjsProduceV7({
    acks: 1,
    timeout: 30000,
    transactionalId: null,
    topicData: [{ topic: TOPIC, partitions: [{ partition: PARTITION, messages: kjsMessages }] }],
  });
  const frame = await kjsRequestFrame({ correlationId, clientId: CLIENT_ID, request });
  return frame.buffer;
}

const MAX_OUTPUT = 64 * 1024 * 1024;

/** Response frame (correlation id + body, no size prefix) built once with our encoder. */
const fetchBatch = buildRecordBatch(ourRecords, { ...batchOpts, baseOffset: 5000n });
const fetchBody: FetchResponse = {
  throttleTimeMs: 0,
  errorCode: 0,
  sessionId: 0,
  responses: [
    {
      topic: TOPIC,
      partitions: [
        {
          partitionIndex: PARTITION,
          errorCode: 0,
          highWatermark: 6000n,
          lastStableOffset: 6000n,
          logStartOffset: 0n,
          abortedTransactions: [],
          preferredReadReplica: -1,
          records: fetchBatch,
        },
      ],
    },
  ],
};
const fetchFrame = encodeResponse(FETCH, 11, 42, fetchBody);
/** kafkajs's connection hands decode() the bytes after the correlation id. */
const fetchPayload = fetchFrame.subarray(4);

function oursDecodeFetch(): number {
  const res = decodeResponse(FETCH, 11, fetchFrame).body as FetchResponse;
  let total = 0;
  for (const t of res.responses) {
    for (const p of t.partitions) {
      if (p.records === null) continue;
      const { records } = decodeRecords(p.records, { maxOutput: MAX_OUTPUT });
      for (const r of records) total += (r.value?.length ?? 0) + (r.key?.length ?? 0) + r.headers.length;
    }
  }
  return total;
}

async function kjsDecodeFetch(): Promise<number> {
  const res = await kjsFetchV11.parse(await kjsFetchV11.decode(fetchPayload));
  let total = 0;
  for (const t of res.responses) {
    for (const p of t.partitions) {
      for (const m of p.messages) total += (m.value?.length ?? 0) + (m.key?.length ?? 0) + Object.keys(m.headers).length;
    }
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Verification (once, before timing).

function fail(message: string): never {
  throw new Error(`verification failed: ${message}`);
}

function expectRecords(
  label: string,
  got: { key: Buffer | null; value: Buffer | null; headers: Array<[string, Buffer | null]>; timestamp: string; offset: string }[],
  baseOffset: bigint,
): void {
  if (got.length !== RECORDS) fail(`${label}: ${got.length} records, expected ${RECORDS}`);
  got.forEach((r, i) => {
    const s = sources[i];
    if (s === undefined) fail(`${label}: no source ${i}`);
    if (r.key === null || !r.key.equals(s.key)) fail(`${label}: record ${i} key differs`);
    if (r.value === null || !r.value.equals(s.value)) fail(`${label}: record ${i} value differs`);
    const h = r.headers;
    if (h.length !== 1 || h[0]?.[0] !== s.headerKey || h[0][1] === null || !h[0][1].equals(s.headerValue))
      fail(`${label}: record ${i} header differs`);
    if (r.timestamp !== String(s.timestamp)) fail(`${label}: record ${i} timestamp ${r.timestamp}`);
    if (r.offset !== String(baseOffset + BigInt(i))) fail(`${label}: record ${i} offset ${r.offset}`);
  });
}

const fromOurs = (rs: Record[]) =>
  rs.map((r) => ({
    key: r.key,
    value: r.value,
    headers: r.headers.map((h): [string, Buffer | null] => [h.key, h.value]),
    timestamp: String(r.timestamp),
    offset: String(r.offset),
  }));
const fromKjs = (ms: KjsDecodedMessage[]) =>
  ms.map((m) => ({
    key: m.key,
    value: m.value,
    headers: Object.entries(m.headers).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x): [string, Buffer | null] => [k, x])),
    timestamp: m.timestamp,
    offset: m.offset,
  }));

/** Records of a produce request frame (size prefix included), decoded with our codec. */
function recordsOfProduceFrame(frame: Buffer): Record[] {
  if (frame.readInt32BE(0) !== frame.length - 4) fail('size prefix does not match the frame length');
  const req = decodeRequest(frame.subarray(4));
  if (req.header.apiKey !== PRODUCE || req.header.apiVersion !== 7 || req.header.clientId !== CLIENT_ID) fail('request header');
  const body = req.body as ProduceRequest;
  if (body.acks !== 1 || body.topicData.length !== 1 || body.topicData[0]?.name !== TOPIC) fail('produce body');
  const part = body.topicData[0].partitionData;
  if (part.length !== 1 || part[0]?.index !== PARTITION || part[0].records === null) fail('produce partition');
  return decodeRecords(part[0].records, { maxOutput: MAX_OUTPUT }).records;
}

async function verify(): Promise<{ identicalProduceFrames: boolean; produceFrameBytes: number; fetchFrameBytes: number }> {
  const ours = oursEncodeProduce();
  const theirs = await kjsEncodeProduce();
  // kafkajs's frame through our decoder (CRC checked too).
  expectRecords('kafkajs produce frame decoded by gregor', fromOurs(recordsOfProduceFrame(theirs)), 0n);
  // Our frame through our decoder, and our batch through kafkajs's record-batch decoder.
  expectRecords('gregor produce frame decoded by gregor', fromOurs(recordsOfProduceFrame(ours)), 0n);
  const ourBatch = (decodeRequest(ours.subarray(4)).body as ProduceRequest).topicData[0]?.partitionData[0]?.records ?? fail('no records');
  const kjsBatch = await kjsRecordBatchDecoder(new KjsDecoder(ourBatch));
  expectRecords('gregor produce batch decoded by kafkajs', fromKjs(kjsBatch.records), 0n);
  const identicalProduceFrames = ours.equals(theirs);

  // Fetch: both sides see the same records.
  const oursRes = decodeResponse(FETCH, 11, fetchFrame).body as FetchResponse;
  const oursRecs = decodeRecords(oursRes.responses[0]?.partitions[0]?.records ?? fail('no fetch records'), {
    maxOutput: MAX_OUTPUT,
  }).records;
  expectRecords('fetch decoded by gregor', fromOurs(oursRecs), 5000n);
  const kjsRes = await kjsFetchV11.parse(await kjsFetchV11.decode(fetchPayload));
  expectRecords('fetch decoded by kafkajs', fromKjs(kjsRes.responses[0]?.partitions[0]?.messages ?? fail('no kafkajs messages')), 5000n);
  if (oursDecodeFetch() !== (await kjsDecodeFetch())) fail('fetch checksums differ');
  return { identicalProduceFrames, produceFrameBytes: ours.length, fetchFrameBytes: fetchFrame.length };
}

// ---------------------------------------------------------------------------------------------
// Timing.

type Op = () => unknown;
let sink = 0;

/** Runs `op` for about `ms` milliseconds; returns ops/s. Async ops are awaited one at a time. */
async function measure(op: Op, ms: number): Promise<number> {
  const budget = BigInt(Math.round(ms * 1e6));
  const start = process.hrtime.bigint();
  let n = 0;
  let elapsed: bigint;
  do {
    const v = op();
    const out = v instanceof Promise ? await v : v;
    if (Buffer.isBuffer(out)) sink += out.length;
    else if (typeof out === 'number') sink += out;
    n++;
    elapsed = process.hrtime.bigint() - start;
  } while (elapsed < budget);
  return (n * 1e9) / Number(elapsed);
}

interface Pair {
  name: string;
  description: string;
  ours: Op;
  kafkajs: Op;
}

const pairs: Pair[] = [
  {
    name: 'produce-encode',
    description: `Produce v7 request frame, ${RECORDS} records x ${VALUE_BYTES}-byte values, 1 header each, 1 partition, uncompressed`,
    ours: oursEncodeProduce,
    kafkajs: kjsEncodeProduce,
  },
  {
    name: 'fetch-decode',
    description: `Fetch v11 response, 1 partition, 1 batch of ${RECORDS} records, every record materialised`,
    ours: oursDecodeFetch,
    kafkajs: kjsDecodeFetch,
  },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

async function main(): Promise<void> {
  const check = await verify();
  console.log(
    `verified: both produce frames decode to the same ${RECORDS} records (byte-identical frames: ${check.identicalProduceFrames}); ` +
      `both fetch decoders see the same ${RECORDS} records`,
  );

  // Warm-up: each op, interleaved, so both get optimised before any round counts.
  const warmSlice = WARMUP_MS / 4 / 4;
  for (let i = 0; i < 4; i++) {
    for (const p of pairs) {
      await measure(p.ours, warmSlice);
      await measure(p.kafkajs, warmSlice);
    }
  }

  const samples = new Map<string, { ours: number[]; kafkajs: number[] }>(pairs.map((p) => [p.name, { ours: [], kafkajs: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const p of pairs) {
      const s = samples.get(p.name) ?? fail('samples');
      // Alternate which side goes first so neither always runs right after the other's garbage.
      if (round % 2 === 0) {
        s.ours.push(await measure(p.ours, ROUND_MS));
        s.kafkajs.push(await measure(p.kafkajs, ROUND_MS));
      } else {
        s.kafkajs.push(await measure(p.kafkajs, ROUND_MS));
        s.ours.push(await measure(p.ours, ROUND_MS));
      }
    }
  }

  const results = pairs.map((p) => {
    const s = samples.get(p.name) ?? fail('samples');
    const ours = median(s.ours);
    const kafkajs = median(s.kafkajs);
    return {
      name: p.name,
      description: p.description,
      oursOpsPerSec: Math.round(ours),
      kafkajsOpsPerSec: Math.round(kafkajs),
      ratio: Number((ours / kafkajs).toFixed(2)),
      /** Median of the per-round ratios (each round runs both sides back to back): less sensitive to drifting load. */
      medianRoundRatio: Number(median(s.ours.map((x, i) => x / (s.kafkajs[i] ?? NaN))).toFixed(2)),
      recordsPerSec: { ours: Math.round(ours * RECORDS), kafkajs: Math.round(kafkajs * RECORDS) },
      rounds: {
        ours: s.ours.map((x) => Math.round(x)),
        kafkajs: s.kafkajs.map((x) => Math.round(x)),
      },
    };
  });

  const cpus = os.cpus();
  const report = {
    benchmark: 'codec',
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    availableParallelism: os.availableParallelism(),
    kafkajs: kjsVersion,
    settings: { records: RECORDS, valueBytes: VALUE_BYTES, rounds: ROUNDS, roundMs: ROUND_MS, warmupMs: WARMUP_MS },
    verification: check,
    goalRatio: 3,
    results,
  };

  const pad = (s: string, n: number) => s.padStart(n);
  console.log(`\nnode ${report.node} | ${report.os} | ${report.cpuModel} x${report.cores} | kafkajs ${kjsVersion}`);
  console.log(`median of ${ROUNDS} rounds x ${ROUND_MS} ms, ${RECORDS} records per op\n`);
  console.log(
    `${'benchmark'.padEnd(16)}${pad('gregor ops/s', 14)}${pad('kafkajs ops/s', 15)}${pad('ratio', 8)}${pad('round ratio', 13)}  (goal >= 3x)`,
  );
  for (const r of results) {
    console.log(
      `${r.name.padEnd(16)}${pad(r.oursOpsPerSec.toLocaleString('en-US'), 14)}${pad(r.kafkajsOpsPerSec.toLocaleString('en-US'), 15)}` +
        `${pad(`${r.ratio.toFixed(2)}x`, 8)}${pad(`${r.medianRoundRatio.toFixed(2)}x`, 13)}`,
    );
  }

  const here = path.dirname(fileURLToPath(import.meta.url));
  // dist/compat/bench -> repo root
  const root = path.resolve(here, '..', '..', '..');
  const dir = path.join(root, 'compat', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `codec-${report.date.replace(/:/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${path.relative(root, file)}${sink === 0 ? ' ' : ''}`);
}

await main();
