/**
 * The fuzz model: a case is a stream of actions over a few connections (and bursts of short-lived
 * ones): frames sent whole or in pieces, pipelined copies, half-closes, resets and pauses. Frames are
 * valid requests of any API/version the broker advertises, the same with structural edits, headers
 * with any API key/version, Produce requests with broken record batches, raw garbage, TLS and HTTP.
 * Everything is plain data built by fast-check arbitraries, so a failure shrinks to a short stream.
 */
import fc from 'fast-check';
import { FUZZ_TOPIC } from './frames.js';

export type SizeLie = { kind: 'none' } | { kind: 'delta'; delta: number } | { kind: 'value'; value: number };

export type Edit =
  | { kind: 'flip'; pos: number; bit: number }
  | { kind: 'truncate'; pos: number }
  | { kind: 'insert'; pos: number; bytes: number[] }
  | { kind: 'int32'; pos: number; value: number }
  | { kind: 'int16'; pos: number; value: number }
  | { kind: 'varintOverflow'; pos: number }
  | { kind: 'taggedGarbage'; pos: number; section: readonly number[] };

export type BatchEdit =
  | { kind: 'none' }
  | { kind: 'crc' }
  | { kind: 'batchLength'; value: number }
  | { kind: 'magic'; value: number }
  | { kind: 'attributes'; value: number; recrc: boolean }
  | { kind: 'recordCount'; value: number; recrc: boolean }
  | { kind: 'lastOffsetDelta'; value: number; recrc: boolean }
  | { kind: 'payloadFlip'; pos: number; recrc: boolean }
  | { kind: 'truncate'; keep: number }
  | { kind: 'twice' };

export type FrameSpec =
  | { kind: 'valid'; apiKey: number; version: number; seed: number }
  | { kind: 'mutated'; apiKey: number; version: number; seed: number; edits: Edit[]; lie: SizeLie }
  | { kind: 'header'; apiKey: number; version: number; flexibleHeader: boolean; body: number[]; lie: SizeLie }
  | {
      kind: 'produce';
      version: number;
      acks: number;
      topic: string;
      partition: number;
      seed: number;
      records: number;
      compression: number;
      edit: BatchEdit;
    }
  | { kind: 'garbage'; bytes: number[] }
  | { kind: 'tls' }
  | { kind: 'http' };

export type Action =
  | { op: 'send'; conn: number; frame: FrameSpec; chunks: number }
  | { op: 'pipeline'; conn: number; frame: FrameSpec; count: number }
  | { op: 'halfClose'; conn: number }
  | { op: 'reset'; conn: number }
  | { op: 'pause'; ms: number }
  | { op: 'burst'; n: number; frame: FrameSpec; keep: number; end: boolean }
  | { op: 'sasl'; frames: FrameSpec[] };

export interface FuzzCase {
  actions: Action[];
}

/** An API the broker advertises, with its version range (from its ApiVersions answer). */
export interface ApiRange {
  apiKey: number;
  min: number;
  max: number;
}

/** The connections a case uses (0..CONNECTIONS-1, opened on first use, reopened after a reset). */
export const CONNECTIONS = 4;

const apiVersion = (apis: readonly ApiRange[]): fc.Arbitrary<{ apiKey: number; version: number }> =>
  fc.constantFrom(...apis).chain((a) => fc.integer({ min: a.min, max: a.max }).map((version) => ({ apiKey: a.apiKey, version })));

const INT32_LIES = [0x7fffffff, -1, -2147483648, 0x10000000, 0xffff, 1 << 24];
const INT16_LIES = [0x7fff, -1, -32768, 0x100];

const sizeLie: fc.Arbitrary<SizeLie> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<SizeLie>({ kind: 'none' }) },
  { weight: 2, arbitrary: fc.integer({ min: -64, max: 64 }).map((delta): SizeLie => ({ kind: 'delta', delta })) },
  { weight: 1, arbitrary: fc.constantFrom(...INT32_LIES, 0, 1, 7).map((value): SizeLie => ({ kind: 'value', value })) },
);

const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), pos: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('truncate' as const), pos: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), pos: fc.nat(), bytes: fc.array(fc.nat(255), { minLength: 1, maxLength: 8 }) }),
  fc.record({ kind: fc.constant('int32' as const), pos: fc.nat(), value: fc.constantFrom(...INT32_LIES) }),
  fc.record({ kind: fc.constant('int16' as const), pos: fc.nat(), value: fc.constantFrom(...INT16_LIES) }),
  fc.record({ kind: fc.constant('varintOverflow' as const), pos: fc.nat() }),
  fc.record({
    kind: fc.constant('taggedGarbage' as const),
    pos: fc.nat(),
    section: fc.constantFrom<readonly number[]>(
      [0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x07], // one tag claiming 2^31-1 bytes
      [0x02, 0x05, 0x01, 0x00, 0x03, 0x01, 0x00], // tags out of order
      [0x02, 0x03, 0x01, 0x00, 0x03, 0x01, 0x00], // a tag twice
      [0xff, 0xff, 0xff, 0xff, 0x0f], // 2^32-1 tags
      [0x01, 0x00, 0x04, 0xff, 0xff, 0xff, 0xff], // tag 0 with four bytes of garbage
      [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01], // varint overflow in the count
    ),
  }),
);

