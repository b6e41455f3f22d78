/**
 * Delayed operations wait here, never in a polling loop (Kafka's purgatory). An operation is watched
 * under one or more keys (e.g. "topic:partition"); whoever changes the state behind a key calls
 * checkAndComplete(key). Each operation has one timer; completion is idempotent and unregisters it.
 */

/**
 * What changed behind a partition's key, passed along by checkAndComplete to the fetches waiting on
 * it: an append (followers read up to the log end) or a high watermark move (consumers read up to it).
 */
export interface PartitionChange {
  /** bytes appended to the log */
  readonly appendedBytes: number;
  /** bytes that became readable to consumers (below the high watermark; the appended ones on a single node) */
  readonly readableBytes: number;
  /**
   * bytes that became readable to read_committed consumers (below the last stable offset: a
   * transaction marker moves it past the transaction's data); absent: readableBytes (a high watermark
   * move, which counts bytes of an open transaction too)
   */
  readonly stableBytes?: number;
}

/** The bytes `change` made readable to a consumer's fetch (read_committed: below the last stable offset); 0 for none. */
export function readableBytes(change: PartitionChange | undefined, readCommitted: boolean): number {
  if (change === undefined) return 0;
  return readCommitted ? (change.stableBytes ?? change.readableBytes) : change.readableBytes;
}

export interface DelayedOperation {
  /**
   * Returns true when the operation can complete now. Must be cheap and synchronous. `change` is what
   * the caller of checkAndComplete passed along (e.g. a partition's change); absent on the first try.
   */
  tryComplete(change?: PartitionChange): boolean;
  /** Runs exactly once, when the operation completes or expires. */
  onComplete(expired: boolean): void;
}

/** What an operation waits on: a partition's log object, a group key string, … (compared by identity). */
export type PurgatoryKey = object | string;

interface Watched {
  op: DelayedOperation;
  keys: Iterable<PurgatoryKey>;
  timer: NodeJS.Timeout | undefined;
  done: boolean;
  /** a standing watch: never finishes, only closes */
  standing: boolean;
  /** a reusable wait (see Purgatory.reusable): stays registered and keeps its timer between operations */
  reusable: boolean;
}

export class Purgatory {
  private readonly watchers = new Map<PurgatoryKey, Set<Watched>>();
  private count = 0;

  /** Number of operations waiting. */
  get size(): number {
    return this.count;
  }

  /** Completes `op` now if it can; otherwise watches it under `keys` until completion or `timeoutMs`. */
  tryCompleteElseWatch(op: DelayedOperation, keys: readonly PurgatoryKey[], timeoutMs: number): boolean {
    if (op.tryComplete()) {
      op.onComplete(false);
      return true;
    }
    const w: Watched = { op, keys, timer: undefined, done: false, standing: false, reusable: false };
    for (const k of keys) this.watchKey(w, k);
    this.count++;
    w.timer = setTimeout(() => this.finish(w, true), Math.max(0, timeoutMs));
    return false;
  }

  /** Re-checks the operations watching `key`; returns how many completed. */
  checkAndComplete(key: PurgatoryKey, change?: PartitionChange): number {
    const set = this.watchers.get(key);
    if (set === undefined) return 0;
    let n = 0;
    for (const w of set.size === 1 ? set : [...set]) {
      if (!w.done && w.op.tryComplete(change)) {
        this.finish(w, false);
        n++;
      }
    }
    return n;
  }

  /** Registers a standing watch (see StandingWatch); it does not count in `size`. */
  standing(onChange: (change?: PartitionChange) => void): StandingWatch {
    let current = new Set<PurgatoryKey>();
    const w: Watched = {
      op: { tryComplete: (change) => (onChange(change), false), onComplete: () => {} },
      keys: current,
      timer: undefined,
      done: false,
      standing: true,
      reusable: false,
    };
    const unregister = (keys: Iterable<PurgatoryKey>) => {
      for (const k of keys) this.unwatchKey(w, k);
    };
    return {
      setKeys: (keys) => {
        if (w.done) return;
        if (keys.length === current.size && keys.every((k) => current.has(k))) return;
        const next = new Set(keys);
        unregister([...current].filter((k) => !next.has(k)));
        for (const k of next) if (!current.has(k)) this.watchKey(w, k);
        w.keys = current = next;
      },
      close: () => {
        if (w.done) return;
        w.done = true;
        unregister(current);
        current.clear();
      },
    };
  }

