/**
 * The C librdkafka producer of the KAFKA-3565 benchmark (compat/bench/native/rdkafka-produce.c):
 * compiled on first use with the machine's cc against the librdkafka that
 * scripts/setup-test-deps.sh builds inside @confluentinc/kafka-javascript, then driven over its
 * stdin/stdout line protocol so that CPU counters can be read exactly around the timed part.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { ROOT } from '../lib/paths.js';

const SOURCE = join(ROOT, 'compat/bench/native/rdkafka-produce.c');
const BINARY = join(ROOT, 'dist/compat/bench/native/rdkafka-produce');
const CKJS = join(ROOT, 'compat/clients/confluent/node_modules/@confluentinc/kafka-javascript');

/** The binary's path, compiling it when it is missing or older than its source. */
export function nativeProducerBinary(): string {
  const header = join(CKJS, 'deps/librdkafka/src/rdkafka.h');
  const libDir = join(CKJS, 'build/deps');
  if (!existsSync(header) || !existsSync(join(libDir, 'librdkafka.so'))) {
    throw new Error(`librdkafka is not built under ${CKJS}; run \`bash scripts/setup-test-deps.sh\` first`);
  }
  if (!existsSync(BINARY) || statSync(BINARY).mtimeMs < statSync(SOURCE).mtimeMs) {
    mkdirSync(join(BINARY, '..'), { recursive: true });
    execFileSync('cc', ['-O2', '-o', BINARY, SOURCE, `-I${join(CKJS, 'deps/librdkafka/src')}`, `-L${libDir}`, '-lrdkafka', `-Wl,-rpath,${libDir}`], { stdio: 'inherit' });
  }
  return BINARY;
}

/** A running C producer, stopped at its first "warm" line. */
export interface NativeProducer {
  pid: number;
  /** Starts the timed part; resolves with its seconds and the number of failed deliveries. */
  timed(): Promise<{ seconds: number; failed: number }>;
  /** Partition 0's high watermark, as the producer queried it after the timed part. */
  highWatermark(): Promise<number>;
  /** Lets the process exit (call after reading its thread counters). */
  end(): Promise<void>;
}

export async function startNativeProducer(bootstrap: string, topic: string, warmup: number, records: number, distinctValues: number, config: Record<string, string | number | boolean>): Promise<NativeProducer> {
  const args = [bootstrap, topic, String(warmup), String(records), String(distinctValues), ...Object.entries(config).map(([k, v]) => `${k}=${String(v)}`)];
  const child: ChildProcessWithoutNullStreams = spawn(nativeProducerBinary(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (prefix: string): Promise<string[]> => {
    const r = await lines.next();
    if (r.done === true || !r.value.startsWith(prefix)) {
      const code = await exited;
      throw new Error(`rdkafka-produce: expected "${prefix}", got ${r.done === true ? `exit ${code}` : JSON.stringify(r.value)}: ${stderr.trim()}`);
    }
    return r.value.split(' ').slice(1);
  };
  await next('warm');
  return {
    pid: child.pid as number,
    async timed() {
      child.stdin.write('go\n');
      const [seconds, failed] = await next('done');
      return { seconds: Number(seconds), failed: Number(failed) };
    },
    async highWatermark() {
      const [hw] = await next('hw');
      return Number(hw);
    },
    async end() {
      child.stdin.end('exit\n');
      const code = await exited;
      if (code !== 0) throw new Error(`rdkafka-produce exited ${code}: ${stderr.trim()}`);
    },
  };
}
