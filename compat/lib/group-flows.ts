/**
 * The steps of the regex-subscription, static-membership and cooperative-rebalance scenarios, written
 * once against a small view of a running group member. Each in-process or subprocess driver only has
 * to start a member (subscribe, poll, record its rebalance callbacks and records) and stop it.
 */
import { sleep } from './records.js';
import type {
  CooperativeGroupObservation,
  CooperativeGroupSpec,
  RebalanceEvent,
  RegexGroupObservation,
  RegexGroupSpec,
  StaticGroupObservation,
  StaticGroupSpec,
} from './types.js';

export interface TopicPartition {
  topic: string;
  partition: number;
}

/** One running group member as a driver exposes it. */
export interface FlowMember {
  /** the partitions the member holds now, as the client reports them */
  assignment(): TopicPartition[];
  /** every rebalance callback so far, in order */
  readonly events: { kind: RebalanceEvent['kind']; partitions: TopicPartition[] }[];
  /** every record read so far, with the time it arrived (Date.now()) */
  readonly records: { topic: string; partition: number; offset: number; value: string | null; at: number }[];
  /** the client's rebalance protocol name, when it reports one (librdkafka: COOPERATIVE, EAGER, NONE) */
  rebalanceProtocol?(): string;
  /** closes the member the client's ordinary way (a static member does not leave the group) */
  stop(): Promise<void>;
}

const sorted = (xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);
const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
export const fmt = (xs: number[]) => `[${xs.join(',')}]`;

function partitionsOf(m: FlowMember, topic: string): number[] {
  return sorted(
    m
      .assignment()
      .filter((tp) => tp.topic === topic)
      .map((tp) => tp.partition),
  );
}

/** Every partition held exactly once across `parts`, each member with one at least. */
function isSplit(parts: number[][], total: number, each?: number): boolean {
  const flat = parts.flat();
  if (flat.length !== total || new Set(flat).size !== total) return false;
  return parts.every((p) => p.length > 0 && (each === undefined || p.length === each));
}

