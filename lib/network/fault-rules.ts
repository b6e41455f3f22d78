/**
 * The one validator of fault rules (lib/network/faults.ts): rules added in process
 * (`broker.faults.add`), posted to the admin listener (`POST /v1/faults`, lib/admin/fault-routes.ts)
 * and read from GREGOR_FAULTS (lib/cli.ts) all pass through `normalizeRule`. A refused rule throws a
 * FaultRuleError (GREGOR_ERR_FAULT_RULE) that names the offending field.
 *
 * JSON rules may name the API (`"apiKey": "Produce"`) and the error (`"errorCode":
 * "NOT_LEADER_OR_FOLLOWER"`) instead of giving numbers, and give `expiresAt` as an ISO-8601 string;
 * they cannot carry `match` (a function). The normalized rule holds numbers only.
 */
import { API_KEYS, ApiKey } from '../../protocol/generated/api-keys.js';
import { ERRORS } from '../../protocol/generated/error-codes.js';
import { TOPIC_APIS } from './fault-scope.js';

export type FaultAction = 'error' | 'close' | 'delay' | 'pause';
export type FaultWhen = 'before' | 'after';

/** What a rule's `match` sees besides the decoded request body. */
export interface FaultRequestInfo {
  apiVersion: number;
  clientId: string | null;
}

export interface FaultRule {
  /**
   * Which API (ApiKey from protocol/generated/api-keys.js). JSON may give its name ("Produce").
   * A 'pause' rule is always about Produce: JSON may leave apiKey out there.
   */
  apiKey: number;
  /**
   * 'error': the response carries errorCode (for the whole request, or with a topic filter on
   * Produce/Fetch only for the partitions the filter names; requests that get no response, Produce
   * with acks=0, still get none); 'close': the connection is closed and the request gets no
   * response; 'delay': wait delayMs (+ up to jitterMs), then carry on normally; 'pause': appends to
   * the topic (partition) a Produce request brings are held, in arrival order, until the rule is
   * removed or expires, then made as if nothing happened (clients see latency, not errors).
   */
  action: FaultAction;
  /**
   * 'before' (default): the handler never runs ('delay': waits before handling). 'after': the handler
   * runs to completion (its side effects, e.g. an append, happen), then the fault applies to the
   * response ('delay': waits before answering). Not for 'pause'.
   */
  when?: FaultWhen;
  /** for 'error' (required there, only there): a Kafka error code, non-zero. JSON may give its name. */
  errorCode?: number;
  /** for 'delay' (required there, only there): milliseconds, >= 0 */
  delayMs?: number;
  /** for 'delay' (optional): a uniform extra 0..jitterMs ms per request, from the injector's random */
  jitterMs?: number;
  /** 0..1, default 1: the chance that a matching request gets the fault. Not for 'pause'. */
  probability?: number;
  /** apply at most this many times (an integer >= 1), then the rule removes itself; default unlimited. Not for 'pause'. */
  times?: number;
  /** the rule removes itself this many ms after it was added (a 'pause' releases what it held) */
  ttlMs?: number;
  /** the rule removes itself at this time (epoch ms; JSON may give an ISO-8601 string); not with ttlMs */
  expiresAt?: number;
  /** only requests that name this topic (see TOPIC_APIS in fault-scope.ts for the APIs that do); required for 'pause' */
  topic?: string;
  /** with topic: only requests that name this partition of it */
  partition?: number;
  /** only requests whose header carries this client id */
  clientId?: string;
  /** embedded use only: a filter on the decoded request, after the declarative ones; false skips the rule without a draw */
  match?: (req: unknown, info: FaultRequestInfo) => boolean;
}

/** A refused fault rule: `field` names what is wrong (null when the rule itself is), `index` its place in a list. */
export class FaultRuleError extends Error {
  readonly code = 'GREGOR_ERR_FAULT_RULE';
  constructor(
    readonly field: string | null,
    readonly reason: string,
    readonly index: number | null = null,
    shown = '',
  ) {
    super(`GREGOR_ERR_FAULT_RULE: ${index === null ? '' : `rule ${index}: `}${reason}${shown === '' ? '' : ` in fault rule ${shown}`}`);
    this.name = 'FaultRuleError';
  }
}

