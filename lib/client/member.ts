/**
 * Membership of a classic consumer group (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, protocol
 * type "consumer"), with the range and roundrobin assignors for when this member leads. Works with
 * any Kafka since 0.9 and with the librdkafka mock.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { HeartbeatResponse } from '../../protocol/generated/heartbeat.js';
import type { JoinGroupRequest, JoinGroupResponse } from '../../protocol/generated/join-group.js';
import type { LeaveGroupResponse } from '../../protocol/generated/leave-group.js';
import type { SyncGroupRequest, SyncGroupResponse } from '../../protocol/generated/sync-group.js';
import type { KafkaClient } from './client.js';
import { decodeAssignment, decodeSubscription, encodeAssignment, encodeSubscription } from './consumer-protocol.js';
import { ClientError, ClientErrorCode } from './errors.js';
import { commitOffsets, onCoordinator } from './groups.js';
import type { TopicPartition } from './offsets.js';

export interface MemberOptions {
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  /** notices for the user (rebalances) */
  onNotice?: (message: string) => void;
}

const REJOIN: ReadonlySet<number> = new Set([
  ErrorCode.REBALANCE_IN_PROGRESS,
  ErrorCode.ILLEGAL_GENERATION,
  ErrorCode.UNKNOWN_MEMBER_ID,
  ErrorCode.FENCED_MEMBER_EPOCH,
]);

