/**
 * A coordinator's internal topic (`__consumer_offsets`, `__transaction_state`), created on first use
 * as Kafka creates it: by the first request that needs it (FindCoordinator, or a write), once, with
 * concurrent callers sharing the creation; a failed creation is retried by the next caller.
 *
 * `ensure()` waits for the creation, as every write needs the topic's logs. `ensureStarted()` only
 * starts it: a one-node FindCoordinator answers at once while the record is stored and the logs
 * are made (writes wait for them), instead of holding up, for the length of an fsync after a
 * burst of writes (tens of ms), every request pipelined behind it on its connection, such as a
 * consumer's ListOffsets and Fetch. Kafka answers that first FindCoordinator at once too (with
 * COORDINATOR_NOT_AVAILABLE, and creates the topic meanwhile).
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/generated/error-codes.js';

export class InternalTopicOnFirstUse {
  private ready = false;
  /** the creation in flight (or done): resolves with NONE or COORDINATOR_NOT_AVAILABLE, never rejects */
  private creating: Promise<number> | null = null;
  /** the last creation failed: the next ensureStarted() waits for the retry before answering */
  private lastFailed = false;

  constructor(
    private readonly opts: {
      name: string;
      /** creates the topic if missing and resolves once its logs are made (see TopicManager.openLogs) */
      create: () => Promise<void>;
      logger: Logger;
      /** GREGOR_ERR_* code of the log line when creating fails */
      errorCode: string;
    },
  ) {}

  /** The topic exists and its logs are made. */
  get isReady(): boolean {
    return this.ready;
  }

  /** The topic existed at start-up and has been opened. */
  markReady(): void {
    this.ready = true;
  }

  /** NONE once the topic is there (creating it first if needed), COORDINATOR_NOT_AVAILABLE when that failed. */
  async ensure(): Promise<number> {
    if (this.ready) return ErrorCode.NONE;
    return this.start();
  }

  /**
   * NONE at once, having started the creation if it was needed; after a failed creation, waits for
   * the retry it starts (COORDINATOR_NOT_AVAILABLE when that fails too), so that a broker that cannot
   * make the topic keeps answering so.
   */
  async ensureStarted(): Promise<number> {
    if (this.ready) return ErrorCode.NONE;
    const creating = this.start();
    return this.lastFailed ? creating : ErrorCode.NONE;
  }

  /** Resolves once a creation in flight has ended, either way (at once when none is): shutdown waits for it. */
  async settled(): Promise<void> {
    await this.creating;
  }

  private start(): Promise<number> {
    if (this.creating !== null) return this.creating;
    const creating: Promise<number> = this.opts.create().then(
      () => {
        this.ready = true;
        this.lastFailed = false;
        return ErrorCode.NONE;
      },
      (err: unknown) => {
        this.creating = null;
        this.lastFailed = true;
        this.opts.logger.error({ err, code: this.opts.errorCode }, `creating ${this.opts.name} failed`);
        return ErrorCode.COORDINATOR_NOT_AVAILABLE;
      },
    );
    this.creating = creating;
    return creating;
  }
}
