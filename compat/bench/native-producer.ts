/**
 * The C librdkafka programs of the benchmarks: compat/bench/native/rdkafka-produce.c (KAFKA-3565,
 * EOS cost, read_committed fill) and rdkafka-consume.c (read_committed): compiled on first use by
 * native-build.ts, then driven over their stdin/stdout line protocol so that CPU counters can be
 * read exactly around the timed part.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { ROOT } from '../lib/paths.js';
import { buildRdkafkaProgram } from './native-build.js';

/**
 * The throughput producer's settings, as KAFKA-3565's (acks set by each workload): 5 ms linger,
 * batches of up to 10,000 records / 1 MB, 5 requests in flight, no idempotence. Shared by
 * kafka-3565.ts, mock-vs-gregor.ts and produce-cpu.ts, so their figures compare.
 */
export const THROUGHPUT_PRODUCER_CONFIG = {
  'linger.ms': 5,
  'batch.num.messages': 10000,
  'batch.size': 1_000_000,
  'queue.buffering.max.messages': 1_000_000,
  'queue.buffering.max.kbytes': 1_048_576,
  'max.in.flight.requests.per.connection': 5,
  'enable.idempotence': false,
} as const;

/** The binary of compat/bench/native/<name>.c, compiled when it is missing or older than its sources. */
export function nativeBinary(name: 'rdkafka-produce' | 'rdkafka-consume'): string {
  return buildRdkafkaProgram(join(ROOT, `compat/bench/native/${name}.c`), join(ROOT, `dist/compat/bench/native/${name}`));
}

/** The producer's binary (kept for callers of the KAFKA-3565 name). */
export function nativeProducerBinary(): string {
  return nativeBinary('rdkafka-produce');
}

/** Options of rdkafka-produce beyond its positional arguments (see the C file's header). */
export interface NativeProducerOptions {
  /** value size in bytes (default 100) */
  valueBytes?: number;
  /** records go round-robin to partitions 0..P-1 (default 1: partition 0) */
  partitions?: number;
  /** with transactional.id in the config: commit once this many ms have passed since begin */
  txnMs?: number;
  /** with transactional.id: commit after this many records */
  txnRecords?: number;
  /** with transactions: every K-th one is flushed and aborted (its values start with '#') */
  abortEvery?: number;
}

/** What the timed part did. */
export interface NativeTimed {
  seconds: number;
  failed: number;
  /** transactions ended in the timed part (0 without transactions) */
  transactions: number;
  /** seconds spent inside commit/abort (flush of the transaction's records included) */
  commitSeconds: number;
  /** records produced in aborted transactions (timed part) */
  abortedRecords: number;
}

/** A running C producer, stopped at its first "warm" line. */
export interface NativeProducer {
  pid: number;
  /** Starts the timed part; resolves when it is over. */
  timed(): Promise<NativeTimed>;
  /** The sum of the partitions' high watermarks, as the producer queried it after the timed part. */
  highWatermark(): Promise<number>;
  /** The same, with the transaction markers the producer caused (call this or highWatermark, once). */
  watermarks(): Promise<{ highWatermark: number; controlRecords: number }>;
  /** Lets the process exit (call after reading its thread counters). */
  end(): Promise<void>;
}

/** A child speaking a line protocol: `next(prefix)` reads one line, which must start with prefix. */
function lineChild(binary: string, args: string[]) {
  const child: ChildProcessWithoutNullStreams = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const name = binary.split('/').pop() ?? binary;
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    child,
    async next(prefix: string): Promise<string[]> {
      const r = await lines.next();
      if (r.done === true || !r.value.startsWith(prefix)) {
        const code = await exited;
        throw new Error(
          `${name}: expected "${prefix}", got ${r.done === true ? `exit ${code}` : JSON.stringify(r.value)}: ${stderr.trim()}`,
        );
      }
      return r.value.split(' ').slice(1);
    },
    async end(): Promise<void> {
      if (child.exitCode === null) child.stdin.end('exit\n');
      const code = await exited;
      if (code !== 0) throw new Error(`${name} exited ${code}: ${stderr.trim()}`);
    },
  };
}

