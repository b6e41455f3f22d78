/**
 * Share sessions (KIP-932): per (group, member) the partitions a share consumer fetches from this
 * broker and the epoch its next request must carry. Epoch 0 opens a session (replacing one the member
 * had), -1 closes it, any other must equal the expected epoch, which then moves on (past INT32_MAX
 * it wraps to 1).
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';

export interface ShareSessionPartition {
  topicId: string;
  partition: number;
}

export class ShareSession {
  /** the epoch the next request must carry */
  nextEpoch = 1;
  readonly partitions = new Map<string, ShareSessionPartition>();

  constructor(
    readonly groupId: string,
    readonly memberId: string,
  ) {}

  add(topicId: string, partition: number): void {
    this.partitions.set(`${topicId}:${partition}`, { topicId, partition });
  }

  remove(topicId: string, partition: number): void {
    this.partitions.delete(`${topicId}:${partition}`);
  }
}

export const FINAL_EPOCH = -1;
export const INITIAL_EPOCH = 0;

export class ShareSessionCache {
  private readonly sessions = new Map<string, ShareSession>();

  /** `onGroupEmpty`: the last share session of a group on this broker closed (Kafka's ShareGroupListener). */
  constructor(
    private readonly maxSessions: number,
    private readonly onGroupEmpty?: (groupId: string) => void,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * The session a request with `epoch` works in: a new one for 0, the member's for -1 or a matching
   * epoch (whose expected epoch moves on); otherwise the error code.
   */
  open(groupId: string, memberId: string, epoch: number): ShareSession | number {
    const key = `${groupId}\0${memberId}`;
    if (epoch === INITIAL_EPOCH) {
      if (!this.sessions.has(key) && this.sessions.size >= this.maxSessions) return ErrorCode.SHARE_SESSION_NOT_FOUND;
      const s = new ShareSession(groupId, memberId);
      this.sessions.set(key, s);
      return s;
    }
    const s = this.sessions.get(key);
    if (s === undefined) return ErrorCode.SHARE_SESSION_NOT_FOUND;
    if (epoch === FINAL_EPOCH) return s;
    if (epoch !== s.nextEpoch) return ErrorCode.INVALID_SHARE_SESSION_EPOCH;
    s.nextEpoch = epoch === 2147483647 ? 1 : epoch + 1;
    return s;
  }

  close(s: ShareSession): void {
    const key = `${s.groupId}\0${s.memberId}`;
    if (this.sessions.get(key) !== s) return;
    this.sessions.delete(key);
    this.emptied(s.groupId);
  }

  /** The member's session, if it has one. */
  get(groupId: string, memberId: string): ShareSession | undefined {
    return this.sessions.get(`${groupId}\0${memberId}`);
  }

  /** How many members' sessions fetch from the partition for the group. */
  sharers(groupId: string, topicId: string, partition: number): number {
    const key = `${topicId}:${partition}`;
    let n = 0;
    for (const s of this.sessions.values()) if (s.groupId === groupId && s.partitions.has(key)) n++;
    return n;
  }

  /** Drops the member's session (it left the group). */
  drop(groupId: string, memberId: string): void {
    if (this.sessions.delete(`${groupId}\0${memberId}`)) this.emptied(groupId);
  }

  /** Whether some member of the group has a share session here. */
  hasGroup(groupId: string): boolean {
    for (const s of this.sessions.values()) if (s.groupId === groupId) return true;
    return false;
  }

  private emptied(groupId: string): void {
    if (this.onGroupEmpty !== undefined && !this.hasGroup(groupId)) this.onGroupEmpty(groupId);
  }
}
