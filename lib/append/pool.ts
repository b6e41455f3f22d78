/**
 * The append worker pool (`num.append.workers`; -1 = os.availableParallelism(), 0 = inline on the
 * calling thread). It is the ConversionRunner of every partition log: recompression, message-format
 * conversion, deep validation and fetch down-conversion run here while the main thread keeps
 * serving requests. Workers start on first use (most brokers never convert), take one job at a time
 * from one FIFO queue, and are unref'd while idle. Ordering is not the pool's business: jobs may
 * finish in any order, and each partition log commits in reservation order (partition-log.ts).
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { convertForAppend } from '../log/convert.js';
import { downConvert } from '../log/down-convert.js';
import type { ConversionRunner, ConvertedAppend } from '../log/convert.js';
import { LogError } from '../log/errors.js';
import type { LogConfig } from '../log/log-config.js';
import { convertedFrom, copyToArrayBuffer } from './jobs.js';
import type { JobMessage, ResultMessage } from './jobs.js';
import { asError } from '../as-error.js';

export interface PoolLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

interface Pending {
  job: JobMessage;
  transfer: ArrayBuffer[];
  resolve: (r: Extract<ResultMessage, { ok: true }>) => void;
  reject: (err: unknown) => void;
}

interface Slot {
  worker: Worker;
  busy: Pending | null;
}

export interface PoolStats {
  /** Jobs run on workers, and inline (size 0). */
  jobs: number;
  inline: number;
  /** Longest the queue has been. */
  maxQueued: number;
  /** Workers started (including replacements after a crash). */
  started: number;
}

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** Resolves `num.append.workers`: -1 → the number of cores, else the value (0 = inline). */
export function appendWorkerCount(configured: number): number {
  if (configured < 0) return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return configured;
}

export class AppendPool implements ConversionRunner {
  /** Worker threads at most; 0 runs every job inline. */
  readonly size: number;
  readonly stats: PoolStats = { jobs: 0, inline: 0, maxQueued: 0, started: 0 };
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private stopped = false;
  private readonly logger: PoolLogger | undefined;

  constructor(size: number, logger?: PoolLogger) {
    this.size = Math.max(0, Math.floor(size));
    this.logger = logger;
  }

  /** A pool sized from the broker config value of `num.append.workers`. */
  static fromConfig(numAppendWorkers: number, logger?: PoolLogger): AppendPool {
    return new AppendPool(appendWorkerCount(numAppendWorkers), logger);
  }

  /** Workers running now. */
  get threads(): number {
    return this.slots.length;
  }

  /** Jobs waiting for a worker. */
  get queued(): number {
    return this.queue.length;
  }

  convertForAppend(records: Buffer, config: LogConfig, base: bigint, now: number): Promise<ConvertedAppend> {
    if (this.size === 0) {
      this.stats.inline++;
      try {
        return Promise.resolve(convertForAppend(records, config, base, now));
      } catch (err) {
        return Promise.reject(asError(err));
      }
    }
    const buf = copyToArrayBuffer(records);
    return this.submit({ kind: 'append', id: this.nextId++, buf, config, base, now }, [buf]).then(convertedFrom);
  }

  downConvert(data: Buffer, toMagic: 0 | 1, fetchOffset: bigint, maxOutput: number): Promise<Buffer> {
    if (this.size === 0) {
      this.stats.inline++;
      try {
        return Promise.resolve(downConvert(data, toMagic, fetchOffset, maxOutput));
      } catch (err) {
        return Promise.reject(asError(err));
      }
    }
    const buf = copyToArrayBuffer(data);
    return this.submit({ kind: 'down-convert', id: this.nextId++, buf, toMagic, fetchOffset, maxOutput }, [buf]).then((r) =>
      Buffer.from(r.buf, 0, r.byteLength),
    );
  }

  private submit(job: JobMessage, transfer: ArrayBuffer[]): Promise<Extract<ResultMessage, { ok: true }>> {
    if (this.stopped) return Promise.reject(new LogError(ErrorCode.KAFKA_STORAGE_ERROR, 'the append worker pool is stopped'));
    return new Promise((resolve, reject) => {
      this.queue.push({ job, transfer, resolve, reject });
      if (this.queue.length > this.stats.maxQueued) this.stats.maxQueued = this.queue.length;
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => s.busy === null);
      if (slot === undefined) {
        if (this.slots.length >= this.size) return;
        slot = this.spawn();
      }
      const p = this.queue.shift() as Pending;
      slot.busy = p;
      slot.worker.ref();
      this.stats.jobs++;
      slot.worker.postMessage(p.job, p.transfer);
    }
  }

  private spawn(): Slot {
    const worker = new Worker(WORKER_URL);
    const slot: Slot = { worker, busy: null };
    this.stats.started++;
    worker.on('message', (r: ResultMessage) => {
      const p = slot.busy;
      slot.busy = null;
      worker.unref();
      if (p !== null) {
        if (r.ok) p.resolve(r);
        else p.reject(new LogError(r.errorCode, r.message));
      }
      this.dispatch();
    });
    const lost = (err: unknown): void => {
      const i = this.slots.indexOf(slot);
      if (i < 0) return;
      this.slots.splice(i, 1);
      const p = slot.busy;
      slot.busy = null;
      if (!this.stopped) this.logger?.error({ err }, 'append worker failed; replacing it');
      p?.reject(new LogError(ErrorCode.UNKNOWN_SERVER_ERROR, `append worker failed: ${err instanceof Error ? err.message : String(err)}`));
      if (!this.stopped) this.dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`exited with code ${code}`)));
    this.slots.push(slot);
    return slot;
  }

  /** Refuses new jobs, fails queued ones, lets running ones finish, and ends the workers. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const p of this.queue.splice(0)) p.reject(new LogError(ErrorCode.KAFKA_STORAGE_ERROR, 'the append worker pool stopped'));
    const running = this.slots.slice();
    await Promise.all(
      running.map(
        (s) =>
          new Promise<void>((resolve) => {
            const end = (): void => {
              void s.worker.terminate().then(
                () => resolve(),
                () => resolve(),
              );
            };
            s.worker.once('exit', () => resolve());
            if (s.busy === null) end();
            else s.worker.once('message', end);
          }),
      ),
    );
    this.slots.length = 0;
  }
}
