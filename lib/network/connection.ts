/**
 * One client connection: 4-byte size-prefixed framing, request size limit checked before any
 * allocation, strictly serial processing (a long-polling request holds the next one, as Kafka
 * mutes the channel), responses written in request order, backpressure and idle timeout.
 *
 * Back-pressure (Kafka mutes a channel instead): a new request is framed only while the
 * connection's read-ahead queue has room, no response waits unsent in the socket's buffer beyond
 * its high-water mark, and the broker-wide RequestBudget has room; otherwise the socket is paused
 * (the kernel's receive buffer, then TCP's window, holds the client back) until that changes. So a
 * connection holds at most one request being read, its bounded queue, and one response being sent.
 */
import type { Socket } from 'node:net';
import { ClientIdCache } from '../../protocol/frame.js';
import { fileSliceCalls } from '../log/file-io.js';
import type { Logger } from '../observability/logger.js';
import { RequestOutcome, type RequestObserver, type RequestTiming } from '../observability/request-timing.js';
import { ChannelMute } from './channel-mute.js';
import { ChunkBuffer } from './chunk-buffer.js';
import { readDirect } from './direct-read.js';
import type { ConnectionInfo, ConnectionLimits, Dispatch, DispatchResult } from './connection-types.js';
import { IdleTimer } from './idle-timer.js';
import type { BudgetWaiter } from './request-budget.js';
import { RequestQueue } from './request-queue.js';
import { ResponseWriter } from './response-writer.js';
import { sendNowaitCall } from './direct-write.js';
import { socketFd } from './socket-buffers.js';

export type { CloseLevel, ConnectionInfo, ConnectionLimits, Dispatch, DispatchResult } from './connection-types.js';

type State = 'open' | 'ending' | 'closed';

/** While closing, how long without socket activity before the socket is destroyed. */
const LINGER_MS = 5000;

export class Connection implements BudgetWaiter {
  readonly info: ConnectionInfo;
  /** resolves once the socket has closed */
  readonly closed: Promise<void>;

  /** received bytes not yet framed */
  private readonly input = new ChunkBuffer();
  /** size of the frame being received (taken from the budget); -1 while none has been admitted */
  private frameSize = -1;
  /** Date.now() since when a request has been partly received (0: none), for the request read timeout */
  private partialSince = 0;

  private readonly queue: RequestQueue;
  /** bytes of the request in flight still counted in the budget */
  private inFlightBytes = 0;
  private advancing = false;
  private advanceAgain = false;
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
  /** muted for a client quota's throttle time (lib/network/channel-mute.ts) */
  private readonly mute = new ChannelMute(() => this.advance());
  private readonly writer: ResponseWriter;
  /** connections.max.idle.ms (null: disabled) */
  private readonly idle: IdleTimer | null;

  constructor(
    readonly socket: Socket,
    info: Omit<ConnectionInfo, 'logger' | 'closed' | 'clientIds' | 'requestBytesDone'>,
    private readonly dispatch: Dispatch,
    private readonly limits: ConnectionLimits,
    logger: Logger,
    /** told about every request once its response has been flushed (request metrics, request log) */
    private readonly observer: RequestObserver | null = null,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.info = {
      ...info,
      logger: logger.child({ conn: info.id }),
      closed: this.closed,
      clientIds: new ClientIdCache(),
      requestBytesDone: () => this.releaseInFlight(),
    };
    // FileSlices (Fetch of stored batches) go out with sendfile from a plain TCP socket's descriptor
    const sendFd = limits.sendFile === true && fileSliceCalls() !== null ? socketFd(socket) : null;
    this.info.sendsFiles = sendFd !== null;
    // a plain TCP socket's responses go to its descriptor while the stream holds nothing (direct-write.ts)
    const send = limits.writeDirect === true ? sendNowaitCall() : null;
    const directFd = send === null ? null : socketFd(socket);
    const sender = send === null || directFd === null ? null : { fd: directFd, send };
    this.writer = new ResponseWriter(socket, observer, sendFd, (reason) => this.destroy(reason, 'warn'), sender);
    this.queue = new RequestQueue(limits.budget, observer !== null);
    // a plain TCP socket reads straight into the frame being assembled (direct-read.ts); else 'data' chunks
    const direct =
      limits.readDirect === true &&
      readDirect(
        socket,
        () => this.input.room(),
        (buf, n) => this.onRead(buf, n),
      );
    if (!direct) socket.on('data', (chunk: Buffer) => this.onRead(chunk, chunk.length));
    socket.on('drain', () => {
      this.idle?.touch();
      this.advance();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // Resets and broken pipes are a normal part of a client's life.
      this.info.logger.debug({ code: err.code, err: err.message }, 'socket error');
    });
    socket.on('close', () => this.onClose());
    // the socket's own timeout serves only the linger after a close (closeAfterFlush)
    socket.on('timeout', () => this.destroy());
    this.idle = limits.connectionsMaxIdleMs > 0 ? new IdleTimer(limits.connectionsMaxIdleMs, () => this.onIdle()) : null;
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
    this.advance();
  }

