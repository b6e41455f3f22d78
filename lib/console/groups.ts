/**
 * Consumer groups: list (ListGroups), a group's state, members and their assignments (DescribeGroups
 * for classic groups, ConsumerGroupDescribe for KIP-848 ones, with member epochs and target
 * assignments), its total lag a second over the last 15 minutes (the broker's groupLag history),
 * and per partition the committed offset, the lag in messages (high watermark - committed) and in
 * time (how old the first unconsumed record is); offset resets (start, end, an offset, a timestamp)
 * previewed, then committed with OffsetCommit as Kafka's reset tool does, refused while the group
 * has members (Kafka requires an inactive group).
 *   GET  /ui/api/groups
 *   GET  /ui/api/groups/:id[?partitions=all]   (the first FIRST_PARTITIONS committed partitions unless all)
 *   POST /ui/api/groups/:id/reset {to: start|end|offset|timestamp, offset?, timestamp?, topic?, execute?}
 */
import { decodeAssignment } from '../client/consumer-protocol.js';
import { consumerGroupDescribeHandler } from '../handlers/consumer-group-describe.js';
import { describeGroupsHandler } from '../handlers/describe-groups.js';
import { listGroupsHandler } from '../handlers/list-groups.js';
import { offsetCommitHandler } from '../handlers/offset-commit.js';
import { badRequest, bodyObject, ConsoleError, ConsoleErrorCode, notFound, sendJson, str } from './http.js';
import { inprocConnection, kafkaError } from './inproc.js';
import { fetchRecords, offsetsForTime } from './records.js';
import { FIRST_PARTITIONS } from './topics.js';
import type { ApiRoute, ConsoleDeps } from './types.js';

const LAG_TIME_PARTITIONS = 500;
/** the lag history the group page opens with (the broker keeps GROUP_LAG_SECONDS) */
const LAG_HISTORY_SECONDS = 900;

