/**
 * Share groups (KIP-932, queues): three members of one share group on a one-partition topic. The
 * group starts from the log start through the GROUP config share.auto.offset.reset=earliest (set with
 * IncrementalAlterConfigs, resource type 32: the suite's raw client), so the records seeded before the
 * members join are read; each must be accepted exactly once across the members. Only librdkafka
 * 2.15 has a share consumer among the clients here, and only in C; the others say so.
 */
import { rawCreateTopic, rawProduce, rawRequest } from '../lib/raw.js';
import { NotSupportedError } from '../lib/types.js';
import type { Scenario } from './context.js';

const RECORDS = 600;
const MEMBERS = 3;
const SHARE_APIS = [76 /* ShareGroupHeartbeat */, 78 /* ShareFetch */, 79 /* ShareAcknowledge */, 44 /* IncrementalAlterConfigs */];

export const shareGroupScenario: Scenario = {
  id: 'share-group',
  title: 'share group (KIP-932): three members, each record accepted once',
  description: `A one-partition topic with ${RECORDS} records; the group's share.auto.offset.reset=earliest is set with IncrementalAlterConfigs on a GROUP resource (type 32); ${MEMBERS} share consumers join and ACCEPT what they get. Every offset must be accepted exactly once across the members (how many each got is shown).`,
  ops: ['shareGroup'],
  brokerApis: SHARE_APIS,
  async run(ctx, client) {
    const shareGroup = client.ops.shareGroup;
    if (shareGroup === undefined) throw new NotSupportedError(client.unsupported.shareGroup ?? `${client.title} has no share consumer`);
    const topic = ctx.topic('share');
    const groupId = `${topic}-group`;
    await rawCreateTopic(ctx.main.bootstrap, topic, 1);
    const now = Date.now();
    await rawProduce(
      ctx.main.bootstrap,
      topic,
      Array.from({ length: RECORDS }, (_, i) => ({ partition: 0, key: null, value: `${topic}/${i}`, timestamp: now })),
    );
    const res = await rawRequest<{ responses: { errorCode: number; errorMessage: string | null }[] }>(ctx.main.bootstrap, 44, 1, {
      resources: [
        { resourceType: 32, resourceName: groupId, configs: [{ name: 'share.auto.offset.reset', configOperation: 0, value: 'earliest' }] },
      ],
      validateOnly: false,
    });
    const r = res.responses[0];
    if (r?.errorCode !== 0)
      throw new Error(`IncrementalAlterConfigs GROUP share.auto.offset.reset: error ${r?.errorCode} ${r?.errorMessage ?? ''}`);
    const obs = await shareGroup(ctx.main.bootstrap, { topic, groupId, members: MEMBERS, expect: RECORDS, timeoutMs: 30000 });
    const counts = new Map<number, number>();
    for (const offsets of obs.accepted) for (const o of offsets) counts.set(o, (counts.get(o) ?? 0) + 1);
    const missing = Array.from({ length: RECORDS }, (_, i) => i).filter((o) => !counts.has(o));
    const twice = [...counts].filter(([, n]) => n > 1).map(([o]) => o);
    if (missing.length > 0 || twice.length > 0)
      throw new Error(
        `${missing.length} offsets never accepted (first ${missing.slice(0, 5).join(',')}), ${twice.length} accepted twice (first ${twice.slice(0, 5).join(',')}); errors: ${obs.errors.slice(0, 3).join('; ')}`,
      );
    return `${RECORDS} records accepted exactly once by ${MEMBERS} members (${obs.accepted.map((a) => a.length).join('/')})`;
  },
};
