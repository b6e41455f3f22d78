/** Real-client probes for listener security tests (TLS, SASL): produce-then-consume round trips, a topic listing. */
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { asError } from '../../lib/as-error.js';
import { runProcess } from './process.js';

const CHILD = fileURLToPath(new URL('./rdkafka-roundtrip-child.js', import.meta.url));

type Any = any;

/** Produces `values` with kafkajs, then reads them back from the beginning in a consumer group. */
export async function kafkajsRoundTrip(kafka: Kafka, topic: string, values: string[]): Promise<string[]> {
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: values.map((value) => ({ value })) });
  await producer.disconnect();
  return kafkajsReadAll(kafka, topic, `g-${topic}`, values.length);
}

/** Reads `count` record values of `topic` from the beginning with a kafkajs group consumer (`groupId`). */
export async function kafkajsReadAll(kafka: Kafka, topic: string, groupId: string, count: number, timeoutMs = 30_000): Promise<string[]> {
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${got.length} of ${count}`)), timeoutMs);
      void consumer.run({
        eachMessage: ({ message }) => {
          got.push(message.value?.toString() ?? '');
          if (got.length >= count) {
            clearTimeout(timer);
            resolve();
          }
          return Promise.resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return got;
}

/**
 * rdkafkaRoundTripInProcess in a child process (test/helpers/rdkafka-roundtrip-child.ts). librdkafka is
 * native code: run beside a broker in the test process, a crash of the client (CI once died of a glibc
 * mutex assertion, `__pthread_tpp_change_priority`, amid the security matrix's concurrent SSL/SASL
 * librdkafka clients) took the whole mocha run down with it. In a child, a client that dies of a signal
 * is reported on stderr and run once more; a second death, a non-zero exit or wrong records fail the caller.
 */
export async function rdkafkaRoundTrip(props: Record<string, unknown>, topic: string, count: number): Promise<string[]> {
  const input = JSON.stringify({ props, topic, count });
  for (let attempt = 1; ; attempt++) {
    const r = await runProcess(process.execPath, [CHILD], input, 120_000);
    if (r.code === 0) return (JSON.parse(r.stdout.toString()) as { got: string[] }).got;
    const tail = r.stderr.trim().split('\n').slice(-3).join(' | ');
    if (r.signal !== null && attempt === 1) {
      process.stderr.write(
        `rdkafkaRoundTrip(${topic}): the librdkafka client process died of ${r.signal} (${tail}); running it once more\n`,
      );
      continue;
    }
    throw new Error(
      `librdkafka round trip on ${topic}: the client process ${r.signal !== null ? `died of ${r.signal}` : `exited with ${r.code}`}: ${tail}`,
    );
  }
}

/**
 * Produces `count` records (r0, r1, ...) to partition 0 of `topic` with librdkafka
 * (@confluentinc/kafka-javascript) and reads them back with a group consumer; `props` are the
 * client properties (bootstrap.servers, security settings). Runs in this process: the child of
 * rdkafkaRoundTrip calls it.
 */
export async function rdkafkaRoundTripInProcess(props: Record<string, unknown>, topic: string, count: number): Promise<string[]> {
  const ck: Any = loadConfluent();
  const producer = new ck.Producer({ ...props, dr_cb: true });
  await new Promise<void>((resolve, reject) => producer.connect({}, (e: Any) => (e ? reject(asError(e)) : resolve())));
  const delivered = new Promise<number>((resolve, reject) => {
    let n = 0;
    producer.on('delivery-report', (err: Any) => {
      if (err) reject(asError(err));
      else if (++n === count) resolve(n);
    });
  });
  producer.setPollInterval(10);
  for (let i = 0; i < count; i++) producer.produce(topic, 0, Buffer.from(`r${i}`), null);
  await delivered;
  await new Promise<void>((resolve) => producer.disconnect(() => resolve()));

  const c = new ck.KafkaConsumer({ ...props, 'group.id': `g-${topic}`, 'enable.auto.commit': false }, { 'auto.offset.reset': 'earliest' });
  await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e: Any) => (e ? reject(asError(e)) : resolve())));
  c.subscribe([topic]);
  const got: string[] = [];
  const deadline = Date.now() + 40_000;
  while (got.length < count && Date.now() < deadline) {
    const batch: Any[] = await new Promise((resolve, reject) =>
      c.consume(100, (e: Any, m: Any[]) => (e ? reject(asError(e)) : resolve(m))),
    );
    for (const m of batch) got.push((m.value as Buffer).toString());
  }
  await new Promise<void>((resolve) => c.disconnect(() => resolve()));
  return got;
}

/** Lists topics with kafkajs (no retries) with `config` (ssl, sasl, clientId): resolves with the names, or rejects with the client's error. */
export async function kafkajsListTopics(brokers: string, config: Omit<KafkaConfig, 'brokers'> = {}): Promise<string[]> {
  const kafka = new Kafka({
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 3000,
    requestTimeout: 5000,
    ...config,
    brokers: [brokers],
  });
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
}

/** The error `p` rejects with; throws when it resolves (the client was served). */
export async function refused(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('the client was served');
}
