/**
 * A coordinator's internal topic (`__consumer_offsets`, `__transaction_state`), created on first use
 * as Kafka creates it: by the first request that needs it (FindCoordinator, or a write), once, with
 * concurrent callers sharing the creation; a failed creation is retried by the next caller.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/generated/error-codes.js';

export class InternalTopicOnFirstUse {
  private ready = false;
  private creating: Promise<void> | null = null;

  constructor(
    private readonly opts: {
      name: string;
      /** creates the topic if missing and resolves once its logs are open */
      create: () => Promise<void>;
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

  /** NONE once the topic is there (creating it first if needed), COORDINATOR_NOT_AVAILABLE when that failed. */
  async ensure(): Promise<number> {
    if (this.ready) return ErrorCode.NONE;
    this.creating ??= this.opts.create().then(() => {
      this.ready = true;
    });
    try {
      await this.creating;
      return ErrorCode.NONE;
    } catch (err) {
      this.creating = null;
      this.opts.logger.error({ err, code: this.opts.errorCode }, `creating ${this.opts.name} failed`);
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
}
