/**
 * GET /ui/api/overview: the cluster at a glance (brokers, topics, partitions, groups, health, totals);
 * GET /ui/api/history?seconds=900: the broker's per-second throughput (lib/observability/throughput-history.ts).
 */
import { readFileSync } from 'node:fs';
import { HISTORY_SECONDS } from '../observability/throughput-history.js';
import { queryInt, sendJson } from './http.js';
import type { ApiRoute, ConsoleDeps } from './types.js';

function packageVersion(): string | null {
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'gregor') return pkg.version ?? null;
    } catch {
      // not this layout
    }
  }
  return null;
}

export function overviewRoutes(deps: ConsoleDeps): ApiRoute[] {
  const { services: s, broker } = deps;
  const version = packageVersion();
  const startedAt = Date.now();
  return [
    {
      method: 'GET',
      path: /^\/overview$/,
      handle(_req, res) {
        let partitions = 0;
        let internalTopics = 0;
        let underReplicated = 0;
        let offline = 0;
        let sizeBytes = 0;
        const topics = s.metadata.topics();
        for (const t of topics) {
          partitions += t.partitions;
          if (t.internal) internalTopics++;
          const logs = s.topics.logsOf(t.name) ?? [];
          for (let p = 0; p < t.partitions; p++) {
            const st = s.metadata.partitionState(t.name, p);
            if (st !== undefined && st.isr.length < st.replicas.length) underReplicated++;
            const log = logs[p];
            if ((st !== undefined && st.leader < 0) || log?.isOffline === true) offline++;
            if (log !== undefined) sizeBytes += log.size;
          }
        }
        const groups = new Set([...s.groups.groups.keys(), ...s.groups.offsets.groups()]);
        const all = broker.metrics.topics.all;
        sendJson(res, 200, {
          clusterId: s.clusterId,
          nodeId: s.nodeId,
          controllerId: s.metadata.controllerId(),
          metadataStore: s.metadata.kind,
          version,
          uptimeMs: Date.now() - startedAt,
          bootstrap: broker.bootstrapServers,
          admin: broker.adminAddress,
          brokers: s.metadata.brokers().map((b) => ({
            nodeId: b.nodeId,
            rack: b.rack,
            endpoints: b.endpoints.map((e) => ({ listener: e.listener, host: e.host, port: e.port })),
            self: b.nodeId === s.nodeId,
          })),
          topics: topics.length,
          internalTopics,
          partitions,
          underReplicatedPartitions: underReplicated,
          offlinePartitions: offline,
          sizeBytes,
          groups: groups.size,
          health: {
            ready: broker.readiness.isReady,
            pending: broker.readiness.pending,
            healthy: broker.readiness.isReady && offline === 0,
          },
          totals: { messagesIn: all.messagesIn, bytesIn: all.bytesIn, messagesOut: all.messagesOut, bytesOut: all.bytesOut },
        });
      },
    },
    {
      method: 'GET',
      path: /^\/history$/,
      handle(_req, res, { url }) {
        const seconds = queryInt(url, 'seconds', 900, 1, HISTORY_SECONDS);
        sendJson(res, 200, broker.metrics.history.snapshot(seconds));
      },
    },
  ];
}
