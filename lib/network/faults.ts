/**
 * Fault injection for tests against an embedded broker: answer chosen requests with chosen errors,
 * delay them, or drop the connection before or after the handler ran (e.g. after a Produce was
 * appended, to prove a retried idempotent batch is written once). The Dispatcher consults `pick`
 * once per decoded request; with no rule for the API that is one Map lookup and no allocation.
 *
 *   broker.faults.add({ apiKey: ApiKey.Produce, action: 'close', when: 'after', times: 1 });
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';

export type FaultAction = 'error' | 'close' | 'delay';
export type FaultWhen = 'before' | 'after';

/** What a rule's `match` sees besides the decoded request body. */
export interface FaultRequestInfo {
  apiVersion: number;
  clientId: string | null;
}

export interface FaultRule {
  /** which API (ApiKey from protocol/generated/api-keys.js) */
  apiKey: number;
  /**
   * 'error': the whole response becomes handler.errorResponse(req, errorCode, ctx) (requests that get
   * no response, Produce with acks=0, still get none); 'close': the connection is closed and the
   * request gets no response; 'delay': wait delayMs, then carry on normally.
   */
  action: FaultAction;
  /**
   * 'before' (default): the handler never runs ('delay': waits before handling). 'after': the handler
   * runs to completion (its side effects, e.g. an append, happen), then the fault applies to the
   * response ('delay': waits before answering).
   */
  when?: FaultWhen;
  /** for 'error' (required there, only there): a Kafka error code, non-zero */
  errorCode?: number;
  /** for 'delay' (required there, only there): milliseconds, >= 0 */
  delayMs?: number;
  /** 0..1, default 1: the chance that a matching request gets the fault */
  probability?: number;
  /** apply at most this many times (an integer >= 1), then the rule removes itself; default unlimited */
  times?: number;
  /** optional filter on the decoded request; rules whose match returns false are skipped without a draw */
  match?: (req: unknown, info: FaultRequestInfo) => boolean;
}

export interface FaultHandle {
  /** the rule as added (a frozen copy) */
  readonly rule: Readonly<FaultRule>;
  /** how many times the rule has been applied so far */
  readonly applied: number;
  /** false once removed (by remove(), clear(), or `times` used up) */
  readonly active: boolean;
  /** Removes the rule; requests already being delayed or handled under it are not affected. Idempotent. */
  remove(): void;
}

/** A rule chosen for one request, as the Dispatcher applies it. */
export interface PickedFault {
  readonly rule: Readonly<FaultRule>;
  readonly action: FaultAction;
  readonly when: FaultWhen;
  /** meaningful for 'error' */
  readonly errorCode: number;
  /** meaningful for 'delay' */
  readonly delayMs: number;
  /** applications so far, this one included */
  readonly applied: number;
}

export interface FaultInjectorOptions {
  /** uniform in [0, 1); default Math.random. Drawn once per matching rule with 0 < probability < 1. */
  random?: () => number;
}

const RULE_KEYS: ReadonlySet<string> = new Set(['apiKey', 'action', 'when', 'errorCode', 'delayMs', 'probability', 'times', 'match']);
const API_KEYS: ReadonlySet<number> = new Set(Object.values(ApiKey));

class FaultEntry implements FaultHandle, PickedFault {
  applied = 0;
  active = true;
  readonly action: FaultAction;
  readonly when: FaultWhen;
  readonly errorCode: number;
  readonly delayMs: number;
  readonly probability: number;
  readonly times: number;

  constructor(
    readonly rule: Readonly<FaultRule>,
    private readonly owner: FaultInjector,
  ) {
    this.action = rule.action;
    this.when = rule.when ?? 'before';
    this.errorCode = rule.errorCode ?? 0;
    this.delayMs = rule.delayMs ?? 0;
    this.probability = rule.probability ?? 1;
    this.times = rule.times ?? Infinity;
  }

  remove(): void {
    this.owner.removeEntry(this);
  }
}

export class FaultInjector {
  /** API key → its rules in the order added; keys without rules are absent */
  private readonly byApi = new Map<number, FaultEntry[]>();
  /** every rule in the order added */
  private readonly entries: FaultEntry[] = [];
  /** uniform in [0, 1); replaceable at any time (e.g. `broker.faults.random = seeded`) for deterministic tests */
  random: () => number;

  constructor(opts: FaultInjectorOptions = {}) {
    this.random = opts.random ?? Math.random;
  }

