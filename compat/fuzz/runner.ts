/**
 * Runs fuzz cases against the harness's live broker and checks, after each: the broker process is
 * alive, a new connection gets ApiVersions answered, its RSS stayed under budget, it logged at most
 * one line per bad input, the background kafkajs producer kept being acknowledged, and every answer
 * on a fuzz connection was in request order, for a request that was asked, and decodes as that
 * API/version's response. fast-check drives the cases and shrinks a failure to a minimal stream.
 */
import fc from 'fast-check';
import { decodeResponse } from '../../protocol/frame.js';
import { API_KEYS } from '../../protocol/generated/api-keys.js';
import { RawClient } from '../../test/helpers/raw-client.js';
import { render, stampCorrelationId, type Rendered } from './frames.js';
import type { Harness } from './harness.js';
import { caseArb, type Action, type FrameSpec, type FuzzCase } from './model.js';
import { FuzzStats } from './stats.js';

interface Expected {
  cid: number;
  apiKey: number | null;
  apiVersion: number;
  mayBeSilent: boolean;
}

interface Conn {
  client: RawClient;
  expected: Expected[];
  /** raw bytes were sent: answers may carry any correlation id from then on */
  unstructured: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Log lines a well-formed request may cause (see CaseRun.allowance). */
const VALID_FRAME_LINES = 4;

class CaseRun {
  private readonly conns = new Map<number, Conn>();
  private readonly extra: RawClient[] = [];
  private readonly closedConns: Conn[] = [];
  /** inputs sent (frames, connections of a burst, closes): the broker may log one line each */
  inputs = 0;
  /**
   * Log lines the case may cause: one per input, and VALID_FRAME_LINES per well-formed request,
   * which may log what it does at info level, as Kafka does (a consumer group join logs three lines:
   * the member joins, the epoch is bumped, the target assignment is computed; the first use of
   * __consumer_offsets one more, the topic's creation).
   */
  allowance = 0;

  constructor(
    private readonly h: Harness,
    private readonly stats: FuzzStats,
    private nextCid: () => number,
  ) {}

  private async conn(i: number, address = this.h.bootstrap): Promise<Conn | null> {
    const c = this.conns.get(i);
    if (c !== undefined) return c;
    try {
      const client = await RawClient.connect(address);
      const conn = { client, expected: [], unstructured: false };
      this.conns.set(i, conn);
      return conn;
    } catch {
      this.stats.connectRefused++;
      return null;
    }
  }

  private async sendFrame(conn: Conn, spec: FrameSpec, chunks = 1, copies = 1): Promise<void> {
    const r = render(spec);
    this.stats.frame(spec);
    const parts: Buffer[] = [];
    for (let k = 0; k < copies; k++) {
      const cid = this.nextCid();
      parts.push(stampCorrelationId(r, cid));
      this.expect(conn, r, spec, cid);
    }
    this.inputs += copies;
    this.allowance += copies * (spec.kind === 'valid' ? VALID_FRAME_LINES : 1);
    const bytes = Buffer.concat(parts);
    const socket = conn.client.socket;
    if (socket.destroyed || socket.writableEnded) return;
    if (chunks <= 1) return conn.client.write(bytes);
    const step = Math.max(1, Math.ceil(bytes.length / chunks));
    for (let at = 0; at < bytes.length; at += step) {
      await conn.client.write(bytes.subarray(at, at + step));
      await sleep(2);
    }
  }

  private expect(conn: Conn, r: Rendered, spec: FrameSpec, cid: number): void {
    if (!r.structured) {
      conn.unstructured = true;
      return;
    }
    // a Produce whose acks the edits may have turned into 0 may go unanswered
    const mayBeSilent = r.noResponse || (r.apiKey === 0 && spec.kind !== 'valid' && spec.kind !== 'produce');
    conn.expected.push({ cid, apiKey: r.apiKey, apiVersion: r.apiVersion, mayBeSilent });
  }

