/**
 * Client quota entities and their configs, as Kafka's QuotaConfigs and ClientQuotaControlManager
 * define them: an entity is a set of (type, name) pairs over `user`, `client-id` and `ip`, a null name
 * being the type's default entity (`<default>`). A client's quota is the most specific entity that
 * sets the key, in Kafka's order (ClientQuotaManager's DefaultQuotaCallback).
 */
import { isIP } from 'node:net';
import { ErrorCode } from '../../protocol/generated/error-codes.js';

export const QuotaEntityType = { USER: 'user', CLIENT_ID: 'client-id', IP: 'ip' } as const;
export type QuotaEntityType = (typeof QuotaEntityType)[keyof typeof QuotaEntityType];

export const QuotaKey = {
  PRODUCER_BYTE_RATE: 'producer_byte_rate',
  CONSUMER_BYTE_RATE: 'consumer_byte_rate',
  REQUEST_PERCENTAGE: 'request_percentage',
  CONTROLLER_MUTATION_RATE: 'controller_mutation_rate',
  CONNECTION_CREATION_RATE: 'connection_creation_rate',
} as const;
export type QuotaKey = (typeof QuotaKey)[keyof typeof QuotaKey];

/** The keys of user / client-id entities and their Kafka types (long and int values must be whole). */
const CLIENT_KEYS: Readonly<Record<string, 'long' | 'double'>> = {
  producer_byte_rate: 'long',
  consumer_byte_rate: 'long',
  request_percentage: 'double',
  controller_mutation_rate: 'double',
};
const IP_KEYS: Readonly<Record<string, 'int'>> = { connection_creation_rate: 'int' };

/** An entity: type → name (null: the default entity of that type). */
export type QuotaEntity = Readonly<Partial<Record<QuotaEntityType, string | null>>>;

/** The stored form: entity key (entityKey) → quota key → value. */
export type ClientQuotas = ReadonlyMap<string, Readonly<Record<string, number>>>;

const ORDER: readonly QuotaEntityType[] = [QuotaEntityType.USER, QuotaEntityType.CLIENT_ID, QuotaEntityType.IP];

/** A canonical string for an entity (types in a fixed order), the key quotas are stored under. */
export function entityKey(e: QuotaEntity): string {
  return JSON.stringify(ORDER.filter((t) => e[t] !== undefined).map((t) => [t, e[t]]));
}

/** The entity a key stands for (entityKey's inverse); undefined when it is not one. */
export function parseEntityKey(key: string): QuotaEntity | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(key);
  } catch {
    return undefined;
  }
  if (!Array.isArray(raw)) return undefined;
  const out: Partial<Record<QuotaEntityType, string | null>> = {};
  for (const pair of raw) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined;
    const [t, n] = pair as unknown[];
    if (!ORDER.includes(t as QuotaEntityType) || (n !== null && typeof n !== 'string')) return undefined;
    out[t as QuotaEntityType] = n;
  }
  return out;
}

/** Kafka's precedence for a (user, client id): the entities to look at, most specific first. */
export function clientEntitiesInOrder(user: string, clientId: string): QuotaEntity[] {
  return [
    { user, 'client-id': clientId },
    { user, 'client-id': null },
    { user },
    { user: null, 'client-id': clientId },
    { user: null, 'client-id': null },
    { user: null },
    { 'client-id': clientId },
    { 'client-id': null },
  ];
}

/** A refused entity, filter or op: Kafka's error (INVALID_REQUEST unless said) with its message. */
export class QuotaValidationError extends Error {
  constructor(
    message: string,
    readonly errorCode: number = ErrorCode.INVALID_REQUEST,
  ) {
    super(message);
  }
}

