/**
 * Fault injection, one mechanism for embedded use (`broker.faults`), the admin listener
 * (`/v1/faults`, lib/admin/fault-routes.ts) and GREGOR_FAULTS (lib/cli.ts): answer chosen requests
 * with chosen errors, delay them, drop the connection before or after the handler ran (e.g. after a
 * Produce was appended, to prove a retried idempotent batch is written once), or pause a partition's
 * appends. Rules (validated by lib/network/fault-rules.ts) filter by API, topic/partition, client id
 * and, embedded only, a `match` function; each gets an id and expires on its own (`times`, `ttlMs`,
 * `expiresAt`). The Dispatcher consults `pick` once per decoded request (with no rule for the API that
 * is one Map lookup and no allocation); the Produce handler consults `appendGate` per partition.
 *
 *   broker.faults.add({ apiKey: ApiKey.Produce, action: 'close', when: 'after', times: 1 });
 *   broker.faults.add({ apiKey: ApiKey.Produce, action: 'pause', topic: 'orders', partition: 0, ttlMs: 2000 });
 */
import { errorName } from '../../protocol/generated/error-codes.js';
import {
  type FaultAction,
  type FaultRequestInfo,
  type FaultRule,
  type FaultWhen,
  apiName,
  MAX_TIMER_MS,
  normalizeRule,
  parseFaultRules,
  parseFaultRulesJson,
} from './fault-rules.js';
import { namesTopicPartition, SCOPED_ERROR_APIS, type TopicResolver } from './fault-scope.js';

export { FaultRuleError, parseFaultRules, parseFaultRulesJson } from './fault-rules.js';
export type { FaultAction, FaultRequestInfo, FaultRule, FaultWhen } from './fault-rules.js';

/** A rule as listed (GET /v1/faults, `faults.list()`): the normalized rule, JSON-safe, with its state. */
export interface FaultInfo {
  id: string;
  apiKey: number;
  /** the API's name, e.g. "Produce" */
  api: string;
  action: FaultAction;
  when?: FaultWhen;
  errorCode?: number;
  /** the error's name, e.g. "NOT_LEADER_OR_FOLLOWER" */
  error?: string;
  delayMs?: number;
  jitterMs?: number;
  probability?: number;
  topic?: string;
  partition?: number;
  clientId?: string;
  /** true when an embedded `match` function filters too */
  match?: true;
  /** the `times` limit, null when unlimited */
  times: number | null;
  /** applications left before the rule removes itself, null when unlimited */
  remaining: number | null;
  ttlMs?: number;
  /** ISO-8601 */
  addedAt: string;
  /** ISO-8601, null when the rule does not expire */
  expiresAt: string | null;
  /** ms until it expires, null when it does not */
  remainingMs: number | null;
  /** times applied so far ('pause': partition appends held so far) */
  applied: number;
  /** 'pause': partition appends held now */
  held?: number;
}

export interface FaultHandle {
  /** unique within its injector ("f1", "f2", ...): DELETE /v1/faults/:id, `faults.remove(id)` */
  readonly id: string;
  /** the rule as added (normalized, a frozen copy) */
  readonly rule: Readonly<FaultRule>;
  /** how many times the rule has been applied so far ('pause': partition appends held) */
  readonly applied: number;
  /** false once removed (by remove(), clear(), `times` used up, or expiry) */
  readonly active: boolean;
  /** epoch ms when the rule expires, null when it does not */
  readonly expiresAt: number | null;
  /** the rule and its state as listed */
  info(): FaultInfo;
  /** Removes the rule; requests already being delayed or handled under it are not affected ('pause': its held appends go ahead). Idempotent. */
  remove(): void;
}

