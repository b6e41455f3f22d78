/**
 * Topics: list (with size, message count, throughput and a name search), create, delete, the topic
 * page (partitions with offsets, leader, replicas, ISR and size; every topic config with its value,
 * source and default) and config changes. Creating, deleting, adding partitions and altering configs
 * go through Kafka's own handlers (CreateTopics, DeleteTopics, CreatePartitions,
 * IncrementalAlterConfigs), so their checks and error codes are Kafka's.
 */
import { ConfigSource, configDocumentation, topicConfigEntries, topicConfigEntry } from '../handlers/config-resources.js';
import { createPartitionsHandler } from '../handlers/create-partitions.js';
import { createTopicsHandler } from '../handlers/create-topics.js';
import { deleteTopicsHandler } from '../handlers/delete-topics.js';
import { incrementalAlterConfigsHandler } from '../handlers/incremental-alter-configs.js';
import type { TopicRecord } from '../metadata/store.js';
import { KEYED_HISTORY_SECONDS } from '../observability/broker-metrics.js';
import { badRequest, bodyObject, int, notFound, queryInt, sendJson, str } from './http.js';
import { inprocConnection, kafkaError } from './inproc.js';
import { TopicRates } from './topic-rates.js';
import type { ApiRoute, ConsoleDeps } from './types.js';

const SOURCE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(ConfigSource).map(([k, v]) => [v, k]));
const TOPIC_RESOURCE = 2;
const OP = { SET: 0, DELETE: 1 } as const;

/** partitions a topic page gets unless it asks for all */
export const FIRST_PARTITIONS = 100;