  /** The budget has room again: frame what waits and resume reading (BudgetWaiter). */
  resume(): void {
    this.advance();
  }

  /**
   * Whether a request has been partly received for `timeoutMs` or more while reading was not paused
   * (gregor.request.read.timeout.ms: a slow-loris client). The caller closes it.
   */
  readStalled(now: number, timeoutMs: number): boolean {
    return this.state === 'open' && !this.readPaused && this.partialSince > 0 && now - this.partialSince >= timeoutMs;
  }

  /** Closes at once (protocol violation, limit, deadline). Logs `reason` once unless quiet. */
  destroy(reason?: string, level: 'warn' | 'info' | 'debug' = 'info', fields: Record<string, unknown> = {}): void {
    if (reason !== undefined) this.logClose(reason, level, fields);
    this.state = 'closed';
    this.idle?.stop();
    this.socket.destroy();
    if (this.headless) {
      // a headless drain given up (a request failed, or the shutdown's grace period ran out)
      this.headless = false;
      this.queue.clear();
      this.resolveClosed();
    }
  }

  // ---- reading and framing ----

  /** `n` bytes were read into `buf` (a 'data' chunk, or a buffer of direct-read.ts) */
  private onRead(buf: Buffer, n: number): void {
    // While ending, bytes from the peer are read and dropped so our last responses are not lost
    // to a reset when the socket closes with unread data.
    if (this.state !== 'open') return;
    this.idle?.touch();
    if (this.unscreened) {
      this.unscreened = false;
      if (this.limits.screenFirstChunk?.(buf.subarray(0, n)) === false) {
        this.destroy();
        return;
      }
    }
    this.input.pushRead(buf, n);
    // the rest of a request being received (a TLS socket delivers 16 KB at a time): nothing to frame yet
    if (this.frameSize >= 0 && this.input.buffered < this.frameSize) return;
    this.readAtNow = this.observer === null ? 0 : performance.now();
    this.advance();
    this.readAtNow = -1;
  }

  /**
   * Frames what the limits allow, dispatches, and pauses or resumes reading; again while a
   * dispatch that completed at once (or a budget release) made room for more.
   */
  private advance(): void {
    if (this.advancing) {
      this.advanceAgain = true;
      return;
    }
    this.advancing = true;
    this.queue.park(false);
    try {
      do {
        this.advanceAgain = false;
        const blocked = this.frameBuffered();
        this.pump();
        if (blocked && this.mayFrame()) this.advanceAgain = true;
      } while (this.advanceAgain && this.state === 'open');
    } finally {
      this.advancing = false;
    }
    this.queue.park(this.state === 'open' && this.queue.length > 0 && this.socket.writableNeedDrain);
    this.updateReading();
    if (this.state === 'open') {
      if (this.frameSize < 0 && this.input.buffered === 0) this.partialSince = 0;
      else if (this.partialSince === 0) this.partialSince = Date.now();
    }
  }

  /** Whether another request may be framed now (see the file comment). */
  private mayFrame(): boolean {
    return (
      !this.mute.muted &&
      this.queue.length < this.limits.maxQueuedRequests &&
      this.queue.bytes < this.limits.maxQueuedBytes &&
      !this.socket.writableNeedDrain &&
      this.limits.budget.hasRoom()
    );
  }

