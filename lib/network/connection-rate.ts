/**
 * Connection creation rates (KIP-612), as Kafka's ConnectionQuotas: `max.connection.creation.rate`
 * broker-wide and `listener.name.<l>.max.connection.creation.rate` per listener hold new connections
 * back (Kafka's acceptor waits the throttle time before accepting the next one: here the listener's
 * new connections wait their turn in one queue, each served once the rate allows); the
 * `connection_creation_rate` quota of an `ip` entity (or the default ip entity) closes a connection
 * over it after the throttle time, without serving it. Rates over Kafka's quota.window.* samples; the
 * throttle is at most one window (Kafka's bound).
 */
import { SampledRate } from '../quota/rate.js';

export interface ConnectionRateLimits {
  /** max.connection.creation.rate, and per listener (listener.name.<l>.…; absent: the broker-wide value) */
  listenerRate(listener: string): number;
  brokerRate(): number;
  /** connection_creation_rate of the ip entity, else of the default ip entity; undefined: none */
  ipRate(ip: string): number | undefined;
}

const UNLIMITED = 2147483647;

export class ConnectionCreationRates {
  private readonly broker: SampledRate;
  private readonly listeners = new Map<string, SampledRate>();
  private readonly ips = new Map<string, SampledRate>();
  /** connections closed for their address's rate, so far */
  throttledIps = 0;

  constructor(
    private readonly limits: ConnectionRateLimits,
    private readonly samples: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.broker = new SampledRate(samples, windowMs, now());
  }

  /**
   * A connection from `ip` arrives: the time (ms) after which to close it for its address's rate, or
   * 0 to go on (it is counted then).
   */
  ipThrottle(ip: string): number {
    const bound = this.limits.ipRate(ip);
    if (bound === undefined) return 0;
    const now = this.now();
    let r = this.ips.get(ip);
    if (r === undefined) this.ips.set(ip, (r = new SampledRate(this.samples, this.windowMs, now)));
    r.record(1, now);
    const ms = r.throttleMs(bound, now);
    if (ms <= 0) return 0;
    r.unrecord(1); // a refused connection does not count (Kafka takes it back too)
    this.throttledIps++;
    return Math.min(ms, this.windowMs);
  }

  /** The listener accepts a connection now: records it, and returns how long before the next one (0: at once). */
  accepted(listener: string): number {
    const lb = this.limits.listenerRate(listener);
    const bb = this.limits.brokerRate();
    if (lb >= UNLIMITED && bb >= UNLIMITED) return 0;
    const now = this.now();
    let r = this.listeners.get(listener);
    if (r === undefined) this.listeners.set(listener, (r = new SampledRate(this.samples, this.windowMs, now)));
    r.record(1, now);
    this.broker.record(1, now);
    const ms = Math.max(lb < UNLIMITED ? r.throttleMs(lb, now) : 0, bb < UNLIMITED ? this.broker.throttleMs(bb, now) : 0);
    return Math.min(ms, this.windowMs);
  }
}

/** A listener's new connections waiting their turn under the creation rate (Kafka's blocked acceptor). */
export class AcceptGate {
  private readonly queue: { serve: () => void; drop: () => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rates: ConnectionCreationRates,
    private readonly listener: string,
  ) {}

  /** `serve` runs once the rate allows (at once when it does now); `drop` if the listener closes first. */
  enter(serve: () => void, drop: () => void): void {
    this.queue.push({ serve, drop });
    if (this.timer === undefined) this.drain();
  }

  /** The listener closes: the connections still waiting are dropped. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const q of this.queue.splice(0)) q.drop();
  }

  private drain(): void {
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      next.serve();
      const wait = this.rates.accepted(this.listener);
      if (wait > 0) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          this.drain();
        }, wait);
        return;
      }
    }
  }
}
