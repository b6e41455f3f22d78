/**
 * Reading partitions from a starting point: assigned partitions, or as a member of a classic
 * consumer group (committed offsets first, commits every second and on stop). Stops at the end of
 * the partitions, after a number of records, or when aborted.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { KafkaClient } from './client.js';
import { ClientError, kafkaError } from './errors.js';
import { fetchOnce, type FetchedRecord } from './fetcher.js';
import { fetchOffsets } from './groups.js';
import { GroupMember } from './member.js';
import { isLeaderError, listOffsets, OffsetTime, tpKey, type TopicPartition } from './offsets.js';

/** Where reading starts: kcat's -o. */
export type StartSpec =
  | { kind: 'start' }
  | { kind: 'end' }
  | { kind: 'offset'; offset: bigint }
  /** the last `count` records of each partition */
  | { kind: 'relative'; count: bigint }
  | { kind: 'timestamp'; timestamp: bigint };

export interface ConsumeOptions {
  start: StartSpec;
  isolationLevel?: number;
  /** stop once every partition is read to its end (kcat -e) */
  stopAtEnd?: boolean;
  /** stop after this many records */
  maxRecords?: number;
  maxWaitMs?: number;
  partitionMaxBytes?: number;
  signal?: AbortSignal;
  onRecord(record: FetchedRecord): void;
  onNotice?: (message: string) => void;
  /** awaited after each fetch round's records were handed over (output backpressure) */
  afterRound?(): Promise<void>;
}

export interface ConsumeSummary {
  records: number;
  /** next offset of each partition read */
  positions: (TopicPartition & { offset: bigint })[];
  reason: 'end' | 'count' | 'aborted';
}

/** Start offsets for `tps` (explicit offsets are clamped to the log, with a notice). */
export async function resolveStart(
  client: KafkaClient,
  tps: readonly TopicPartition[],
  spec: StartSpec,
  isolationLevel: number,
  notice?: (m: string) => void,
): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  if (tps.length === 0) return out;
  if (spec.kind === 'start' || spec.kind === 'end') {
    const r = await listOffsets(
      client,
      tps.map((tp) => ({ ...tp, timestamp: spec.kind === 'start' ? OffsetTime.EARLIEST : OffsetTime.LATEST })),
      { isolationLevel },
    );
    for (const x of r) out.set(tpKey(x.topic, x.partition), x.offset);
    return out;
  }
  const earliest = await listOffsets(
    client,
    tps.map((tp) => ({ ...tp, timestamp: OffsetTime.EARLIEST })),
    { isolationLevel },
  );
  const latest = await listOffsets(
    client,
    tps.map((tp) => ({ ...tp, timestamp: OffsetTime.LATEST })),
    { isolationLevel },
  );
  const byTime =
    spec.kind === 'timestamp'
      ? await listOffsets(
          client,
          tps.map((tp) => ({ ...tp, timestamp: spec.timestamp })),
          { isolationLevel },
        )
      : null;
  tps.forEach((tp, i) => {
    const lo = earliest[i]?.offset ?? 0n;
    const hi = latest[i]?.offset ?? 0n;
    let o: bigint;
    if (spec.kind === 'relative') o = hi - spec.count < lo ? lo : hi - spec.count;
    else if (spec.kind === 'timestamp') {
      const t = byTime?.[i]?.offset ?? -1n;
      o = t < 0n ? hi : t;
    } else {
      o = spec.offset;
      if (o < lo || o > hi) {
        const c = o < lo ? lo : hi;
        notice?.(`${tp.topic}-${tp.partition}: offset ${o} is outside the log (${lo}..${hi}); starting at ${c}`);
        o = c;
      }
    }
    out.set(tpKey(tp.topic, tp.partition), o);
  });
  return out;
}

interface State {
  positions: Map<string, TopicPartition & { offset: bigint }>;
  /** high watermark (or last stable offset) last seen */
  ends: Map<string, bigint>;
}

async function positionsFor(client: KafkaClient, tps: readonly TopicPartition[], o: ConsumeOptions, group: string | null): Promise<State> {
  const isolation = o.isolationLevel ?? 0;
  const positions = new Map<string, TopicPartition & { offset: bigint }>();
  let rest = [...tps];
  if (group !== null && tps.length > 0) {
    const committed = await fetchOffsets(client, group, tps);
    for (const c of committed) {
      if (c.offset >= 0n) positions.set(tpKey(c.topic, c.partition), { topic: c.topic, partition: c.partition, offset: c.offset });
    }
    rest = tps.filter((tp) => !positions.has(tpKey(tp.topic, tp.partition)));
  }
  const start = await resolveStart(client, rest, o.start, isolation, o.onNotice);
  for (const tp of rest) positions.set(tpKey(tp.topic, tp.partition), { ...tp, offset: start.get(tpKey(tp.topic, tp.partition)) ?? 0n });
  const ends = new Map<string, bigint>();
  if (o.stopAtEnd === true && tps.length > 0) {
    const latest = await listOffsets(
      client,
      tps.map((tp) => ({ ...tp, timestamp: OffsetTime.LATEST })),
      { isolationLevel: isolation },
    );
    for (const l of latest) ends.set(tpKey(l.topic, l.partition), l.offset);
  }
  return { positions, ends };
}

