/**
 * A counting semaphore for file work started from many partitions at once (a produce request to
 * thousands of partitions opens their logs and writes their checkpoints together): at most `limit`
 * run at a time, the rest wait in arrival order. It bounds the file descriptors held at once
 * (EMFILE) and the queue in front of libuv's thread pool.
 */
export class Limiter {
  readonly limit: number;
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(limit: number) {
    this.limit = Math.max(1, limit);
  }

  /** Runs `work` when a slot is free. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    else await new Promise<void>((resolve) => this.queue.push(resolve));
    try {
      return await work();
    } finally {
      // hand the slot to the next in line, or free it
      const next = this.queue.shift();
      if (next !== undefined) next();
      else this.active--;
    }
  }
}
