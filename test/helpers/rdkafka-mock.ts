/**
 * librdkafka's mock cluster (rd_kafka_mock_cluster_new) as "another Kafka" for CLI tests, hosted by
 * test/helpers/native/rdkafka-mock.c: compiled on first use, with the C code it shares with the
 * benchmarks' programs, by compat/bench/native-build.ts.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { buildRdkafkaProgram, librdkafkaMissing } from '../../compat/bench/native-build.js';
import { PROJECT_ROOT } from './project.js';

/** Why the mock cannot run here, or null when it can. */
export function rdkafkaMockMissing(): string | null {
  return librdkafkaMissing();
}

function binary(): string {
  return buildRdkafkaProgram(
    join(PROJECT_ROOT, 'test/helpers/native/rdkafka-mock.c'),
    join(PROJECT_ROOT, 'dist/test/helpers/native/rdkafka-mock'),
  );
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