/** Checks an entity as Kafka's controller does (ClientQuotaControlManager.validateEntity). */
export function validateEntity(pairs: readonly { entityType: string; entityName: string | null }[]): QuotaEntity {
  if (pairs.length === 0) throw new QuotaValidationError('Invalid empty client quota entity');
  const out: Partial<Record<QuotaEntityType, string | null>> = {};
  for (const p of pairs) {
    if (!ORDER.includes(p.entityType as QuotaEntityType))
      throw new QuotaValidationError(`Unhandled client quota entity type: ${p.entityType}`, ErrorCode.UNSUPPORTED_VERSION);
    const t = p.entityType as QuotaEntityType;
    if (t in out) throw new QuotaValidationError(`Duplicate ${t} entity type in client quota entity`);
    if (p.entityName !== null && p.entityName === '') throw new QuotaValidationError(`Empty ${t} name in client quota entity`);
    out[t] = p.entityName;
  }
  if (out.ip !== undefined) {
    if (Object.keys(out).length > 1)
      throw new QuotaValidationError('Invalid quota entity combination, IP entity should not be combined with User or ClientId');
    if (out.ip !== null && isIP(out.ip) === 0) throw new QuotaValidationError(`${out.ip} is not a valid IP or resolvable host.`);
  }
  return out;
}

/** Checks one key and value for an entity (ClientQuotaControlManager.validateQuotaKeyValue). */
export function validateQuotaValue(entity: QuotaEntity, key: string, value: number): void {
  const keys: Readonly<Record<string, string>> = entity.ip !== undefined ? IP_KEYS : CLIENT_KEYS;
  const type = keys[key];
  if (type === undefined) throw new QuotaValidationError(`Invalid configuration key ${key}`);
  if (type !== 'double' && Math.abs(Math.trunc(value + 1e-6) - value) > 1e-6)
    throw new QuotaValidationError(`Configuration ${key} must be a Long value`);
}

/** DescribeClientQuotas' match types. */
export const QuotaMatchType = { EXACT: 0, DEFAULT: 1, SPECIFIED: 2 } as const;

export interface QuotaFilter {
  /** type → name (null: the default entity) the entity must have */
  exact: Map<string, string | null>;
  /** types the entity must have, with any name */
  any: Set<string>;
  strict: boolean;
}

/** Reads a DescribeClientQuotas filter as Kafka's ClientQuotasImage.describe does (its errors and messages). */
export function parseQuotaFilter(
  components: readonly { entityType: string; matchType: number; match: string | null }[],
  strict: boolean,
): QuotaFilter {
  const f: QuotaFilter = { exact: new Map(), any: new Set(), strict };
  for (const c of components) {
    const t = c.entityType;
    if (t === '') throw new QuotaValidationError('Invalid empty entity type.');
    if (f.exact.has(t) || f.any.has(t)) throw new QuotaValidationError(`Entity type ${t} cannot appear more than once in the filter.`);
    if (!ORDER.includes(t as QuotaEntityType))
      throw new QuotaValidationError(`Unsupported entity type ${t}`, ErrorCode.UNSUPPORTED_VERSION);
    if (c.matchType === QuotaMatchType.EXACT) {
      if (c.match === null) throw new QuotaValidationError('Request specified MATCH_TYPE_EXACT, but set match string to null.');
      f.exact.set(t, c.match);
    } else if (c.matchType === QuotaMatchType.DEFAULT) {
      if (c.match !== null) throw new QuotaValidationError('Request specified MATCH_TYPE_DEFAULT, but also specified a match string.');
      f.exact.set(t, null);
    } else if (c.matchType === QuotaMatchType.SPECIFIED) {
      if (c.match !== null) throw new QuotaValidationError('Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.');
      f.any.add(t);
    } else throw new QuotaValidationError(`Unknown match type ${c.matchType}`, ErrorCode.UNSUPPORTED_VERSION);
  }
  const has = (t: string): boolean => f.exact.has(t) || f.any.has(t);
  if (has(QuotaEntityType.IP) && (has(QuotaEntityType.USER) || has(QuotaEntityType.CLIENT_ID)))
    throw new QuotaValidationError(
      'Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.',
    );
  return f;
}

/** Whether an entity passes a filter. */
export function matchesFilter(e: QuotaEntity, f: QuotaFilter): boolean {
  const types = Object.keys(e) as QuotaEntityType[];
  if (f.strict && types.length !== f.exact.size + f.any.size) return false;
  for (const [t, name] of f.exact) if (!(t in e) || e[t as QuotaEntityType] !== name) return false;
  for (const t of f.any) if (!(t in e)) return false;
  return true;
}

/** An entity as the protocol's (type, name) pairs. */
export function entityPairs(e: QuotaEntity): { entityType: string; entityName: string | null }[] {
  return ORDER.filter((t) => e[t] !== undefined).map((t) => ({ entityType: t, entityName: e[t] ?? null }));
}
