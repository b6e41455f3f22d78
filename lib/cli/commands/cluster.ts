/** cluster info | health */
import { API_KEYS } from '../../../protocol/generated/api-keys.js';
import { describeCluster } from '../../client/admin.js';
import type { KafkaClient } from '../../client/client.js';
import type { Context } from '../context.js';
import { formatError } from '../errors.js';
import { heading, idList, renderPairs, renderTable } from '../output.js';
import { emit } from './common.js';

type Flags = Record<string, unknown>;

export async function clusterInfo(ctx: Context, f: Flags): Promise<number> {
  const client = ctx.client();
  const info = await describeCluster(client);
  const apis =
    f['apiVersions'] === true
      ? await Promise.all(
          info.brokers.map(async (b) => {
            const c = await client.node(b.nodeId);
            return {
              nodeId: b.nodeId,
              apis: [...c.apis]
                .sort(([a], [b2]) => a - b2)
                .map(([key, r]) => ({
                  apiKey: key,
                  name: API_KEYS.get(key)?.name ?? `api ${key}`,
                  minVersion: r.min,
                  maxVersion: r.max,
                  usedVersion: c.versionOf(key) ?? null,
                })),
            };
          }),
        )
      : null;
  emit(
    ctx,
    { clusterId: info.clusterId, controllerId: info.controllerId, brokers: info.brokers, ...(apis !== null ? { apiVersions: apis } : {}) },
    () => {
      const parts = [
        heading('CLUSTER'),
        renderPairs([
          ['ID', info.clusterId],
          ['CONTROLLER', info.controllerId < 0 ? null : info.controllerId],
        ]),
        '',
        heading('BROKERS'),
        renderTable(
          ['ID', 'HOST', 'PORT', 'RACK'],
          info.brokers.map((b) => [`${b.nodeId}${b.nodeId === info.controllerId ? '*' : ''}`, b.host, b.port, b.rack]),
        ),
      ];
      for (const a of apis ?? []) {
        parts.push(
          '',
          heading(`API VERSIONS OF BROKER ${a.nodeId}`),
          renderTable(
            ['KEY', 'API', 'MIN', 'MAX', 'USED'],
            a.apis.map((x) => [x.apiKey, x.name, x.minVersion, x.maxVersion, x.usedVersion]),
          ),
        );
      }
      return parts.join('\n');
    },
  );
  return 0;
}

export interface Health {
  healthy: boolean;
  reasons: string[];
  controllerId: number | null;
  nodes: number[];
  nodesDown: number[];
  leaderlessPartitions: string[];
  underReplicatedPartitions: string[];
  /** why the cluster could not be asked at all */
  error: string | null;
}

/** One look at the cluster: every broker answers ApiVersions, every partition has a leader and a full ISR. */
export async function checkHealth(client: KafkaClient): Promise<Health> {
  let md;
  try {
    md = await client.metadata(null);
  } catch (e) {
    return {
      healthy: false,
      reasons: ['bootstrap_unreachable'],
      controllerId: null,
      nodes: [],
      nodesDown: [],
      leaderlessPartitions: [],
      underReplicatedPartitions: [],
      error: formatError(e).text.replace(/^gregor: /, ''),
    };
  }
  const nodes = md.brokers.map((b) => b.nodeId);
  const nodesDown: number[] = [];
  await Promise.all(
    nodes.map(async (id) => {
      try {
        await client.node(id);
      } catch {
        nodesDown.push(id);
      }
    }),
  );
  const leaderless: string[] = [];
  const under: string[] = [];
  for (const t of md.topics) {
    for (const p of t.partitions) {
      if (p.leader < 0) leaderless.push(`${t.name}-${p.partition}`);
      else if (p.isr.length < p.replicas.length) under.push(`${t.name}-${p.partition}`);
    }
  }
  const reasons: string[] = [];
  if (nodes.length === 0) reasons.push('no_brokers');
  if (nodesDown.length > 0) reasons.push('nodes_down');
  if (leaderless.length > 0) reasons.push('leaderless_partitions');
  if (under.length > 0) reasons.push('under_replicated_partitions');
  return {
    healthy: reasons.length === 0,
    reasons,
    controllerId: md.controllerId < 0 ? null : md.controllerId,
    nodes,
    nodesDown: nodesDown.sort((a, b) => a - b),
    leaderlessPartitions: leaderless.sort(),
    underReplicatedPartitions: under.sort(),
    error: null,
  };
}

function printHealth(ctx: Context, h: Health): void {
  emit(ctx, h, () => {
    const pairs: [string, string | number | boolean | null][] = [
      ['Healthy:', h.healthy],
      ['Unhealthy reasons:', `[${h.reasons.join(' ')}]`],
      ['Controller ID:', h.controllerId],
      ['All nodes:', idList(h.nodes)],
      ['Nodes down:', idList(h.nodesDown)],
      ['Leaderless partitions:', `[${h.leaderlessPartitions.join(' ')}]`],
      ['Under-replicated partitions:', `[${h.underReplicatedPartitions.join(' ')}]`],
    ];
    if (h.error !== null) pairs.push(['Error:', h.error]);
    return [heading('CLUSTER HEALTH OVERVIEW'), renderPairs(pairs)].join('\n');
  });
}

export async function clusterHealth(ctx: Context, f: Flags): Promise<number> {
  const wait = f['exitWhenHealthy'] === true;
  const timeout = f['timeout'] as number;
  const deadline = Date.now() + timeout;
  const requestTimeout = f['requestTimeout'] as number;
  const client = ctx.client(
    wait
      ? { connectTimeoutMs: Math.min(2000, timeout), requestTimeoutMs: Math.min(requestTimeout, Math.max(timeout, 1000)) }
      : { connectTimeoutMs: Math.min(requestTimeout, 5000) },
  );
  for (;;) {
    const h = await checkHealth(client);
    if (h.healthy || !wait || Date.now() >= deadline) {
      printHealth(ctx, h);
      if (h.healthy) return 0;
      process.stderr.write(
        `gregor: the cluster is not healthy${wait ? ` after ${timeout} ms` : ''}: ${h.reasons.join(', ')} [GREGOR_ERR_CLI_UNHEALTHY]\n`,
      );
      return 1;
    }
    await new Promise((r) => setTimeout(r, Math.min(200, Math.max(0, deadline - Date.now()))));
  }
}