/** A rule chosen for one request, as the Dispatcher applies it. */
export interface PickedFault {
  readonly rule: Readonly<FaultRule>;
  readonly action: FaultAction;
  readonly when: FaultWhen;
  /** meaningful for 'error' */
  readonly errorCode: number;
  /** meaningful for 'delay': the base delay (nextDelayMs() adds the jitter) */
  readonly delayMs: number;
  /** applications so far, this one included */
  readonly applied: number;
  /** 'error' with a topic filter on Produce or Fetch: only the partitions `hits` selects get the error */
  readonly scoped: boolean;
  /** whether the rule's topic/partition filter selects this partition (true for every partition without a topic filter) */
  hits(topic: string, partition: number): boolean;
  /** 'delay': delayMs plus a uniform 0..jitterMs draw */
  nextDelayMs(): number;
}

/** What `pick` gets about the request; the Dispatcher passes its RequestContext. */
export interface FaultPickInfo extends FaultRequestInfo {
  /** the broker's metadata, to resolve topic ids to names for topic filters */
  services?: { metadata: { topicById(id: string): { name: string } | undefined } };
}

export interface FaultInjectorOptions {
  /** uniform in [0, 1); default Math.random. Drawn once per matching rule with 0 < probability < 1, and per jittered delay. */
  random?: () => number;
}

class FaultEntry implements FaultHandle, PickedFault {
  applied = 0;
  active = true;
  timer: NodeJS.Timeout | null = null;
  readonly action: FaultAction;
  readonly when: FaultWhen;
  readonly errorCode: number;
  readonly delayMs: number;
  readonly jitterMs: number;
  readonly probability: number;
  readonly times: number;
  readonly addedAt: number;
  /** epoch ms, Infinity when the rule does not expire */
  readonly deadline: number;
  readonly scoped: boolean;

  constructor(
    readonly id: string,
    readonly rule: Readonly<FaultRule>,
    private readonly owner: FaultInjector,
  ) {
    this.action = rule.action;
    this.when = rule.when ?? 'before';
    this.errorCode = rule.errorCode ?? 0;
    this.delayMs = rule.delayMs ?? 0;
    this.jitterMs = rule.jitterMs ?? 0;
    this.probability = rule.probability ?? 1;
    this.times = rule.times ?? Infinity;
    this.addedAt = Date.now();
    this.deadline = rule.ttlMs !== undefined ? this.addedAt + rule.ttlMs : (rule.expiresAt ?? Infinity);
    this.scoped = rule.action === 'error' && rule.topic !== undefined && SCOPED_ERROR_APIS.has(rule.apiKey);
  }

  get expiresAt(): number | null {
    return this.deadline === Infinity ? null : this.deadline;
  }

  hits(topic: string, partition: number): boolean {
    const r = this.rule;
    return (r.topic === undefined || r.topic === topic) && (r.partition === undefined || r.partition === partition);
  }

  /** a pause rule holding this append */
  holds(topic: string, partition: number, clientId: string | null): boolean {
    return this.hits(topic, partition) && (this.rule.clientId === undefined || this.rule.clientId === clientId);
  }

  nextDelayMs(): number {
    return this.jitterMs > 0 ? this.delayMs + this.owner.random() * this.jitterMs : this.delayMs;
  }

  info(): FaultInfo {
    return this.owner.describe(this);
  }

  remove(): void {
    this.owner.removeEntry(this);
  }
}

/** A Produce partition append held by a pause rule. */
interface HeldAppend {
  topic: string;
  partition: number;
  clientId: string | null;
  release: () => void;
}

export class FaultInjector {
  /** API key → its rules (not 'pause') in the order added; keys without rules are absent */
  private readonly byApi = new Map<number, FaultEntry[]>();
  /** the 'pause' rules in the order added */
  private readonly pauses: FaultEntry[] = [];
  /** every rule in the order added */
  private readonly entries: FaultEntry[] = [];
  /** appends held by pause rules, in arrival order */
  private held: HeldAppend[] = [];
  private seq = 0;
  /** uniform in [0, 1); replaceable at any time (e.g. `broker.faults.random = seeded`) for deterministic tests */
  random: () => number;

  constructor(opts: FaultInjectorOptions = {}) {
    this.random = opts.random ?? Math.random;
  }

