/**
 * Benchmark 1: producer and consumer throughput, 100-byte records, librdkafka and kafkajs side by
 * side against one fresh gregor:
 *   - librdkafka (@confluentinc/kafka-javascript, node-rdkafka-style Producer): acks=1 and all ×
 *     none/gzip/snappy/lz4/zstd, RDKAFKA_RECORDS records each (default 500,000);
 *   - kafkajs 2.2.4: acks=1 and all × none/gzip (its only built-in codecs), KAFKAJS_RECORDS each
 *     (default 200,000);
 *   - consumers: both clients read the librdkafka acks=1 topics (none and gzip) from offset 0.
 * Figures: records/s, MB/s of record values, broker CPU-seconds (utime+stime of the broker pid
 * from /proc) and the benchmark process's own CPU (the client library's threads run in it).
 */
import { CompressionTypes, Kafka, logLevel } from 'kafkajs';
import type { BenchContext } from '../lib/suite.js';
import type { GregorProcess } from '../lib/broker-process.js';
import { RawClient, rawCreateTopics, rawListOffset } from '../../test/helpers/raw-client.js';
import {
  confluentVersion,
  connectRd,
  cpuMeter,
  disconnectRd,
  envInt,
  produceAllRd,
  type RdProducer,
  rdkafka,
  round,
  si,
  sleep,
  throughputProducerConfig,
  timedConsumeRd,
  writeBench,
} from './proc-stats.js';

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
type Codec = (typeof CODECS)[number];
const KJS_CODECS: Codec[] = ['none', 'gzip'];
const ACKS = [1, -1] as const;
const PARTITIONS = 4;
const VALUE_SIZE = 100;

interface Run {
  client: 'librdkafka' | 'kafkajs';
  direction: 'produce' | 'consume';
  codec: Codec;
  acks: number | null;
  records: number;
  seconds: number;
  recordsPerSec: number;
  mbPerSec: number;
  brokerCpuSeconds: number;
  brokerCpuPercent: number;
  clientCpuSeconds: number;
}

/** A pool of distinct 100-byte values of random letters A-Z (as Kafka's ProducerPerformance does), cycled. */
function valuePool(n = 1024): Buffer[] {
  return Array.from({ length: n }, () => {
    const b = Buffer.allocUnsafe(VALUE_SIZE);
    for (let i = 0; i < VALUE_SIZE; i++) b[i] = 65 + Math.floor(Math.random() * 26);
    return b;
  });
}

function measured(pid: number) {
  const broker = cpuMeter(pid);
  const u0 = process.cpuUsage();
  return (records: number, seconds: number) => {
    const b = broker();
    const u = process.cpuUsage(u0);
    return {
      records,
      seconds: round(seconds, 3),
      recordsPerSec: Math.round(records / seconds),
      mbPerSec: round((records * VALUE_SIZE) / 1e6 / seconds, 2),
      brokerCpuSeconds: round(b.cpuSeconds, 2),
      brokerCpuPercent: round((b.cpuSeconds / seconds) * 100, 1),
      clientCpuSeconds: round((u.user + u.system) / 1e6, 2),
    };
  };
}

/** Sum of the partitions' high watermarks (ListOffsets latest). */
async function endOffsets(bootstrap: string, topic: string): Promise<number> {
  const c = await RawClient.connect(bootstrap);
  try {
    let sum = 0;
    for (let p = 0; p < PARTITIONS; p++) sum += Number(await rawListOffset(c, topic, p));
    return sum;
  } finally {
    c.destroy();
  }
}

async function rdProduce(
  bootstrap: string,
  pid: number,
  topic: string,
  codec: Codec,
  acks: number,
  n: number,
  pool: Buffer[],
): Promise<Run> {
  const p: RdProducer = new (rdkafka().Producer)(throughputProducerConfig(bootstrap, acks, { 'compression.codec': codec }));
  await connectRd(p);
  const before = await endOffsets(bootstrap, topic);
  p.setPollInterval(50);
  const stop = measured(pid);
  const t0 = performance.now();
  await produceAllRd(p, topic, null, n, (i) => pool[i % pool.length]!);
  const secs = (performance.now() - t0) / 1000;
  const m = stop(n, secs);
  await disconnectRd(p);
  const stored = (await endOffsets(bootstrap, topic)) - before;
  if (stored !== n) throw new Error(`librdkafka ${codec} acks=${acks}: ${stored} of ${n} records stored`);
  return { client: 'librdkafka', direction: 'produce', codec, acks, ...m };
}