  /** Frames buffered bytes into queued requests while allowed; true if it stopped at a limit. */
  private frameBuffered(): boolean {
    const input = this.input;
    while (this.state === 'open') {
      if (this.frameSize < 0) {
        if (input.buffered < 4) return false;
        if (!this.mayFrame()) return true;
        const size = input.takeInt32();
        // before SASL authentication completes, frames are bounded by sasl.server.max.receive.size
        const sasl = this.info.sasl;
        const max = sasl === undefined || sasl.authenticated ? this.limits.socketRequestMaxBytes : sasl.settings.maxReceiveSize;
        if (size < 0 || size > max) {
          // Nothing is allocated for it: the size alone condemns the connection.
          this.destroy('invalid request size', 'warn', {
            size,
            [sasl === undefined || sasl.authenticated ? 'socketRequestMaxBytes' : 'saslServerMaxReceiveSize']: max,
          });
          return false;
        }
        this.frameSize = size;
        this.limits.budget.take(size);
        input.expect(size);
      }
      if (input.buffered < this.frameSize) return false;
      const frame = input.take(this.frameSize);
      this.frameSize = -1;
      this.partialSince = 0;
      this.queue.push(frame, this.observer === null ? 0 : this.readAtNow >= 0 ? this.readAtNow : performance.now());
    }
    return false;
  }

  /** Drops unframed bytes, giving back the budget of a request being received. */
  private dropUnframed(): void {
    this.input.clear();
    if (this.frameSize >= 0) this.limits.budget.release(1, this.frameSize);
    this.frameSize = -1;
    this.partialSince = 0;
  }

  /** The request in flight is done with its bytes (answered, failed, or handled early). */
  private releaseInFlight(): void {
    const n = this.inFlightBytes;
    if (n === 0) return;
    this.inFlightBytes = 0;
    this.limits.budget.release(0, n);
  }

  /**
   * Reads while a request being received needs its remaining bytes or another may be framed;
   * pauses otherwise, waiting in the budget when that is what lacks room.
   */
  private updateReading(): void {
    if (this.state === 'closed') return;
    const read =
      this.state !== 'open' || (this.frameSize >= 0 ? this.input.buffered < this.frameSize : this.input.buffered < 4 && this.mayFrame());
    if (!read && !this.readPaused) {
      this.readPaused = true;
      this.socket.pause();
    } else if (read && this.readPaused) {
      this.readPaused = false;
      this.socket.resume();
      if (this.partialSince > 0) this.partialSince = Date.now(); // the read timeout counts from here
    }
    if (!read && this.state === 'open' && !this.limits.budget.hasRoom()) this.limits.budget.wait(this);
  }

  // ---- processing ----

  /**
   * Dispatches queued requests one at a time while the socket's write buffer has room (only from
   * advance()). With several queued, the socket is corked meanwhile: responses answered at once
   * (metadata, offsets, a burst of small requests) leave in one write, on a TLS socket one set of
   * records instead of one record each.
   */
  private pump(): void {
    const cork = this.queue.length > 1 && !this.inFlight && this.state === 'open';
    if (cork) this.socket.cork();
    try {
      this.pumpQueued();
    } finally {
      if (cork) this.socket.uncork();
    }
  }

