/**
 * The live broker the fuzzer attacks, and what watches it: a child `gregor start` (a plaintext and,
 * optionally, a SASL_PLAINTEXT listener), its RSS sampled from /proc every 50 ms, its log lines
 * counted, and a real kafkajs producer on its own connection that keeps producing acks=all batches
 * whose every acknowledged record a kafkajs reader checks back (nothing acknowledged lost).
 */
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { asError } from '../../lib/as-error.js';
import { startChildBroker, tempDir, type ChildBroker } from '../../test/helpers/broker.js';
import { KafkajsPartitionReader } from '../../test/helpers/kafkajs-reader.js';
import { processRss, RawClient, rawCreateTopics } from '../../test/helpers/raw-client.js';
import { saslConfig } from '../../test/helpers/sasl.js';
import { FUZZ_TOPIC } from './frames.js';
import type { ApiRange } from './model.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

export const BG_TOPIC = 'fuzz-bg';
const BG_PARTITIONS = 2;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a !== null ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** The background client: a kafkajs producer whose acknowledged records are kept to be read back. */
class Background {
  acked = 0;
  error: Error | null = null;
  /** partition → offset → value, of acknowledged records */
  readonly sent = new Map<number, Map<bigint, string>>();
  private stop = false;
  private loop: Promise<void> = Promise.resolve();

