/**
 * Values of ~1.5 KB produced in ~150-250 KB batches and read back with kcat: what the tests of the
 * Fetch and response paths (fetch-sendfile, direct-write) send, so that responses are large enough
 * to meet a small socket buffer.
 */
import type { Kafka } from 'kafkajs';
import { kcatProps } from './tls.js';
import { runKcat } from './kcat.js';

/** `n` values of ~1.5 KB, each naming its index, none holding a newline (kcat prints one per line). */
export function values(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}:${String.fromCharCode(97 + (i % 26)).repeat(1400 + (i % 200))}`);
}

/** Produces `vals` with kafkajs in sends of `perBatch` (one stored batch each: ~150-250 KB). */
export async function produceBatches(kafka: Kafka, topic: string, vals: string[], perBatch = 100): Promise<void> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < vals.length; i += perBatch) {
      await producer.send({ topic, messages: vals.slice(i, i + perBatch).map((value) => ({ value })) });
    }
  } finally {
    await producer.disconnect();
  }
}

/** The values of `topic` from the beginning, as kcat (librdkafka) reads them. */
export async function kcatValues(bootstrap: string, topic: string, props: Record<string, string> = {}): Promise<string[]> {
  const r = await runKcat(['-C', '-b', bootstrap, '-t', topic, '-e', '-o', 'beginning', '-q', '-f', '%s\\n', ...kcatProps(props)]);
  if (r.code !== 0) throw new Error(`kcat exited with ${r.code}: ${r.stderr}`);
  return r.stdout
    .toString()
    .split('\n')
    .filter((l) => l !== '');
}
