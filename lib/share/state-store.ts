/**
 * The partition leader's side of durable share-partition state: what changed in a share partition is
 * written through the persister (persister.ts) to its share coordinator, which keeps it in
 * `__share_group_state` as Kafka does (state-coordinator.ts). A write carries either the changed offset
 * ranges (merged there into a ShareUpdate record) or, when the window was replaced or an earlier write
 * failed, the whole state under a higher state epoch (a ShareSnapshot record). ACQUIRED records are
 * written as AVAILABLE on replay: after a restart or a failover their locks are gone. Writes are
 * coalesced per share partition; an acknowledgement is answered only once the write holding it is done.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { SharePartition } from './share-partition.js';
import type { SharePersister } from './persister.js';

export { SHARE_STATE_TOPIC } from './state-coordinator.js';

interface Pending {
  /** the SharePartition.stateEpoch (change count) the last finished write held */
  written: number;
  running: Promise<void> | null;
  /** the state epoch of the persisted state (Kafka's: raised by each write that replaces it) */
  stateEpoch: number;
}

export interface ShareStateStoreOptions {
  /** how long a change no request waits for may wait for the next one (one write for both) */
  lingerMs: number;
  /** the leader epoch of the partition a share partition belongs to (fences an old leader's writes) */
  leaderEpoch(topicId: string, partition: number): number;
  /**
   * The share coordinator holds a newer state epoch (InitializeShareGroupState: an admin moved the
   * offsets): this copy is stale and goes, so the next use reads the new state (Kafka fences it too).
   */
  onFenced?(sp: SharePartition): void;
}

export class ShareStateStore {
  private readonly pending = new Map<SharePartition, Pending>();
  private readonly scheduled = new Set<SharePartition>();

  constructor(
    private readonly persister: SharePersister,
    private readonly opts: ShareStateStoreOptions,
    private readonly logger: Logger,
  ) {}

  /** A share partition restored from persisted state: its next writes continue that state epoch. */
  restored(sp: SharePartition, stateEpoch: number): void {
    this.pending.set(sp, { written: sp.stateEpoch, running: null, stateEpoch });
  }

  /**
   * A change no one waits for (a release, a lock expiry): written within `lingerMs`, together with what
   * follows it (Kafka's share.coordinator.append.linger.ms), unless a waiter forces it sooner.
   */
  schedule(sp: SharePartition): void {
    if (this.scheduled.has(sp)) return;
    this.scheduled.add(sp);
    const t = setTimeout(() => {
      this.scheduled.delete(sp);
      void this.persist(sp);
    }, this.opts.lingerMs);
    t.unref();
  }

  /** Writes the partition's state unless its current state epoch is already written; resolves once it is. */
  persist(sp: SharePartition): Promise<void> {
    let p = this.pending.get(sp);
    if (p === undefined) this.pending.set(sp, (p = { written: -1, running: null, stateEpoch: 0 }));
    if (p.written >= sp.stateEpoch && p.running === null) return Promise.resolve();
    if (p.running !== null) {
      const current = p;
      return p.running.then(() => (current.written >= sp.stateEpoch ? undefined : this.persist(sp)));
    }
    const run = this.writeLoop(sp, p);
    p.running = run;
    return run;
  }

  /** Tombstones of deleted share partitions. */
  async forget(sps: readonly SharePartition[]): Promise<void> {
    for (const sp of sps) {
      this.pending.delete(sp);
      const e = await this.persister.delete(sp.groupId, sp.topicId, sp.partition);
      if (e !== ErrorCode.NONE)
        this.logger.warn(
          { group: sp.groupId, partition: sp.partition, errorCode: e },
          'GREGOR_ERR_SHARE_STATE_DELETE: share-partition state not deleted',
        );
    }
  }

  /** A share partition this broker no longer leads: nothing more is written for it. */
  drop(sp: SharePartition): void {
    this.pending.delete(sp);
    this.scheduled.delete(sp);
  }

  private async writeLoop(sp: SharePartition, p: Pending): Promise<void> {
    try {
      do {
        const epoch = sp.stateEpoch;
        const changes = sp.takeChanges();
        const stateEpoch = changes === null ? p.stateEpoch + 1 : p.stateEpoch;
        const errorCode = await this.persister.write(sp.groupId, sp.topicId, sp.partition, {
          stateEpoch,
          leaderEpoch: this.opts.leaderEpoch(sp.topicId, sp.partition),
          startOffset: sp.startOffset,
          batches: changes ?? sp.stateBatches(),
        });
        if (errorCode === ErrorCode.FENCED_STATE_EPOCH && this.opts.onFenced !== undefined) {
          this.opts.onFenced(sp);
          return;
        }
        if (errorCode !== ErrorCode.NONE) {
          sp.needSnapshot(); // what this write held is not stored: the next one writes everything
          throw new Error(`share coordinator answered error ${errorCode}`);
        }
        p.stateEpoch = stateEpoch;
        p.written = epoch;
      } while (p.written < sp.stateEpoch && this.pending.get(sp) === p); // changed while it was written: once more
    } catch (err) {
      this.logger.warn(
        { err, group: sp.groupId, partition: sp.partition },
        'GREGOR_ERR_SHARE_STATE_WRITE: share-partition state not written',
      );
    } finally {
      p.running = null;
    }
  }
}
