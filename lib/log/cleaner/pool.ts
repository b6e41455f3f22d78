/**
 * The cleaner threads (log.cleaner.threads): workers taking one job at a time, each job with an
 * offset map of its own size (CleanJob.mapBytes, at most log.cleaner.dedupe.buffer.size / threads).
 * Size 0 runs jobs inline (tests). Workers start on first use and are unref'd while idle. `resize`
 * (log.cleaner.threads changed) takes effect between jobs: a thread beyond the new size ends once
 * its job is done.
 */
import { Worker } from 'node:worker_threads';
import { ErrorCode } from '../../../protocol/generated/error-codes.js';
import { GregorLogErrorCode, LogError } from '../errors.js';
import { cleanLog } from './clean.js';
import type { CleanJob, CleanResult } from './job.js';
import { OffsetMap } from './offset-map.js';

// beside this file in dist/lib/log/cleaner/, and in dist/bundle/ (scripts/bundle.mjs builds it as an entry of its own)
const WORKER_URL = new URL('./cleaner-worker.js', import.meta.url);

type Reply =
  { id: number; ok: true; result: CleanResult } | { id: number; ok: false; message: string; code: string | null; errorCode: number };

interface Slot {
  worker: Worker;
  pending: Map<number, { resolve: (r: CleanResult) => void; reject: (e: unknown) => void }>;
  /** Beyond the pool's size since a resize: ends once idle. */
  retired: boolean;
}

export class CleanerPool {
  private readonly slots: (Slot | null)[] = [];
  /** Retired slots still finishing a job. */
  private readonly retiring = new Set<Slot>();
  private nextId = 1;
  constructor(private size: number) {}

  get threads(): number {
    return this.size;
  }

  /** Sets the number of threads; those beyond it end now when idle, else when their job is done. */
  resize(threads: number): void {
    this.size = threads;
    for (let i = threads; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (s === null || s === undefined) continue;
      s.retired = true;
      if (s.pending.size === 0) void s.worker.terminate();
      else this.retiring.add(s);
    }
    this.slots.length = Math.min(this.slots.length, threads);
  }

  /** Live worker threads (tests). */
  get liveWorkers(): number {
    return this.slots.filter((s) => s !== null).length + this.retiring.size;
  }

  /** Runs `job` on worker `slot` (0 ≤ slot < threads; inline when threads is 0). */
  run(job: CleanJob, slot: number): Promise<CleanResult> {
    if (this.size === 0) {
      try {
        return Promise.resolve(cleanLog(job, new OffsetMap(job.mapBytes, job.loadFactor)));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    const s = this.slots[slot] ?? this.spawn(slot);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      s.pending.set(id, { resolve, reject });
      s.worker.ref();
      s.worker.postMessage({ id, job });
    });
  }

  private spawn(index: number): Slot {
    const worker = new Worker(WORKER_URL);
    const slot: Slot = { worker, pending: new Map(), retired: false };
    this.slots[index] = slot;
    worker.unref();
    worker.on('message', (r: Reply) => {
      const p = slot.pending.get(r.id);
      slot.pending.delete(r.id);
      if (slot.pending.size === 0) {
        worker.unref();
        if (slot.retired) {
          this.retiring.delete(slot);
          void worker.terminate();
        }
      }
      if (p === undefined) return;
      if (r.ok) p.resolve(r.result);
      else
        p.reject(
          new LogError(
            r.errorCode,
            r.message.replace(/^GREGOR_ERR_\w+: /, ''),
            (r.code ?? GregorLogErrorCode.STORAGE) as GregorLogErrorCode,
          ),
        );
    });
    const fail = (err: unknown): void => {
      for (const p of slot.pending.values())
        p.reject(err instanceof Error ? err : new LogError(ErrorCode.UNKNOWN_SERVER_ERROR, String(err)));
      slot.pending.clear();
      this.retiring.delete(slot);
      if (this.slots[index] === slot) this.slots[index] = null;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`cleaner thread exited with ${code}`)));
    return slot;
  }

  async stop(): Promise<void> {
    const slots = [...this.slots.splice(0), ...this.retiring];
    this.retiring.clear();
    await Promise.all(slots.map((s) => (s === null ? Promise.resolve(0) : s.worker.terminate())));
  }
}
