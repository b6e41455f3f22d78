/**
 * Coalesces appends into write groups: every append made in one event-loop turn joins the open
 * group, which is written (one writev per segment) on setImmediate; appends arriving while a group
 * is being written form the next one. Groups complete strictly in order.
 */
import type { LogSegment } from './segment.js';

export interface WriteGroup {
  /** Log end offset after the group's last append. */
  endOffset: bigint;
  messages: number;
  segments: Set<LogSegment>;
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

const noop = (): void => undefined;

export class WriteQueue {
  private group: WriteGroup | null = null;
  /** The newest group's promise; null before the first append. */
  private latest: Promise<void> | null = null;
  private draining = false;
  private scheduled = false;
  private readonly write: (g: WriteGroup) => Promise<void>;

  /** `write` must settle the group (resolve or reject) and never throw. */
  constructor(write: (g: WriteGroup) => Promise<void>) {
    this.write = write;
  }

  /** Adds an append to the open group; the promise settles when that group is written. */
  add(seg: LogSegment, messages: number, endOffset: bigint): Promise<void> {
    let g = this.group;
    if (g === null) {
      let resolve: () => void = noop;
      let reject: (err: unknown) => void = noop;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(noop); // the caller sees the rejection; nobody is forced to listen
      g = { endOffset, messages: 0, segments: new Set(), promise, resolve, reject };
      this.group = g;
      this.latest = promise;
    }
    g.segments.add(seg);
    g.messages += messages;
    g.endOffset = endOffset;
    if (!this.draining && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.drain();
      });
    }
    return g.promise;
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.group !== null) {
        const g = this.group;
        this.group = null;
        await this.write(g);
      }
    } finally {
      this.draining = false;
    }
  }

  /** Settles when everything appended so far is written (never rejects). */
  written(): Promise<void> {
    return this.latest === null ? Promise.resolve() : this.latest.catch(noop);
  }

  /** Settles when the queue is empty, including appends made while waiting. */
  async idle(): Promise<void> {
    let p: Promise<void> | null;
    do {
      p = this.latest;
      await p?.catch(noop);
    } while (p !== this.latest || this.group !== null || this.draining);
  }
}
