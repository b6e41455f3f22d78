/**
 * Test helpers: a stub dispatch (echo-like, answers with the request's correlation id), a raw TCP
 * client that parses size-prefixed responses, and a logger that captures its JSON lines.
 *
 * Stub request frame: apiKey int16 | apiVersion int16 | correlationId int32 | mode int8 | delayMs int32 | payload
 * Stub response frame: size int32 | correlationId int32 | payload (echoed)
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../../lib/observability/logger.js';
import { KafkaServer, type ListenerOptions } from '../../../lib/network/server.js';
import type { ConnectionInfo, DispatchResult } from '../../../lib/network/connection.js';
import { asError } from '../../../lib/as-error.js';

export const Mode = {
  ECHO: 0,
  NO_RESPONSE: 1,
  CLOSE: 2,
  THROW: 3,
  REJECT: 4,
  /** response written as three separate buffers (Buffer[]) */
  SPLIT: 5,
  /** never resolves (stuck request) */
  HANG: 6,
} as const;

export function request(correlationId: number, opts: { mode?: number; delayMs?: number; payload?: Buffer } = {}): Buffer {
  const payload = opts.payload ?? Buffer.alloc(0);
  const body = Buffer.alloc(13);
  body.writeInt16BE(0, 0);
  body.writeInt16BE(0, 2);
  body.writeInt32BE(correlationId, 4);
  body.writeInt8(opts.mode ?? Mode.ECHO, 8);
  body.writeInt32BE(opts.delayMs ?? 0, 9);
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length + payload.length, 0);
  return Buffer.concat([size, body, payload]);
}

export interface StubStats {
  calls: number;
  active: number;
  maxActivePerConn: Map<string, number>;
  /** correlation ids in the order dispatch started */
  started: number[];
}

export function stubDispatch(stats: StubStats) {
  const activePerConn = new Map<string, number>();
  return (frame: Buffer, conn: ConnectionInfo): DispatchResult | Promise<DispatchResult> => {
    stats.calls++;
    if (frame.length < 13) return { close: `frame of ${frame.length} bytes is too short` };
    const correlationId = frame.readInt32BE(4);
    const mode = frame.readInt8(8);
    const delayMs = frame.readInt32BE(9);
    const payload = frame.subarray(13);
    stats.started.push(correlationId);
    const n = (activePerConn.get(conn.id) ?? 0) + 1;
    activePerConn.set(conn.id, n);
    stats.maxActivePerConn.set(conn.id, Math.max(n, stats.maxActivePerConn.get(conn.id) ?? 0));
    const done = (): void => {
      activePerConn.set(conn.id, (activePerConn.get(conn.id) ?? 1) - 1);
    };
    const answer = (): DispatchResult => {
      done();
      const head = Buffer.alloc(8);
      head.writeInt32BE(4 + payload.length, 0);
      head.writeInt32BE(correlationId, 4);
      switch (mode) {
        case Mode.NO_RESPONSE:
          return { noResponse: true };
        case Mode.CLOSE:
          return { close: 'stub asked to close' };
        case Mode.THROW:
          throw new Error('stub exploded');
        case Mode.SPLIT:
          return { response: [head.subarray(0, 3), head.subarray(3), Buffer.from(payload)] };
        default:
          return { response: Buffer.concat([head, payload]) };
      }
    };
    if (mode === Mode.HANG) return new Promise<DispatchResult>(() => {});
    if (mode === Mode.REJECT) {
      return new Promise<DispatchResult>((_, reject) =>
        setTimeout(() => {
          done();
          reject(new Error('stub rejected'));
        }, delayMs),
      );
    }
    if (delayMs > 0)
      return new Promise<DispatchResult>((resolve, reject) =>
        setTimeout(() => {
          try {
            resolve(answer());
          } catch (e) {
            reject(asError(e));
          }
        }, delayMs),
      );
    return answer();
  };
}

export function newStats(): StubStats {
  return { calls: 0, active: 0, maxActivePerConn: new Map(), started: [] };
}

/** A logger whose JSON lines land in `lines`. */
export function captureLogger(level = 'debug'): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}

export function listenerOptions(over: Partial<ListenerOptions> = {}): ListenerOptions {
  return {
    name: 'PLAINTEXT',
    host: '127.0.0.1',
    port: 0,
    socketSendBufferBytes: -1,
    socketReceiveBufferBytes: -1,
    socketRequestMaxBytes: 104857600,
    connectionsMaxIdleMs: 600000,
    maxConnections: 2147483647,
    maxConnectionsPerIp: 2147483647,
    ...over,
  };
}

export interface Harness {
  server: KafkaServer;
  port: number;
  stats: StubStats;
  lines: Array<Record<string, unknown>>;
}

export async function startServer(over: Partial<ListenerOptions> = {}): Promise<Harness> {
  const stats = newStats();
  const { logger, lines } = captureLogger();
  const server = new KafkaServer(listenerOptions(over), stubDispatch(stats), logger);
  const { port } = await server.listen();
  return { server, port, stats, lines };
}

/** Raw client: collects response frames (correlationId + payload) and notices when closed. */
export class Client {
  readonly socket: net.Socket;
  readonly responses: Array<{ correlationId: number; payload: Buffer }> = [];
  closed = false;
  readonly closedAt: Promise<void>;
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.setNoDelay(true);
    socket.on('error', () => {});
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readInt32BE(0)) {
        const size = this.buf.readInt32BE(0);
        this.responses.push({ correlationId: this.buf.readInt32BE(4), payload: Buffer.from(this.buf.subarray(8, 4 + size)) });
        this.buf = this.buf.subarray(4 + size);
      }
      this.wake();
    });
    this.closedAt = new Promise((resolve) =>
      socket.on('close', () => {
        this.closed = true;
        this.wake();
        resolve();
      }),
    );
  }

  static connect(port: number, localAddress?: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host: '127.0.0.1', port, ...(localAddress === undefined ? {} : { localAddress }) }, () => {
        s.off('error', reject);
        resolve(new Client(s));
      });
      s.once('error', reject);
    });
  }

  send(b: Buffer): void {
    this.socket.write(b);
  }

  /** Waits until `n` responses arrived (rejects if the socket closes first or after timeoutMs). */
  async waitFor(n: number, timeoutMs = 5000): Promise<Array<{ correlationId: number; payload: Buffer }>> {
    await this.until(() => this.responses.length >= n || this.closed, timeoutMs, `${n} responses`);
    if (this.responses.length < n) throw new Error(`connection closed after ${this.responses.length}/${n} responses`);
    return this.responses;
  }

  waitClosed(timeoutMs = 5000): Promise<void> {
    return this.until(() => this.closed, timeoutMs, 'close');
  }

  private until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      const check = (): void => {
        if (cond()) {
          clearTimeout(t);
          resolve();
        } else this.waiters.push(check);
      };
      this.waiters.push(check);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The clients a test opened, destroyed together (in afterEach). */
export class OpenClients {
  readonly all: Client[] = [];

  async connect(port: number, localAddress?: string): Promise<Client> {
    const c = await Client.connect(port, localAddress);
    this.all.push(c);
    return c;
  }

  destroyAll(): void {
    for (const c of this.all.splice(0)) c.destroy();
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` every few ms until true or timeout. */
export async function eventually(cond: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}
