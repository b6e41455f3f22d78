/**
 * The soak's producers: idempotent kafkajs and librdkafka producers, one per codec each, sending
 * small batches at a steady pace to the soak topics (round robin, random partition; keyed records
 * on the compacted topic) and telling the ledger what was sent, acknowledged at which offset, or
 * failed.
 */
import kafkajs from 'kafkajs';
import { asError } from '../../lib/as-error.js';
import { CODECS, type Codec } from '../../test/helpers/codecs.js';
import { connectRd, disconnectRd, flushRd, rdkafka, sleep, type RdProducer } from '../bench/proc-stats.js';
import { KAFKAJS_CODECS, registerKafkajsCodecs } from './kafkajs-codecs.js';
import { TopicKind, recordValue, type Ledger } from './ledger.js';

export interface SoakTopic {
  name: string;
  kind: TopicKind;
  partitions: number;
  configs: Record<string, string>;
}

export interface WorkloadContext {
  bootstrap: string;
  ledger: Ledger;
  topics: readonly SoakTopic[];
  /** records per second for each producer */
  ratePerProducer: number;
  recordBytes: number;
  /** a problem worth reporting (not fatal); counted by kind */
  problem: (kind: string, detail: string) => void;
  stopped: () => boolean;
}

export interface Worker {
  name: string;
  run(): Promise<void>;
  /** what the worker is doing now (for the stall watchdog's report) */
  status?: () => string;
}

const BATCH_INTERVAL_MS = 250;

/**
 * Disconnects a librdkafka client, reporting a disconnect that does not finish in time: a client left
 * behind keeps librdkafka threads that stop the process from exiting.
 */
export async function disconnectOrReport(
  c: { disconnect(cb: () => void): void },
  what: string,
  problem: (kind: string, detail: string) => void,
  timeoutMs = 30_000,
): Promise<void> {
  const state = { done: false };
  await disconnectRd(
    {
      disconnect: (cb) =>
        c.disconnect(() => {
          state.done = true;
          cb();
        }),
    },
    timeoutMs,
  );
  if (!state.done) {
    hungDisconnects++;
    problem('disconnect-timeout', what);
  }
}

/**
 * librdkafka disconnects that did not finish. Each runs on a libuv threadpool thread (the binding's
 * AsyncWorker) and keeps it: with UV_THREADPOOL_SIZE (default 4) of them, every later threadpool job
 * (zlib for kafkajs's gzip, librdkafka's flush and disconnect) waits forever, so kafkajs clients and
 * librdkafka producers stall together.
 */
let hungDisconnects = 0;
export const hungLibrdkafkaDisconnects = (): number => hungDisconnects;
const KEYS = 300;

function pick<T>(xs: readonly T[]): T {
  const x = xs[Math.floor(Math.random() * xs.length)];
  if (x === undefined) throw new Error('pick from an empty list');
  return x;
}

/** The records of one tick: how many, at the producer's rate (fractional rates carried over). */
function pacer(rate: number): () => number {
  let owed = 0;
  return () => {
    owed += (rate * BATCH_INTERVAL_MS) / 1000;
    const n = Math.floor(owed);
    owed -= n;
    return n;
  };
}

function target(ctx: WorkloadContext, tick: number): { topic: SoakTopic; partition: number } {
  const topic = ctx.topics[tick % ctx.topics.length];
  if (topic === undefined) throw new Error('no soak topics');
  return { topic, partition: Math.floor(Math.random() * topic.partitions) };
}

const keyFor = (topic: SoakTopic): string | null => (topic.kind === TopicKind.compacted ? `k${Math.floor(Math.random() * KEYS)}` : null);

