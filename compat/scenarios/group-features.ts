/**
 * Group features beyond join/commit (issue 12): regex subscription, static membership (KIP-345) and
 * incremental rebalancing (KIP-429), each as one row per group protocol: the classic protocol, where
 * the client does the matching and the assigning, and KIP-848's consumer protocol, where the broker
 * does both. The steps live in lib/group-flows.ts; here the topics are seeded and the observations
 * judged. A client without the feature or the protocol says why (NotSupportedError / missing op).
 */
import { fmt } from '../lib/group-flows.js';
import { rawBrokerConfigs, rawCreateTopic, rawProduce } from '../lib/raw.js';
import { type Client, type GroupProtocol, NotSupportedError, type OpName } from '../lib/types.js';
import { API, type Scenario } from './context.js';

const CLASSIC_APIS = [API.FindCoordinator, API.JoinGroup, API.SyncGroup, API.Heartbeat, API.LeaveGroup, API.OffsetFetch];
const CONSUMER_APIS = [API.FindCoordinator, API.ConsumerGroupHeartbeat, API.OffsetFetch];
const apis = (protocol: GroupProtocol) => (protocol === 'classic' ? CLASSIC_APIS : CONSUMER_APIS);

/**
 * The op a row needs, declared to the runner for the classic rows only: in a consumer-protocol row the
 * missing protocol is the first reason to give (checked by `need`, before the op).
 */
const opsFor = (protocol: GroupProtocol, op: OpName): OpName[] => (protocol === 'classic' ? [op] : []);

function need(client: Client, protocol: GroupProtocol, op: OpName): void {
  if (protocol === 'consumer' && !client.caps.consumerProtocol)
    throw new NotSupportedError(client.unsupported.consumerProtocol ?? `${client.title} has no KIP-848 consumer group protocol`);
  if (client.ops[op] === undefined) throw new NotSupportedError(client.unsupported[op] ?? `${client.title} has no ${op} operation`);
}

const PROTOCOL_CONF: Record<GroupProtocol, string> = { classic: 'classic protocol', consumer: 'group.protocol=consumer' };

/** Creates `topic` with `partitions` partitions and `perPartition` records "<topic>/p<p>/<i>" in each. */
async function seed(bootstrap: string, topic: string, partitions: number, perPartition: number): Promise<void> {
  await rawCreateTopic(bootstrap, topic, partitions);
  const now = Date.now();
  await rawProduce(
    bootstrap,
    topic,
    Array.from({ length: partitions * perPartition }, (_, i) => ({
      partition: i % partitions,
      key: null,
      value: `${topic}/p${i % partitions}/${Math.floor(i / partitions)}`,
      timestamp: now,
    })),
  );
}

const METADATA_REFRESH_MS = 1000;
/** how long a client that resolves its regex once is watched for (wrongly) picking up the new topic */
const RESOLVED_ONCE_WATCH_MS = 3 * METADATA_REFRESH_MS;

