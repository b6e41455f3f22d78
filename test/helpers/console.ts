/** Talks to the web console's JSON API (/ui/api) as its page does: the CSRF cookie from /ui, then the header with it. */
import { rmSync } from 'node:fs';
import { Kafka, logLevel } from 'kafkajs';
import { startChildBroker, tempDir, type ChildBroker } from './broker.js';
import type { Cleanup } from './cleanup.js';

export interface ConsoleResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

export class ConsoleClient {
  private token: string | null = null;

  constructor(readonly admin: string) {}

  get base(): string {
    return `http://${this.admin}`;
  }

  /** Loads the page, keeping its CSRF cookie. */
  async open(): Promise<Response> {
    const res = await fetch(`${this.base}/ui`);
    const cookie = res.headers.get('set-cookie') ?? '';
    const m = /gregor_csrf=([0-9a-f]+)/.exec(cookie);
    if (m?.[1] === undefined) throw new Error(`no CSRF cookie from /ui: ${cookie}`);
    this.token = m[1];
    await res.text();
    return res;
  }

  async get<T = any>(path: string): Promise<ConsoleResponse<T>> {
    return this.send<T>('GET', path);
  }

  async send<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ConsoleResponse<T>> {
    if (method !== 'GET' && this.token === null) await this.open();
    const h: Record<string, string> = { ...headers };
    if (method !== 'GET' && this.token !== null) {
      h['x-gregor-csrf'] ??= this.token;
      // the CSRF cookie goes beside any other given (a session)
      const csrf = `gregor_csrf=${this.token}`;
      const given = h['cookie'];
      h['cookie'] = given === undefined ? csrf : given.includes('gregor_csrf=') ? given : `${csrf}; ${given}`;
    }
    if (body !== undefined) h['content-type'] = 'application/json';
    const res = await fetch(`${this.base}/ui/api${path}`, {
      method,
      headers: h,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (an export)
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ConsoleResponse<T>> {
    return this.send<T>('POST', path, body ?? {}, headers);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value (not undefined); fails after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

/** A child broker with its admin listener, a kafkajs client of it and a console client; `cleanup` stops it and removes its data. */
export async function startConsoleBroker(
  cleanup: Cleanup,
  prefix: string,
): Promise<{ broker: ChildBroker; kafka: Kafka; ui: ConsoleClient }> {
  const dataDir = cleanup.add(tempDir(prefix), (d) => rmSync(d, { recursive: true, force: true }));
  const broker = await startChildBroker(dataDir, 0, { 'group.initial.rebalance.delay.ms': '0', 'num.partitions': '1' });
  cleanup.defer(async () => {
    broker.child.kill('SIGTERM');
    await broker.exited;
  });
  if (broker.admin === null) throw new Error('no admin listener');
  const kafka = new Kafka({ clientId: 'console-test', brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  return { broker, kafka, ui: new ConsoleClient(broker.admin) };
}

/** Creates `topic` with `partitions` partitions through a kafkajs admin client. */
export async function createTopic(kafka: Kafka, topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
  } finally {
    await admin.disconnect();
  }
}