export function kafkajsProducer(ctx: WorkloadContext, codec: Codec): Worker {
  const name = `kjs-${codec}`;
  let phase = 'connecting';
  return {
    name,
    status: () => phase,
    async run() {
      registerKafkajsCodecs();
      const kafka = new kafkajs.Kafka({ clientId: `soak-${name}`, brokers: [ctx.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 10 } });
      await producer.connect();
      const next = pacer(ctx.ratePerProducer);
      phase = 'sending';
      try {
        for (let tick = 0; !ctx.stopped(); tick++) {
          const started = performance.now();
          const n = next();
          if (n > 0) {
            const { topic, partition } = target(ctx, tick);
            const messages: { key: string | null; value: Buffer; partition: number }[] = [];
            const seqs: number[] = [];
            for (let i = 0; i < n; i++) {
              const key = keyFor(topic);
              const seq = ctx.ledger.sent(name, topic.name, partition, key);
              seqs.push(seq);
              messages.push({ key, value: recordValue(name, seq, ctx.recordBytes), partition });
            }
            try {
              phase = `sending ${n} records to ${topic.name}/${partition}`;
              const meta = await producer.send({ topic: topic.name, messages, compression: KAFKAJS_CODECS[codec], acks: -1 });
              const base = Number(meta.find((m) => m.partition === partition)?.baseOffset ?? NaN);
              if (!Number.isFinite(base)) throw new Error(`no offset for partition ${partition} in ${JSON.stringify(meta)}`);
              seqs.forEach((seq, i) => ctx.ledger.acked(name, seq, base + i));
            } catch (e) {
              for (const seq of seqs) ctx.ledger.failed(name, seq);
              ctx.problem('produce-failed', `${name}: ${asError(e).message}`);
            }
            phase = 'between sends';
          }
          await sleep(Math.max(0, BATCH_INTERVAL_MS - (performance.now() - started)));
        }
      } finally {
        phase = 'disconnecting';
        await producer.disconnect();
        phase = 'done';
      }
    },
  };
}

export function rdkafkaProducer(ctx: WorkloadContext, codec: Codec): Worker {
  const name = `rdk-${codec}`;
  let phase = 'connecting';
  return {
    name,
    status: () => phase,
    async run() {
      const producer: RdProducer = new (rdkafka().Producer)({
        'bootstrap.servers': ctx.bootstrap,
        'client.id': `soak-${name}`,
        'enable.idempotence': true,
        'compression.codec': codec,
        'linger.ms': 20,
        dr_cb: true,
        log_level: 0,
      });
      producer.on('delivery-report', (err, report) => {
        const seq = report.opaque;
        if (typeof seq !== 'number') return;
        if (err) {
          ctx.ledger.failed(name, seq);
          ctx.problem('produce-failed', `${name}: ${asError(err).message}`);
        } else ctx.ledger.acked(name, seq, report.offset);
      });
      producer.on('event.error', (e) => ctx.problem('rdkafka-error', `${name}: ${asError(e).message}`));
      await connectRd(producer);
      producer.setPollInterval(50);
      const next = pacer(ctx.ratePerProducer);
      phase = 'producing';
      try {
        for (let tick = 0; !ctx.stopped(); tick++) {
          const started = performance.now();
          const n = next();
          const { topic, partition } = target(ctx, tick);
          for (let i = 0; i < n; i++) {
            const key = keyFor(topic);
            const seq = ctx.ledger.sent(name, topic.name, partition, key);
            try {
              producer.produce(
                topic.name,
                partition,
                recordValue(name, seq, ctx.recordBytes),
                key === null ? null : Buffer.from(key),
                null,
                seq,
              );
            } catch (e) {
              ctx.ledger.failed(name, seq);
              ctx.problem('produce-failed', `${name}: ${asError(e).message}`);
            }
            phase = 'between sends';
          }
          await sleep(Math.max(0, BATCH_INTERVAL_MS - (performance.now() - started)));
        }
        phase = 'flushing';
        await flushRd(producer, 120_000);
      } finally {
        phase = 'disconnecting';
        await disconnectOrReport(producer, name, ctx.problem);
        phase = 'done';
      }
    },
  };
}

/** One kafkajs and one librdkafka producer per codec. */
export function producers(ctx: WorkloadContext): Worker[] {
  return CODECS.flatMap((c) => [kafkajsProducer(ctx, c), rdkafkaProducer(ctx, c)]);
}

export { pick };
