/**
 * Issue 18's figure: produce and consume throughput over SSL and SASL_SSL against PLAINTEXT, side by
 * side on one gregor (TLS should cost at most 30% at 1 KB records), and the connections per second a
 * TLS listener accepts. One child broker with PLAINTEXT, SSL and SASL_SSL (PLAIN) listeners (PEM key
 * store from `gregor dev certs`' code, RSA 2048).
 *
 * Throughput: librdkafka (@confluentinc/kafka-javascript) produces TLS_RECORDS (default 200,000) 1 KB
 * records, acks=1, uncompressed, into a 1-partition topic per round, then a fresh consumer reads them
 * back from offset 0 over the same listener; rounds go PLAINTEXT / SSL / SASL_SSL in turn, TLS_ROUNDS
 * (default 3) each. Connections: TLS_CONN_CONCURRENCY (default 8) loops in this process open a
 * connection (full TLS handshake, no session resumption), send one ApiVersions request, read its
 * response and close, for TLS_CONN_SECONDS (default 5) on PLAINTEXT and SSL (TLS_CONN_SECONDS=0: none).
 * Figures: records/s and MB/s (medians), broker and client CPU-seconds per round, the
 * SSL/PLAINTEXT and SASL_SSL/PLAINTEXT ratios, connections/s with broker CPU per connection.
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
import { confluentVersion, cpuSeconds, envInt, round, timedConsumeRd, timedProduceRd } from './proc-stats.js';
import { connectionRate, type ConnectionRate } from './tls-connect-rate.js';

const VALUE_SIZE = 1024;
const ALL_LISTENERS = ['PLAINTEXT', 'SSL', 'SASL_SSL'] as const;
type Listener = (typeof ALL_LISTENERS)[number];
/** TLS_LISTENERS=SSL (a comma list) runs only those rounds: for profiling one listener (the ratios need PLAINTEXT) */
const LISTENERS: readonly Listener[] = ALL_LISTENERS.filter((l) =>
  (process.env.TLS_LISTENERS ?? ALL_LISTENERS.join(',')).split(',').includes(l),
);
type Direction = 'produce' | 'consume';

interface Round {
  listener: Listener;
  direction: Direction;
  records: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
  brokerCpuSeconds: number;
  /** this process's CPU (librdkafka's threads run in it) */
  clientCpuSeconds: number;
}

