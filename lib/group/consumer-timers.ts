/**
 * A consumer group member's timers (Kafka's GroupMetadataManager timeouts): the session timer every
 * member has, the rebalance timer while it still holds partitions it must give up, and a classic
 * member's join and sync timers. Each one that fires fences the member through the coordinator.
 */
import type { ConsumerGroup, ConsumerGroupMember } from './consumer-group.js';
import { MemberState } from './consumer-group.js';

export type FenceMember = (group: ConsumerGroup, member: ConsumerGroupMember, why: string) => Promise<number>;

export class MemberTimers {
  constructor(
    private readonly fence: FenceMember,
    /** group.consumer.session.timeout.ms, read when a timer is armed (it can be changed at run time) */
    private readonly sessionTimeoutMs: () => number,
  ) {}

  /** (Re)arms the member's session timer: the group's session timeout unless told otherwise (a classic member's own). */
  scheduleSessionTimeout(group: ConsumerGroup, member: ConsumerGroupMember, timeoutMs = this.sessionTimeoutMs()): void {
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = setTimeout(() => {
      member.sessionTimer = undefined;
      void this.fence(group, member, 'session timeout expired');
    }, timeoutMs);
    member.sessionTimer.unref();
  }

  /** Classic members: fenced unless they rejoin within their rebalance timeout (kept when already running). */
  scheduleJoinTimeoutIfAbsent(group: ConsumerGroup, member: ConsumerGroupMember): void {
    if (member.joinTimer !== undefined) return;
    member.joinTimer = setTimeout(
      () => {
        member.joinTimer = undefined;
        void this.fence(group, member, 'the classic member failed to join within the rebalance timeout');
      },
      Math.max(member.rebalanceTimeoutMs, 0),
    );
    member.joinTimer.unref();
  }

  /** Classic members: fenced unless they sync within their rebalance timeout after a join. */
  scheduleSyncTimeout(group: ConsumerGroup, member: ConsumerGroupMember): void {
    if (member.syncTimer !== undefined) clearTimeout(member.syncTimer);
    member.syncTimer = setTimeout(
      () => {
        member.syncTimer = undefined;
        void this.fence(group, member, 'the member failed to sync within timeout');
      },
      Math.max(member.rebalanceTimeoutMs, 0),
    );
    member.syncTimer.unref();
  }

  cancelJoinTimeout(member: ConsumerGroupMember): void {
    if (member.joinTimer !== undefined) clearTimeout(member.joinTimer);
    member.joinTimer = undefined;
  }

  cancelSyncTimeout(member: ConsumerGroupMember): void {
    if (member.syncTimer !== undefined) clearTimeout(member.syncTimer);
    member.syncTimer = undefined;
  }

  scheduleRebalanceTimeout(group: ConsumerGroup, member: ConsumerGroupMember): void {
    this.cancelRebalanceTimeout(member);
    const epoch = member.memberEpoch;
    member.rebalanceTimer = setTimeout(
      () => {
        member.rebalanceTimer = undefined;
        if (member.memberEpoch === epoch && member.state === MemberState.UNREVOKED_PARTITIONS)
          void this.fence(group, member, 'did not revoke partitions within the rebalance timeout');
      },
      Math.max(member.rebalanceTimeoutMs, 0),
    );
    member.rebalanceTimer.unref();
  }

  cancelRebalanceTimeout(member: ConsumerGroupMember): void {
    if (member.rebalanceTimer !== undefined) clearTimeout(member.rebalanceTimer);
    member.rebalanceTimer = undefined;
  }

  cancelTimers(member: ConsumerGroupMember): void {
    if (member.sessionTimer !== undefined) clearTimeout(member.sessionTimer);
    member.sessionTimer = undefined;
    this.cancelRebalanceTimeout(member);
    this.cancelJoinTimeout(member);
    this.cancelSyncTimeout(member);
  }
}
