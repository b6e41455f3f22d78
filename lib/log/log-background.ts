/**
 * A partition log's work that runs on its own: checkpoint, index and snapshot writes, flushes by
 * flush.ms, and segment deletions waiting out file.delete.delay.ms. Made on a log's first use of it
 * (an idle log holds none); close waits for it all.
 */
import { RateLimitedLog, isNoSpace } from './errors.js';
import type { LogLogger } from './log-loader.js';
import type { LogSegment } from './segment.js';

const noop = (): void => undefined;
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** One line per 10 s for full-disk write failures, process-wide (every partition hits it at once). */
const noSpaceLog = new RateLimitedLog(10_000);
/** The same for checkpoint, index and snapshot writes that run in the background. */
const backgroundNoSpaceLog = new RateLimitedLog(10_000);

/** Logs a failed background write; full-disk ones at most once per interval (every partition fails together). */
export function logFailure(logger: LogLogger, dir: string, err: unknown, msg: string): void {
  if (!isNoSpace(err)) logger.error({ err, dir }, msg);
  else backgroundNoSpaceLog.event((suppressed) => logger.error({ err, dir, suppressed }, `${msg} (the file system is full)`));
}

export class BackgroundWork {
  private readonly running = new Set<Promise<unknown>>();
  /** Made on first use: a log that never deletes a segment holds none. */
  private pendingDeletes: Map<LogSegment, { timer: NodeJS.Timeout; done: () => void }> | null = null;

  constructor(
    private readonly logger: LogLogger,
    private readonly dir: string,
  ) {}

  /** Runs `p` on its own; a failure is logged as `<what> failed`. */
  track(p: Promise<unknown>, what: string): void {
    const q = p.catch((err: unknown) => logFailure(this.logger, this.dir, err, `${what} failed`));
    this.running.add(q);
    void q.finally(() => this.running.delete(q));
  }

  /** Destroys the segment (its files renamed already) once `delayMs` has passed, or at close. */
  destroyLater(seg: LogSegment, delayMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(
        () => {
          this.pendingDeletes?.delete(seg);
          seg.destroy().then(resolve, resolve);
        },
        Math.min(delayMs, MAX_TIMER_MS),
      );
      timer.unref();
      (this.pendingDeletes ??= new Map()).set(seg, { timer, done: resolve });
    });
  }

  /** At close: the delayed deletions run now, then everything running is waited for. */
  async settle(): Promise<void> {
    for (const [seg, d] of this.pendingDeletes ?? []) {
      clearTimeout(d.timer);
      await seg.destroy().catch(noop);
      d.done();
    }
    this.pendingDeletes?.clear();
    while (this.running.size > 0) await Promise.all([...this.running]);
  }
}

/** A failed log write took the partition offline: full-disk ones logged at most once per interval. */
export function logWriteFailure(logger: LogLogger, dir: string, err: unknown): void {
  if (isNoSpace(err)) {
    noSpaceLog.event((suppressed) =>
      logger.error(
        { err, dir, suppressed },
        'log write failed: the file system is full; appends are answered KAFKA_STORAGE_ERROR until space is freed',
      ),
    );
  } else logger.error({ err, dir }, 'log write failed; the partition is offline');
}