function listenerAddress(log: string, name: string): string {
  const m = new RegExp(`"listener":"${name}","host":"([^"]+)","port":(\\d+),"msg":"listening"`).exec(log);
  if (m === null) throw new Error(`no ${name} listener in the broker log`);
  return `${m[1] ?? ''}:${m[2] ?? ''}`;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Runs `work` (which returns seconds) and measures broker and client CPU around it. */
async function measuredRound(
  pid: number,
  listener: Listener,
  direction: Direction,
  n: number,
  work: () => Promise<number>,
): Promise<Round> {
  const cpu0 = cpuSeconds(pid);
  const u0 = process.cpuUsage();
  const secs = await work();
  const cpu = cpuSeconds(pid) - cpu0;
  const u = process.cpuUsage(u0);
  const r: Round = {
    listener,
    direction,
    records: n,
    seconds: round(secs, 3),
    recordsPerSec: Math.round(n / secs),
    mbPerSec: round((n * VALUE_SIZE) / 1e6 / secs, 1),
    brokerCpuSeconds: round(cpu, 2),
    clientCpuSeconds: round((u.user + u.system) / 1e6, 2),
  };
  console.log(
    `${direction} ${listener}: ${r.recordsPerSec} records/s, ${r.mbPerSec} MB/s, broker ${r.brokerCpuSeconds} CPU-s, client ${r.clientCpuSeconds} CPU-s`,
  );
  return r;
}

async function main(): Promise<void> {
  const n = envInt('TLS_RECORDS', 200_000);
  const rounds = envInt('TLS_ROUNDS', 3);
  const connSeconds = envInt('TLS_CONN_SECONDS', 5);
  const connConcurrency = envInt('TLS_CONN_CONCURRENCY', 8);
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
    const produce = (l: Listener, topic: string, count: number): Promise<number> =>
      timedProduceRd(addr[l], props[l], topic, 0, count, (i) => pool[i % pool.length]!);
    const consume = async (l: Listener, topic: string, count: number): Promise<number> => {
      const { seconds, bytes } = await timedConsumeRd(addr[l], props[l], topic, 1, count);
      if (bytes !== count * VALUE_SIZE) throw new Error(`consumer saw ${bytes} value bytes of ${topic}, expected ${count * VALUE_SIZE}`);
      return seconds;
    };
    const c = await RawClient.connect(addr.PLAINTEXT);
    const topics = Array.from({ length: rounds * LISTENERS.length + LISTENERS.length }, (_, i) => `tls-bench-${i}`);
    await rawCreateTopics(
      c,
      topics.map((name) => ({ name, partitions: 1 })),
    );
    c.destroy();
    // warm-up: one short run per listener and direction (JIT, TLS session setup)
    for (const [i, l] of LISTENERS.entries()) {
      await produce(l, topics[i]!, 20_000);
      await consume(l, topics[i]!, 20_000);
    }
    const results: Round[] = [];
    for (let r = 0; r < rounds * LISTENERS.length; r++) {
      const listener = LISTENERS[r % LISTENERS.length]!;
      const topic = topics[r + LISTENERS.length]!;
      results.push(await measuredRound(g.pid, listener, 'produce', n, () => produce(listener, topic, n)));
      results.push(await measuredRound(g.pid, listener, 'consume', n, () => consume(listener, topic, n)));
    }
    const connections: ConnectionRate[] = [];
    if (connSeconds > 0)
      // PLAINTEXT for reference; SASL_SSL's TLS side is SSL's (its SASL exchange is not part of this figure)
      for (const l of LISTENERS.filter((x) => x !== 'SASL_SSL')) {
        const rate = await connectionRate(g.pid, l, addr[l], l === 'PLAINTEXT' ? null : { ca: certs.caCert }, {
          seconds: connSeconds,
          concurrency: connConcurrency,
        });
        connections.push(rate);
        console.log(
          `connections ${l}: ${rate.connectionsPerSec}/s (${rate.connections} in ${rate.seconds} s, ${connConcurrency} at a time), broker ${rate.brokerCpuMsPerConnection} CPU-ms and client ${rate.clientCpuMsPerConnection} CPU-ms per connection`,
        );
      }
    const med = (l: Listener, d: Direction, k: 'recordsPerSec' | 'brokerCpuSeconds' | 'clientCpuSeconds'): number =>
      median(results.filter((x) => x.listener === l && x.direction === d).map((x) => x[k]));
    const side = (d: Direction): Record<string, number> => ({
      plaintextRecordsPerSec: med('PLAINTEXT', d, 'recordsPerSec'),
      sslRecordsPerSec: med('SSL', d, 'recordsPerSec'),
      saslSslRecordsPerSec: med('SASL_SSL', d, 'recordsPerSec'),
      sslOverPlaintext: round(med('SSL', d, 'recordsPerSec') / med('PLAINTEXT', d, 'recordsPerSec'), 3),
      saslSslOverPlaintext: round(med('SASL_SSL', d, 'recordsPerSec') / med('PLAINTEXT', d, 'recordsPerSec'), 3),
      plaintextBrokerCpuSeconds: med('PLAINTEXT', d, 'brokerCpuSeconds'),
      sslBrokerCpuSeconds: med('SSL', d, 'brokerCpuSeconds'),
      saslSslBrokerCpuSeconds: med('SASL_SSL', d, 'brokerCpuSeconds'),
      plaintextClientCpuSeconds: med('PLAINTEXT', d, 'clientCpuSeconds'),
      sslClientCpuSeconds: med('SSL', d, 'clientCpuSeconds'),
      saslSslClientCpuSeconds: med('SASL_SSL', d, 'clientCpuSeconds'),
    });
    const summary = { produce: side('produce'), consume: side('consume') };
    for (const d of ['produce', 'consume'] as const) {
      const s = summary[d];
      console.log(
        `${d} medians: PLAINTEXT ${s.plaintextRecordsPerSec} records/s, SSL ${s.sslRecordsPerSec} (SSL/PLAINTEXT ${s.sslOverPlaintext}), SASL_SSL ${s.saslSslRecordsPerSec} (SASL_SSL/PLAINTEXT ${s.saslSslOverPlaintext})`,
      );
    }
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
        connectionSeconds: connSeconds,
        connectionConcurrency: connConcurrency,
      },
      loadAverage: loadAverage(),
      node: process.version,
      summary,
      connections,
      rounds: results,
    });
    console.log(`results in ${file}`);
  } finally {
    await g.stop();
    rmSync(certDir, { recursive: true, force: true });
  }
}

await main();