  /**
   * A wait for a caller that waits once at a time under the same keys (a connection's long-polling
   * fetches, which a connection runs one after another). Unlike waitFor, a wait registers nothing and
   * creates no timer: the registration stays between waits, and the timer is re-armed
   * (Timeout.refresh) rather than created and cancelled. A wait counts in `size` and is expired by
   * expireAll like any other operation.
   */
  reusable(keys: readonly PurgatoryKey[]): ReusableWait {
    const op = new ReusableOp();
    const w: Watched = { op, keys, timer: undefined, done: true, standing: false, reusable: true };
    for (const k of keys) this.watchKey(w, k);
    let armedMs = -1;
    let closed = false;
    return {
      wait: (timeoutMs, ready) => {
        if (closed) return Promise.resolve(ready());
        if (!w.done) this.finish(w, true); // one wait at a time: a forgotten one ends as expired
        const promise = op.start(ready);
        if (op.tryComplete()) {
          op.onComplete(false);
          return promise;
        }
        const ms = Math.max(1, timeoutMs);
        if (w.timer === undefined || armedMs !== ms) {
          if (w.timer !== undefined) clearTimeout(w.timer);
          // A timer left armed after its wait completed fires into a finished wait: finish() ignores it.
          w.timer = setTimeout(() => this.finish(w, true), ms);
          armedMs = ms;
        } else w.timer.refresh().ref();
        w.done = false;
        this.count++;
        return promise;
      },
      close: () => {
        if (closed) return;
        closed = true;
        this.finish(w, true);
        if (w.timer !== undefined) clearTimeout(w.timer);
        for (const k of keys) this.unwatchKey(w, k);
      },
    };
  }

  /** Completes every waiting operation as expired (shutdown); standing watches stay. */
  expireAll(): void {
    const all = new Set<Watched>();
    for (const set of this.watchers.values()) for (const w of set) if (!w.standing) all.add(w);
    for (const w of all) this.finish(w, true);
  }

  private finish(w: Watched, expired: boolean): void {
    if (w.done) return;
    w.done = true;
    if (w.reusable) {
      // stays registered; its timer stays armed, unreferenced, until the next wait re-arms it
      w.timer?.unref();
    } else {
      if (w.timer !== undefined) clearTimeout(w.timer);
      for (const k of w.keys) this.unwatchKey(w, k);
    }
    this.count--;
    w.op.onComplete(expired);
  }

  private watchKey(w: Watched, k: PurgatoryKey): void {
    let set = this.watchers.get(k);
    if (set === undefined) this.watchers.set(k, (set = new Set()));
    set.add(w);
  }

  private unwatchKey(w: Watched, k: PurgatoryKey): void {
    const set = this.watchers.get(k);
    if (set === undefined) return;
    set.delete(w);
    // Partition (object) keys are few and reused by every fetch: keep their empty sets. String keys
    // (groups) come and go, so drop theirs.
    if (set.size === 0 && typeof k === 'string') this.watchers.delete(k);
  }
}

/**
 * A watcher that stays: `onChange(change)` runs on every checkAndComplete of any of its keys until it
 * is closed, and it never expires. Its keys can be replaced (the registrations are only touched when
 * they do change).
 */
export interface StandingWatch {
  /** Makes `keys` the watched set; a no-op when it already is (same keys, any order). */
  setKeys(keys: readonly PurgatoryKey[]): void;
  close(): void;
}

/** Waits one at a time under fixed keys: Purgatory.reusable. */
export interface ReusableWait {
  /**
   * Waits until `ready(change)` holds (re-checked when a key is touched) or `timeoutMs` passes;
   * resolves true when ready. A wait started before the last one ended ends that one as expired.
   */
  wait(timeoutMs: number, ready: (change?: PartitionChange) => boolean): Promise<boolean>;
  /** Ends a pending wait as expired and unregisters; later waits resolve at once with ready(). */
  close(): void;
}

/** The operation of a ReusableWait: the current wait's test and promise. */
class ReusableOp implements DelayedOperation {
  private ready: (change?: PartitionChange) => boolean = () => false;
  private resolve: ((ok: boolean) => void) | null = null;

  start(ready: (change?: PartitionChange) => boolean): Promise<boolean> {
    this.ready = ready;
    return new Promise((resolve) => (this.resolve = resolve));
  }

  tryComplete(change?: PartitionChange): boolean {
    return this.ready(change);
  }

  onComplete(expired: boolean): void {
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.(!expired || this.ready());
  }
}

/** Waits until `ready()` holds (re-checked when a key is touched) or `timeoutMs` passes. Resolves true when ready. */
export function waitFor(
  purgatory: Purgatory,
  keys: readonly PurgatoryKey[],
  timeoutMs: number,
  ready: (change?: PartitionChange) => boolean,
): Promise<boolean> {
  return new Promise((resolve) => {
    purgatory.tryCompleteElseWatch({ tryComplete: ready, onComplete: (expired) => resolve(!expired || ready()) }, keys, timeoutMs);
  });
}
