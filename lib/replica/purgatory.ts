/**
 * Delayed operations wait here, never in a polling loop (Kafka's purgatory). An operation is watched
 * under one or more keys (e.g. "topic:partition"); whoever changes the state behind a key calls
 * checkAndComplete(key). Each operation has one timer; completion is idempotent and unregisters it.
 */

export interface DelayedOperation {
  /**
   * Returns true when the operation can complete now. Must be cheap and synchronous. `change` is what
   * the caller of checkAndComplete passed along (e.g. the bytes just appended); absent on the first try.
   */
  tryComplete(change?: number): boolean;
  /** Runs exactly once, when the operation completes or expires. */
  onComplete(expired: boolean): void;
}

/** What an operation waits on: a partition's log object, a group key string, … (compared by identity). */
export type PurgatoryKey = object | string;

interface Watched {
  op: DelayedOperation;
  keys: readonly PurgatoryKey[];
  timer: NodeJS.Timeout | undefined;
  done: boolean;
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
    const w: Watched = { op, keys, timer: undefined, done: false };
    for (const k of keys) {
      let set = this.watchers.get(k);
      if (set === undefined) this.watchers.set(k, (set = new Set()));
      set.add(w);
    }
    this.count++;
    w.timer = setTimeout(() => this.finish(w, true), Math.max(0, timeoutMs));
    return false;
  }

  /** Re-checks the operations watching `key`; returns how many completed. */
  checkAndComplete(key: PurgatoryKey, change?: number): number {
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

  /** Completes every waiting operation as expired (shutdown). */
  expireAll(): void {
    const all = new Set<Watched>();
    for (const set of this.watchers.values()) for (const w of set) all.add(w);
    for (const w of all) this.finish(w, true);
  }

  private finish(w: Watched, expired: boolean): void {
    if (w.done) return;
    w.done = true;
    if (w.timer !== undefined) clearTimeout(w.timer);
    for (const k of w.keys) {
      const set = this.watchers.get(k);
      if (set === undefined) continue;
      set.delete(w);
      // Partition (object) keys are few and reused by every fetch: keep their empty sets. String keys
      // (groups) come and go, so drop theirs.
      if (set.size === 0 && typeof k === 'string') this.watchers.delete(k);
    }
    this.count--;
    w.op.onComplete(expired);
  }
}

/** Waits until `ready()` holds (re-checked when a key is touched) or `timeoutMs` passes. Resolves true when ready. */
export function waitFor(purgatory: Purgatory, keys: readonly PurgatoryKey[], timeoutMs: number, ready: (change?: number) => boolean): Promise<boolean> {
  return new Promise((resolve) => {
    purgatory.tryCompleteElseWatch({ tryComplete: ready, onComplete: (expired) => resolve(!expired || ready()) }, keys, timeoutMs);
  });
}
