/**
 * A coordinator's internal topic (`__consumer_offsets`, `__transaction_state`), created on first use
 * as Kafka creates it: by the first request that needs it (FindCoordinator, or a write), once, with
 * concurrent callers sharing the creation; a failed creation is retried by the next caller.
 *
 * A creation may come in two stages (`stage`): the topic's record stored, then its logs opened.
 * `ensure()` waits for both, as every write needs its log; `ensureStored()` only for the record, so
 * that a FindCoordinator is not held up by fifty partitions being opened, nor is every request
 * pipelined behind it on its connection (a consumer's ListOffsets and Fetch).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/generated/error-codes.js';

/** One creation attempt: each promise resolves with NONE or COORDINATOR_NOT_AVAILABLE and never rejects. */
interface Attempt {
  stored: Promise<number>;
  opened: Promise<number>;
}

export class InternalTopicOnFirstUse {
  private ready = false;
  private attempt: Attempt | null = null;
  /** the last attempt failed: the next FindCoordinator waits for the whole retry before answering */
  private lastFailed = false;

  constructor(
    private readonly opts: {
      name: string;
      /** creates the topic if missing and resolves once its logs are open */
      create: () => Promise<void>;
      /** create in two stages, used instead when given: resolves once the record is stored, with `opened` */
      stage?: () => Promise<{ opened: Promise<void> }>;
      logger: Logger;
      /** GREGOR_ERR_* code of the log line when creating fails */
      errorCode: string;
    },
  ) {}

  /** The topic exists and its logs are open. */
  get isReady(): boolean {
    return this.ready;
  }

  /** The topic existed at start-up and has been opened. */
  markReady(): void {
    this.ready = true;
  }

  /** NONE once the topic is there and its logs open (creating it first if needed), COORDINATOR_NOT_AVAILABLE when that failed. */
  async ensure(): Promise<number> {
    if (this.ready) return ErrorCode.NONE;
    return this.start().opened;
  }

  /**
   * NONE once the topic's record is stored (creating it if needed; its logs may still be opening, and
   * ensure() waits for them); COORDINATOR_NOT_AVAILABLE when that failed. After a failed attempt this
   * waits for the whole retry, so a broker that cannot make its logs keeps answering so.
   */
  async ensureStored(): Promise<number> {
    if (this.ready) return ErrorCode.NONE;
    const a = this.start();
    return this.lastFailed ? a.opened : a.stored;
  }

  private start(): Attempt {
    if (this.attempt !== null) return this.attempt;
    const { create, stage } = this.opts;
    const staged = stage !== undefined ? stage() : create().then(() => ({ opened: Promise.resolve() }));
    const fail = (err: unknown): number => {
      // the first of the two promises to fail ends the attempt (and logs it); the next caller retries
      if (this.attempt === a) {
        this.attempt = null;
        this.lastFailed = true;
        this.opts.logger.error({ err, code: this.opts.errorCode }, `creating ${this.opts.name} failed`);
      }
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    };
    const a: Attempt = {
      stored: staged.then(() => ErrorCode.NONE, fail),
      opened: staged
        .then((s) => s.opened)
        .then(() => {
          this.ready = true;
          this.lastFailed = false;
          return ErrorCode.NONE;
        }, fail),
    };
    this.attempt = a;
    return a;
  }
}