export function groupRoutes(deps: ConsoleDeps, listenerName: string): ApiRoute[] {
  const s = deps.services;
  const kafka = inprocConnection(s, listenerName);

  /**
   * A group as the page shows it: a KIP-848 consumer group through ConsumerGroupDescribe (member
   * epochs, current and target assignments), any other through DescribeGroups (classic members and
   * their decoded consumer-protocol assignments); committed offsets from the coordinator's store.
   */
  async function describe(id: string) {
    const committed = [...s.groups.offsets.all(id)].map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset.offset }));
    if (s.groups.groups.get(id)?.type === 'consumer') {
      const c = (await kafka.call(consumerGroupDescribeHandler, 0, { groupIds: [id], includeAuthorizedOperations: false })).groups[0];
      if (c === undefined || c.errorCode !== 0) throw kafkaError(c?.errorCode ?? -1, c?.errorMessage, `cannot describe group '${id}'`);
      const named = (a: (typeof c.members)[number]['assignment']) =>
        a.topicPartitions.flatMap((tp) => tp.partitions.map((partition) => ({ topic: tp.topicName, partition })));
      return {
        committed,
        state: c.groupState,
        memberCount: c.members.length,
        view: {
          type: 'consumer',
          state: c.groupState,
          protocolType: 'consumer',
          protocol: c.assignorName,
          groupEpoch: c.groupEpoch,
          assignmentEpoch: c.assignmentEpoch,
          members: c.members.map((m) => ({
            memberId: m.memberId,
            groupInstanceId: m.instanceId,
            clientId: m.clientId,
            clientHost: m.clientHost,
            rackId: m.rackId,
            memberEpoch: m.memberEpoch,
            subscribedTopicNames: m.subscribedTopicNames,
            subscribedTopicRegex: m.subscribedTopicRegex,
            assignment: named(m.assignment),
            targetAssignment: named(m.targetAssignment),
          })),
        },
      };
    }
    const d = (await kafka.call(describeGroupsHandler, 5, { groups: [id], includeAuthorizedOperations: false })).groups[0];
    if (d === undefined || d.errorCode !== 0) throw kafkaError(d?.errorCode ?? -1, null, `cannot describe group '${id}'`);
    if (d.groupState === 'Dead' && committed.length === 0) throw notFound(`no group '${id}'`);
    const members = d.members.map((m) => {
      let assignment: { topic: string; partition: number }[] = [];
      try {
        assignment = d.protocolType === 'consumer' ? decodeAssignment(m.memberAssignment) : [];
      } catch {
        // not the consumer protocol's layout: shown without
      }
      return {
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId ?? null,
        clientId: m.clientId,
        clientHost: m.clientHost,
        assignment,
      };
    });
    return {
      committed,
      state: d.groupState,
      memberCount: d.members.length,
      view: { type: 'classic', state: d.groupState, protocolType: d.protocolType, protocol: d.protocolData, members },
    };
  }

  async function lagOf(committed: { topic: string; partition: number; offset: bigint }[]) {
    const now = Date.now();
    const rows = committed.map((c) => {
      const hw = s.topics.partition(c.topic, c.partition)?.highWatermark ?? null;
      const lag = hw === null || c.offset < 0n ? null : Number(hw - c.offset);
      return { topic: c.topic, partition: c.partition, committedOffset: c.offset, highWatermark: hw, lag, lagMs: lag === 0 ? 0 : null };
    });
    // lag in time: how long the first record not yet consumed has waited (one Fetch per topic, for
    // the first LAG_TIME_PARTITIONS lagging partitions)
    const wanted = new Map<string, Map<number, bigint>>();
    for (const r of rows.filter((x) => x.lag !== null && x.lag > 0).slice(0, LAG_TIME_PARTITIONS)) {
      let m = wanted.get(r.topic);
      if (m === undefined) wanted.set(r.topic, (m = new Map<number, bigint>()));
      m.set(r.partition, r.committedOffset);
    }
    const firstTs = new Map<string, bigint>();
    await Promise.all(
      [...wanted].map(async ([topic, parts]) => {
        const reads = await fetchRecords(kafka, topic, parts, { maxWaitMs: 0, partitionMaxBytes: 16 * 1024 }).catch(() => []);
        for (const r of reads) {
          const from = parts.get(r.partition) ?? 0n;
          const first = r.records.find((x) => x.offset >= from);
          if (first !== undefined) firstTs.set(`${topic}:${r.partition}`, first.timestamp);
        }
      }),
    );
    for (const r of rows) {
      const ts = firstTs.get(`${r.topic}:${r.partition}`);
      if (ts !== undefined) r.lagMs = Math.max(0, now - Number(ts));
    }
    return rows;
  }

  return [
    {
      method: 'GET',
      path: /^\/groups$/,
      async handle(_req, res) {
        const r = await kafka.call(listGroupsHandler, 5, { statesFilter: [], typesFilter: [] });
        const groups = r.groups
          .map((g) => {
            let lag = 0;
            for (const o of s.groups.offsets.all(g.groupId)) {
              const hw = s.topics.partition(o.topic, o.partition)?.highWatermark;
              if (hw !== undefined && o.offset.offset >= 0n) lag += Number(hw - o.offset.offset);
            }
            return {
              groupId: g.groupId,
              state: g.groupState ?? '',
              type: g.groupType ?? '',
              protocolType: g.protocolType,
              members: s.groups.groups.get(g.groupId)?.members.size ?? 0,
              lag,
            };
          })
          .sort((a, b) => a.groupId.localeCompare(b.groupId));
        sendJson(res, 200, { groups });
      },
    },
    {
      method: 'GET',
      path: /^\/groups\/([^/]+)$/,
      async handle(_req, res, { url, params: [id = ''] }) {
        const { view, committed } = await describe(id);
        // the total over every partition; the rows (and their lag in time, which reads records) for
        // the first FIRST_PARTITIONS unless asked for all: 10,000 rows are ~1.2 MB a poll
        let totalLag = 0;
        for (const c of committed) {
          const hw = s.topics.partition(c.topic, c.partition)?.highWatermark;
          if (hw !== undefined && c.offset >= 0n) totalLag += Number(hw - c.offset);
        }
        const all = url.searchParams.get('partitions') === 'all';
        const sorted = committed.sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
        const partitions = await lagOf(all ? sorted : sorted.slice(0, FIRST_PARTITIONS));
        sendJson(res, 200, {
          groupId: id,
          ...view,
          partitionCount: committed.length,
          totalLag,
          partitions,
          lagHistory: deps.broker.metrics.groupLag.snapshot(id, LAG_HISTORY_SECONDS),
        });
      },
    },
    {
      method: 'POST',
      path: /^\/groups\/([^/]+)\/reset$/,
      async handle(_req, res, { params: [id = ''], body }) {
        const o = bodyObject(body);
        const to = str(o, 'to');
        if (to !== 'start' && to !== 'end' && to !== 'offset' && to !== 'timestamp')
          throw badRequest('"to" must be start, end, offset or timestamp');
        const { state, memberCount, committed } = await describe(id);
        const execute = o['execute'] === true;
        if (memberCount > 0 || (state !== 'Empty' && state !== 'Dead'))
          throw new ConsoleError(
            409,
            ConsoleErrorCode.GROUP_NOT_EMPTY,
            `group '${id}' is ${state} with ${memberCount} member(s): offsets can only be reset while the group is empty; stop its consumers first`,
            { state, members: memberCount },
          );
        const topic = typeof o['topic'] === 'string' && o['topic'] !== '' ? o['topic'] : null;
        const parts = committed.filter((c) => topic === null || c.topic === topic);
        if (topic !== null && parts.length === 0) {
          const t = s.metadata.topic(topic);
          if (t === undefined) throw notFound(`no topic '${topic}'`);
          for (let p = 0; p < t.partitions; p++) parts.push({ topic, partition: p, offset: -1n });
        }
        if (parts.length === 0) throw badRequest(`group '${id}' has no committed offsets: name the "topic" to reset`);
        const plan = [];
        for (const c of parts) {
          const log = s.topics.partition(c.topic, c.partition);
          const lo = log?.logStartOffset ?? 0n;
          const hi = log?.highWatermark ?? 0n;
          let target: bigint;
          if (to === 'start') target = lo;
          else if (to === 'end') target = hi;
          else if (to === 'offset') {
            const v = o['offset'];
            if ((typeof v !== 'string' && typeof v !== 'number') || !/^\d+$/.test(String(v)))
              throw badRequest('"offset" must be an integer >= 0');
            const want = BigInt(v);
            target = want < lo ? lo : want > hi ? hi : want;
          } else {
            const ts = Number(o['timestamp']);
            if (!Number.isSafeInteger(ts)) throw badRequest('"timestamp" must be milliseconds since the epoch');
            const found = (await offsetsForTime(kafka, c.topic, [c.partition], BigInt(ts))).get(c.partition) ?? -1n;
            target = found < 0n ? hi : found;
          }
          plan.push({ topic: c.topic, partition: c.partition, currentOffset: c.offset >= 0n ? c.offset : null, newOffset: target });
        }
        if (execute) {
          const byTopic = new Map<string, typeof plan>();
          for (const p of plan) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p]);
          const r = await kafka.call(offsetCommitHandler, 8, {
            groupId: id,
            generationIdOrMemberEpoch: -1,
            memberId: '',
            groupInstanceId: null,
            topics: [...byTopic].map(([name, ps]) => ({
              name,
              partitions: ps.map((p) => ({
                partitionIndex: p.partition,
                committedOffset: p.newOffset,
                committedLeaderEpoch: -1,
                committedMetadata: '',
              })),
            })),
          });
          for (const t of r.topics)
            for (const p of t.partitions)
              if (p.errorCode !== 0) throw kafkaError(p.errorCode, null, `cannot commit ${t.name}-${p.partitionIndex} for '${id}'`);
        }
        sendJson(res, 200, { groupId: id, executed: execute, partitions: plan });
      },
    },
  ];
}
