/** Validators of config values (Kafka's validators and messages where it has them), shared by the broker and topic key tables. */
import type { ConfigValue } from '../config.js';
import { parseConnectionOverrides } from '../network/connection-quotas.js';

export const atLeast = (min: number) => (v: ConfigValue) => (typeof v === 'number' && v < min ? `must be >= ${min}` : undefined);
export const oneOf =
  (...xs: string[]) =>
  (v: ConfigValue) =>
    typeof v === 'string' && !xs.includes(v) ? `must be one of ${xs.join(', ')}` : undefined;
/** Kafka's CaseInsensitiveValidString. */
export const oneOfIgnoringCase =
  (...xs: string[]) =>
  (v: ConfigValue) =>
    typeof v === 'string' && !xs.includes(v.toLowerCase()) ? `must be one of ${xs.join(', ')} (any case)` : undefined;
/** The replica.selector.class values gregor knows (Kafka's class name and a short alias). */
export const RACK_AWARE_REPLICA_SELECTORS = ['org.apache.kafka.common.replica.RackAwareReplicaSelector', 'rack-aware'];
export const replicaSelectorError = (v: ConfigValue) =>
  typeof v === 'string' && v !== '' && !RACK_AWARE_REPLICA_SELECTORS.includes(v)
    ? `unknown replica selector ${v}: gregor has ${RACK_AWARE_REPLICA_SELECTORS.join(' (alias: ')})`
    : undefined;
/** Kafka's ValidList.in("compact", "delete"), with Kafka's message. */
export const cleanupPolicyError = (key: string) => (v: ConfigValue) => {
  const bad = Array.isArray(v) ? v.find((x) => x !== 'compact' && x !== 'delete') : undefined;
  return bad === undefined ? undefined : `Invalid value ${bad} for configuration ${key}: String must be one of: compact, delete`;
};
export const COMPRESSION = ['producer', 'uncompressed', 'gzip', 'snappy', 'lz4', 'zstd'];
export const TIMESTAMP_TYPES = ['CreateTime', 'LogAppendTime'];
export const LONG_MAX = 9223372036854775807n;
/** max.connections.per.ip.overrides: host:limit pairs. */
export const connectionOverridesError = (v: ConfigValue) => {
  if (typeof v !== 'string') return undefined;
  try {
    parseConnectionOverrides(v);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
};
/** -1 (gregor's default) or a positive size. */
export const minusOneOrPositive = (v: ConfigValue) =>
  (typeof v === 'number' || typeof v === 'bigint') && v !== -1 && v < 1 ? 'must be -1 or >= 1' : undefined;