export function topicRoutes(deps: ConsoleDeps, listenerName: string): ApiRoute[] {
  const s = deps.services;
  const rates = new TopicRates(deps.broker.metrics.topics, deps.signal);
  const kafka = inprocConnection(s, listenerName);

  function topicOr404(name: string): TopicRecord {
    const t = s.metadata.topic(name);
    if (t === undefined) throw notFound(`no topic '${name}'`);
    return t;
  }

  function partitions(t: TopicRecord, count = t.partitions) {
    const logs = s.topics.logsOf(t.name) ?? [];
    return Array.from({ length: Math.min(count, t.partitions) }, (_v, p) => {
      const st = s.metadata.partitionState(t.name, p);
      const log = logs[p];
      const start = log?.logStartOffset ?? null;
      const hw = log?.highWatermark ?? null;
      return {
        partition: p,
        leader: st?.leader ?? -1,
        leaderEpoch: st?.leaderEpoch ?? -1,
        replicas: st?.replicas ?? [],
        isr: st?.isr ?? [],
        logStartOffset: start,
        highWatermark: hw,
        messages: start !== null && hw !== null ? Number(hw - start) : null,
        sizeBytes: log?.size ?? null,
        offline: log?.isOffline ?? false,
      };
    });
  }

  return [
    {
      method: 'GET',
      path: /^\/topics$/,
      handle(_req, res, { url }) {
        const q = (url.searchParams.get('q') ?? '').toLowerCase();
        const internal = url.searchParams.get('internal') === '1';
        const topics = s.metadata
          .topics()
          .filter((t) => (internal || !t.internal) && t.name.toLowerCase().includes(q))
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((t) => {
            let sizeBytes = 0;
            let messages = 0;
            let underReplicated = 0;
            const logs = s.topics.logsOf(t.name) ?? [];
            for (let p = 0; p < t.partitions; p++) {
              const log = logs[p];
              if (log !== undefined) {
                sizeBytes += log.size;
                messages += Number(log.highWatermark - log.logStartOffset);
              }
              const st = s.metadata.partitionState(t.name, p);
              if (st !== undefined && st.isr.length < st.replicas.length) underReplicated++;
            }
            return {
              name: t.name,
              internal: t.internal,
              partitions: t.partitions,
              replicationFactor: t.replicationFactor,
              sizeBytes,
              messages,
              underReplicated,
              ...rates.rate(t.name),
            };
          });
        sendJson(res, 200, { topics });
      },
    },
    {
      method: 'POST',
      path: /^\/topics$/,
      async handle(_req, res, { body }) {
        const o = bodyObject(body);
        const name = str(o, 'name');
        const configs = o['configs'] ?? {};
        if (typeof configs !== 'object' || Array.isArray(configs)) throw badRequest('"configs" must be an object of strings');
        const r = await kafka.call(createTopicsHandler, 7, {
          topics: [
            {
              name,
              numPartitions: int(o, 'partitions', -1),
              replicationFactor: int(o, 'replicationFactor', -1),
              assignments: [],
              configs: Object.entries(configs as Record<string, unknown>).map(([k, v]) => ({ name: k, value: String(v) })),
            },
          ],
          timeoutMs: 30_000,
          validateOnly: o['validateOnly'] === true,
        });
        const t = r.topics[0];
        if (t === undefined) throw new Error('CreateTopics answered no topic');
        if (t.errorCode !== 0) throw kafkaError(t.errorCode, t.errorMessage, `cannot create topic '${name}'`);
        sendJson(res, 201, { name, topicId: t.topicId, partitions: t.numPartitions, replicationFactor: t.replicationFactor });
      },
    },
    {
      method: 'GET',
      path: /^\/topics\/([^/]+)$/,
      handle(_req, res, { url, params: [name = ''] }) {
        const t = topicOr404(name);
        // the first FIRST_PARTITIONS unless ?partitions=all (or a count): a page of 10,000 partitions is 1.5 MB
        const asked = url.searchParams.get('partitions');
        const shown = asked === 'all' ? t.partitions : queryInt(url, 'partitions', FIRST_PARTITIONS, 0, t.partitions);
        const configs = topicConfigEntries(s.config, t, null).map((e) => ({
          name: e.name,
          value: e.value,
          source: SOURCE_NAMES[e.source] ?? 'UNKNOWN',
          default: topicConfigEntry(s.config, {}, e.name).value,
          overridden: e.source === ConfigSource.DYNAMIC_TOPIC_CONFIG,
          readOnly: e.readOnly,
          sensitive: e.isSensitive,
          documentation: configDocumentation(e.name, true),
        }));
        sendJson(res, 200, {
          name: t.name,
          topicId: t.topicId,
          internal: t.internal,
          replicationFactor: t.replicationFactor,
          partitionCount: t.partitions,
          partitions: partitions(t, shown),
          configs,
          ...rates.rate(t.name),
        });
      },
    },
    {
      method: 'GET',
      path: /^\/topics\/([^/]+)\/history$/,
      handle(_req, res, { url, params: [name = ''] }) {
        topicOr404(name);
        sendJson(res, 200, deps.broker.metrics.topicHistory.snapshot(name, queryInt(url, 'seconds', 900, 1, KEYED_HISTORY_SECONDS)));
      },
    },
    {
      method: 'DELETE',
      path: /^\/topics\/([^/]+)$/,
      async handle(_req, res, { params: [name = ''] }) {
        topicOr404(name);
        const r = await kafka.call(deleteTopicsHandler, 6, { topics: [{ name }], timeoutMs: 30_000 });
        const t = r.responses[0];
        if (t !== undefined && t.errorCode !== 0) throw kafkaError(t.errorCode, t.errorMessage, `cannot delete topic '${name}'`);
        sendJson(res, 200, { deleted: name });
      },
    },
    {
      method: 'PUT',
      path: /^\/topics\/([^/]+)\/configs$/,
      async handle(_req, res, { params: [name = ''], body }) {
        topicOr404(name);
        const o = bodyObject(body);
        const set = o['set'] ?? {};
        const del = o['delete'] ?? [];
        if (typeof set !== 'object' || Array.isArray(set)) throw badRequest('"set" must be an object of config values');
        if (!Array.isArray(del) || del.some((k) => typeof k !== 'string')) throw badRequest('"delete" must be an array of config names');
        const configs = [
          ...Object.entries(set as Record<string, unknown>).map(([k, v]) => ({ name: k, configOperation: OP.SET, value: String(v) })),
          ...(del as string[]).map((k) => ({ name: k, configOperation: OP.DELETE, value: null })),
        ];
        if (configs.length === 0) throw badRequest('nothing to change: give "set" and/or "delete"');
        const r = await kafka.call(incrementalAlterConfigsHandler, 1, {
          resources: [{ resourceType: TOPIC_RESOURCE, resourceName: name, configs }],
          validateOnly: o['validateOnly'] === true,
        });
        const out = r.responses[0];
        if (out !== undefined && out.errorCode !== 0)
          throw kafkaError(out.errorCode, out.errorMessage, `cannot alter the configs of '${name}'`);
        sendJson(res, 200, { altered: name, set: Object.keys(set), deleted: del });
      },
    },
    {
      method: 'POST',
      path: /^\/topics\/([^/]+)\/partitions$/,
      async handle(_req, res, { params: [name = ''], body }) {
        topicOr404(name);
        const count = int(bodyObject(body), 'count');
        const r = await kafka.call(createPartitionsHandler, 3, {
          topics: [{ name, count, assignments: null }],
          timeoutMs: 30_000,
          validateOnly: false,
        });
        const out = r.results[0];
        if (out !== undefined && out.errorCode !== 0)
          throw kafkaError(out.errorCode, out.errorMessage, `cannot add partitions to '${name}'`);
        sendJson(res, 200, { name, partitions: count });
      },
    },
  ];
}
