/**
 * Broker-side partition assignors for KIP-848 consumer groups: `uniform` (balanced and sticky, Kafka's
 * default) and `range` (per topic, contiguous ranges in member-id order). Topics are keyed by topic id.
 */

/** topicId → partitions. */
export type Assignment = Map<string, Set<number>>;

export interface AssignorMember {
  memberId: string;
  /** Topic ids the member subscribes to (only existing topics). */
  subscribedTopicIds: ReadonlySet<string>;
  /** The member's previous target assignment (stickiness). */
  current: Assignment;
}

export interface PartitionAssignor {
  readonly name: string;
  assign(members: readonly AssignorMember[], partitionCounts: ReadonlyMap<string, number>): Map<string, Assignment>;
}

export const DEFAULT_ASSIGNOR = 'uniform';

function add(a: Assignment, topicId: string, p: number): void {
  let s = a.get(topicId);
  if (s === undefined) a.set(topicId, (s = new Set()));
  s.add(p);
}

function count(a: Assignment): number {
  let n = 0;
  for (const s of a.values()) n += s.size;
  return n;
}

export const rangeAssignor: PartitionAssignor = {
  name: 'range',
  assign(members, partitionCounts) {
    const out = new Map<string, Assignment>(members.map((m) => [m.memberId, new Map()]));
    for (const [topicId, n] of [...partitionCounts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      const subs = members
        .filter((m) => m.subscribedTopicIds.has(topicId))
        .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
      if (subs.length === 0) continue;
      const per = Math.floor(n / subs.length);
      const extra = n % subs.length;
      let next = 0;
      subs.forEach((m, i) => {
        const take = per + (i < extra ? 1 : 0);
        for (let k = 0; k < take; k++) add(out.get(m.memberId) as Assignment, topicId, next++);
      });
    }
    return out;
  },
};

export const uniformAssignor: PartitionAssignor = {
  name: 'uniform',
  assign(members, partitionCounts) {
    const out = new Map<string, Assignment>(members.map((m) => [m.memberId, new Map()]));
    const counts = new Map<string, number>(members.map((m) => [m.memberId, 0]));
    const owner = new Map<string, string>(); // "topicId:p" → memberId
    const all: [string, number][] = [];
    for (const [topicId, n] of [...partitionCounts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      if (!members.some((m) => m.subscribedTopicIds.has(topicId))) continue;
      for (let p = 0; p < n; p++) all.push([topicId, p]);
    }
    const quota = members.length === 0 ? 0 : Math.ceil(all.length / members.length);
    const put = (memberId: string, topicId: string, p: number) => {
      add(out.get(memberId) as Assignment, topicId, p);
      counts.set(memberId, (counts.get(memberId) ?? 0) + 1);
      owner.set(`${topicId}:${p}`, memberId);
    };
    // 1. Keep what members already had, while still subscribed and within the quota.
    for (const m of members) {
      for (const [topicId, parts] of m.current) {
        const n = partitionCounts.get(topicId) ?? 0;
        if (!m.subscribedTopicIds.has(topicId)) continue;
        for (const p of [...parts].sort((a, b) => a - b)) {
          if (p < n && !owner.has(`${topicId}:${p}`) && (counts.get(m.memberId) ?? 0) < quota) put(m.memberId, topicId, p);
        }
      }
    }
    // 2. Give every free partition to the least loaded subscriber.
    for (const [topicId, p] of all) {
      if (owner.has(`${topicId}:${p}`)) continue;
      let best: AssignorMember | undefined;
      for (const m of members) {
        if (!m.subscribedTopicIds.has(topicId)) continue;
        if (best === undefined || (counts.get(m.memberId) ?? 0) < (counts.get(best.memberId) ?? 0)) best = m;
      }
      if (best !== undefined) put(best.memberId, topicId, p);
    }
    // 3. Even out: move partitions from the most to the least loaded member that can take them.
    for (let guard = 0; guard < all.length; guard++) {
      let moved = false;
      const sorted = [...members].sort((a, b) => (counts.get(b.memberId) ?? 0) - (counts.get(a.memberId) ?? 0));
      for (const from of sorted) {
        const fromCount = counts.get(from.memberId) ?? 0;
        const fromA = out.get(from.memberId) as Assignment;
        for (const to of [...sorted].reverse()) {
          if ((counts.get(to.memberId) ?? 0) + 1 >= fromCount) break;
          for (const [topicId, parts] of fromA) {
            if (!to.subscribedTopicIds.has(topicId) || parts.size === 0) continue;
            const p = Math.max(...parts);
            parts.delete(p);
            if (parts.size === 0) fromA.delete(topicId);
            counts.set(from.memberId, fromCount - 1);
            put(to.memberId, topicId, p);
            moved = true;
            break;
          }
          if (moved) break;
        }
        if (moved) break;
      }
      if (!moved) break;
    }
    return out;
  },
};

export const ASSIGNORS: ReadonlyMap<string, PartitionAssignor> = new Map([
  [uniformAssignor.name, uniformAssignor],
  [rangeAssignor.name, rangeAssignor],
]);

export function assignmentCount(a: Assignment): number {
  return count(a);
}
