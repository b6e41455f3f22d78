/**
 * The soak's consumer groups: a kafkajs group and a librdkafka group over the same topics, each a
 * pool of 1..maxMembers members where, every churn period, one member joins or leaves (gracefully:
 * disconnect sends LeaveGroup). Every delivery goes to the ledger; every join, leave and assignment
 * change counts as a rebalance of the group there, so that redeliveries after a rebalance are told
 * apart from duplicates the group semantics do not allow.
 */
import kafkajs from 'kafkajs';
import { asError } from '../../lib/as-error.js';
import { connectRd, rdkafka, sleep, type RdMessage } from '../bench/proc-stats.js';
import { registerKafkajsCodecs } from './kafkajs-codecs.js';
import { disconnectOrReport, type WorkloadContext, type Worker } from './producers.js';

interface Member {
  id: number;
  /** false once the client gave up (a kafkajs consumer that crashed without restarting) */
  alive(): boolean;
  stop(): Promise<void>;
}

interface RdGroupConsumer {
  connect(opts: { timeout?: number }, cb: (err: unknown) => void): void;
  subscribe(topics: string[]): void;
  unsubscribe(): void;
  consume(): void;
  on(ev: 'data', fn: (m: RdMessage) => void): void;
  on(ev: string, fn: (...a: unknown[]) => void): void;
  disconnect(cb: () => void): void;
  offsetsStore(tps: { topic: string; partition: number; offset: number }[]): void;
}

/** how long a leaving librdkafka member waits between unsubscribe and disconnect */
const UNSUBSCRIBE_SETTLE_MS = 1000;

export interface GroupOptions {
  group: string;
  topics: readonly string[];
  maxMembers: number;
  churnMs: number;
}

