/**
 * The writing side of a Connection: puts responses on the socket (a Buffer[] with one cork/uncork,
 * so a TLS socket encrypts them as one write: full 16 KB records rather than one record per piece)
 * and, with a RequestObserver, stamps when each response was handed over and flushed. A response's
 * `written` callback (zero-copy Fetch: its pooled read buffers) runs once its write completed or
 * failed, or when the connection closed, whichever is first; never while the socket may still read it.
 *
 * A response with FileSlices among its chunks (a Fetch of stored batches on a plain TCP connection:
 * see lib/log/file-slices.ts) is sent in order, part by part: its buffers through the socket, each
 * slice from its file with sendfile(2) once everything before it has reached the kernel. When the
 * socket's buffer fills mid-slice, the next SENDFILE_STEP_BYTES of it are read and written through
 * the socket like any buffer, and sendfile takes over again once that write completed (the socket
 * had room again): Node offers no other way to learn that a socket it owns is writable. Responses
 * that come meanwhile wait their turn here, and an end() waits for them.
 *
 * With a `direct` sender (a plain TCP socket, gregor.socket.write.direct), a response of buffers goes
 * to the socket's descriptor in one sendmsg while Node's stream holds nothing of the connection's;
 * what the kernel did not take then goes through the stream (see direct-write.ts). The response's
 * callback runs on the next tick, as the stream would run it.
 */
import type { Socket } from 'node:net';
import { type Chunk, FileSlice } from '../../protocol/codec/writer.js';
import { sendSlicePart, skipBytes } from '../log/file-io.js';
import { directWrites, type SendNowait } from './direct-write.js';
import { RequestOutcome, type RequestObserver, type RequestTiming } from '../observability/request-timing.js';

/** How much of a slice goes through the socket (copied) when sendfile met a full socket buffer. */
export const SENDFILE_STEP_BYTES = 4 << 10;

/** Bytes sent with sendfile, and those of slices that went through the socket instead (see above). */
export const sliceSends = { sendfileBytes: 0, copiedBytes: 0, slices: 0 };

interface Waiting {
  res: Buffer | Chunk[];
  timing: RequestTiming | undefined;
  written: (() => void) | undefined;
}

export class ResponseWriter {
  /** requests whose responses were handed to the socket and are not flushed yet, in write order */
  private readonly sending: RequestTiming[] = [];
  /** `written` callbacks of responses whose write has not completed */
  private readonly unwritten = new Set<() => void>();
  /** a response with FileSlices is being sent: later ones wait in `waiting` */
  private slicing = false;
  private readonly waiting: Waiting[] = [];
  private endWhenSent = false;

  /**
   * @param sendFd the socket's descriptor when FileSlices may be sent from it (a plain TCP socket),
   *   else null (a slice then closes the connection: none should come)
   * @param onError a slice could not be sent (its file ended early, or sendfile failed): the
   *   connection is closed, as the response's length was already on the wire
   */
  constructor(
    private readonly socket: Socket,
    private readonly observer: RequestObserver | null,
    private readonly sendFd: number | null = null,
    private readonly onError: (reason: string) => void = () => socket.destroy(),
    private readonly direct: { fd: number; send: SendNowait } | null = null,
  ) {}

  /** Writes a response (already size-prefixed); false for an empty Buffer[]: nothing written, the request's timing ended. */
  write(res: Buffer | Chunk[], timing: RequestTiming | undefined, written?: () => void): boolean {
    if (!Buffer.isBuffer(res) && res.length === 0) {
      written?.();
      if (timing !== undefined) this.endedWithout(timing, RequestOutcome.RESPONSE, null);
      return false;
    }
    if (this.slicing) {
      this.waiting.push({ res, timing, written });
      return true;
    }
    // With an observer, the last write carries the callback that stamps the flush (one shared function).
    let cb = timing === undefined ? undefined : this.onFlushed;
    if (written !== undefined) cb = this.whenWritten(written, cb);
    // a FileSlice's length counts its bytes too
    const bytes = Buffer.isBuffer(res) ? res.length : chunksLength(res);
    if (timing !== undefined) this.sendingStarts(timing, bytes);
    if (Buffer.isBuffer(res)) {
      if (this.direct === null || !this.sendDirect([res], bytes, cb)) this.socket.write(res, cb);
    } else if (res.some((c) => c instanceof FileSlice)) {
      this.slicing = true;
      this.sendParts(res, 0, 0, cb);
    } else if (this.direct === null || !this.sendDirect(res as Buffer[], bytes, cb)) {
      this.writeBuffers(res as Buffer[], cb);
    }
    return true;
  }

  /** Buffers through the stream, corked when several (a TLS socket then encrypts them as one write); `cb` after the last. */
  private writeBuffers(bufs: readonly Buffer[], cb: (() => void) | undefined): void {
    if (bufs.length === 1) {
      this.socket.write(bufs[0] as Buffer, cb);
      return;
    }
    this.socket.cork();
    for (let i = 0; i < bufs.length; i++) this.socket.write(bufs[i] as Buffer, i === bufs.length - 1 ? cb : undefined);
    this.socket.uncork();
  }