const KJS_CODEC: Record<string, CompressionTypes> = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP };

async function kjsProduce(
  bootstrap: string,
  pid: number,
  topic: string,
  codec: Codec,
  acks: number,
  n: number,
  pool: Buffer[],
): Promise<Run> {
  const kafka = new Kafka({ clientId: 'gregor-bench', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const BATCH = 1000;
  const IN_FLIGHT = 4;
  let next = 0;
  const stop = measured(pid);
  const t0 = performance.now();
  const worker = async () => {
    while (next < n) {
      const from = next;
      const count = Math.min(BATCH, n - from);
      next += count;
      const messages = Array.from({ length: count }, (_, j) => ({ value: pool[(from + j) % pool.length]! }));
      await producer.send({ topic, acks, compression: KJS_CODEC[codec] ?? CompressionTypes.None, messages });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const secs = (performance.now() - t0) / 1000;
  const m = stop(n, secs);
  await producer.disconnect();
  return { client: 'kafkajs', direction: 'produce', codec, acks, ...m };
}

async function rdConsume(bootstrap: string, pid: number, topic: string, codec: Codec, n: number): Promise<Run> {
  const stop = measured(pid);
  const { seconds, bytes } = await timedConsumeRd(bootstrap, {}, topic, PARTITIONS, n);
  const m = stop(n, seconds);
  if (bytes !== n * VALUE_SIZE) throw new Error(`librdkafka consumer saw ${bytes} value bytes, expected ${n * VALUE_SIZE}`);
  return { client: 'librdkafka', direction: 'consume', codec, acks: null, ...m };
}

async function kjsConsume(bootstrap: string, pid: number, topic: string, codec: Codec, n: number): Promise<Run> {
  const kafka = new Kafka({ clientId: 'gregor-bench', brokers: [bootstrap], logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({
    groupId: `bench-kjs-${topic}-${Date.now()}`,
    maxBytes: 50 << 20,
    maxBytesPerPartition: 10 << 20,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let got = 0;
  let bytes = 0;
  let resolveDone: () => void = () => undefined;
  const done = new Promise<void>((r) => (resolveDone = r));
  const stop = measured(pid);
  const t0 = performance.now();
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: true,
    eachBatch: ({ batch }) => {
      got += batch.messages.length;
      for (const m of batch.messages) bytes += m.value?.length ?? 0;
      if (got >= n) resolveDone();
      return Promise.resolve();
    },
  });
  await Promise.race([done, sleep(120_000)]);
  const secs = (performance.now() - t0) / 1000;
  const m = stop(got, secs);
  await consumer.disconnect();
  if (got !== n) throw new Error(`kafkajs consumer saw ${got}/${n} records of ${topic}`);
  if (bytes !== n * VALUE_SIZE) throw new Error(`kafkajs consumer saw ${bytes} value bytes, expected ${n * VALUE_SIZE}`);
  return { client: 'kafkajs', direction: 'consume', codec, acks: null, ...m };
}

const acksName = (a: number | null) => (a === null ? '' : a === -1 ? 'all' : String(a));

export async function producerThroughput(ctx: BenchContext): Promise<void> {
  const nRd = envInt('BENCH_RDKAFKA_RECORDS', 500_000);
  const nKjs = envInt('BENCH_KAFKAJS_RECORDS', 200_000);
  const pool = valuePool();
  const broker: GregorProcess = await ctx.startGregor({ 'group.initial.rebalance.delay.ms': '0', 'num.partitions': String(PARTITIONS) });
  const runs: Run[] = [];
  try {
    const admin = await RawClient.connect(broker.bootstrap);
    const topicOf = (client: string, codec: Codec, acks: number) => `tp-${client}-${codec}-acks${acks === -1 ? 'all' : acks}`;
    const topics = [
      ...CODECS.flatMap((c) => ACKS.map((a) => topicOf('rd', c, a))),
      ...KJS_CODECS.flatMap((c) => ACKS.map((a) => topicOf('kjs', c, a))),
    ];
    await rawCreateTopics(
      admin,
      [...topics, 'tp-warmup'].map((name) => ({ name, partitions: PARTITIONS })),
    );
    admin.destroy();
    // warm-up (JIT of both sides, connections), not reported
    await rdProduce(broker.bootstrap, broker.pid, 'tp-warmup', 'none', 1, 20_000, pool);
    await kjsProduce(broker.bootstrap, broker.pid, 'tp-warmup', 'none', 1, 20_000, pool);

    for (const codec of CODECS) {
      for (const acks of ACKS) {
        const r = await rdProduce(broker.bootstrap, broker.pid, topicOf('rd', codec, acks), codec, acks, nRd, pool);
        runs.push(r);
        ctx.log(
          `  producer librdkafka ${codec} acks=${acksName(acks)}: ${si(r.recordsPerSec)} records/s, ${r.mbPerSec} MB/s, broker ${r.brokerCpuSeconds} CPU-s`,
        );
        if (KJS_CODECS.includes(codec)) {
          const k = await kjsProduce(broker.bootstrap, broker.pid, topicOf('kjs', codec, acks), codec, acks, nKjs, pool);
          runs.push(k);
          ctx.log(
            `  producer kafkajs ${codec} acks=${acksName(acks)}: ${si(k.recordsPerSec)} records/s, ${k.mbPerSec} MB/s, broker ${k.brokerCpuSeconds} CPU-s`,
          );
        }
      }
    }
    for (const codec of KJS_CODECS) {
      const topic = topicOf('rd', codec, 1);
      const r = await rdConsume(broker.bootstrap, broker.pid, topic, codec, nRd);
      runs.push(r);
      ctx.log(`  consumer librdkafka ${codec}: ${si(r.recordsPerSec)} records/s, ${r.mbPerSec} MB/s, broker ${r.brokerCpuSeconds} CPU-s`);
      const k = await kjsConsume(broker.bootstrap, broker.pid, topic, codec, nRd);
      runs.push(k);
      ctx.log(`  consumer kafkajs ${codec}: ${si(k.recordsPerSec)} records/s, ${k.mbPerSec} MB/s, broker ${k.brokerCpuSeconds} CPU-s`);
    }
  } finally {
    await broker.stop();
  }

  const prod = runs.filter((r) => r.direction === 'produce');
  const cons = runs.filter((r) => r.direction === 'consume');
  const find = (client: string, codec: Codec, acks: number) =>
    prod.find((r) => r.client === client && r.codec === codec && r.acks === acks);
  const rd1 = find('librdkafka', 'none', 1);
  const kj1 = find('kafkajs', 'none', 1);
  const rdc = cons.find((r) => r.client === 'librdkafka' && r.codec === 'none');
  const kjc = cons.find((r) => r.client === 'kafkajs' && r.codec === 'none');
  const headline: string[] = [];
  if (rd1 !== undefined)
    headline.push(
      `librdkafka produce, none, acks=1: ${si(rd1.recordsPerSec)} records/s (${rd1.mbPerSec} MB/s), broker ${round((rd1.brokerCpuSeconds / rd1.records) * 1e6, 2)} CPU-µs/record`,
    );
  if (kj1 !== undefined)
    headline.push(
      `kafkajs produce, none, acks=1: ${si(kj1.recordsPerSec)} records/s (${kj1.mbPerSec} MB/s), broker ${round((kj1.brokerCpuSeconds / kj1.records) * 1e6, 2)} CPU-µs/record`,
    );
  if (rd1 !== undefined && kj1 !== undefined)
    headline.push(`librdkafka / kafkajs produce ratio (none, acks=1, same run): ${round(rd1.recordsPerSec / kj1.recordsPerSec, 2)}×`);
  if (rdc !== undefined) headline.push(`librdkafka consume, none: ${si(rdc.recordsPerSec)} records/s (${rdc.mbPerSec} MB/s)`);
  if (kjc !== undefined) headline.push(`kafkajs consume, none: ${si(kjc.recordsPerSec)} records/s (${kjc.mbPerSec} MB/s)`);
  if (rdc !== undefined && kjc !== undefined)
    headline.push(
      `kafkajs / librdkafka consume ratio (none, same run): ${round(kjc.recordsPerSec / rdc.recordsPerSec, 2)}× (the librdkafka figure is bound by its Node binding, see notes)`,
    );

  const series = (client: string, acks: number, codecs: readonly Codec[], y: (r: Run) => number) => ({
    name: `${client} acks=${acksName(acks)}`,
    points: codecs.flatMap((codec) => {
      const r = find(client, codec, acks);
      return r === undefined ? [] : [{ x: codec, y: y(r) }];
    }),
  });
  const allSeries = (y: (r: Run) => number) => [
    series('librdkafka', 1, CODECS, y),
    series('librdkafka', -1, CODECS, y),
    series('kafkajs', 1, KJS_CODECS, y),
    series('kafkajs', -1, KJS_CODECS, y),
  ];
  writeBench(ctx.outDir, {
    id: 'producer-throughput',
    title: 'Producer and consumer throughput, 100-byte records',
    description:
      `One fresh gregor (topics of ${PARTITIONS} partitions), both clients in the benchmark process, measured one after the other in the same run. ` +
      `librdkafka ${rdkafka().librdkafkaVersion} (@confluentinc/kafka-javascript ${confluentVersion()}, node-rdkafka-style Producer/KafkaConsumer): ${nRd.toLocaleString('en-US')} records per run; ` +
      `kafkajs 2.2.4: ${nKjs.toLocaleString('en-US')} records per run (none/gzip only: its built-in codecs). Consumers read the librdkafka acks=1 topics (${nRd.toLocaleString('en-US')} records) from offset 0 by assignment (librdkafka) or a fresh group (kafkajs).`,
    headline,
    charts: [
      {
        kind: 'bar',
        title: 'Producer records/s (100-byte records)',
        xLabel: 'codec',
        yLabel: 'records/s',
        series: allSeries((r) => r.recordsPerSec),
      },
      {
        kind: 'bar',
        title: 'Broker CPU per produced record (µs)',
        xLabel: 'codec',
        yLabel: 'CPU-µs / record',
        series: allSeries((r) => round((r.brokerCpuSeconds / r.records) * 1e6, 2)),
      },
      {
        kind: 'bar',
        title: 'Consumer records/s (from offset 0)',
        xLabel: 'stored codec',
        yLabel: 'records/s',
        series: ['librdkafka', 'kafkajs'].map((client) => ({
          name: client,
          points: cons.filter((r) => r.client === client).map((r) => ({ x: r.codec, y: r.recordsPerSec })),
        })),
      },
    ],
    table: {
      columns: [
        'client',
        'direction',
        'codec',
        'acks',
        'records',
        's',
        'records/s',
        'MB/s',
        'broker CPU-s',
        'broker CPU % of a core',
        'broker CPU-µs/record',
        'client process CPU-s',
      ],
      rows: runs.map((r) => [
        r.client,
        r.direction,
        r.codec,
        acksName(r.acks),
        r.records,
        r.seconds,
        r.recordsPerSec,
        r.mbPerSec,
        r.brokerCpuSeconds,
        r.brokerCpuPercent,
        round((r.brokerCpuSeconds / r.records) * 1e6, 2),
        r.clientCpuSeconds,
      ]),
    },
    notes: [
      "Values: 100 bytes of random letters A-Z from a pool of 1,024 (as Kafka's ProducerPerformance generates them), no key; MB/s counts record values only (1 MB = 10^6 bytes).",
      "librdkafka producer: linger.ms=5, batch.size=1000000, no per-record delivery-report callback (a JS callback per record would cap the Node binding well below what librdkafka and the broker do); the run ends when flush() returns, and the partitions' end offsets must have grown by exactly the records sent. kafkajs producer: send() of 1,000 records, 4 sends in flight, each awaited.",
      'Consumers: librdkafka KafkaConsumer.assign + consume(10000) loop, fetch.wait.max.ms=100; kafkajs consumer.run eachBatch (group join included in the time). Times start before the first fetch.',
      "Broker CPU: utime+stime of the gregor process from /proc/<pid>/stat over the run. Client CPU: process.cpuUsage() of the benchmark process (includes librdkafka threads). The machine's cores are shared by broker and client.",
      'A 20,000-record warm-up per client precedes the measured runs.',
      "The librdkafka consumer figure is bound by the Node binding, not the broker: consume() turns every message into a JS object with its own Buffer on the main thread (client CPU-s in the table against the broker's), which caps it near 100-130k records/s here whatever the fetch settings (fetch.queue.backoff.ms=0 or larger consume() batches changed it by < 30% in a side test).",
    ],
  });
}