  /** The active rules, in the order added (a snapshot). */
  get rules(): readonly Readonly<FaultRule>[] {
    return this.entries.map((e) => e.rule);
  }

  /** Adds a rule (after the existing ones: the first matching rule wins). Throws GREGOR_ERR_FAULT_RULE on an invalid rule. */
  add(rule: FaultRule): FaultHandle {
    validate(rule);
    const entry = new FaultEntry(Object.freeze({ ...rule }), this);
    this.entries.push(entry);
    const list = this.byApi.get(rule.apiKey);
    if (list === undefined) this.byApi.set(rule.apiKey, [entry]);
    else list.push(entry);
    return entry;
  }

  /** Removes every rule. */
  clear(): void {
    for (const e of this.entries) e.active = false;
    this.entries.length = 0;
    this.byApi.clear();
  }

  /**
   * The fault for one decoded request, or null: the first rule for `apiKey` whose `match` accepts the
   * request and whose probability draw passes. Counts the application and removes a rule whose
   * `times` is used up. Internal: the Dispatcher calls it once per request.
   */
  pick(apiKey: number, req: unknown, info: FaultRequestInfo): PickedFault | null {
    const list = this.byApi.get(apiKey);
    if (list === undefined) return null;
    for (const e of list) {
      const m = e.rule.match;
      if (m !== undefined && !m(req, { apiVersion: info.apiVersion, clientId: info.clientId })) continue;
      const p = e.probability;
      if (p < 1 && !(p > 0 && this.random() < p)) continue;
      e.applied++;
      if (e.applied >= e.times) this.removeEntry(e);
      return e;
    }
    return null;
  }

  /** @internal */
  removeEntry(e: FaultEntry): void {
    if (!e.active) return;
    e.active = false;
    const i = this.entries.indexOf(e);
    if (i >= 0) this.entries.splice(i, 1);
    const list = this.byApi.get(e.rule.apiKey);
    if (list === undefined) return;
    const j = list.indexOf(e);
    if (j >= 0) list.splice(j, 1);
    if (list.length === 0) this.byApi.delete(e.rule.apiKey);
  }
}

function invalid(why: string, rule: unknown): never {
  let shown: string;
  try {
    shown = JSON.stringify(rule, (_k, v: unknown) => (typeof v === 'function' ? '[function]' : typeof v === 'bigint' ? `${v}n` : v));
  } catch {
    shown = String(rule);
  }
  throw new Error(`GREGOR_ERR_FAULT_RULE: ${why} in fault rule ${shown}`);
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

function validate(rule: FaultRule): void {
  if (typeof rule !== 'object' || rule === null) invalid('a rule must be an object', rule);
  for (const k of Object.keys(rule)) if (!RULE_KEYS.has(k)) invalid(`unknown field "${k}"`, rule);
  if (!isInt(rule.apiKey) || !API_KEYS.has(rule.apiKey)) invalid(`unknown apiKey ${String(rule.apiKey)}`, rule);
  const action: unknown = rule.action;
  if (action !== 'error' && action !== 'close' && action !== 'delay') invalid(`unknown action ${String(action)} (error, close or delay)`, rule);
  const when: unknown = rule.when;
  if (when !== undefined && when !== 'before' && when !== 'after') invalid(`unknown when ${String(when)} (before or after)`, rule);
  if (action === 'error') {
    if (!isInt(rule.errorCode) || rule.errorCode === 0 || rule.errorCode < -32768 || rule.errorCode > 32767) {
      invalid('an error rule needs a non-zero int16 errorCode', rule);
    }
  } else if (rule.errorCode !== undefined) invalid(`errorCode is only for action 'error'`, rule);
  if (action === 'delay') {
    if (typeof rule.delayMs !== 'number' || !Number.isFinite(rule.delayMs) || rule.delayMs < 0) invalid('a delay rule needs delayMs >= 0', rule);
  } else if (rule.delayMs !== undefined) invalid(`delayMs is only for action 'delay'`, rule);
  const p: unknown = rule.probability;
  if (p !== undefined && (typeof p !== 'number' || !(p >= 0 && p <= 1))) invalid('probability must be within 0..1', rule);
  const times: unknown = rule.times;
  if (times !== undefined && (!isInt(times) || times < 1)) invalid('times must be an integer >= 1', rule);
  if (rule.match !== undefined && typeof rule.match !== 'function') invalid('match must be a function', rule);
}