export async function startNativeProducer(
  bootstrap: string,
  topic: string,
  warmup: number,
  records: number,
  distinctValues: number,
  config: Record<string, string | number | boolean>,
  opts: NativeProducerOptions = {},
): Promise<NativeProducer> {
  const options = Object.entries({
    '--value-bytes': opts.valueBytes,
    '--partitions': opts.partitions,
    '--txn-ms': opts.txnMs,
    '--txn-records': opts.txnRecords,
    '--abort-every': opts.abortEvery,
  })
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${String(v)}`);
  const args = [
    bootstrap,
    topic,
    String(warmup),
    String(records),
    String(distinctValues),
    ...options,
    ...Object.entries(config).map(([k, v]) => `${k}=${String(v)}`),
  ];
  const c = lineChild(nativeBinary('rdkafka-produce'), args);
  await c.next('warm');
  let watermarks: Promise<{ highWatermark: number; controlRecords: number }> | undefined;
  const readWatermarks = () =>
    (watermarks ??= c.next('hw').then(([hw, control]) => ({ highWatermark: Number(hw), controlRecords: Number(control ?? 0) })));
  return {
    pid: c.child.pid as number,
    async timed() {
      c.child.stdin.write('go\n');
      const [seconds, failed, transactions, commitSeconds, abortedRecords] = await c.next('done');
      return {
        seconds: Number(seconds),
        failed: Number(failed),
        transactions: Number(transactions ?? 0),
        commitSeconds: Number(commitSeconds ?? 0),
        abortedRecords: Number(abortedRecords ?? 0),
      };
    },
    async highWatermark() {
      return (await readWatermarks()).highWatermark;
    },
    watermarks: readWatermarks,
    end: () => c.end(),
  };
}

/**
 * Untimed, before a fresh broker's first timed workload: `records` records with acks=1, then as many
 * with acks=all, into `topic` (one partition), so that the first timed produce workload is not billed
 * for what a fresh gregor pays once. Its first ~1M records of 100 bytes cost about twice the later
 * ones (0.45 vs 0.2 CPU-s per 1M, whichever acks comes first): the process grows by ~35 MB while the
 * malloc heap comes to hold the request buffers that live between two scavenges (~10,000 first-touch
 * page faults, each ~10 µs of system time on this VM, against ~1,300 per later 1M), and V8 tiers up
 * the per-request code. Both produce paths are primed, so neither order favours one.
 */
export async function primeProducePaths(
  bootstrap: string,
  topic: string,
  records: number,
  config: Record<string, string | number | boolean>,
  opts: NativeProducerOptions = {},
): Promise<void> {
  if (records <= 0) return;
  for (const acks of [1, -1]) {
    const p = await startNativeProducer(bootstrap, topic, 0, records, 1, { ...config, 'request.required.acks': acks }, opts);
    const r = await p.timed();
    await p.end();
    if (r.failed > 0) throw new Error(`priming with acks=${acks}: ${r.failed} records failed`);
  }
}

/** A running C consumer (rdkafka-consume.c), connected, waiting to assign. */
export interface NativeConsumer {
  pid: number;
  /**
   * Assigns every partition from the beginning and reads to the end of each. seconds: to the last
   * record delivered; secondsToEof: to the last partition EOF (librdkafka reports it once a fetch at
   * the end has come back empty, after fetch.wait.max.ms); secondsToFirst: to the first record delivered
   * (-1: none), what the start costs (connections, ListOffsets, the first fetches) before records flow.
   */
  timed(): Promise<{
    seconds: number;
    secondsToEof: number;
    secondsToFirst: number;
    records: number;
    valueBytes: number;
    markedRecords: number;
  }>;
  end(): Promise<void>;
}

export async function startNativeConsumer(
  bootstrap: string,
  topic: string,
  partitions: number,
  config: Record<string, string | number | boolean>,
): Promise<NativeConsumer> {
  const c = lineChild(nativeBinary('rdkafka-consume'), [
    bootstrap,
    topic,
    String(partitions),
    ...Object.entries(config).map(([k, v]) => `${k}=${String(v)}`),
  ]);
  await c.next('ready');
  return {
    pid: c.child.pid as number,
    async timed() {
      c.child.stdin.write('go\n');
      const [seconds, records, bytes, marked, toEof, toFirst] = await c.next('done');
      return {
        seconds: Number(seconds),
        secondsToEof: Number(toEof),
        secondsToFirst: Number(toFirst),
        records: Number(records),
        valueBytes: Number(bytes),
        markedRecords: Number(marked),
      };
    },
    end: () => c.end(),
  };
}
