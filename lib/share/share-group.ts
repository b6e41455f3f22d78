/**
 * A share group (KIP-932): its members, their subscriptions and the assignment the coordinator
 * computes for them. Unlike a consumer group, a partition may be assigned to several members at once
 * (records, not partitions, are what members hold exclusively), and members take a new assignment at
 * once: there is nothing to revoke first.
 */

export const ShareGroupState = { EMPTY: 'Empty', STABLE: 'Stable', DEAD: 'Dead' } as const;
export type ShareGroupState = (typeof ShareGroupState)[keyof typeof ShareGroupState];

/** topic id → partitions, as the heartbeat response carries an assignment */
export type ShareAssignment = Map<string, number[]>;

export class ShareGroupMember {
  memberEpoch = 0;
  rackId: string | null = null;
  clientId = '';
  clientHost = '';
  subscribedTopicNames: string[] = [];
  assignment: ShareAssignment = new Map();
  sessionTimer: NodeJS.Timeout | undefined;

  constructor(readonly memberId: string) {}
}

export class ShareGroup {
  readonly type = 'share' as const;
  readonly members = new Map<string, ShareGroupMember>();
  groupEpoch = 0;
  assignmentEpoch = 0;
  dead = false;

  constructor(readonly groupId: string) {}

  get state(): ShareGroupState {
    if (this.dead) return ShareGroupState.DEAD;
    return this.members.size === 0 ? ShareGroupState.EMPTY : ShareGroupState.STABLE;
  }

  /** Every topic name some member subscribes to. */
  subscribedTopics(): Set<string> {
    const out = new Set<string>();
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) out.add(t);
    return out;
  }
}

export interface AssignableTopic {
  name: string;
  topicId: string;
  partitions: number;
}

/**
 * The simple assignor's outcome (Kafka's share-group default): the partitions of each topic go to
 * the members subscribed to it. With at least as many partitions as members they are dealt out in
 * turn, so each partition has one member; with fewer partitions than members each partition goes to
 * several members (member i takes partition i mod n), so that every member has work and the records
 * of a busy partition are shared.
 */
export function assignShareGroup(members: readonly ShareGroupMember[], topics: readonly AssignableTopic[]): Map<string, ShareAssignment> {
  const out = new Map<string, ShareAssignment>();
  const sortedMembers = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
  for (const m of sortedMembers) out.set(m.memberId, new Map());
  for (const topic of [...topics].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const subscribed = sortedMembers.filter((m) => m.subscribedTopicNames.includes(topic.name));
    if (subscribed.length === 0 || topic.partitions === 0) continue;
    const give = (m: ShareGroupMember, p: number) => {
      const a = out.get(m.memberId);
      if (a === undefined) return;
      const list = a.get(topic.topicId);
      if (list === undefined) a.set(topic.topicId, [p]);
      else list.push(p);
    };
    if (topic.partitions >= subscribed.length) {
      for (let p = 0; p < topic.partitions; p++) {
        const m = subscribed[p % subscribed.length];
        if (m !== undefined) give(m, p);
      }
    } else {
      subscribed.forEach((m, i) => give(m, i % topic.partitions));
    }
  }
  return out;
}

/** Whether two assignments hold the same partitions. */
export function sameAssignment(a: ShareAssignment, b: ShareAssignment): boolean {
  if (a.size !== b.size) return false;
  for (const [t, ps] of a) {
    const other = b.get(t);
    if (other === undefined || other.length !== ps.length) return false;
    const set = new Set(other);
    if (!ps.every((p) => set.has(p))) return false;
  }
  return true;
}
