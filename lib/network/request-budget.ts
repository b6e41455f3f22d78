/**
 * The broker-wide budget for requests read from sockets and not yet handled, shared by every
 * listener, as Kafka's request queue (`queued.max.requests`) and memory pool
 * (`queued.max.request.bytes`) are:
 *
 * - a request counts against `maxRequests` from the moment its size prefix is read until its
 *   handler starts (Kafka: until a request handler thread takes it from the queue);
 * - its bytes count against `maxBytes` from the size prefix until the handler is done with them
 *   (the response is ready, or a Produce waiting for the ISR has appended locally), as Kafka
 *   releases a request's pool buffer once its handler returns.
 *
 * A connection frames a new request only while the budget has room; when it has none the
 * connection stops reading its socket (Kafka mutes the channel) and waits here, and is woken in
 * arrival order as requests leave. As Kafka's non-strict memory pool, room means "below the
 * limit": the request that crosses it is still taken whole, so a request larger than the budget
 * cannot starve.
 */

/** A connection waiting for room; `resume` frames what it can and resumes reading. */
export interface BudgetWaiter {
  resume(): void;
}

export interface RequestBudgetStats {
  /** requests read (or being read) and not yet handed to a handler */
  readonly queuedRequests: number;
  /** bytes of requests read (or being read) whose handlers are not done with them */
  readonly queuedBytes: number;
  readonly maxRequests: number;
  readonly maxBytes: number;
  /** times a connection stopped reading for want of room */
  readonly mutes: number;
  /** connections waiting now */
  readonly waiting: number;
  /** milliseconds during which at least one connection waited (Kafka's MemoryPoolDepleted time) */
  readonly exhaustedMs: number;
}

export class RequestBudget {
  private requests = 0;
  private bytes = 0;
  private readonly waiters = new Set<BudgetWaiter>();
  private mutes = 0;
  private exhaustedSince = 0;
  private exhaustedTotal = 0;
  private waking = false;

  constructor(
    /** queued.max.requests */
    readonly maxRequests: number,
    /** queued.max.request.bytes (resolved: never -1 here) */
    readonly maxBytes: number,
  ) {}

  /** Whether a new request may be framed now. */
  hasRoom(): boolean {
    return this.requests < this.maxRequests && this.bytes < this.maxBytes;
  }

  /** A request of `size` bytes begins to be read (or `requests` parked ones count again). */
  take(size: number, requests = 1): void {
    this.requests += requests;
    this.bytes += size;
  }

  /**
   * `requests` leave the queue (to their handler, or dropped with their connection); `bytes` are
   * no longer needed (their handler is done, or their connection closed).
   */
  release(requests: number, bytes: number): void {
    this.requests -= requests;
    this.bytes -= bytes;
    if (this.waiters.size > 0) this.wake();
  }

  /** A connection stopped reading for want of room; it is resumed once there is some. */
  wait(w: BudgetWaiter): void {
    if (this.waiters.has(w)) return;
    if (this.waiters.size === 0) this.exhaustedSince = performance.now();
    this.waiters.add(w);
    this.mutes++;
  }

  /** A waiting connection closed. */
  forget(w: BudgetWaiter): void {
    if (this.waiters.delete(w) && this.waiters.size === 0) this.exhaustedEnds();
  }

  stats(): RequestBudgetStats {
    const ongoing = this.waiters.size > 0 ? performance.now() - this.exhaustedSince : 0;
    return {
      queuedRequests: this.requests,
      queuedBytes: this.bytes,
      maxRequests: this.maxRequests,
      maxBytes: this.maxBytes,
      mutes: this.mutes,
      waiting: this.waiters.size,
      exhaustedMs: this.exhaustedTotal + ongoing,
    };
  }

  /** Resumes waiting connections, oldest first, while there is room (each may take some). */
  private wake(): void {
    if (this.waking) return; // a resumed connection's own releases land here: the loop below goes on
    this.waking = true;
    try {
      for (const w of this.waiters) {
        if (!this.hasRoom()) break;
        this.waiters.delete(w);
        w.resume();
      }
    } finally {
      this.waking = false;
    }
    if (this.waiters.size === 0) this.exhaustedEnds();
  }

  private exhaustedEnds(): void {
    if (this.exhaustedSince === 0) return;
    this.exhaustedTotal += performance.now() - this.exhaustedSince;
    this.exhaustedSince = 0;
  }
}

/** An unlimited budget (a listener constructed without one: tests of the connection alone). */
export function unlimitedBudget(): RequestBudget {
  return new RequestBudget(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
}
