/**
 * The writing side of a Connection: puts responses on the socket (a Buffer[] with one cork/uncork,
 * so a TLS socket encrypts them as one write: full 16 KB records rather than one record per piece)
 * and, with a RequestObserver, stamps when each response was handed over and flushed. A response's
 * `written` callback (zero-copy Fetch: its pooled read buffers) runs once its write completed or
 * failed, or when the connection closed, whichever is first; never while the socket may still read it.
 */
import type { Socket } from 'node:net';
import { RequestOutcome, type RequestObserver, type RequestTiming } from '../observability/request-timing.js';

export class ResponseWriter {
  /** requests whose responses were handed to the socket and are not flushed yet, in write order */
  private readonly sending: RequestTiming[] = [];
  /** `written` callbacks of responses whose write has not completed */
  private readonly unwritten = new Set<() => void>();

  constructor(
    private readonly socket: Socket,
    private readonly observer: RequestObserver | null,
  ) {}

  /** Writes a response (already size-prefixed); false for an empty Buffer[]: nothing written, the request's timing ended. */
  write(res: Buffer | Buffer[], timing: RequestTiming | undefined, written?: () => void): boolean {
    if (!Buffer.isBuffer(res) && res.length === 0) {
      written?.();
      if (timing !== undefined) this.endedWithout(timing, RequestOutcome.RESPONSE, null);
      return false;
    }
    // With an observer, the last write carries the callback that stamps the flush (one shared function).
    let cb = timing === undefined ? undefined : this.onFlushed;
    if (written !== undefined) cb = this.whenWritten(written, cb);
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

  /** The socket closed: no write holds a response's bytes any more (libuv completed or cancelled them all). */
  closed(): void {
    for (const w of this.unwritten) w();
    this.unwritten.clear();
  }

  /** The last write's callback for a response with a `written` callback: runs it (once), then `then`. */
  private whenWritten(written: () => void, then: (() => void) | undefined): () => void {
    this.unwritten.add(written);
    return () => {
      if (this.unwritten.delete(written)) written();
      then?.();
    };
  }

  /** A request that ends without a response: no response (acks=0) or the connection closes. */
  endedWithout(t: RequestTiming, outcome: RequestOutcome, reason: string | null): void {
    if (t.responseReadyAt === 0) t.responseReadyAt = performance.now();
    t.sendStartAt = t.sendDoneAt = t.responseReadyAt;
    t.outcome = outcome;
    t.closeReason = reason;
    this.observer?.completed(t);
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
}
