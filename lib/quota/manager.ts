/**
 * Client quotas at work (Kafka's ClientQuotaManager and ClientRequestQuotaManager): for each quota
 * key, one rate per client the matched quota entity names (its metric tags: the actual user and/or
 * client id when the entity has that type, as Kafka tags its sensors), so a /users/<default> quota
 * limits each user on its own and /clients/c limits all of c's connections together. Recording
 * returns the throttle time the rate then calls for. The configs are the metadata store's, read at
 * each request (so an AlterClientQuotas through any broker applies at once).
 */
import { clientEntitiesInOrder, entityKey, type ClientQuotas, QuotaKey } from './entity.js';
import { SampledRate } from './rate.js';

/** The quota keys measured per client. */
export type ClientQuotaType =
  | typeof QuotaKey.PRODUCER_BYTE_RATE
  | typeof QuotaKey.CONSUMER_BYTE_RATE
  | typeof QuotaKey.REQUEST_PERCENTAGE
  | typeof QuotaKey.CONTROLLER_MUTATION_RATE;

export interface QuotaWindow {
  /** quota.window.num (controller.quota.window.num for controller_mutation_rate) */
  samples: number;
  /** quota.window.size.seconds × 1000 */
  windowMs: number;
}

/** Throttle time handed out, per client (the /metrics families kafka_server_<type>_throttle_time). */
export interface ThrottleTotal {
  type: ClientQuotaType;
  user: string;
  clientId: string;
  throttleMsTotal: number;
  throttled: number;
}

const SWEEP_MS = 60_000;

export class ClientQuotaManager {
  private readonly sensors = new Map<string, SampledRate>();
  private readonly totals = new Map<string, ThrottleTotal>();
  private lastSweep = 0;

  constructor(
    private readonly configs: () => ClientQuotas,
    private readonly window: (type: ClientQuotaType) => QuotaWindow,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether any client quota is set (when none is, requests skip the quota path). */
  get enabled(): boolean {
    return this.configs().size > 0;
  }

  /** The quota on `type` for this client and the tags of its rate; undefined when none applies. */
  quotaFor(type: ClientQuotaType, user: string, clientId: string): { bound: number; tags: string } | undefined {
    const configs = this.configs();
    if (configs.size === 0) return undefined;
    for (const e of clientEntitiesInOrder(user, clientId)) {
      const bound = configs.get(entityKey(e))?.[type];
      if (bound === undefined) continue;
      const u = e.user !== undefined ? user : '';
      const c = e['client-id'] !== undefined ? clientId : '';
      return { bound, tags: JSON.stringify([u, c]) };
    }
    return undefined;
  }

  /** Records `value` for the client; the throttle time (ms) its quota now calls for (0: none). */
  record(type: ClientQuotaType, user: string, clientId: string, value: number): number {
    const q = this.quotaFor(type, user, clientId);
    if (q === undefined) return 0;
    const now = this.now();
    const sensor = this.sensor(type, q.tags, now);
    sensor.record(value, now);
    // Kafka's ClientRequestQuotaManager bounds a request_percentage throttle to one quota window
    // (QuotaUtils.boundedThrottleTime); the byte-rate and mutation throttles are not bounded
    const unbounded = sensor.throttleMs(q.bound, now);
    const ms = type === QuotaKey.REQUEST_PERCENTAGE ? Math.min(unbounded, this.window(type).windowMs) : unbounded;
    if (ms > 0) this.noteThrottle(type, q.tags, ms);
    return ms;
  }

  /** Takes back a value recorded (a throttled fetch answered without its records). */
  unrecord(type: ClientQuotaType, user: string, clientId: string, value: number): void {
    const q = this.quotaFor(type, user, clientId);
    if (q !== undefined) this.sensors.get(`${type}\0${q.tags}`)?.unrecord(value);
  }

  /** The throttle time the client's rate on `type` calls for now, without recording (a strict controller mutation check). */
  throttleNow(type: ClientQuotaType, user: string, clientId: string): number {
    const q = this.quotaFor(type, user, clientId);
    if (q === undefined) return 0;
    const now = this.now();
    return this.sensors.get(`${type}\0${q.tags}`)?.throttleMs(q.bound, now) ?? 0;
  }

  /** Most of `type` one quota window allows the client (Kafka sizes a consumer's fetch by it); undefined: unbounded. */
  maxValueInWindow(type: ClientQuotaType, user: string, clientId: string): number | undefined {
    const q = this.quotaFor(type, user, clientId);
    if (q === undefined) return undefined;
    const w = this.window(type);
    return Math.max(1, Math.floor((q.bound * (w.samples - 1) * w.windowMs) / 1000));
  }

  /** Throttle time handed out so far, per client and quota. */
  throttleTotals(): Iterable<ThrottleTotal> {
    return this.totals.values();
  }

  private sensor(type: ClientQuotaType, tags: string, now: number): SampledRate {
    if (now - this.lastSweep >= SWEEP_MS) {
      this.lastSweep = now;
      for (const [k, s] of this.sensors) if (s.idle(now)) this.sensors.delete(k);
    }
    const key = `${type}\0${tags}`;
    let s = this.sensors.get(key);
    if (s === undefined) {
      const w = this.window(type);
      this.sensors.set(key, (s = new SampledRate(w.samples, w.windowMs, now)));
    }
    return s;
  }

  private noteThrottle(type: ClientQuotaType, tags: string, ms: number): void {
    const key = `${type}\0${tags}`;
    let t = this.totals.get(key);
    if (t === undefined) {
      const [user, clientId] = JSON.parse(tags) as [string, string];
      this.totals.set(key, (t = { type, user, clientId, throttleMsTotal: 0, throttled: 0 }));
    }
    t.throttleMsTotal += ms;
    t.throttled++;
  }
}

/** The quota user of a principal: User:alice → alice (User:ANONYMOUS → ANONYMOUS, as Kafka's). */
export function quotaUser(principal: string | undefined): string {
  if (principal === undefined) return 'ANONYMOUS';
  const i = principal.indexOf(':');
  return i >= 0 ? principal.slice(i + 1) : principal;
}
