/**
 * One client connection: 4-byte size-prefixed framing, request size limit checked before any
 * allocation, strictly serial processing (a long-polling request holds the next one, as Kafka
 * mutes the channel), responses written in request order, backpressure and idle timeout.
 */
import type { Socket } from 'node:net';
import { ClientIdCache } from '../../protocol/frame.js';
import type { Logger } from '../observability/logger.js';
import { RequestOutcome, type RequestObserver, type RequestTiming } from '../observability/request-timing.js';

export interface ConnectionInfo {
  /** Kafka-style connection id: "localHost:localPort-remoteHost:remotePort-index" */
  id: string;
  remoteAddress: string;
  remotePort: number;
  listenerName: string;
  /** Kafka's principal: User:ANONYMOUS, or from the client certificate on an SSL listener (ssl.principal.mapping.rules) */
  principal: string;
  logger: Logger;
  /** resolves once the socket has closed */
  closed: Promise<void>;
  /** the client's software name and version, from its ApiVersions v3+ request (set by the dispatcher) */
  clientSoftware?: { name: string; version: string };
  /** the client id of the connection's last request, reused while the next ones repeat it (protocol/frame.ts) */
  readonly clientIds: ClientIdCache;
}

/**
 * What the dispatcher wants done with a request. `response` buffers are written verbatim and must
 * already carry the 4-byte size prefix (encodeResponse(..., { sizePrefix: true })); a Buffer[] is
 * written with one cork/uncork (writev), without concatenating.
 */
export type DispatchResult = { response: Buffer | Buffer[] } | { noResponse: true } | { close: string };

/**
 * Handles one request frame (without its 4-byte size prefix). `timing` is present when the listener
 * has a RequestObserver: the dispatcher fills in what the request was and when its response was ready.
 */
export type Dispatch = (frame: Buffer, conn: ConnectionInfo, timing?: RequestTiming) => DispatchResult | Promise<DispatchResult>;

export interface ConnectionLimits {
  /** socket.request.max.bytes: larger (or negative) sizes close the connection unread */
  socketRequestMaxBytes: number;
  /** looks at the first bytes read; false closes the connection unread (it logged why) */
  screenFirstChunk?: (chunk: Buffer) => boolean;
  /** connections.max.idle.ms: close after this long without socket activity; <= 0 disables */
  connectionsMaxIdleMs: number;
  /** stop reading while this many complete requests wait behind the one in flight */
  maxQueuedRequests: number;
  /** ... or while the waiting requests hold this many bytes */
  maxQueuedBytes: number;
}

type State = 'open' | 'ending' | 'closed';

/** While closing, how long without socket activity before the socket is destroyed. */
const LINGER_MS = 5000;

export class Connection {
  readonly info: ConnectionInfo;
  /** resolves once the socket has closed */
  readonly closed: Promise<void>;

  // Received bytes not yet framed: a list of chunks, the first one consumed up to `headOffset`.
  private chunks: Buffer[] = [];
  private headOffset = 0;
  private buffered = 0;
  /** size of the frame being received; -1 while the size prefix is still incomplete */
  private frameSize = -1;

  private readonly queue: Buffer[] = [];
  /** when each queued frame had been read (performance.now()), kept only with an observer */
  private readonly queueTimes: number[] = [];
  /** requests whose responses were handed to the socket and are not flushed yet, in write order */
  private readonly sending: RequestTiming[] = [];
  private queuedBytes = 0;
  /** while onData runs (with an observer): when its chunk was read, so requests it dispatches need no second clock read */
  private readAtNow = -1;
  private inFlight = false;
  /**
   * The peer closed with whole requests still queued: they are processed all the same, with no
   * responses (Kafka handles a request it has read even when its connection is gone, so an acks=0
   * producer that sends and disconnects loses nothing). `closed` resolves once they are done.
   */
  private headless = false;
  private readPaused = false;
  private state: State = 'open';
  private closeLogged = false;
  private unscreened = true;
  private resolveClosed!: () => void;