  /** The active rules, in the order added (a snapshot). */
  get rules(): readonly Readonly<FaultRule>[] {
    return this.entries.map((e) => e.rule);
  }

  /** Adds a rule (after the existing ones: the first matching rule wins). Throws a FaultRuleError (GREGOR_ERR_FAULT_RULE) on an invalid rule. */
  add(rule: FaultRule): FaultHandle {
    return this.insert(normalizeRule(rule, { json: false }));
  }

  /**
   * Adds the rules of a JSON document (POST /v1/faults, GREGOR_FAULTS), parsed or as text (a
   * string is parsed): one rule or an array, with API and error names allowed and no `match`. All or
   * none: the first invalid rule throws a FaultRuleError naming its index and field, and nothing is added.
   */
  addJson(input: unknown): FaultHandle[] {
    const rules = typeof input === 'string' ? parseFaultRulesJson(input) : parseFaultRules(input);
    return rules.map((r) => this.insert(r));
  }

  /** The rule with this id, while it is active. */
  get(id: string): FaultHandle | undefined {
    this.expire();
    return this.entries.find((e) => e.id === id);
  }

  /** Removes the rule with this id; false when there is none (never added, or already gone). */
  remove(id: string): boolean {
    const e = this.entries.find((x) => x.id === id);
    if (e === undefined) return false;
    this.removeEntry(e);
    return true;
  }

  /** The active rules with their state (applied, remaining, remainingMs, held), in the order added. */
  list(): FaultInfo[] {
    this.expire();
    return this.entries.map((e) => this.describe(e));
  }

  /** Removes every rule (held appends go ahead); returns how many there were. */
  clear(): number {
    const n = this.entries.length;
    for (const e of this.entries) this.deactivate(e);
    this.entries.length = 0;
    this.byApi.clear();
    this.pauses.length = 0;
    this.releaseHeld();
    return n;
  }

  /**
   * The fault for one decoded request, or null: the first rule for `apiKey` whose filters (client
   * id, topic/partition, match) accept the request and whose probability draw passes. Counts the
   * application and removes a rule whose `times` is used up. Internal: the Dispatcher calls it once
   * per request.
   */
  pick(apiKey: number, req: unknown, info: FaultPickInfo): PickedFault | null {
    const list = this.byApi.get(apiKey);
    if (list === undefined) return null;
    let now = 0;
    let resolve: TopicResolver | undefined;
    for (let i = 0; i < list.length; i++) {
      const e = list[i]!;
      if (e.deadline !== Infinity && (now ||= Date.now()) >= e.deadline) {
        this.removeEntry(e); // expired, its timer not yet run
        i--;
        continue;
      }
      const r = e.rule;
      if (r.clientId !== undefined && r.clientId !== info.clientId) continue;
      if (r.topic !== undefined) {
        const meta = info.services?.metadata;
        resolve ??= meta === undefined ? undefined : (id) => meta.topicById(id)?.name;
        if (!namesTopicPartition(apiKey, req, r.topic, r.partition, resolve)) continue;
      }
      if (r.match !== undefined && !r.match(req, { apiVersion: info.apiVersion, clientId: info.clientId })) continue;
      const p = e.probability;
      if (p < 1 && !(p > 0 && this.random() < p)) continue;
      e.applied++;
      if (e.applied >= e.times) this.removeEntry(e);
      return e;
    }
    return null;
  }

  /**
   * For the Produce handler, per partition before anything else is done with it: null when the
   * append may go ahead now, or a promise that resolves when no pause rule holds it any more. Held
   * appends are released in arrival order, all in one go, so their continuations run (and append)
   * in that order before any later request is read.
   */
  appendGate(topic: string, partition: number, clientId: string | null): Promise<void> | null {
    if (this.pauses.length === 0) return null;
    const e = this.pauses.find((x) => x.holds(topic, partition, clientId));
    if (e === undefined) return null;
    e.applied++;
    return new Promise<void>((release) => this.held.push({ topic, partition, clientId, release }));
  }