/** Range assignment (Kafka's RangeAssignor): per topic, consecutive partition ranges to the sorted members. */
export function rangeAssign(
  subscriptions: ReadonlyMap<string, string[]>,
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, TopicPartition[]> {
  const out = new Map<string, TopicPartition[]>([...subscriptions.keys()].map((m) => [m, []]));
  const topics = [...new Set([...subscriptions.values()].flat())].sort();
  for (const topic of topics) {
    const members = [...subscriptions]
      .filter(([, ts]) => ts.includes(topic))
      .map(([m]) => m)
      .sort();
    const n = partitionCounts.get(topic) ?? 0;
    const per = Math.floor(n / members.length);
    const extra = n % members.length;
    let p = 0;
    members.forEach((m, i) => {
      const count = per + (i < extra ? 1 : 0);
      for (let k = 0; k < count; k++) out.get(m)?.push({ topic, partition: p++ });
    });
  }
  return out;
}

/** Round-robin assignment (Kafka's RoundRobinAssignor) over all partitions sorted by topic, partition. */
export function roundRobinAssign(
  subscriptions: ReadonlyMap<string, string[]>,
  partitionCounts: ReadonlyMap<string, number>,
): Map<string, TopicPartition[]> {
  const out = new Map<string, TopicPartition[]>([...subscriptions.keys()].map((m) => [m, []]));
  const members = [...subscriptions.keys()].sort();
  const topics = [...new Set([...subscriptions.values()].flat())].sort();
  let i = 0;
  for (const topic of topics) {
    for (let p = 0; p < (partitionCounts.get(topic) ?? 0); p++) {
      for (let tries = 0; tries < members.length; tries++) {
        const m = members[i++ % members.length] as string;
        if (subscriptions.get(m)?.includes(topic) === true) {
          out.get(m)?.push({ topic, partition: p });
          break;
        }
      }
    }
  }
  return out;
}

export class GroupMember {
  memberId = '';
  generationId = -1;
  assignment: TopicPartition[] = [];
  /** a heartbeat or commit said the group is rebalancing */
  needsRejoin = true;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly sessionTimeoutMs: number;
  private readonly rebalanceTimeoutMs: number;
  private fatal: Error | null = null;

  constructor(
    private readonly client: KafkaClient,
    readonly groupId: string,
    readonly topics: readonly string[],
    private readonly opts: MemberOptions = {},
  ) {
    this.sessionTimeoutMs = opts.sessionTimeoutMs ?? 10000;
    this.rebalanceTimeoutMs = opts.rebalanceTimeoutMs ?? 30000;
  }

  /** Joins (or rejoins) the group; resolves with this member's partitions. */
  async join(): Promise<TopicPartition[]> {
    this.stopHeartbeat();
    const subscription = encodeSubscription(this.topics);
    for (let attempt = 0; ; attempt++) {
      if (attempt > 20) throw new ClientError(ClientErrorCode.GAVE_UP, `could not join group '${this.groupId}' after ${attempt} attempts`);
      const join = await onCoordinator(this.client, this.groupId, async (c) => {
        const res = await c.request<JoinGroupResponse>(
          ApiKey.JoinGroup,
          (v): JoinGroupRequest => {
            const body: JoinGroupRequest = {
              groupId: this.groupId,
              sessionTimeoutMs: this.sessionTimeoutMs,
              memberId: this.memberId,
              protocolType: 'consumer',
              protocols: [
                { name: 'range', metadata: subscription },
                { name: 'roundrobin', metadata: subscription },
              ],
            };
            if (v >= 1) body.rebalanceTimeoutMs = this.rebalanceTimeoutMs;
            return body;
          },
          { timeoutMs: this.rebalanceTimeoutMs + this.client.options.requestTimeoutMs },
        );
        return { res: res.body, conn: c };
      });
      const j = join.res;
      if (j.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
        this.memberId = j.memberId;
        continue;
      }
      if (j.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) {
        this.memberId = '';
        continue;
      }
      if (j.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) continue;
      join.conn.check(j.errorCode, ApiKey.JoinGroup, `group '${this.groupId}'`);
      this.memberId = j.memberId;
      this.generationId = j.generationId;
      const protocol = j.protocolName ?? 'range';
      let assignments: { memberId: string; assignment: Buffer }[] = [];
      if (j.leader === j.memberId) {
        const subs = new Map(j.members.map((m) => [m.memberId, decodeSubscription(m.metadata)]));
        const wanted = [...new Set([...subs.values()].flat())];
        const md = await this.client.metadata(wanted);
        const counts = new Map(md.topics.filter((t) => t.errorCode === 0).map((t) => [t.name, t.partitions.length]));
        const plan = protocol === 'roundrobin' ? roundRobinAssign(subs, counts) : rangeAssign(subs, counts);
        assignments = [...plan].map(([memberId, parts]) => ({ memberId, assignment: encodeAssignment(parts) }));
      }
      const sync = await onCoordinator(this.client, this.groupId, async (c) => {
        const res = await c.request<SyncGroupResponse>(
          ApiKey.SyncGroup,
          (v): SyncGroupRequest => {
            const body: SyncGroupRequest = { groupId: this.groupId, generationId: this.generationId, memberId: this.memberId, assignments };
            if (v >= 5) {
              body.protocolType = 'consumer';
              body.protocolName = protocol;
            }
            return body;
          },
          {
            timeoutMs: this.rebalanceTimeoutMs + this.client.options.requestTimeoutMs,
            // the librdkafka mock answers errors with a null assignment: keep the error code
            fallback: (body, v) => ({ errorCode: body.readInt16BE(v >= 1 ? 4 : 0), assignment: Buffer.alloc(0) }),
          },
        );
        return { res: res.body, conn: c };
      });
      if (REJOIN.has(sync.res.errorCode)) {
        if (sync.res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = '';
        continue;
      }
      sync.conn.check(sync.res.errorCode, ApiKey.SyncGroup, `group '${this.groupId}'`);
      this.assignment = decodeAssignment(sync.res.assignment).filter((tp) => this.topics.includes(tp.topic));
      this.needsRejoin = false;
      this.startHeartbeat();
      this.opts.onNotice?.(
        `joined group '${this.groupId}' (generation ${this.generationId}, ${this.assignment.length} partition(s): ${this.assignment.map((tp) => `${tp.topic}-${tp.partition}`).join(', ') || 'none'})`,
      );
      return this.assignment;
    }
  }

  private startHeartbeat(): void {
    const every = Math.max(100, Math.floor(this.sessionTimeoutMs / 3));
    this.heartbeat = setInterval(() => void this.beat(), every);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat !== null) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async beat(): Promise<void> {
    try {
      const c = await this.client.coordinator(this.groupId);
      const res = await c.request<HeartbeatResponse>(ApiKey.Heartbeat, () => ({
        groupId: this.groupId,
        generationId: this.generationId,
        memberId: this.memberId,
      }));
      const code = res.body.errorCode;
      if (REJOIN.has(code)) {
        if (code === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = '';
        this.needsRejoin = true;
        this.stopHeartbeat();
      } else if (code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE) {
        await this.client.coordinator(this.groupId, true).catch(() => undefined);
      } else if (code !== 0) {
        c.check(code, ApiKey.Heartbeat, `group '${this.groupId}'`);
      }
    } catch (e) {
      if (e instanceof ClientError && e.retriable) return;
      this.fatal = e as Error;
      this.stopHeartbeat();
    }
  }

  /** Throws what broke the heartbeat, if anything did. */
  check(): void {
    if (this.fatal !== null) throw this.fatal;
  }

  /** Commits as this member; a rebalance makes it rejoin instead of failing (returns false). */
  async commit(offsets: readonly (TopicPartition & { offset: bigint })[]): Promise<boolean> {
    try {
      await commitOffsets(this.client, this.groupId, offsets, { generationId: this.generationId, memberId: this.memberId });
      return true;
    } catch (e) {
      if (e instanceof ClientError && e.kafkaCode !== undefined && REJOIN.has(e.kafkaCode)) {
        this.needsRejoin = true;
        return false;
      }
      throw e;
    }
  }

  /** Leaves the group (errors are ignored: the session times out anyway). */
  async leave(): Promise<void> {
    this.stopHeartbeat();
    if (this.memberId === '') return;
    try {
      const c = await this.client.coordinator(this.groupId);
      await c.request<LeaveGroupResponse>(
        ApiKey.LeaveGroup,
        (v) =>
          v >= 3 ? { groupId: this.groupId, members: [{ memberId: this.memberId }] } : { groupId: this.groupId, memberId: this.memberId },
        { timeoutMs: 5000 },
      );
    } catch {
      // leaving is best effort
    }
    this.memberId = '';
  }
}