  start(bootstrap: string): void {
    const kafka = new Kafka({ brokers: [bootstrap], clientId: 'fuzz-bg', logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    let n = 0;
    let sends = 0;
    this.loop = (async () => {
      try {
        await producer.connect();
        while (!this.stop) {
          const partition = sends++ % BG_PARTITIONS;
          const messages = Array.from({ length: 20 }, () => ({ key: `k${n}`, value: `v${n++}`, partition }));
          const [res] = await producer.send({ topic: BG_TOPIC, acks: -1, messages });
          if (res === undefined || res.errorCode !== 0) throw new Error(`produce answered ${JSON.stringify(res)}`);
          const base = BigInt(res.baseOffset ?? '-1');
          const m = this.sent.get(partition) ?? new Map<bigint, string>();
          messages.forEach((msg, i) => m.set(base + BigInt(i), msg.value));
          this.sent.set(partition, m);
          this.acked += messages.length;
          await new Promise((r) => setTimeout(r, 40));
        }
      } catch (e) {
        this.error = asError(e);
      } finally {
        await producer.disconnect().catch(() => undefined);
      }
    })();
  }

  async close(): Promise<void> {
    this.stop = true;
    await this.loop;
  }

  /** Resolves once `n` more records were acknowledged; throws when the producer failed or stalled. */
  async progress(n: number, timeoutMs: number): Promise<void> {
    const target = this.acked + n;
    const deadline = Date.now() + timeoutMs;
    while (this.acked < target) {
      if (this.error !== null) throw new Error(`background kafkajs producer failed: ${this.error.message}`);
      if (Date.now() > deadline) throw new Error(`background kafkajs producer stalled at ${this.acked} acknowledged records`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

export interface HarnessOptions {
  sasl: boolean;
  /** the broker's RSS must stay under this (bytes) */
  rssBudget: number;
}

export class Harness {
  broker!: ChildBroker & { output(): string };
  saslAddress: string | null = null;
  apis: ApiRange[] = [];
  maxRss = 0;
  /** RSS peak since the last takePeak() */
  private peak = 0;
  private sampler: NodeJS.Timeout | null = null;
  private dataDir = '';
  private bg = new Background();
  /** brokers started (more than one when a case crashed one) */
  starts = 0;

  constructor(readonly opts: HarnessOptions) {}

  get pid(): number {
    return this.broker.child.pid ?? -1;
  }

  get alive(): boolean {
    return this.broker.child.exitCode === null && this.broker.child.signalCode === null;
  }

  get bootstrap(): string {
    return this.broker.bootstrap;
  }

  /** Lines the broker wrote so far (stdout and stderr). */
  logLines(): string[] {
    return this.broker.output().split('\n');
  }

  async start(): Promise<void> {
    this.starts++;
    this.dataDir = tempDir('gregor-fuzz-');
    const overrides: Record<string, string> = { 'num.partitions': '2', 'admin.listener': 'none' };
    if (this.opts.sasl) {
      const [p1, p2] = [await freePort(), await freePort()];
      overrides['listeners'] = `PLAINTEXT://127.0.0.1:${p1},SASL_PLAINTEXT://127.0.0.1:${p2}`;
      Object.assign(overrides, saslConfig(['SASL_PLAINTEXT'], ['PLAIN', 'SCRAM-SHA-256']));
      this.saslAddress = `127.0.0.1:${p2}`;
    }
    this.broker = await startChildBroker(this.dataDir, 0, overrides, { LOG_LEVEL: 'info' });
    const admin = await RawClient.connect(this.bootstrap);
    try {
      await rawCreateTopics(admin, [
        { name: BG_TOPIC, partitions: BG_PARTITIONS },
        { name: FUZZ_TOPIC, partitions: 2 },
      ]);
      const res = await admin.request<{ apiKeys: { apiKey: number; minVersion: number; maxVersion: number }[] }>(18, 3, {
        clientSoftwareName: 'gregor-fuzz',
        clientSoftwareVersion: '1',
      });
      this.apis = res.apiKeys.map((a) => ({ apiKey: a.apiKey, min: a.minVersion, max: a.maxVersion }));
    } finally {
      admin.destroy();
    }
    this.bg = new Background();
    this.bg.start(this.bootstrap);
    await this.bg.progress(40, 60_000);
    this.sampler = setInterval(() => void this.sample(), 50);
  }

  private async sample(): Promise<void> {
    if (!this.alive) return;
    try {
      const rss = await processRss(this.pid);
      if (rss > this.peak) this.peak = rss;
      if (rss > this.maxRss) this.maxRss = rss;
    } catch {
      // the process went away between the check and the read
    }
  }

  /** The RSS peak since the last call (sampled now too). */
  async takePeak(): Promise<number> {
    await this.sample();
    const p = this.peak;
    this.peak = 0;
    return p;
  }

  /** The background producer keeps being acknowledged. */
  backgroundProgress(n = 20, timeoutMs = 20_000): Promise<void> {
    return this.bg.progress(n, timeoutMs);
  }

  /** Stops the background producer (before the last verification, so that it covers every ack). */
  stopBackground(): Promise<void> {
    return this.bg.close();
  }

  get backgroundAcked(): number {
    return this.bg.acked;
  }

  /**
   * Reads every acknowledged background record back with kafkajs and compares: a record missing or
   * changed at its offset is an acknowledged record lost. Returns how many were checked.
   */
  async verifyBackground(): Promise<number> {
    const reader = new KafkajsPartitionReader([this.bootstrap]);
    await reader.connect(BG_TOPIC);
    let checked = 0;
    try {
      for (const [partition, acked] of [...this.bg.sent]) {
        // a snapshot: the producer goes on meanwhile
        const sent = new Map(acked);
        const offsets = [...sent.keys()];
        if (offsets.length === 0) continue;
        const until = offsets.reduce((a, b) => (b > a ? b : a)) + 1n;
        const got = await reader.readAll(BG_TOPIC, partition, 0n, until);
        const byOffset = new Map(got.map((m) => [BigInt(m.offset), m.value?.toString() ?? null]));
        for (const [offset, value] of sent) {
          const actual = byOffset.get(offset);
          if (actual !== value)
            throw new Error(`acknowledged record ${BG_TOPIC}-${partition}@${offset} is ${String(actual)}, was ${value}`);
          checked++;
        }
      }
    } finally {
      await reader.disconnect();
    }
    return checked;
  }

  /** ApiVersions on a new connection is answered (the broker still serves new clients). */
  async probe(timeoutMs = 20_000): Promise<void> {
    const c = await RawClient.connect(this.bootstrap);
    try {
      const res = await c.request<{ errorCode: number }>(18, 0, {}, timeoutMs);
      if (res.errorCode !== 0) throw new Error(`ApiVersions answered error ${res.errorCode}`);
    } finally {
      c.destroy();
    }
  }

  async stop(): Promise<void> {
    if (this.sampler !== null) clearInterval(this.sampler);
    this.sampler = null;
    await this.bg.close();
    if (this.alive) {
      this.broker.child.kill('SIGKILL');
      await this.broker.exited;
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** After a crash: a fresh broker (and background client) so that shrinking can go on. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}