  /**
   * Sends `bufs` (`bytes` in all) straight to the socket's descriptor when the stream holds nothing; the rest, if the
   * kernel took only part, through the stream. False: not sent, the caller writes them through the
   * stream (no direct sender, the stream busy or corked, the socket closing, or an error the stream
   * will meet and report its own way).
   */
  private sendDirect(bufs: Buffer[], bytes: number, cb: (() => void) | undefined): boolean {
    const direct = this.direct;
    const s = this.socket;
    if (direct === null || s.writableLength !== 0 || s.writableCorked !== 0 || s.destroyed || !s.writable) return false;
    const n = direct.send(direct.fd, bufs);
    if (n === -11 /* EAGAIN */) {
      this.writeBuffers(bufs, cb);
      return true;
    }
    if (n < 0) return false;
    directWrites.bytes += n;
    if (n === bytes) {
      directWrites.whole++;
      if (cb !== undefined) process.nextTick(cb);
      return true;
    }
    directWrites.partial++;
    this.writeBuffers(skipBytes(bufs, n), cb);
    return true;
  }

  /** Ends the socket once every response handed over has been written (at once when none waits). */
  end(): void {
    this.endWhenSent = this.slicing;
    if (!this.slicing) this.socket.end();
  }

  /** The socket closed: no write holds a response's bytes any more (libuv completed or cancelled them all). */
  closed(): void {
    for (const w of this.waiting) w.written?.();
    this.waiting.length = 0;
    for (const w of this.unwritten) w();
    this.unwritten.clear();
  }

  /**
   * Sends res[i..] in order, `done` bytes of res[i] already sent when it is a slice; `cb` after the
   * last part. Buffers go through the socket; a slice waits until they have reached the kernel.
   */
  private sendParts(res: Chunk[], i: number, done: number, cb: (() => void) | undefined): void {
    let j = i;
    if (j < res.length && !(res[j] instanceof FileSlice)) {
      // the buffers up to the next slice (or the end) in one corked write
      let k = j;
      while (k < res.length && !(res[k] instanceof FileSlice)) k++;
      const last = k === res.length;
      this.socket.cork();
      for (let n = j; n < k; n++) {
        const after = n < k - 1 ? undefined : last ? this.afterParts(cb) : () => this.sendParts(res, k, 0, cb);
        this.socket.write(res[n] as Buffer, after);
      }
      this.socket.uncork();
      return;
    }
    if (j >= res.length) {
      this.afterParts(cb)();
      return;
    }
    const slice = res[j] as FileSlice;
    if (this.socket.destroyed) return; // closed(): the written callbacks ran or run there
    if (this.sendFd === null) {
      // the Fetch handler makes slices only for connections that send files (ConnectionDetails.sendsFiles)
      this.fail('a file slice reached a connection that does not send files');
      return;
    }
    let sent = done;
    while (sent < slice.length) {
      const n = sendSlicePart(this.sendFd, slice, sent);
      if (n > 0) {
        sent += n;
        sliceSends.sendfileBytes += n;
        continue;
      }
      if (n === -11 /* EAGAIN */) {
        // the socket's buffer is full: the next bytes go through it, and sendfile resumes once they left
        let step: Buffer;
        try {
          step = slice.read(sent, Math.min(SENDFILE_STEP_BYTES, slice.length - sent));
        } catch (e) {
          this.fail(`reading a fetched slice failed: ${(e as Error).message}`);
          return;
        }
        sliceSends.copiedBytes += step.length;
        const at = sent + step.length;
        this.socket.write(step, () => this.sendParts(res, j, at, cb));
        return;
      }
      this.fail(
        n === 0 ? `the segment file ended inside a fetched slice (${sent} of ${slice.length} bytes sent)` : `sendfile failed: errno ${-n}`,
      );
      return;
    }
    sliceSends.slices++;
    j++;
    if (j >= res.length) this.afterParts(cb)();
    else this.sendParts(res, j, 0, cb);
  }

  /** The callback after a sliced response's last part: its own `cb`, then the responses that waited. */
  private afterParts(cb: (() => void) | undefined): () => void {
    return () => {
      cb?.();
      this.slicing = false;
      this.flushWaiting();
    };
  }

  /** Writes the responses that waited behind a sliced one, until another sliced one starts; then a pending end(). */
  private flushWaiting(): void {
    while (this.waiting.length > 0 && !this.slicing) {
      const w = this.waiting.shift() as Waiting;
      this.write(w.res, w.timing, w.written);
    }
    if (this.endWhenSent && this.waiting.length === 0) this.end();
  }

  private fail(reason: string): void {
    this.slicing = false;
    this.onError(reason);
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

function chunksLength(res: readonly Chunk[]): number {
  let n = 0;
  for (const c of res) n += c.length;
  return n;
}