export const FAULT_RULE_FIELDS: readonly string[] = [
  'apiKey',
  'action',
  'when',
  'errorCode',
  'delayMs',
  'jitterMs',
  'probability',
  'times',
  'ttlMs',
  'expiresAt',
  'topic',
  'partition',
  'clientId',
  'match',
];
const FIELD_SET: ReadonlySet<string> = new Set(FAULT_RULE_FIELDS);
const ACTIONS: ReadonlySet<string> = new Set(['error', 'close', 'delay', 'pause']);
/** setTimeout's limit: longer waits fire at once */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const API_BY_NAME: ReadonlyMap<string, number> = new Map([...API_KEYS.values()].map((a) => [a.name.toLowerCase(), a.apiKey]));
const ERROR_BY_NAME: ReadonlyMap<string, number> = new Map([...ERRORS.values()].map((e) => [e.name, e.code]));

/** The API's name ("Produce"), or `API <n>`. */
export function apiName(apiKey: number): string {
  return API_KEYS.get(apiKey)?.name ?? `API ${apiKey}`;
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function show(rule: unknown): string {
  try {
    // undefined for undefined and functions, whatever lib.d.ts says
    const text = JSON.stringify(rule, (_k, v: unknown) =>
      typeof v === 'function' ? '[function]' : typeof v === 'bigint' ? `${v}n` : v,
    ) as string | undefined;
    return text ?? String(rule);
  } catch {
    return String(rule);
  }
}

export interface NormalizeOptions {
  /** the rule came as JSON (HTTP, GREGOR_FAULTS): `match` is refused */
  json: boolean;
  /** the rule's place in a posted list, for the message */
  index?: number;
  /** epoch ms, to refuse an expiresAt in the past (default Date.now()) */
  now?: number;
}

/** Validates one rule and returns its normalized copy (numbers for names, expiresAt as epoch ms). */
export function normalizeRule(raw: unknown, opts: NormalizeOptions): FaultRule {
  const index = opts.index ?? null;
  const bad = (field: string | null, reason: string): never => {
    throw new FaultRuleError(field, reason, index, show(raw));
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad(null, 'a rule must be a JSON object');
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r)) {
    if (!FIELD_SET.has(k))
      bad(k, `unknown field "${k}" (fields: ${FAULT_RULE_FIELDS.filter((f) => !opts.json || f !== 'match').join(', ')})`);
  }
  if (opts.json && r['match'] !== undefined)
    bad('match', 'match is a function filter for embedded use only; use topic, partition or clientId');

  const action = r['action'];
  if (typeof action !== 'string' || !ACTIONS.has(action))
    return bad('action', `action must be error, close, delay or pause, got ${show(action)}`);
  const act = action as FaultAction;
  const pause = act === 'pause';

  let apiKey: number;
  const a = r['apiKey'];
  if (a === undefined && pause) apiKey = ApiKey.Produce;
  else if (isInt(a) && API_KEYS.has(a)) apiKey = a;
  else if (typeof a === 'string' && API_BY_NAME.has(a.toLowerCase())) apiKey = API_BY_NAME.get(a.toLowerCase())!;
  else
    return bad(
      'apiKey',
      `apiKey must be an API key number or name (e.g. 0 or "Produce"), got ${a === undefined ? 'none' : `unknown apiKey ${show(a)}`}`,
    );
  if (pause && apiKey !== ApiKey.Produce)
    bad('apiKey', `a pause rule holds Produce appends: apiKey must be Produce (0), got ${apiName(apiKey)}`);

  const out: FaultRule = { apiKey, action: act };

  const when = r['when'];
  if (when !== undefined) {
    if (pause) bad('when', 'when is not for pause rules (appends are held before they are made)');
    if (when !== 'before' && when !== 'after') bad('when', `when must be before or after, got ${show(when)}`);
    out.when = when as FaultWhen;
  }

  const ec = r['errorCode'];
  if (act === 'error') {
    let code: number | undefined;
    if (isInt(ec) && ec !== 0 && ec >= -32768 && ec <= 32767) code = ec;
    else if (typeof ec === 'string' && ERROR_BY_NAME.has(ec) && ec !== 'NONE') code = ERROR_BY_NAME.get(ec);
    if (code === undefined)
      return bad(
        'errorCode',
        `an error rule needs errorCode: a non-zero int16 or an error name such as "NOT_LEADER_OR_FOLLOWER", got ${ec === undefined ? 'none' : show(ec)}`,
      );
    out.errorCode = code;
  } else if (ec !== undefined) bad('errorCode', `errorCode is only for action 'error'`);

  const delayMs = r['delayMs'];
  const jitterMs = r['jitterMs'];
  if (act === 'delay') {
    if (!isFiniteNumber(delayMs) || delayMs < 0)
      return bad('delayMs', `a delay rule needs delayMs >= 0, got ${delayMs === undefined ? 'none' : show(delayMs)}`);
    if (jitterMs !== undefined && (!isFiniteNumber(jitterMs) || jitterMs < 0))
      bad('jitterMs', `jitterMs must be a number >= 0, got ${show(jitterMs)}`);
    const j = (jitterMs as number | undefined) ?? 0;
    if (delayMs + j > MAX_TIMER_MS) bad('delayMs', `delayMs + jitterMs must be at most ${MAX_TIMER_MS}`);
    out.delayMs = delayMs;
    if (jitterMs !== undefined) out.jitterMs = j;
  } else {
    if (delayMs !== undefined) bad('delayMs', `delayMs is only for action 'delay'`);
    if (jitterMs !== undefined) bad('jitterMs', `jitterMs is only for action 'delay'`);
  }

  const p = r['probability'];
  if (p !== undefined) {
    if (pause) bad('probability', 'probability is not for pause rules (holding some appends and not others would reorder them)');
    if (typeof p !== 'number' || !(p >= 0 && p <= 1)) bad('probability', `probability must be within 0..1, got ${show(p)}`);
    out.probability = p as number;
  }
  const times = r['times'];
  if (times !== undefined) {
    if (pause) bad('times', 'times is not for pause rules: a pause lasts until the rule is removed or expires (ttlMs, expiresAt)');
    if (!isInt(times) || times < 1) bad('times', `times must be an integer >= 1, got ${show(times)}`);
    out.times = times as number;
  }

  const ttlMs = r['ttlMs'];
  const expiresAt = r['expiresAt'];
  if (ttlMs !== undefined && expiresAt !== undefined) bad('ttlMs', 'give ttlMs or expiresAt, not both');
  if (ttlMs !== undefined) {
    if (!isFiniteNumber(ttlMs) || ttlMs <= 0) bad('ttlMs', `ttlMs must be a number of ms > 0, got ${show(ttlMs)}`);
    out.ttlMs = ttlMs as number;
  }
  if (expiresAt !== undefined) {
    let at: number;
    if (isFiniteNumber(expiresAt)) at = expiresAt;
    else if (typeof expiresAt === 'string' && opts.json && !Number.isNaN(Date.parse(expiresAt))) at = Date.parse(expiresAt);
    else return bad('expiresAt', `expiresAt must be epoch milliseconds${opts.json ? ' or an ISO-8601 time' : ''}, got ${show(expiresAt)}`);
    if (at <= (opts.now ?? Date.now())) bad('expiresAt', `expiresAt ${new Date(at).toISOString()} is not in the future`);
    out.expiresAt = at;
  }

  const topic = r['topic'];
  const partition = r['partition'];
  const clientId = r['clientId'];
  if (topic !== undefined) {
    if (typeof topic !== 'string' || topic === '') bad('topic', `topic must be a non-empty string, got ${show(topic)}`);
    if (!TOPIC_APIS.has(apiKey))
      bad(
        'topic',
        `${apiName(apiKey)} requests name no topics: a topic filter would never match (APIs that do: ${[...TOPIC_APIS].map(apiName).join(', ')})`,
      );
    out.topic = topic as string;
  } else if (pause) bad('topic', 'a pause rule needs the topic whose appends it holds');
  if (partition !== undefined) {
    if (topic === undefined) bad('partition', 'partition needs topic');
    if (!isInt(partition) || partition < 0) bad('partition', `partition must be an integer >= 0, got ${show(partition)}`);
    out.partition = partition as number;
  }
  if (clientId !== undefined) {
    if (typeof clientId !== 'string') bad('clientId', `clientId must be a string, got ${show(clientId)}`);
    out.clientId = clientId as string;
  }

  const match = r['match'];
  if (match !== undefined) {
    if (typeof match !== 'function') bad('match', 'match must be a function');
    out.match = match as NonNullable<FaultRule['match']>;
  }
  return out;
}

/**
 * The rules of a JSON document (POST /v1/faults body, GREGOR_FAULTS): one rule object or an array
 * of them. All are validated before any is used; the first bad one throws (with its index in an array).
 */
export function parseFaultRules(input: unknown, now = Date.now()): FaultRule[] {
  if (Array.isArray(input)) return input.map((r, index) => normalizeRule(r, { json: true, index, now }));
  if (typeof input === 'object' && input !== null) return [normalizeRule(input, { json: true, now })];
  throw new FaultRuleError(null, `expected a rule object or an array of rules, got ${show(input)}`);
}

/** parseFaultRules of JSON text; a syntax error is a FaultRuleError too. */
export function parseFaultRulesJson(text: string, now = Date.now()): FaultRule[] {
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (e) {
    throw new FaultRuleError(null, `not JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  return parseFaultRules(input, now);
}