  private pumpQueued(): void {
    while (
      !this.inFlight &&
      this.queue.length > 0 &&
      (this.state !== 'closed' || this.headless) &&
      !this.socket.writableNeedDrain &&
      (!this.mute.muted || this.state !== 'open')
    ) {
      const { frame, readAt } = this.queue.shift();
      this.inFlight = true;
      // handled from here on (Kafka: a handler took it off the request queue); its bytes stay counted until done
      this.inFlightBytes = frame.length;
      this.limits.budget.release(1, 0);
      let timing: RequestTiming | undefined;
      if (this.observer !== null) {
        const now = this.readAtNow >= 0 ? this.readAtNow : performance.now();
        timing = this.observer.begin(this.info, Number.isNaN(readAt) ? now : readAt, frame.length);
        timing.startedAt = now;
      }
      let result: DispatchResult | Promise<DispatchResult>;
      try {
        result = this.dispatch(frame, this.info, timing);
      } catch (err) {
        this.inFlight = false;
        this.releaseInFlight();
        this.destroy('dispatch threw', 'warn', { err: errText(err) });
        return;
      }
      if (isThenable(result)) {
        result.then(
          (r) => {
            this.inFlight = false;
            // the response is written before the budget is released: a release may resume this connection
            const more = this.complete(r, timing);
            this.releaseInFlight();
            if (more) this.advance();
          },
          (err: unknown) => {
            this.inFlight = false;
            this.releaseInFlight();
            this.destroy('dispatch threw', 'warn', { err: errText(err) });
          },
        );
        return;
      }
      this.inFlight = false;
      const more = this.complete(result, timing);
      this.releaseInFlight();
      if (!more) return;
    }
    if (this.state === 'ending' && !this.busy) this.finishEnding();
    if (this.headless && !this.busy) {
      this.headless = false;
      this.resolveClosed();
    }
  }

  /** Writes a result's response. Returns false if the connection is now closing. */
  private complete(r: DispatchResult, timing: RequestTiming | undefined): boolean {
    if (this.state === 'closed') {
      if ('response' in r) r.written?.();
      if (timing !== undefined) this.writer.endedWithout(timing, RequestOutcome.CLOSED, 'the peer closed the connection');
      return this.headless; // a headless drain goes on to the next queued request
    }
    if ('throttleMs' in r) this.mute.mute(r.throttleMs);
    if ('response' in r) {
      this.idle?.touch();
      // (an empty Buffer[] writes nothing and, as before, carries no close)
      if (!this.writer.write(r.response, timing, r.written) || r.close === undefined) return true;
      this.logClose(r.close, r.level ?? 'info', r.fields ?? {});
      this.closeAfterFlush();
      return false;
    }
    if ('close' in r) {
      if (timing !== undefined) this.writer.endedWithout(timing, RequestOutcome.CLOSED, r.close);
      this.logClose(r.close, r.level ?? 'info', r.fields ?? {});
      this.closeAfterFlush();
      return false;
    }
    if (timing !== undefined) this.writer.endedWithout(timing, RequestOutcome.NO_RESPONSE, null);
    return true; // noResponse (acks=0): nothing goes back
  }

  /** Ending: the last response is queued for writing; send FIN after it and drain the peer. */
  private finishEnding(): void {
    this.closeAfterFlush();
  }

  private closeAfterFlush(): void {
    if (this.socket.destroyed || this.socket.writableEnded) return;
    this.state = 'ending';
    this.queue.clear();
    this.dropUnframed();
    this.idle?.stop();
    this.writer.end(); // after the responses still being sent from files
    // Keep reading (and dropping) until the peer closes too; a peer that neither reads nor closes
    // for LINGER_MS (no socket activity) is destroyed.
    this.readPaused = false;
    this.socket.resume();
    this.socket.setTimeout(LINGER_MS);
  }

  /** connections.max.idle.ms passed without socket activity. */
  private onIdle(): void {
    if (this.state !== 'open') return;
    if (this.inFlight) {
      // A long-polling request is in flight: that is not idleness. Start over. (Requests queued
      // behind a client that stopped reading its responses do not count: that client is stalled.)
      this.idle?.restart();
      return;
    }
    this.destroy('idle', 'debug', { connectionsMaxIdleMs: this.limits.connectionsMaxIdleMs });
  }

  private onClose(): void {
    // Closed by the peer (not by us: destroy() and closeAfterFlush() leave 'open' first) with whole
    // requests queued: process them without responses before `closed` resolves.
    this.headless = this.state === 'open' && this.queue.length > 0;
    this.state = 'closed';
    this.writer.closed();
    this.idle?.stop();
    this.mute.clear();
    this.dropUnframed();
    this.limits.budget.forget(this);
    if (this.headless) {
      if (!this.inFlight) this.advance();
      return;
    }
    this.queue.clear();
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