  async act(a: Action): Promise<void> {
    this.stats.action(a.op);
    switch (a.op) {
      case 'send': {
        const c = await this.conn(a.conn);
        if (c !== null) await this.sendFrame(c, a.frame, a.chunks);
        break;
      }
      case 'pipeline': {
        const c = await this.conn(a.conn);
        if (c !== null) await this.sendFrame(c, a.frame, 1, a.count);
        break;
      }
      case 'halfClose':
        this.conns.get(a.conn)?.client.socket.end();
        this.inputs++;
        this.allowance++;
        break;
      case 'reset': {
        const c = this.conns.get(a.conn);
        if (c !== undefined) {
          c.client.destroy();
          this.conns.delete(a.conn);
          this.inputs++;
          this.allowance++;
        }
        break;
      }
      case 'pause':
        await sleep(a.ms);
        break;
      case 'burst': {
        const r = render(a.frame);
        const bytes = r.bytes.subarray(0, a.keep % (r.bytes.length + 1));
        const opened = await Promise.allSettled(Array.from({ length: a.n }, () => RawClient.connect(this.h.bootstrap)));
        this.inputs += a.n;
        this.allowance += a.n;
        for (const o of opened) {
          if (o.status === 'rejected') {
            this.stats.connectRefused++;
            continue;
          }
          this.extra.push(o.value);
          if (bytes.length > 0) void o.value.write(bytes);
          if (a.end) o.value.socket.end();
        }
        await sleep(5);
        for (const c of this.extra.splice(0)) c.destroy();
        break;
      }
      case 'sasl': {
        if (this.h.saslAddress === null) break;
        // a fresh SASL connection each time (key 100+): frames before, instead of or after a handshake
        const key = 100 + this.conns.size;
        const c = await this.conn(key, this.h.saslAddress);
        if (c !== null) for (const f of a.frames) await this.sendFrame(c, f);
        break;
      }
    }
  }

  /** Waits until no connection received anything for 100 ms (at most 1.5 s). */
  async settle(): Promise<void> {
    const deadline = Date.now() + 1500;
    let last = -1;
    for (;;) {
      const now = [...this.conns.values()].reduce((n, c) => n + c.client.responses.length + c.client.pendingBytes, 0);
      if (now === last || Date.now() > deadline) return;
      last = now;
      await sleep(100);
    }
  }

  /** Checks every fuzz connection's answers; returns the first wrong one. */
  checkAnswers(): string | null {
    for (const c of this.conns.values()) {
      let next = 0;
      for (const res of c.client.responses) {
        if (res.frame.length < 4) return `an answer of ${res.frame.length} bytes`;
        const cid = res.frame.readInt32BE(0);
        let j = next;
        while (j < c.expected.length && c.expected[j]?.cid !== cid) j++;
        const e = c.expected[j];
        if (e === undefined) {
          if (c.unstructured) break;
          return `an answer with correlation id ${cid}, which was not asked or is out of order`;
        }
        for (let k = next; k < j; k++) {
          const skipped = c.expected[k];
          if (skipped !== undefined && !skipped.mayBeSilent && !c.unstructured)
            return `request ${apiName(skipped.apiKey)} v${skipped.apiVersion} (cid ${skipped.cid}) went unanswered while a later one (cid ${cid}) was answered`;
        }
        next = j + 1;
        if (e.apiKey === null) continue;
        const wrong = this.decodeAnswer(e, res.frame);
        if (wrong !== null) return wrong;
      }
    }
    return null;
  }

  private decodeAnswer(e: Expected, frame: Buffer): string | null {
    const apiKey = e.apiKey ?? -1;
    const known = this.h.apis.find((a) => a.apiKey === apiKey);
    if (known === undefined || e.apiVersion < known.min || e.apiVersion > known.max) {
      // only ApiVersions answers an unsupported version (with a v0 body); anything else is closed
      if (apiKey === 18) return null;
      return `an answer to ${apiName(apiKey)} v${e.apiVersion}, which the broker does not advertise`;
    }
    try {
      const body = decodeResponse(apiKey, e.apiVersion, frame).body;
      this.stats.answer(apiKey, body);
      return null;
    } catch (err) {
      return `the answer to ${apiName(apiKey)} v${e.apiVersion} does not decode: ${String(err)}`;
    }
  }

