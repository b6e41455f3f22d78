/**
 * Produce throughput over SSL and SASL_SSL against PLAINTEXT, side by side on one gregor (issue 18's
 * figure: TLS should cost at most 30% at 1 KB records). One child broker with PLAINTEXT, SSL and
 * SASL_SSL (PLAIN) listeners (PEM key store from `gregor dev certs`' code); librdkafka
 * (@confluentinc/kafka-javascript) produces TLS_RECORDS (default 200,000) 1 KB records, acks=1,
 * uncompressed, into a 1-partition topic per round; rounds go PLAINTEXT / SSL / SASL_SSL in turn,
 * TLS_ROUNDS (default 3) each. Figures: records/s and MB/s (medians), broker and client CPU-seconds per
 * round, and the SSL/PLAINTEXT and SASL_SSL/PLAINTEXT ratios.
 *
 *   npm run build && node dist/compat/bench/tls-throughput.js
 *
 * Writes compat/results/tls-throughput-<ISO timestamp>.json.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeDevCerts } from '../../lib/cli/commands/dev-certs.js';
import { startGregor } from '../lib/broker-process.js';
import { tempDir } from '../../test/helpers/broker.js';
import { RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { loadAverage, writeResult } from './eos-common.js';
import { confluentVersion, cpuSeconds, envInt, round, timedProduceRd } from './proc-stats.js';

const VALUE_SIZE = 1024;
const LISTENERS = ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
type Listener = (typeof LISTENERS)[number];

interface Round {
  listener: Listener;
  records: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
  brokerCpuSeconds: number;
  /** this process's CPU (librdkafka's threads run in it) */
  clientCpuSeconds: number;
}

async function produce(bootstrap: string, props: Record<string, string>, topic: string, n: number, pool: Buffer[]): Promise<number> {
  return timedProduceRd(bootstrap, props, topic, 0, n, (i) => pool[i % pool.length]!);
}

function listenerAddress(log: string, name: string): string {
  const m = new RegExp(`"listener":"${name}","host":"([^"]+)","port":(\\d+),"msg":"listening"`).exec(log);
  if (m === null) throw new Error(`no ${name} listener in the broker log`);
  return `${m[1] ?? ''}:${m[2] ?? ''}`;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const n = envInt('TLS_RECORDS', 200_000);
  const rounds = envInt('TLS_ROUNDS', 3);
  const certDir = tempDir('gregor-bench-certs-');
  const certs = makeDevCerts(join(certDir, 'c'), { host: 'localhost', clients: [], password: 'bench', days: 1 });
  const g = await startGregor({
    listeners: 'PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.brokerKeystorePem,
    'sasl.enabled.mechanisms': 'PLAIN',
    'listener.name.sasl_ssl.plain.sasl.jaas.config': 'org.apache.kafka.common.security.plain.PlainLoginModule required user_bench="bench";',
    'admin.listener': 'none',
  });
  try {
    const addr = {
      PLAINTEXT: listenerAddress(g.log(), 'PLAINTEXT'),
      SSL: listenerAddress(g.log(), 'SSL'),
      SASL_SSL: listenerAddress(g.log(), 'SASL_SSL'),
    };
    const ssl = { 'security.protocol': 'ssl', 'ssl.ca.location': certs.caCert };
    const props = {
      PLAINTEXT: {},
      SSL: ssl,
      SASL_SSL: { ...ssl, 'security.protocol': 'sasl_ssl', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'bench', 'sasl.password': 'bench' },
    };
    const pool = Array.from({ length: 256 }, () =>
      Buffer.from(Array.from({ length: VALUE_SIZE }, () => 65 + Math.floor(Math.random() * 26))),
    );
    const c = await RawClient.connect(addr.PLAINTEXT);
    const topics = Array.from({ length: rounds * LISTENERS.length + LISTENERS.length }, (_, i) => `tls-bench-${i}`);
    await rawCreateTopics(
      c,
      topics.map((name) => ({ name, partitions: 1 })),
    );
    c.destroy();
    // warm-up: one short run per listener (JIT, TLS session setup)
    for (const [i, l] of LISTENERS.entries()) await produce(addr[l], props[l], topics[i]!, 20_000, pool);
    const results: Round[] = [];
    for (let r = 0; r < rounds * LISTENERS.length; r++) {
      const listener = LISTENERS[r % LISTENERS.length]!;
      const cpu0 = cpuSeconds(g.pid);
      const u0 = process.cpuUsage();
      const secs = await produce(addr[listener], props[listener], topics[r + LISTENERS.length]!, n, pool);
      const cpu = cpuSeconds(g.pid) - cpu0;
      const u = process.cpuUsage(u0);
      const clientCpu = round((u.user + u.system) / 1e6, 2);
      results.push({
        listener,
        records: n,
        seconds: round(secs, 3),
        recordsPerSec: Math.round(n / secs),
        mbPerSec: round((n * VALUE_SIZE) / 1e6 / secs, 1),
        brokerCpuSeconds: round(cpu, 2),
        clientCpuSeconds: clientCpu,
      });
      console.log(
        `${listener}: ${Math.round(n / secs)} records/s, ${round((n * VALUE_SIZE) / 1e6 / secs, 1)} MB/s, broker ${round(cpu, 2)} CPU-s, client ${clientCpu} CPU-s`,
      );
    }
    const med = (l: string, k: 'recordsPerSec' | 'brokerCpuSeconds'): number =>
      median(results.filter((x) => x.listener === l).map((x) => x[k]));
    const summary = {
      plaintextRecordsPerSec: med('PLAINTEXT', 'recordsPerSec'),
      sslRecordsPerSec: med('SSL', 'recordsPerSec'),
      saslSslRecordsPerSec: med('SASL_SSL', 'recordsPerSec'),
      sslOverPlaintext: round(med('SSL', 'recordsPerSec') / med('PLAINTEXT', 'recordsPerSec'), 3),
      saslSslOverPlaintext: round(med('SASL_SSL', 'recordsPerSec') / med('PLAINTEXT', 'recordsPerSec'), 3),
      plaintextBrokerCpuSeconds: med('PLAINTEXT', 'brokerCpuSeconds'),
      sslBrokerCpuSeconds: med('SSL', 'brokerCpuSeconds'),
      saslSslBrokerCpuSeconds: med('SASL_SSL', 'brokerCpuSeconds'),
    };
    console.log(
      `medians: PLAINTEXT ${summary.plaintextRecordsPerSec} records/s, SSL ${summary.sslRecordsPerSec} (SSL/PLAINTEXT ${summary.sslOverPlaintext}), SASL_SSL ${summary.saslSslRecordsPerSec} (SASL_SSL/PLAINTEXT ${summary.saslSslOverPlaintext})`,
    );
    const file = writeResult('tls-throughput', new Date().toISOString(), {
      id: 'tls-throughput',
      client: `librdkafka (@confluentinc/kafka-javascript ${confluentVersion()})`,
      settings: {
        records: n,
        rounds,
        valueBytes: VALUE_SIZE,
        acks: 1,
        compression: 'none',
        partitions: 1,
        tls: 'PEM key store, RSA 2048, TLS 1.3 negotiated',
        sasl: 'SASL_SSL with PLAIN',
      },
      loadAverage: loadAverage(),
      node: process.version,
      summary,
      rounds: results,
    });
    console.log(`results in ${file}`);
  } finally {
    await g.stop();
    rmSync(certDir, { recursive: true, force: true });
  }
}

await main();