async function until(what: string, timeoutMs: number, cond: () => boolean, state: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${state()})`);
    await sleep(25);
  }
}

async function stopAll(members: FlowMember[]): Promise<void> {
  await Promise.all(members.splice(0).map((m) => m.stop().catch(() => undefined)));
}

/** Distinct offsets read per topic. */
function readCount(m: FlowMember, topic: string): number {
  return new Set(m.records.filter((r) => r.topic === topic).map((r) => `${r.partition}@${r.offset}`)).size;
}

export async function regexFlow(spec: RegexGroupSpec, start: () => Promise<FlowMember>): Promise<RegexGroupObservation> {
  const m = await start();
  try {
    const counts = () =>
      Object.keys(spec.expect)
        .map((t) => `${t}: ${readCount(m, t)}/${spec.expect[t]}`)
        .join(', ');
    await until(
      'the records of the existing matching topics',
      spec.timeoutMs,
      () => Object.entries(spec.expect).every(([t, n]) => readCount(m, t) >= n),
      counts,
    );
    const created = Date.now();
    const late = await spec.afterJoin();
    const deadline = Date.now() + spec.lateWaitMs;
    while (readCount(m, late.topic) < late.count && Date.now() < deadline) await sleep(25);
    const first = m.records.find((r) => r.topic === late.topic);
    return {
      records: m.records.map(({ topic, partition, offset, value }) => ({ topic, partition, offset, value })),
      lateMs: first === undefined ? null : first.at - created,
      assigned: [...new Set(m.assignment().map((tp) => tp.topic))].sort(),
    };
  } finally {
    await m.stop().catch(() => undefined);
  }
}

export async function staticFlow(
  spec: StaticGroupSpec,
  start: (instanceId: string) => Promise<FlowMember>,
): Promise<StaticGroupObservation> {
  const all = Array.from({ length: spec.partitions }, (_, i) => i);
  const live: FlowMember[] = [];
  const parts = (m: FlowMember) => partitionsOf(m, spec.topic);
  const drop = (m: FlowMember) => live.splice(live.indexOf(m), 1);
  try {
    const a = await start('a');
    live.push(a);
    await until(
      'member A alone to hold every partition',
      spec.timeoutMs,
      () => same(parts(a), all),
      () => `A ${fmt(parts(a))}`,
    );
    let b = await start('b');
    live.push(b);
    await until(
      'A and B to split the partitions',
      spec.timeoutMs,
      () => isSplit([parts(a), parts(b)], spec.partitions),
      () => `A ${fmt(parts(a))}, B ${fmt(parts(b))}`,
    );
    const before = { a: parts(a), b: parts(b), aCallbacks: a.events.length };
    // B goes away without leaving (a static member's close) and comes back with the same instance id.
    const stopped = Date.now();
    drop(b);
    await b.stop();
    await sleep(Math.max(0, spec.downMs - (Date.now() - stopped)));
    b = await start('b');
    live.push(b);
    const bb = b;
    await until(
      'B to be back with partitions',
      spec.timeoutMs,
      () => parts(bb).length > 0,
      () => `A ${fmt(parts(a))}, B ${fmt(parts(bb))}`,
    );
    const bAgain = parts(b);
    const bAgainMs = Date.now() - stopped;
    await sleep(spec.watchMs);
    const aAfterRestart = parts(a);
    const aCallbacksAfterRestart = a.events.length;
    // B goes away for longer than the session timeout: the coordinator must drop it and A takes over.
    const stoppedAgain = Date.now();
    drop(b);
    await b.stop();
    await until(
      "A to hold every partition after B's session expired",
      spec.timeoutMs,
      () => same(parts(a), all),
      () => `A ${fmt(parts(a))}`,
    );
    return { ...before, bAgain, bAgainMs, aAfterRestart, aCallbacksAfterRestart, aAlone: parts(a), takeoverMs: Date.now() - stoppedAgain };
  } finally {
    await stopAll(live);
  }
}

export async function cooperativeFlow(spec: CooperativeGroupSpec, start: () => Promise<FlowMember>): Promise<CooperativeGroupObservation> {
  const live: FlowMember[] = [];
  const parts = (m: FlowMember) => partitionsOf(m, spec.topic);
  const show = () => live.map((m) => fmt(parts(m))).join(' / ');
  try {
    for (let n = 1; n <= 3; n++) {
      live.push(await start());
      const each = n === 3 ? spec.partitions / 3 : undefined;
      await until(`${n} member(s) to split the partitions`, spec.timeoutMs, () => isSplit(live.map(parts), spec.partitions, each), show);
    }
    const [a, b, c] = live as [FlowMember, FlowMember, FlowMember];
    const before = [parts(a), parts(b), parts(c)];
    const marks = [a.events.length, b.events.length];
    const left = Date.now();
    live.pop();
    await c.stop();
    await until(
      'the two remaining members to hold every partition',
      spec.timeoutMs,
      () => isSplit([parts(a), parts(b)], spec.partitions),
      show,
    );
    const settleMs = Date.now() - left;
    // A cooperative protocol may take a second round; a late revocation would show up here.
    await sleep(1000);
    const toEvent = (e: FlowMember['events'][number]): RebalanceEvent => ({
      kind: e.kind,
      partitions: sorted(e.partitions.filter((tp) => tp.topic === spec.topic).map((tp) => tp.partition)),
    });
    return {
      rebalanceProtocol: a.rebalanceProtocol?.() ?? 'unknown',
      before,
      eventsAfter: [a.events.slice(marks[0]).map(toEvent), b.events.slice(marks[1]).map(toEvent)],
      after: [parts(a), parts(b)],
      settleMs,
    };
  } finally {
    await stopAll(live);
  }
}