  close(): void {
    for (const c of this.conns.values()) c.client.destroy();
    for (const c of this.closedConns) c.client.destroy();
    for (const c of this.extra) c.destroy();
  }
}

export function apiName(apiKey: number | null): string {
  return apiKey === null ? 'raw' : (API_KEYS.get(apiKey)?.name ?? `api ${apiKey}`);
}

/** Runs one case and throws what went wrong (a crash, a hang, a leak, a flood, a wrong answer). */
export async function runCase(h: Harness, stats: FuzzStats, fuzzCase: FuzzCase, nextCid: () => number): Promise<void> {
  if (!h.alive) await h.restart();
  const linesBefore = h.logLines().length;
  await h.takePeak();
  const run = new CaseRun(h, stats, nextCid);
  stats.cases++;
  try {
    for (const a of fuzzCase.actions) {
      await run.act(a);
      if (!h.alive) break;
    }
    await run.settle();
  } finally {
    run.close();
  }
  const wrong = run.checkAnswers();
  await sleep(20);
  if (!h.alive) {
    const tail = h.logLines().slice(-15).join('\n');
    throw new Error(`the broker exited (code ${h.broker.child.exitCode}, signal ${h.broker.child.signalCode}); its last lines:\n${tail}`);
  }
  try {
    await h.probe();
  } catch (e) {
    throw new Error(`the broker no longer answers ApiVersions on a new connection: ${String(e)}`, { cause: e });
  }
  const peak = await h.takePeak();
  if (peak > h.opts.rssBudget)
    throw new Error(`RSS reached ${(peak / 2 ** 20).toFixed(0)} MB, over the ${(h.opts.rssBudget / 2 ** 20).toFixed(0)} MB budget`);
  const lines = h.logLines().slice(linesBefore - 1, -1);
  stats.logLines(lines, run.inputs);
  if (lines.length > run.allowance + 1)
    throw new Error(`${lines.length} log lines for ${run.inputs} inputs (at most ${run.allowance + 1}):\n${lines.slice(0, 10).join('\n')}`);
  if (wrong !== null) throw new Error(`wrong answer: ${wrong}`);
  await h.backgroundProgress();
}

export interface FuzzOptions {
  /** time budget of the run (ms) */
  budgetMs: number;
  seed?: number;
  /** fast-check's replay path of a failure (with its seed) */
  path?: string;
  /** verify the background records every this many ms (and at the end) */
  verifyEveryMs?: number;
}

export interface FuzzOutcome {
  failed: boolean;
  interrupted: boolean;
  seed: number;
  numRuns: number;
  numShrinks: number;
  counterexample: FuzzCase | null;
  counterexamplePath: string | null;
  error: string | null;
  backgroundVerified: number;
}

/** Runs cases for the budget (or replays one path) against a started harness. */
export async function fuzz(h: Harness, stats: FuzzStats, opts: FuzzOptions): Promise<FuzzOutcome> {
  let cid = 1;
  const nextCid = () => (cid = (cid % 0x7ffffff0) + 1);
  let lastVerify = Date.now();
  let verified = 0;
  const every = opts.verifyEveryMs ?? 60_000;
  const prop = fc.asyncProperty(caseArb(h.apis, { sasl: h.saslAddress !== null }), async (c) => {
    await runCase(h, stats, c, nextCid);
    if (Date.now() - lastVerify > every) {
      verified = Math.max(verified, await h.verifyBackground());
      lastVerify = Date.now();
    }
  });
  const seed = opts.seed ?? Date.now() ^ (Math.random() * 0x7fffffff);
  // the plugin option widens the details' type; the property's value is a [FuzzCase]
  const details = (await fc.check(prop, {
    seed,
    ...(opts.path === undefined ? {} : { path: opts.path }),
    numRuns: opts.path === undefined ? 1_000_000_000 : 1,
    plugins: [fc.interruptAfterTimeLimit(opts.budgetMs)],
    endOnFailure: false,
  })) as fc.RunDetails<[FuzzCase]>;
  if (!h.alive) await h.restart();
  await h.stopBackground();
  verified = Math.max(verified, await h.verifyBackground());
  const error = details.errorInstance;
  return {
    failed: details.failed,
    interrupted: details.interrupted,
    seed: details.seed,
    numRuns: details.numRuns,
    numShrinks: details.numShrinks,
    counterexample: details.counterexample?.[0] ?? null,
    counterexamplePath: details.counterexamplePath,
    error: error === null ? null : error instanceof Error ? error.message : JSON.stringify(error),
    backgroundVerified: verified,
  };
}
