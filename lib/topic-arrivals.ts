/**
 * Waiting for a topic another broker created (clusters): the store's watch reports it a moment after
 * that broker's creation, and whoever lost the race to create it waits here until then.
 */
export class TopicArrivals {
  /** waiters by topic name, woken when the store reports the topic created */
  private readonly waiters = new Map<string, Set<() => void>>();

  /** The store reported topic `name` created: wakes its waiters. */
  arrived(name: string): void {
    for (const wake of [...(this.waiters.get(name) ?? [])]) wake();
  }

  /** Resolves when topic `name` is reported created (arrived), or after `ms`. */
  wait(name: string, ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      let set = this.waiters.get(name);
      if (set === undefined) this.waiters.set(name, (set = new Set()));
      const waiting = set;
      const wake = (): void => {
        clearTimeout(timer);
        waiting.delete(wake);
        if (waiting.size === 0 && this.waiters.get(name) === waiting) this.waiters.delete(name);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      waiting.add(wake);
    });
  }
}