function allAtEnd(s: State): boolean {
  for (const [k, p] of s.positions) {
    const end = s.ends.get(k);
    if (end === undefined || p.offset < end) return false;
  }
  return true;
}

/**
 * Reads `tps` (assign mode, group null) or the partitions the group gives this member of `topics`.
 */
export async function consume(
  client: KafkaClient,
  target: { partitions: TopicPartition[] } | { group: string; topics: string[] },
  o: ConsumeOptions,
): Promise<ConsumeSummary> {
  const isolation = o.isolationLevel ?? 0;
  const member =
    'group' in target
      ? new GroupMember(client, target.group, target.topics, o.onNotice === undefined ? {} : { onNotice: o.onNotice })
      : null;
  let state: State = { positions: new Map(), ends: new Map() };
  if (member === null && 'partitions' in target) state = await positionsFor(client, target.partitions, o, null);
  let count = 0;
  let reason: ConsumeSummary['reason'] = 'end';
  let refresh = false;
  let partitionMaxBytes = o.partitionMaxBytes ?? 1 << 20;
  let lastCommit = Date.now();
  const committed = new Map<string, bigint>();
  const commit = async (): Promise<void> => {
    if (member === null) return;
    const changed = [...state.positions].filter(([k, p]) => committed.get(k) !== p.offset).map(([, p]) => p);
    if (changed.length === 0) return;
    if (await member.commit(changed)) for (const p of changed) committed.set(tpKey(p.topic, p.partition), p.offset);
    lastCommit = Date.now();
  };
  try {
    for (;;) {
      if (o.signal?.aborted === true) {
        reason = 'aborted';
        break;
      }
      if (member !== null) {
        member.check();
        if (member.needsRejoin) {
          if (state.positions.size > 0) await commit().catch(() => undefined);
          const assigned = await member.join();
          state = await positionsFor(client, assigned, o, member.groupId);
          committed.clear();
        }
      }
      if (o.stopAtEnd === true && allAtEnd(state)) break;
      if (state.positions.size === 0) {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      const round = await fetchOnce(client, [...state.positions.values()], {
        maxWaitMs: o.stopAtEnd === true ? 100 : (o.maxWaitMs ?? 500),
        isolationLevel: isolation,
        partitionMaxBytes,
        refresh,
      });
      refresh = false;
      let stop = false;
      for (const f of round) {
        const k = tpKey(f.topic, f.partition);
        const pos = state.positions.get(k);
        if (pos === undefined) continue;
        if (f.errorCode !== 0) {
          if (isLeaderError(f.errorCode) || f.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER) {
            refresh = true;
            continue;
          }
          if (f.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
            const reset = await resolveStart(
              client,
              [f],
              { kind: pos.offset < f.logStartOffset || f.logStartOffset < 0n ? 'start' : 'end' },
              isolation,
            );
            const to = reset.get(k) ?? 0n;
            o.onNotice?.(`${f.topic}-${f.partition}: offset ${pos.offset} is out of range; resetting to ${to}`);
            pos.offset = to;
            continue;
          }
          throw kafkaError(f.errorCode, { api: 'Fetch', broker: f.broker, subject: `${f.topic}-${f.partition}` });
        }
        if (f.tooSmall) partitionMaxBytes = Math.min(partitionMaxBytes * 4, 256 << 20);
        state.ends.set(k, isolation === 1 && f.lastStableOffset >= 0n ? f.lastStableOffset : f.highWatermark);
        for (const r of f.records) {
          o.onRecord(r);
          pos.offset = r.offset + 1n;
          count++;
          if (o.maxRecords !== undefined && count >= o.maxRecords) {
            stop = true;
            reason = 'count';
            break;
          }
        }
        if (stop) break;
        if (f.nextOffset > pos.offset) pos.offset = f.nextOffset;
      }
      if (o.afterRound !== undefined) await o.afterRound();
      if (stop) break;
      if (member !== null && Date.now() - lastCommit >= 1000) await commit();
    }
    if (member !== null) await commit();
  } catch (e) {
    if (e instanceof ClientError || !(o.signal?.aborted === true)) throw e;
    reason = 'aborted';
  } finally {
    if (member !== null) await member.leave();
  }
  return { records: count, positions: [...state.positions.values()], reason };
}
