/** DescribeConfigs and config changes (IncrementalAlterConfigs, or AlterConfigs for brokers before 2.3). */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { AlterConfigsResponse } from '../../protocol/generated/alter-configs.js';
import type { DescribeConfigsRequest, DescribeConfigsResponse } from '../../protocol/generated/describe-configs.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/incremental-alter-configs.js';
import type { KafkaClient } from './client.js';
import type { BrokerConnection } from './connection.js';
import { ClientError, ClientErrorCode } from './errors.js';

export const ResourceType = { TOPIC: 2, GROUP: 3, BROKER: 4 } as const;
export type ResourceType = (typeof ResourceType)[keyof typeof ResourceType];

/** DescribeConfigs config sources (v1+), by Kafka's names. */
export const CONFIG_SOURCES: readonly string[] = [
  'UNKNOWN',
  'DYNAMIC_TOPIC_CONFIG',
  'DYNAMIC_BROKER_CONFIG',
  'DYNAMIC_DEFAULT_BROKER_CONFIG',
  'STATIC_BROKER_CONFIG',
  'DEFAULT_CONFIG',
  'DYNAMIC_BROKER_LOGGER_CONFIG',
  'CLIENT_METRICS_CONFIG',
  'GROUP_CONFIG',
];

export interface ConfigEntry {
  name: string;
  value: string | null;
  /** Kafka's source name (DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG, ...) */
  source: string;
  readOnly: boolean;
  sensitive: boolean;
}

export interface ResourceConfigs {
  resourceType: number;
  name: string;
  configs: ConfigEntry[];
}

export const ConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;
export type ConfigOp = (typeof ConfigOp)[keyof typeof ConfigOp];

export interface ConfigChange {
  name: string;
  op: ConfigOp;
  /** null for DELETE */
  value: string | null;
}

/** Topic configs go to any broker, a broker's own configs to that broker. */
async function connectionFor(client: KafkaClient, resourceType: number, name: string): Promise<BrokerConnection> {
  if (resourceType === ResourceType.BROKER && /^\d+$/.test(name)) return client.node(Number(name));
  return client.any();
}

export async function describeConfigs(
  client: KafkaClient,
  resourceType: number,
  name: string,
  keys: string[] | null = null,
): Promise<ResourceConfigs> {
  const c = await connectionFor(client, resourceType, name);
  const res = await c.request<DescribeConfigsResponse>(ApiKey.DescribeConfigs, (v) => {
    const body: DescribeConfigsRequest = { resources: [{ resourceType, resourceName: name, configurationKeys: keys }] };
    if (v >= 1) body.includeSynonyms = false;
    return body;
  });
  const r = res.body.results[0];
  if (r === undefined)
    throw new ClientError(ClientErrorCode.PROTOCOL, `DescribeConfigs on ${c.label} answered nothing for '${name}'`, {
      broker: c.label,
      api: 'DescribeConfigs',
    });
  c.check(r.errorCode, ApiKey.DescribeConfigs, `${resourceType === ResourceType.TOPIC ? 'topic' : 'resource'} '${name}'`, r.errorMessage);
  return {
    resourceType,
    name,
    configs: r.configs
      .map((e) => ({
        name: e.name,
        value: e.value,
        source:
          res.version >= 1
            ? (CONFIG_SOURCES[e.configSource ?? 0] ?? `SOURCE_${e.configSource}`)
            : e.isDefault === true
              ? 'DEFAULT_CONFIG'
              : 'DYNAMIC_TOPIC_CONFIG',
        readOnly: e.readOnly,
        sensitive: e.isSensitive,
      }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/** Applies a list operation to a comma-separated value (AlterConfigs fallback). */
function applyListOp(current: string | null, op: ConfigOp, value: string): string {
  const items = (current ?? '').split(',').filter((s) => s !== '');
  const given = value.split(',').filter((s) => s !== '');
  if (op === ConfigOp.APPEND) return [...items, ...given.filter((g) => !items.includes(g))].join(',');
  return items.filter((i) => !given.includes(i)).join(',');
}

/**
 * Changes configs of one resource. IncrementalAlterConfigs where the broker has it; otherwise the
 * current dynamic configs are read and the whole set is written back with AlterConfigs (what
 * Kafka's tools did before KIP-339). Returns which API was used.
 */
export async function alterConfigs(
  client: KafkaClient,
  resourceType: number,
  name: string,
  changes: readonly ConfigChange[],
  opts: { validateOnly?: boolean } = {},
): Promise<'IncrementalAlterConfigs' | 'AlterConfigs'> {
  const c = await connectionFor(client, resourceType, name);
  const subject = `${resourceType === ResourceType.TOPIC ? 'topic' : 'resource'} '${name}'`;
  if (c.supports(ApiKey.IncrementalAlterConfigs)) {
    const res = await c.request<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, () => ({
      resources: [
        { resourceType, resourceName: name, configs: changes.map((ch) => ({ name: ch.name, configOperation: ch.op, value: ch.value })) },
      ],
      validateOnly: opts.validateOnly ?? false,
    }));
    const r = res.body.responses[0];
    c.check(r?.errorCode, ApiKey.IncrementalAlterConfigs, subject, r?.errorMessage);
    return 'IncrementalAlterConfigs';
  }
  const current = await describeConfigs(client, resourceType, name);
  const dynamic = new Map<string, string | null>();
  const dynamicSource = resourceType === ResourceType.TOPIC ? 'DYNAMIC_TOPIC_CONFIG' : 'DYNAMIC_BROKER_CONFIG';
  for (const e of current.configs) if (e.source === dynamicSource && !e.sensitive) dynamic.set(e.name, e.value);
  for (const ch of changes) {
    if (ch.op === ConfigOp.SET) dynamic.set(ch.name, ch.value);
    else if (ch.op === ConfigOp.DELETE) dynamic.delete(ch.name);
    else {
      const base = dynamic.get(ch.name) ?? current.configs.find((e) => e.name === ch.name)?.value ?? null;
      dynamic.set(ch.name, applyListOp(base, ch.op, ch.value ?? ''));
    }
  }
  const res = await c.request<AlterConfigsResponse>(ApiKey.AlterConfigs, () => ({
    resources: [{ resourceType, resourceName: name, configs: [...dynamic].map(([n, value]) => ({ name: n, value })) }],
    validateOnly: opts.validateOnly ?? false,
  }));
  const r = res.body.responses[0];
  c.check(r?.errorCode, ApiKey.AlterConfigs, subject, r?.errorMessage);
  return 'AlterConfigs';
}