function regexScenario(protocol: GroupProtocol): Scenario {
  const classic = protocol === 'classic';
  return {
    id: classic ? 'regex-subscription' : 'regex-subscription-consumer',
    title: classic ? 'regex subscription (classic: the client matches)' : 'regex subscription (consumer protocol: the broker matches)',
    description: `${classic ? 'classic protocol: the client lists the topics and matches the pattern itself on each metadata refresh' : 'KIP-848 consumer protocol: the pattern goes to the broker in ConsumerGroupHeartbeat and is resolved there (RE2/J, whole-name match) as topics come and go (gregor at once; Kafka 4.x at most every 10 s per group, REGEX_BATCH_REFRESH_MIN_INTERVAL_MS, still within the wait)'}. One member subscribes to \`^<prefix>-.*\` with two matching topics (2 + 1 partitions, 3 records each) and a non-matching \`<prefix>_other\` present; it must read all 9 matching records and none of the other topic; then \`<prefix>-late\` (1 partition, 3 records) is created and must be read within 15 s (metadata refresh set to ${METADATA_REFRESH_MS} ms). A client documented to resolve a regex only at subscribe time must instead not pick it up (watched ${RESOLVED_ONCE_WATCH_MS / 1000} s), and the cell says so.`,
    ops: opsFor(protocol, 'regexGroup'),
    brokerApis: apis(protocol),
    async run(ctx, client) {
      need(client, protocol, 'regexGroup');
      const prefix = ctx.topic('rx');
      const [a, b, other, late] = [`${prefix}-a`, `${prefix}-b`, `${prefix}_other`, `${prefix}-late`];
      await seed(ctx.main.bootstrap, a, 2, 3);
      await seed(ctx.main.bootstrap, b, 1, 3);
      await seed(ctx.main.bootstrap, other, 1, 3);
      const resolvedOnce = client.caps.regexResolvedOnce;
      const pattern = `^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-.*`;
      const obs = await client.ops.regexGroup!(ctx.main.bootstrap, {
        protocol,
        groupId: `${prefix}-group`,
        pattern,
        expect: { [a]: 6, [b]: 3 },
        afterJoin: async () => {
          await seed(ctx.main.bootstrap, late, 1, 3);
          return { topic: late, count: 3 };
        },
        lateWaitMs: resolvedOnce !== undefined ? RESOLVED_ONCE_WATCH_MS : 15000,
        metadataRefreshMs: METADATA_REFRESH_MS,
        timeoutMs: 20000,
      });
      const values = (t: string) => new Set(obs.records.filter((r) => r.topic === t).map((r) => r.value));
      const problems: string[] = [];
      for (const [t, n] of [
        [a, 2],
        [b, 1],
      ] as const) {
        const missing = Array.from({ length: n * 3 }, (_, i) => `${t}/p${i % n}/${Math.floor(i / n)}`).filter((v) => !values(t).has(v));
        if (missing.length > 0) problems.push(`matching topic ${t}: not read ${missing.join(', ')}`);
      }
      const leaked = obs.records.filter((r) => r.topic === other);
      if (leaked.length > 0) problems.push(`read ${leaked.length} record(s) of the non-matching topic ${other}`);
      const lateRead = values(late).size;
      if (resolvedOnce === undefined && lateRead < 3)
        problems.push(
          `the topic created after the join (${late}) was ${lateRead === 0 ? 'not picked up' : `read only partly (${lateRead}/3)`} within 15 s; assignment at the end: ${obs.assigned.join(', ') || 'none'}`,
        );
      if (resolvedOnce !== undefined && lateRead > 0)
        problems.push(`${late}, created after subscribe(), was read (${lateRead} records), although the client resolves its regex once`);
      if (problems.length > 0) throw new Error(problems.join('; '));
      const short = (t: string) => t.slice(prefix.length);
      const dup = obs.records.filter((r) => r.topic !== other).length - values(a).size - values(b).size - lateRead;
      const head = `${PROTOCOL_CONF[protocol]}, pattern ^<prefix>-.*: existing ${short(a)} (2 partitions) and ${short(b)} read in full (9 records${dup > 0 ? `, ${dup} re-read after a rebalance` : ''}), ${short(other)} not`;
      return resolvedOnce !== undefined
        ? `${head}; ${short(late)} created after the join not picked up within ${RESOLVED_ONCE_WATCH_MS} ms (metadata max age ${METADATA_REFRESH_MS} ms), as documented: ${resolvedOnce}`
        : `${head}; ${short(late)} created after the join read ${obs.lateMs} ms after its creation (metadata refresh ${METADATA_REFRESH_MS} ms); assignment at the end: ${obs.assigned.map(short).join(', ')}`;
    },
  };
}

/** The classic members' session.timeout.ms: Kafka's default group.min.session.timeout.ms, so any broker accepts it. */
const CLASSIC_SESSION_MS = 6000;

