/**
 * Values of ~1.5 KB produced in ~150-250 KB batches and read back with kcat, and the PLAINTEXT + SSL
 * broker they go to: what the tests of the Fetch and response paths (fetch-sendfile, direct-write)
 * use, so that responses are large enough to meet a small socket buffer.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { ConfigValue } from '../../lib/config.js';
import type { Cleanup } from './cleanup.js';
import { runKcat } from './kcat.js';
import { devCerts, kcatProps, pemSslConfig, removeCerts, startTlsBroker, type DevCertFiles, type TlsBroker } from './tls.js';

/**
 * A broker with a PLAINTEXT and an SSL listener (certificates for a client `app`) and `config`, and a
 * kafkajs client of its PLAINTEXT listener; `cleanup` stops the broker and removes the certificates.
 */
export async function plainAndSslBroker(
  cleanup: Cleanup,
  config: Record<string, string | ConfigValue>,
  clientId: string,
): Promise<{ certs: DevCertFiles; b: TlsBroker; kafka: Kafka }> {
  const certs = cleanup.add(devCerts(['app']), removeCerts);
  const b = cleanup.add(await startTlsBroker({ ...pemSslConfig(certs), ...config }), (x) => x.stop());
  return { certs, b, kafka: new Kafka({ brokers: [b.plain], clientId, logLevel: logLevel.NOTHING }) };
}

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