  constructor(
    readonly socket: Socket,
    info: Omit<ConnectionInfo, 'logger' | 'closed' | 'clientIds'>,
    private readonly dispatch: Dispatch,
    private readonly limits: ConnectionLimits,
    logger: Logger,
    /** told about every request once its response has been flushed (request metrics, request log) */
    private readonly observer: RequestObserver | null = null,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.info = { ...info, logger: logger.child({ conn: info.id }), closed: this.closed, clientIds: new ClientIdCache() };
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.pump());
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // Resets and broken pipes are a normal part of a client's life.
      this.info.logger.debug({ code: err.code, err: err.message }, 'socket error');
    });
    socket.on('close', () => this.onClose());
    socket.on('timeout', () => this.onIdle());
    if (limits.connectionsMaxIdleMs > 0) socket.setTimeout(limits.connectionsMaxIdleMs);
  }

  /** true while a request is being processed or waits in the queue */
  get busy(): boolean {
    return this.inFlight || this.queue.length > 0;
  }

  /** Graceful close: read nothing new, finish the queued and in-flight requests, flush, end. */
  beginClose(): void {
    if (this.state !== 'open') return;
    this.state = 'ending';
    this.dropUnframed();
    this.pump();
  }

  /** Closes at once (protocol violation, limit, deadline). Logs `reason` once unless quiet. */
  destroy(reason?: string, level: 'warn' | 'info' | 'debug' = 'info', fields: Record<string, unknown> = {}): void {
    if (reason !== undefined) this.logClose(reason, level, fields);
    this.state = 'closed';
    this.socket.destroy();
    if (this.headless) {
      // a headless drain given up (a request failed, or the shutdown's grace period ran out)
      this.headless = false;
      this.queue.length = 0;
      this.queueTimes.length = 0;
      this.queuedBytes = 0;
      this.resolveClosed();
    }
  }

  // ---- reading and framing ----

  private onData(chunk: Buffer): void {
    // While ending, bytes from the peer are read and dropped so our last responses are not lost
    // to a reset when the socket closes with unread data.
    if (this.state !== 'open') return;
    if (this.unscreened) {
      this.unscreened = false;
      if (this.limits.screenFirstChunk?.(chunk) === false) {
        this.destroy();
        return;
      }
    }
    const readAt = this.observer === null ? 0 : performance.now();
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.frameSize < 0) {
        if (this.buffered < 4) break;
        const size = this.takeInt32();
        if (size < 0 || size > this.limits.socketRequestMaxBytes) {
          // Nothing is allocated for it: the size alone condemns the connection.
          this.destroy('invalid request size', 'warn', {
            size,
            socketRequestMaxBytes: this.limits.socketRequestMaxBytes,
          });
          return;
        }
        this.frameSize = size;
      }
      if (this.buffered < this.frameSize) break;
      const frame = this.take(this.frameSize);
      this.frameSize = -1;
      this.queue.push(frame);
      if (this.observer !== null) this.queueTimes.push(readAt);
      this.queuedBytes += frame.length;
    }
    this.readAtNow = readAt;
    this.pump();
    this.readAtNow = -1;
    this.updateReading();
  }

  /** Reads the 4-byte big-endian size prefix, which may straddle chunks. */
  private takeInt32(): number {
    const head = this.chunks[0]!;
    if (head.length - this.headOffset >= 4) {
      const v = head.readInt32BE(this.headOffset);
      this.consume(4);
      return v;
    }
    return this.take(4).readInt32BE(0);
  }

  /** Removes n buffered bytes: a zero-copy view when they sit in one chunk, else one allocation. */
  private take(n: number): Buffer {
    const head = this.chunks[0];
    if (n === 0) return Buffer.alloc(0);
    if (head !== undefined && head.length - this.headOffset >= n) {
      const out = head.subarray(this.headOffset, this.headOffset + n);
      this.consume(n);
      return out;
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const len = Math.min(c.length - this.headOffset, n - filled);
      c.copy(out, filled, this.headOffset, this.headOffset + len);
      filled += len;
      this.consume(len);
    }
    return out;
  }

  private consume(n: number): void {
    this.buffered -= n;
    this.headOffset += n;
    const head = this.chunks[0];
    if (head !== undefined && this.headOffset === head.length) {
      this.chunks.shift();
      this.headOffset = 0;
    }
  }

  private dropUnframed(): void {
    this.chunks = [];
    this.headOffset = 0;
    this.buffered = 0;
    this.frameSize = -1;
  }

  /** Pauses reading while too much waits; resumes when the queue has room again. */
  private updateReading(): void {
    if (this.state === 'closed') return;
    const full =
      this.state === 'open' && (this.queue.length >= this.limits.maxQueuedRequests || this.queuedBytes >= this.limits.maxQueuedBytes);
    if (full && !this.readPaused) {
      this.readPaused = true;
      this.socket.pause();
    } else if (!full && this.readPaused) {
      this.readPaused = false;
      this.socket.resume();
    }
  }

  // ---- processing ----

  /** Dispatches queued requests one at a time while the socket's write buffer has room. */
  private pump(): void {
    while (!this.inFlight && this.queue.length > 0 && (this.state !== 'closed' || this.headless) && !this.socket.writableNeedDrain) {
      const frame = this.queue.shift()!;
      this.queuedBytes -= frame.length;
      this.inFlight = true;
      let timing: RequestTiming | undefined;
      if (this.observer !== null) {
        const now = this.readAtNow >= 0 ? this.readAtNow : performance.now();
        timing = this.observer.begin(this.info, this.queueTimes.shift() ?? now, frame.length);
        timing.startedAt = now;
      }
      let result: DispatchResult | Promise<DispatchResult>;
      try {
        result = this.dispatch(frame, this.info, timing);
      } catch (err) {
        this.inFlight = false;
        this.destroy('dispatch threw', 'warn', { err: errText(err) });
        return;
      }
      if (isThenable(result)) {
        result.then(
          (r) => {
            this.inFlight = false;
            if (this.complete(r, timing)) this.pump();
          },
          (err: unknown) => {
            this.inFlight = false;
            this.destroy('dispatch threw', 'warn', { err: errText(err) });
          },
        );
        this.updateReading();
        return;
      }
      this.inFlight = false;
      if (!this.complete(result, timing)) return;
    }
    this.updateReading();
    if (this.state === 'ending' && !this.busy) this.finishEnding();
    if (this.headless && !this.busy) {
      this.headless = false;
      this.resolveClosed();
    }
  }

  /** Writes a result's response. Returns false if the connection is now closing. */
  private complete(r: DispatchResult, timing: RequestTiming | undefined): boolean {
    if (this.state === 'closed') {
      if (timing !== undefined) this.endedWithout(timing, RequestOutcome.CLOSED, 'the peer closed the connection');
      return this.headless; // a headless drain goes on to the next queued request
    }
    if ('response' in r) {
      const res = r.response;
      if (!Buffer.isBuffer(res) && res.length === 0) {
        if (timing !== undefined) this.endedWithout(timing, RequestOutcome.RESPONSE, null);
        return true;
      }
      // With an observer, the last write carries the callback that stamps the flush (one shared function).
      const cb = timing === undefined ? undefined : this.onFlushed;
      if (timing !== undefined) this.sendingStarts(timing, Buffer.isBuffer(res) ? res.length : res.reduce((n, b) => n + b.length, 0));
      if (Buffer.isBuffer(res)) {
        this.socket.write(res, cb);
      } else if (res.length === 1) {
        this.socket.write(res[0]!, cb);
      } else {
        this.socket.cork();
        for (let i = 0; i < res.length; i++) this.socket.write(res[i]!, i === res.length - 1 ? cb : undefined);
        this.socket.uncork();
      }
      return true;
    }
    if ('close' in r) {
      if (timing !== undefined) this.endedWithout(timing, RequestOutcome.CLOSED, r.close);
      this.logClose(r.close, 'info', {});
      this.closeAfterFlush();
      return false;
    }
    if (timing !== undefined) this.endedWithout(timing, RequestOutcome.NO_RESPONSE, null);
    return true; // noResponse (acks=0): nothing goes back
  }

  private sendingStarts(t: RequestTiming, bytes: number): void {
    const now = performance.now();
    if (t.responseReadyAt === 0) t.responseReadyAt = now;
    t.sendStartAt = now;
    t.responseBytes = bytes;
    this.sending.push(t);
  }

  /** The write of the oldest unflushed response completed (flushed to the kernel, or failed). */
  private readonly onFlushed = (): void => {
    const t = this.sending.shift();
    if (t === undefined) return;
    t.sendDoneAt = performance.now();
    this.observer?.completed(t);
  };

  /** A request that ends without a response: no response (acks=0) or the connection closes. */
  private endedWithout(t: RequestTiming, outcome: RequestOutcome, reason: string | null): void {
    if (t.responseReadyAt === 0) t.responseReadyAt = performance.now();
    t.sendStartAt = t.sendDoneAt = t.responseReadyAt;
    t.outcome = outcome;
    t.closeReason = reason;
    this.observer?.completed(t);
  }

  /** Ending: the last response is queued for writing; send FIN after it and drain the peer. */
  private finishEnding(): void {
    this.closeAfterFlush();
  }

  private closeAfterFlush(): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    this.state = 'ending';
    this.queue.length = 0;
    this.queueTimes.length = 0;
    this.queuedBytes = 0;
    this.dropUnframed();
    this.socket.end();
    // Keep reading (and dropping) until the peer closes too; a peer that neither reads nor closes
    // for LINGER_MS (no socket activity) is destroyed.
    this.readPaused = false;
    this.socket.resume();
    this.socket.setTimeout(LINGER_MS);
  }

  private onIdle(): void {
    if (this.state === 'open' && this.inFlight) {
      // A long-polling request is in flight: that is not idleness. Re-arm. (Requests queued
      // behind a client that stopped reading its responses do not count: that client is stalled.)
      this.socket.setTimeout(this.limits.connectionsMaxIdleMs);
      return;
    }
    if (this.state === 'open') this.destroy('idle', 'debug', { connectionsMaxIdleMs: this.limits.connectionsMaxIdleMs });
    else this.destroy();
  }

  private onClose(): void {
    // Closed by the peer (not by us: destroy() and closeAfterFlush() leave 'open' first) with whole
    // requests queued: process them without responses before `closed` resolves.
    this.headless = this.state === 'open' && this.queue.length > 0;
    this.state = 'closed';
    this.dropUnframed();
    if (this.headless) {
      if (!this.inFlight) this.pump();
      return;
    }
    this.queue.length = 0;
    this.queueTimes.length = 0;
    this.queuedBytes = 0;
    this.resolveClosed();
  }

  private logClose(reason: string, level: 'warn' | 'info' | 'debug', fields: Record<string, unknown>): void {
    if (this.closeLogged) return;
    this.closeLogged = true;
    this.info.logger[level](
      { remoteAddress: this.info.remoteAddress, remotePort: this.info.remotePort, ...fields },
      `closing connection: ${reason}`,
    );
  }
}

function isThenable<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

function errText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
