/**
 * The share-group row's client side for librdkafka 2.15 (KIP-932, `rd_kafka_share_*`): its share
 * consumer is C-only (@confluentinc/kafka-javascript 1.10.1 does not wrap it), so members are the C
 * program test/helpers/native/rdkafka-share.c built against the same bundled librdkafka. Each
 * member prints "R <partition> <offset> <delivery count> <ack>" per record (explicit ACCEPT here).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { buildRdkafkaProgram } from '../bench/native-build.js';
import { ROOT } from './paths.js';
import type { ShareGroupObservation, ShareGroupSpec } from './types.js';

export async function librdkafkaShareGroup(bootstrap: string, spec: ShareGroupSpec): Promise<ShareGroupObservation> {
  const binary = buildRdkafkaProgram(
    join(ROOT, 'test/helpers/native/rdkafka-share.c'),
    join(ROOT, 'dist/test/helpers/native/rdkafka-share'),
  );
  const members = Array.from({ length: spec.members }, () => {
    const child = spawn(binary, [bootstrap, spec.groupId, spec.topic, 'log_level=0'], { stdio: ['pipe', 'pipe', 'ignore'] });
    const offsets: number[] = [];
    const errors: string[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^R \d+ (\d+) (\d+) A$/.exec(line);
      if (m !== null) offsets.push(Number(m[1]));
      else if (line.startsWith('E ')) errors.push(line);
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    return { child, offsets, errors, exited };
  });
  const total = () => members.reduce((n, m) => n + m.offsets.length, 0);
  const deadline = Date.now() + spec.timeoutMs;
  try {
    while (total() < spec.expect && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  } finally {
    for (const m of members) m.child.stdin.end();
    await Promise.all(
      members.map(async (m) => {
        const kill = setTimeout(() => m.child.kill('SIGKILL'), 15000);
        await m.exited;
        clearTimeout(kill);
      }),
    );
  }
  return { accepted: members.map((m) => m.offsets), errors: members.flatMap((m) => m.errors) };
}
