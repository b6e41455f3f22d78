/**
 * What must hold before the broker says it is ready (GET /v1/status/ready, GET /v1/ready, the start-up
 * line): named conditions, each pending until met. The broker's own are "listeners" (the Kafka
 * listeners are bound) and "group coordinator" (__consumer_offsets replayed); start-up code adds its
 * own, e.g. the declared topics, with `hold(name)` before Broker.start() and releases it once they
 * exist. A condition that fails keeps the broker booting and says why.
 */

export interface ReadinessHold {
  /** The condition is met. Idempotent. */
  release(): void;
  /** The condition cannot be met: the broker stays not ready, and `reason` is reported. */
  fail(reason: string): void;
}

type State = { state: 'pending' } | { state: 'met' } | { state: 'failed'; reason: string };

export class Readiness {
  private readonly conditions = new Map<string, State>();
  private waiters: (() => void)[] = [];

  /** A new pending condition named `name` (a name in use is replaced). */
  hold(name: string): ReadinessHold {
    const entry: State = { state: 'pending' };
    this.conditions.set(name, entry);
    const settle = (s: State): void => {
      if (this.conditions.get(name) !== entry) return; // replaced meanwhile
      this.conditions.set(name, s);
      this.check();
    };
    return { release: () => settle({ state: 'met' }), fail: (reason) => settle({ state: 'failed', reason }) };
  }

  /** A condition met when `p` fulfils and failed (with its message) when it rejects. */
  add(name: string, p: Promise<unknown>): void {
    const h = this.hold(name);
    p.then(
      () => h.release(),
      (e: unknown) => h.fail(e instanceof Error ? e.message : String(e)),
    );
  }

  get isReady(): boolean {
    for (const s of this.conditions.values()) if (s.state !== 'met') return false;
    return true;
  }

  /** Conditions not met yet, with the reason of the failed ones. */
  get pending(): { name: string; failed?: string }[] {
    const out: { name: string; failed?: string }[] = [];
    for (const [name, s] of this.conditions) {
      if (s.state === 'pending') out.push({ name });
      else if (s.state === 'failed') out.push({ name, failed: s.reason });
    }
    return out;
  }

  /** Resolves once every condition known at that moment (or added before then) is met. */
  whenReady(): Promise<void> {
    if (this.isReady) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private check(): void {
    if (!this.isReady || this.waiters.length === 0) return;
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}
