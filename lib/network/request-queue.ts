/**
 * A connection's read-ahead: whole requests framed and waiting behind the one in flight, with when
 * each was read (kept only when request timing is observed) and the bytes they hold, kept in step
 * with the broker-wide RequestBudget.
 */
import type { RequestBudget } from './request-budget.js';

export class RequestQueue {
  private readonly frames: Buffer[] = [];
  /** when each queued frame had been read (performance.now()), kept only when timed */
  private readonly readAt: number[] = [];
  /** bytes the queued frames hold */
  bytes = 0;
  /** the queued requests are out of the budget's request count while the socket cannot take a response */
  private parked = false;

  constructor(
    private readonly budget: RequestBudget,
    private readonly timed: boolean,
  ) {}

  get length(): number {
    return this.frames.length;
  }

  push(frame: Buffer, readAt: number): void {
    this.frames.push(frame);
    if (this.timed) this.readAt.push(readAt);
    this.bytes += frame.length;
  }

  /** The oldest frame and when it was read (NaN when not timed); the caller checked length > 0. */
  shift(): { frame: Buffer; readAt: number } {
    const frame = this.frames.shift()!;
    this.bytes -= frame.length;
    return { frame, readAt: this.timed ? (this.readAt.shift() ?? NaN) : NaN };
  }

  /** Drops the queued requests and gives back their budget. */
  clear(): void {
    const n = this.parked ? 0 : this.frames.length;
    const bytes = this.bytes;
    this.parked = false;
    this.frames.length = 0;
    this.readAt.length = 0;
    this.bytes = 0;
    if (n > 0 || bytes > 0) this.budget.release(n, bytes);
  }

  /**
   * While a response waits unsent (the client is not reading), the requests queued behind it leave
   * the budget's request count: Kafka never reads them from a muted channel, so they must not keep
   * queued.max.requests from other connections. (Their bytes stay counted: the memory is held.)
   */
  park(on: boolean): void {
    if (on === this.parked) return;
    this.parked = on;
    if (on) this.budget.release(this.frames.length, 0);
    else this.budget.take(0, this.frames.length);
  }
}
