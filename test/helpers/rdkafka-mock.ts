/**
 * librdkafka's mock cluster (rd_kafka_mock_cluster_new) as "another Kafka" for CLI tests, hosted by
 * test/helpers/native/rdkafka-mock.c: compiled on first use against the librdkafka that
 * scripts/setup-test-deps.sh builds inside compat/clients/confluent (as compat/bench/native-producer.ts does).
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PROJECT_ROOT } from './project.js';

const CKJS = join(PROJECT_ROOT, 'compat/clients/confluent/node_modules/@confluentinc/kafka-javascript');
const INCLUDE = join(CKJS, 'build/deps/include');
const LIB = join(CKJS, 'build/deps');

/** Why the mock cannot run here, or null when it can. */
export function rdkafkaMockMissing(): string | null {
  if (!existsSync(join(INCLUDE, 'librdkafka/rdkafka_mock.h')) || !existsSync(join(LIB, 'librdkafka.so'))) {
    return `librdkafka is not built under ${CKJS} (run \`bash scripts/setup-test-deps.sh\`)`;
  }
  return null;
}

function binary(): string {
  const source = join(PROJECT_ROOT, 'test/helpers/native/rdkafka-mock.c');
  const out = join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-mock');
  if (!existsSync(out) || statSync(out).mtimeMs < statSync(source).mtimeMs) {
    mkdirSync(join(out, '..'), { recursive: true });
    execFileSync('cc', ['-O1', '-o', out, source, `-I${INCLUDE}`, `-L${LIB}`, '-lrdkafka', `-Wl,-rpath,${LIB}`], { stdio: 'inherit' });
  }
  return out;
}

export interface RdkafkaMock {
  bootstrap: string;
  stop(): Promise<void>;
}

/** Starts a mock cluster of `brokers` with `topics` ("name:partitions"). */
export async function startRdkafkaMock(brokers: number, topics: string[]): Promise<RdkafkaMock> {
  const child: ChildProcessWithoutNullStreams = spawn(binary(), [String(brokers), ...topics], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const first = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  const line = first.done === true ? '' : first.value;
  if (!line.startsWith('bootstrap ')) {
    child.kill('SIGKILL');
    throw new Error(`rdkafka-mock did not start: ${JSON.stringify(line)} ${stderr}`);
  }
  return {
    bootstrap: line.slice('bootstrap '.length).trim(),
    async stop() {
      child.stdin.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