  /** @internal */
  removeEntry(e: FaultEntry): void {
    if (!e.active) return;
    this.deactivate(e);
    const i = this.entries.indexOf(e);
    if (i >= 0) this.entries.splice(i, 1);
    if (e.action === 'pause') {
      const j = this.pauses.indexOf(e);
      if (j >= 0) this.pauses.splice(j, 1);
      this.releaseHeld();
      return;
    }
    const list = this.byApi.get(e.rule.apiKey);
    if (list === undefined) return;
    const j = list.indexOf(e);
    if (j >= 0) list.splice(j, 1);
    if (list.length === 0) this.byApi.delete(e.rule.apiKey);
  }

  /** @internal */
  describe(e: FaultEntry): FaultInfo {
    const r = e.rule;
    const o: FaultInfo = {
      id: e.id,
      apiKey: r.apiKey,
      api: apiName(r.apiKey),
      action: r.action,
      times: null,
      remaining: null,
      addedAt: '',
      expiresAt: null,
      remainingMs: null,
      applied: e.applied,
    };
    if (r.action !== 'pause') {
      o.when = e.when;
      o.probability = e.probability;
    }
    if (r.errorCode !== undefined) {
      o.errorCode = r.errorCode;
      o.error = errorName(r.errorCode);
    }
    if (r.delayMs !== undefined) o.delayMs = r.delayMs;
    if (r.jitterMs !== undefined) o.jitterMs = r.jitterMs;
    if (r.topic !== undefined) o.topic = r.topic;
    if (r.partition !== undefined) o.partition = r.partition;
    if (r.clientId !== undefined) o.clientId = r.clientId;
    if (r.match !== undefined) o.match = true;
    if (r.times !== undefined) {
      o.times = r.times;
      o.remaining = Math.max(0, r.times - e.applied);
    }
    if (r.ttlMs !== undefined) o.ttlMs = r.ttlMs;
    o.addedAt = new Date(e.addedAt).toISOString();
    if (e.deadline !== Infinity) {
      o.expiresAt = new Date(e.deadline).toISOString();
      o.remainingMs = Math.max(0, e.deadline - Date.now());
    }
    if (r.action === 'pause') o.held = this.held.filter((h) => e.holds(h.topic, h.partition, h.clientId)).length;
    return o;
  }

  private insert(rule: FaultRule): FaultEntry {
    const entry = new FaultEntry(`f${++this.seq}`, Object.freeze({ ...rule }), this);
    this.entries.push(entry);
    if (rule.action === 'pause') this.pauses.push(entry);
    else {
      const list = this.byApi.get(rule.apiKey);
      if (list === undefined) this.byApi.set(rule.apiKey, [entry]);
      else list.push(entry);
    }
    if (entry.deadline !== Infinity) this.armExpiry(entry);
    return entry;
  }

  /** A timer (not keeping the process alive) removes the rule at its deadline; a pause releases its appends then. */
  private armExpiry(e: FaultEntry): void {
    const left = e.deadline - Date.now();
    if (left <= 0) {
      this.removeEntry(e);
      return;
    }
    e.timer = setTimeout(() => this.armExpiry(e), Math.min(left + 1, MAX_TIMER_MS));
    e.timer.unref();
  }

  private deactivate(e: FaultEntry): void {
    e.active = false;
    if (e.timer !== null) clearTimeout(e.timer);
    e.timer = null;
  }

  /** Removes rules past their deadline whose timers have not run yet. */
  private expire(): void {
    const now = Date.now();
    for (const e of this.entries.filter((x) => x.deadline <= now)) this.removeEntry(e);
  }

  /** Lets go, in arrival order, every held append that no pause rule holds any more. */
  private releaseHeld(): void {
    if (this.held.length === 0) return;
    const still: HeldAppend[] = [];
    const go: HeldAppend[] = [];
    for (const h of this.held) (this.pauses.some((e) => e.holds(h.topic, h.partition, h.clientId)) ? still : go).push(h);
    this.held = still;
    for (const h of go) h.release();
  }
}