const batchEdit: fc.Arbitrary<BatchEdit> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<BatchEdit>({ kind: 'none' }) },
  fc.constant<BatchEdit>({ kind: 'crc' }),
  fc.record({ kind: fc.constant('batchLength' as const), value: fc.constantFrom(-1, 0, 12, 48, 60, 0x7fffffff, 1 << 20) }),
  fc.record({ kind: fc.constant('magic' as const), value: fc.constantFrom(-1, 0, 1, 3, 127) }),
  fc.record({
    kind: fc.constant('attributes' as const),
    value: fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 0x10, 0x20, 0x30, -1),
    recrc: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('recordCount' as const), value: fc.constantFrom(-1, 0, 2, 1000, 0x7fffffff), recrc: fc.boolean() }),
  fc.record({ kind: fc.constant('lastOffsetDelta' as const), value: fc.constantFrom(-1, 0, 5, 0x7fffffff), recrc: fc.boolean() }),
  fc.record({ kind: fc.constant('payloadFlip' as const), pos: fc.nat(), recrc: fc.boolean() }),
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.constant<BatchEdit>({ kind: 'twice' }),
);

const produce = (versions: readonly ApiRange[]): fc.Arbitrary<FrameSpec> => {
  const p = versions.find((a) => a.apiKey === 0);
  // record batches (magic 2) need Produce v3+
  const min = Math.max(3, p?.min ?? 3);
  const max = p?.max ?? 9;
  return fc.record({
    kind: fc.constant('produce' as const),
    version: fc.integer({ min, max }),
    acks: fc.constantFrom(-1, 1, 1, 0, 2),
    topic: fc.constantFrom(FUZZ_TOPIC, FUZZ_TOPIC, 'fuzz-auto', ''),
    partition: fc.constantFrom(0, 1, 0, -1, 7),
    seed: fc.nat(),
    records: fc.integer({ min: 0, max: 12 }),
    compression: fc.constantFrom(0, 0, 1, 2, 3, 4),
    edit: batchEdit,
  });
};

export function frameArb(apis: readonly ApiRange[]): fc.Arbitrary<FrameSpec> {
  const av = apiVersion(apis);
  return fc.oneof(
    { weight: 5, arbitrary: fc.tuple(av, fc.nat()).map(([a, seed]): FrameSpec => ({ kind: 'valid', ...a, seed })) },
    {
      weight: 5,
      arbitrary: fc
        .tuple(av, fc.nat(), fc.array(edit, { minLength: 1, maxLength: 3 }), sizeLie)
        .map(([a, seed, edits, lie]): FrameSpec => ({ kind: 'mutated', ...a, seed, edits, lie })),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('header' as const),
        apiKey: fc.oneof(fc.integer({ min: -32768, max: 32767 }), fc.constantFrom(...apis.map((a) => a.apiKey), 1000, -1)),
        version: fc.oneof(fc.integer({ min: -32768, max: 32767 }), fc.integer({ min: -1, max: 20 })),
        flexibleHeader: fc.boolean(),
        body: fc.array(fc.nat(255), { maxLength: 64 }),
        lie: sizeLie,
      }),
    },
    { weight: 4, arbitrary: produce(apis) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('garbage' as const), bytes: fc.array(fc.nat(255), { minLength: 1, maxLength: 256 }) }),
    },
    { weight: 1, arbitrary: fc.constantFrom<FrameSpec>({ kind: 'tls' }, { kind: 'http' }) },
  );
}

export function caseArb(apis: readonly ApiRange[], opts: { sasl: boolean }): fc.Arbitrary<FuzzCase> {
  const frame = frameArb(apis);
  const conn = fc.integer({ min: 0, max: CONNECTIONS - 1 });
  const valid = fc.oneof(
    apiVersion(apis).chain((a) => fc.nat().map((seed): FrameSpec => ({ kind: 'valid', ...a, seed }))),
    produce(apis),
  );
  const actions: fc.Arbitrary<Action>[] = [
    fc.record({ op: fc.constant('send' as const), conn, frame, chunks: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 6 })) }),
    fc.record({ op: fc.constant('pipeline' as const), conn, frame: valid, count: fc.integer({ min: 2, max: 64 }) }),
    fc.record({ op: fc.constant('halfClose' as const), conn }),
    fc.record({ op: fc.constant('reset' as const), conn }),
    fc.record({ op: fc.constant('pause' as const), ms: fc.integer({ min: 0, max: 30 }) }),
    fc.record({ op: fc.constant('burst' as const), n: fc.integer({ min: 2, max: 60 }), frame: valid, keep: fc.nat(), end: fc.boolean() }),
  ];
  if (opts.sasl) actions.push(fc.record({ op: fc.constant('sasl' as const), frames: fc.array(frame, { minLength: 1, maxLength: 3 }) }));
  const weighted = actions.map((arbitrary, i) => ({ arbitrary, weight: i === 0 ? 8 : i === 1 ? 2 : 1 }));
  return fc.record({ actions: fc.array(fc.oneof(...weighted), { minLength: 1, maxLength: 12 }) });
}