async function kafkajsMember(ctx: WorkloadContext, opts: GroupOptions, id: number): Promise<Member> {
  registerKafkajsCodecs();
  const kafka = new kafkajs.Kafka({ clientId: `soak-${opts.group}-${id}`, brokers: [ctx.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: opts.group, sessionTimeout: 30_000, heartbeatInterval: 3000, retry: { retries: 20 } });
  consumer.on(consumer.events.GROUP_JOIN, () => ctx.ledger.rebalanced(opts.group));
  let alive = true;
  consumer.on(consumer.events.CRASH, (e) => {
    ctx.problem('consumer-crash', `${opts.group}-${id}: ${asError(e.payload.error).message} (restart: ${String(e.payload.restart)})`);
    if (!e.payload.restart) alive = false;
  });
  await consumer.connect();
  await consumer.subscribe({ topics: [...opts.topics], fromBeginning: true });
  await consumer.run({
    eachMessage: ({ topic, partition, message }) => {
      ctx.ledger.consumed(opts.group, topic, partition, Number(message.offset), message.value);
      return Promise.resolve();
    },
  });
  return {
    id,
    alive: () => alive,
    async stop() {
      ctx.ledger.rebalanced(opts.group);
      // a kafkajs disconnect waits for the running fetch and the LeaveGroup: bounded, reported when late
      const left = await Promise.race([consumer.disconnect().then(() => true), sleep(60_000).then(() => false)]);
      if (!left) ctx.problem('disconnect-timeout-kafkajs', `${opts.group}-${id}`);
    },
  };
}

async function rdkafkaMember(ctx: WorkloadContext, opts: GroupOptions, id: number): Promise<Member> {
  const KafkaConsumer = rdkafka().KafkaConsumer as unknown as new (
    conf: Record<string, unknown>,
    topicConf: Record<string, unknown>,
  ) => RdGroupConsumer;
  const consumer = new KafkaConsumer(
    {
      'bootstrap.servers': ctx.bootstrap,
      'client.id': `soak-${opts.group}-${id}`,
      'group.id': opts.group,
      // at-least-once: what is committed is what the application has seen (librdkafka's own advice);
      // with the default store-on-poll, a member leaving commits messages still queued for JS
      'enable.auto.commit': true,
      'enable.auto.offset.store': false,
      'auto.commit.interval.ms': 1000,
      // a rebalance waits for members up to max.poll.interval.ms (librdkafka's rebalance timeout), and
      // a member's close waits for the rebalance: 300 s by default, longer than a churn period
      'session.timeout.ms': 10_000,
      'heartbeat.interval.ms': 1000,
      'max.poll.interval.ms': 20_000,
      rebalance_cb: true,
      log_level: 0,
    },
    { 'auto.offset.reset': 'earliest' },
  );
  consumer.on('rebalance', () => ctx.ledger.rebalanced(opts.group));
  consumer.on('event.error', (e) => ctx.problem('rdkafka-error', `${opts.group}-${id}: ${asError(e).message}`));
  consumer.on('data', (m) => {
    ctx.ledger.consumed(opts.group, m.topic, m.partition, m.offset, m.value);
    try {
      consumer.offsetsStore([{ topic: m.topic, partition: m.partition, offset: m.offset + 1 }]);
    } catch {
      // the partition was revoked meanwhile: its next owner reads from the last commit
    }
  });
  await connectRd(consumer);
  consumer.subscribe([...opts.topics]);
  consumer.consume();
  return {
    id,
    alive: () => true,
    async stop() {
      ctx.ledger.rebalanced(opts.group);
      // Leave the group first and let the revoke settle, then close: a disconnect straight from
      // flowing consumption right after a rebalance hung in rd_kafka_destroy (its broker threads
      // waiting on references the binding's consume loop still held) although the leave itself
      // was answered in 0.2 s; 2-3 of 8 leaves in a churn repro, none of 23 with this order.
      consumer.unsubscribe();
      await sleep(UNSUBSCRIBE_SETTLE_MS);
      await disconnectOrReport(consumer, `${opts.group}-${id}`, ctx.problem, 60_000);
    },
  };
}

/**
 * A group whose members come and go until the soak stops; the returned promise settles once every
 * member has left. `keepUntil` keeps the last members running after the soak's load stops, until the
 * caller has seen them catch up.
 */
function churningGroup(
  ctx: WorkloadContext,
  opts: GroupOptions,
  start: (ctx: WorkloadContext, opts: GroupOptions, id: number) => Promise<Member>,
  keepUntil: () => boolean,
): Worker {
  const members: Member[] = [];
  let phase = 'starting';
  return {
    name: opts.group,
    status: () => `${members.length} members (${members.map((m) => m.id).join(', ')}), ${phase}`,
    async run() {
      let nextId = 0;
      const join = async (): Promise<void> => {
        const id = nextId++;
        phase = `member ${id} joining`;
        try {
          members.push(await start(ctx, opts, id));
        } catch (e) {
          ctx.problem('member-start-failed', `${opts.group}: ${asError(e).message}`);
        }
        phase = 'running';
      };
      const leave = async (): Promise<void> => {
        const m = members.shift();
        if (m === undefined) return;
        phase = `member ${m.id} leaving`;
        await m.stop().catch((e: unknown) => ctx.problem('member-stop-failed', `${opts.group}: ${asError(e).message}`));
        phase = 'running';
      };
      await join();
      await join();
      let last = performance.now();
      while (!keepUntil()) {
        await sleep(500);
        // a member that gave up is replaced, so the group never silently stops consuming
        for (const dead of members.filter((m) => !m.alive())) {
          members.splice(members.indexOf(dead), 1);
          await dead.stop().catch(() => undefined);
          await join();
        }
        if (ctx.stopped() || performance.now() - last < opts.churnMs) continue;
        last = performance.now();
        const grow = members.length <= 1 || (members.length < opts.maxMembers && Math.random() < 0.5);
        await (grow ? join() : leave());
      }
      while (members.length > 0) await leave();
    },
  };
}

export function kafkajsGroup(ctx: WorkloadContext, opts: GroupOptions, keepUntil: () => boolean): Worker {
  return churningGroup(ctx, opts, kafkajsMember, keepUntil);
}

export function rdkafkaGroup(ctx: WorkloadContext, opts: GroupOptions, keepUntil: () => boolean): Worker {
  return churningGroup(ctx, opts, rdkafkaMember, keepUntil);
}