function staticScenario(protocol: GroupProtocol): Scenario {
  const classic = protocol === 'classic';
  return {
    id: classic ? 'static-membership' : 'static-membership-consumer',
    title: classic ? 'static membership (classic)' : 'static membership (consumer protocol)',
    description: `${classic ? `classic protocol, session.timeout.ms=${CLASSIC_SESSION_MS}, range assignor` : "KIP-848 consumer protocol; the session timeout is the broker's group.consumer.session.timeout.ms (the suite's gregor: 6000 ms)"}. Members A and B with group.instance.id on a 4-partition topic split it; B is closed (a static member does not leave) and restarted 1 s later with the same instance id: it must get its same partitions back without a rebalance (A's rebalance callbacks unchanged over the next 2 s, A's partitions unchanged); then B is closed for good: A must hold all 4 partitions, no earlier than the session timeout after B's close (B was kept until its session expired).`,
    ops: opsFor(protocol, 'staticGroup'),
    brokerApis: apis(protocol),
    async run(ctx, client) {
      need(client, protocol, 'staticGroup');
      let sessionTimeoutMs = CLASSIC_SESSION_MS;
      if (!classic) {
        const cfg = await rawBrokerConfigs(ctx.main.bootstrap, ['group.consumer.session.timeout.ms']).catch(
          (): Record<string, string | null> => ({}),
        );
        sessionTimeoutMs = Number(cfg['group.consumer.session.timeout.ms'] ?? 45000);
      }
      const topic = ctx.topic('static');
      await rawCreateTopic(ctx.main.bootstrap, topic, 4);
      const obs = await client.ops.staticGroup!(ctx.main.bootstrap, {
        protocol,
        topic,
        partitions: 4,
        groupId: `${topic}-group`,
        sessionTimeoutMs,
        downMs: 1000,
        watchMs: 2000,
        timeoutMs: sessionTimeoutMs + 15000,
      });
      const problems: string[] = [];
      if (fmt(obs.bAgain) !== fmt(obs.b)) problems.push(`B came back with ${fmt(obs.bAgain)}, it had ${fmt(obs.b)}`);
      if (obs.bAgainMs >= sessionTimeoutMs)
        problems.push(`B took ${obs.bAgainMs} ms to get its partitions back, not within the session timeout (${sessionTimeoutMs} ms)`);
      if (obs.aCallbacksAfterRestart !== obs.aCallbacks)
        problems.push(
          `A saw a rebalance while B restarted: ${obs.aCallbacks} rebalance callbacks before, ${obs.aCallbacksAfterRestart} after`,
        );
      if (fmt(obs.aAfterRestart) !== fmt(obs.a))
        problems.push(`A's partitions changed from ${fmt(obs.a)} to ${fmt(obs.aAfterRestart)} while B restarted`);
      if (fmt(obs.aAlone) !== '[0,1,2,3]') problems.push(`after B stopped for good A holds ${fmt(obs.aAlone)}`);
      // The session runs from B's last heartbeat (at most a heartbeat interval, 500 ms here, before its close).
      if (obs.takeoverMs < sessionTimeoutMs - 1500)
        problems.push(
          `A took over B's partitions ${obs.takeoverMs} ms after B's close, before B's session (${sessionTimeoutMs} ms) could expire: B was removed at once`,
        );
      if (problems.length > 0) throw new Error(problems.join('; '));
      return `${PROTOCOL_CONF[protocol]}: A ${fmt(obs.a)} / B ${fmt(obs.b)}; B closed and restarted, back with ${fmt(obs.bAgain)} ${obs.bAgainMs} ms after its close; A: ${obs.aCallbacks} rebalance callbacks before, ${obs.aCallbacksAfterRestart} 2 s after B was back (no rebalance); B closed for good: A took over ${fmt(obs.aAlone)} after ${obs.takeoverMs} ms (session timeout ${sessionTimeoutMs} ms)`;
    },
  };
}

