/**
 * What a consumer group is subscribed to and what each member should own (Kafka's
 * TopicRegexResolver, subscription metadata and TargetAssignmentBuilder): regexes resolved against the
 * topics, a group epoch that moves when the subscribed topics change, and a target assignment
 * computed by the group's assignor whenever the group epoch passes the assignment epoch.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { ASSIGNORS, DEFAULT_ASSIGNOR, uniformAssignor } from './assignors.js';
import type { ConsumerContext } from './consumer-coordinator.js';
import { assignmentsEqual, ConsumerGroup, fromAssignment } from './consumer-group.js';
import {
  consumerGroupMetadataRecord,
  consumerGroupTargetMemberRecord,
  consumerGroupTargetMetadataRecord,
  type CoordinatorRecord,
} from './records.js';
import { resolveTopicRegex } from './topic-regex.js';

export class ConsumerSubscriptions {
  /** Moves on every topic creation, deletion or partition change; regex resolutions older than it are redone. */
  private topicsVersion = 0;

  constructor(private readonly ctx: Pick<ConsumerContext, 'logger' | 'write' | 'topicByName' | 'topicNames'>) {}

  /**
   * Resolves the group's regexes (Kafka's TopicRegexResolver): new ones, and all of them when topics
   * changed since; drops the ones no member uses any more. Synchronous, so a new regex is resolved
   * within the heartbeat that brings it (Kafka resolves asynchronously, batched at most every 10 s).
   */
  resolveRegexes(group: ConsumerGroup): void {
    const wanted = group.subscribedRegexes();
    for (const r of [...group.resolvedRegexes.keys()]) if (!wanted.has(r)) group.resolvedRegexes.delete(r);
    const stale = group.regexTopicsVersion !== this.topicsVersion;
    let names: string[] | undefined;
    for (const r of wanted) {
      if (!stale && group.resolvedRegexes.has(r)) continue;
      names ??= [...this.ctx.topicNames()];
      group.resolvedRegexes.set(r, resolveTopicRegex(r, names));
    }
    group.regexTopicsVersion = this.topicsVersion;
  }

  /**
   * A group replayed from `__consumer_offsets`: its regexes are resolved again (their resolutions are not
   * persisted) and its subscription metadata recomputed, so the first heartbeat does not see a change.
   */
  loaded(group: ConsumerGroup): void {
    this.resolveRegexes(group);
    group.subscriptionMetadata = this.subscriptionMetadata(group);
  }

  /**
   * A topic was created, deleted or grew: every group whose subscription (names or regex matches) it
   * changes gets a new group epoch, so its target assignment is recomputed at the next heartbeat.
   */
  topicsChanged(groups: Iterable<{ readonly type: string }>): void {
    this.topicsVersion++;
    for (const g of groups) {
      if (!(g instanceof ConsumerGroup) || g.dead || g.members.size === 0) continue;
      this.resolveRegexes(g);
      const meta = this.subscriptionMetadata(g);
      if (meta === g.subscriptionMetadata) continue;
      g.subscriptionMetadata = meta;
      g.groupEpoch++;
      this.ctx.logger.info({ group: g.groupId, epoch: g.groupEpoch }, 'bumped consumer group epoch: subscribed topics changed');
      void this.ctx.write(g.groupId, [consumerGroupMetadataRecord(g.groupId, g.groupEpoch)]).then((e) => {
        if (e !== ErrorCode.NONE) this.ctx.logger.warn({ group: g.groupId, errorCode: e }, 'could not write the consumer group epoch');
      });
    }
  }

  subscriptionMetadata(group: ConsumerGroup): string {
    const parts: string[] = [];
    for (const name of [...group.subscribedTopicNames()].sort()) {
      const t = this.ctx.topicByName(name);
      if (t !== undefined) parts.push(`${name}:${t.topicId}:${t.partitions}`);
    }
    return parts.join(',');
  }

  updateTargetAssignment(group: ConsumerGroup): CoordinatorRecord[] {
    const counts = new Map<string, number>();
    const members = [...group.members.values()].map((m) => {
      const ids = new Set<string>();
      for (const name of group.memberTopicNames(m)) {
        const t = this.ctx.topicByName(name);
        if (t !== undefined) {
          ids.add(t.topicId);
          counts.set(t.topicId, t.partitions);
        }
      }
      return { memberId: m.memberId, subscribedTopicIds: ids, current: group.targetAssignment.get(m.memberId) ?? new Map() };
    });
    const assignor = ASSIGNORS.get(group.preferredAssignor(DEFAULT_ASSIGNOR)) ?? uniformAssignor;
    const target = assignor.assign(members, counts);
    const records: CoordinatorRecord[] = [];
    for (const [memberId, a] of target) {
      const old = group.targetAssignment.get(memberId);
      group.targetAssignment.set(memberId, a);
      if (old === undefined || !assignmentsEqual(old, a)) {
        records.push(consumerGroupTargetMemberRecord(group.groupId, memberId, { topicPartitions: fromAssignment(a) }));
      }
    }
    group.assignmentEpoch = group.groupEpoch;
    records.push(consumerGroupTargetMetadataRecord(group.groupId, group.assignmentEpoch));
    this.ctx.logger.info(
      { group: group.groupId, epoch: group.assignmentEpoch, assignor: assignor.name, members: members.length },
      'computed new target assignment',
    );
    return records;
  }

  /**
   * Regexes resolved against the current topics; topics appearing, going or growing (or `bump`: a
   * member's subscription changed) move the group epoch; past the assignment epoch, a new target
   * assignment is computed. Adds the records to write.
   */
  advanceGroup(group: ConsumerGroup, bump: boolean, records: CoordinatorRecord[]): void {
    this.resolveRegexes(group);
    const meta = this.subscriptionMetadata(group);
    if (meta !== group.subscriptionMetadata) {
      group.subscriptionMetadata = meta;
      bump = true;
    }
    if (bump) {
      group.groupEpoch++;
      records.push(consumerGroupMetadataRecord(group.groupId, group.groupEpoch));
      this.ctx.logger.info({ group: group.groupId, epoch: group.groupEpoch }, 'bumped consumer group epoch');
    }
    if (group.groupEpoch > group.assignmentEpoch) records.push(...this.updateTargetAssignment(group));
  }
}
