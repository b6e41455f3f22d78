/** Warnings logged at most once per event class per interval; the ones held back are counted in the next line. */
import type { Logger } from '../observability/logger.js';

export class RateLimitedLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs = 10_000,
  ) {}

  warn(eventClass: string, fields: Record<string, unknown>, msg: string): void {
    const now = Date.now();
    const s = this.last.get(eventClass);
    if (s !== undefined && now - s.at < this.intervalMs) {
      s.suppressed++;
      return;
    }
    this.last.set(eventClass, { at: now, suppressed: 0 });
    this.logger.warn({ ...fields, suppressed: s?.suppressed ?? 0 }, msg);
  }
}