function cooperativeScenario(protocol: GroupProtocol): Scenario {
  const classic = protocol === 'classic';
  return {
    id: classic ? 'cooperative-rebalance' : 'cooperative-rebalance-consumer',
    title: classic ? 'cooperative rebalance (classic, cooperative-sticky)' : 'incremental rebalance (consumer protocol)',
    description: `${classic ? 'classic protocol with partition.assignment.strategy=cooperative-sticky (KIP-429: the client reports the COOPERATIVE protocol)' : "KIP-848 consumer protocol (incremental by design, the broker's default assignor)"}. Three members join one after another on a 6-partition topic and end with 2 partitions each; the third leaves: the two others must keep every partition they had (no revocation, checked on their rebalance callbacks) and gain exactly the leaver's.`,
    ops: opsFor(protocol, 'cooperativeGroup'),
    brokerApis: apis(protocol),
    async run(ctx, client) {
      need(client, protocol, 'cooperativeGroup');
      const topic = ctx.topic('coop');
      await rawCreateTopic(ctx.main.bootstrap, topic, 6);
      const obs = await client.ops.cooperativeGroup!(ctx.main.bootstrap, {
        protocol,
        topic,
        partitions: 6,
        groupId: `${topic}-group`,
        timeoutMs: 20000,
      });
      const problems: string[] = [];
      if (classic && obs.rebalanceProtocol !== 'COOPERATIVE')
        problems.push(`the client reports the ${obs.rebalanceProtocol} rebalance protocol, not COOPERATIVE`);
      const [before0 = [], before1 = [], leaver = []] = obs.before;
      const names = ['A', 'B'];
      [before0, before1].forEach((had, i) => {
        const now = obs.after[i] ?? [];
        const lost = had.filter((p) => !now.includes(p));
        if (lost.length > 0) problems.push(`${names[i]} lost ${fmt(lost)} (had ${fmt(had)}, now ${fmt(now)})`);
        const gained = now.filter((p) => !had.includes(p));
        const foreign = gained.filter((p) => !leaver.includes(p));
        if (foreign.length > 0) problems.push(`${names[i]} gained ${fmt(foreign)}, which the leaver did not have`);
        const revoked = (obs.eventsAfter[i] ?? []).filter((e) => e.kind === 'revoke' && e.partitions.length > 0);
        if (revoked.length > 0)
          problems.push(`${names[i]} had partitions revoked after the leave: ${revoked.map((e) => fmt(e.partitions)).join(', ')}`);
        // one incremental assign of what it gained, no extra rounds (empty callbacks that only close a round are not counted)
        const assigns = (obs.eventsAfter[i] ?? []).filter((e) => e.kind === 'assign' && e.partitions.length > 0);
        if (gained.length > 0 && (assigns.length !== 1 || fmt(assigns[0]?.partitions ?? []) !== fmt(gained))) {
          problems.push(
            `${names[i]} got ${assigns.length} assign callbacks with partitions (${assigns.map((e) => fmt(e.partitions)).join(', ')}) for the ${fmt(gained)} it gained; Kafka gives one`,
          );
        }
      });
      if (problems.length > 0)
        throw new Error(`${problems.join('; ')} (before: ${obs.before.map(fmt).join(' / ')}; after: ${obs.after.map(fmt).join(' / ')})`);
      const callbacks = obs.eventsAfter
        .map((evs, i) => `${names[i]} ${evs.length === 0 ? 'none' : evs.map((e) => `${e.kind} ${fmt(e.partitions)}`).join(', ')}`)
        .join('; ');
      return `${PROTOCOL_CONF[protocol]} (client reports ${obs.rebalanceProtocol}): A ${fmt(before0)} / B ${fmt(before1)} / C ${fmt(leaver)}; C left: A ${fmt(obs.after[0] ?? [])}, B ${fmt(obs.after[1] ?? [])} ${obs.settleMs} ms later, kept partitions never revoked; callbacks after the leave: ${callbacks}`;
    },
  };
}

export const groupFeatureScenarios: Scenario[] = [
  regexScenario('classic'),
  regexScenario('consumer'),
  staticScenario('classic'),
  staticScenario('consumer'),
  cooperativeScenario('classic'),
  cooperativeScenario('consumer'),
];
