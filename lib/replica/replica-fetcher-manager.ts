/**
 * The replica fetchers of one broker: one per leader it follows partitions of (Kafka's
 * ReplicaFetcherManager with num.replica.fetchers=1). Calls run one at a time, in call order, so a
 * partition moved between leaders is off the old leader's fetcher (no append of it in flight)
 * before the new one starts on it; a fetcher left without partitions is closed.
 */
import type { BrokerAddress } from '../client/address.js';
import type { PartitionLog } from '../log/partition-log.js';
import { ReplicaFetcher, partitionKey, type FetcherPartition, type ReplicaFetcherSettings } from './replica-fetcher.js';

interface Following {
  leaderId: number;
  leaderEpoch: number;
  topicId: string;
  log: PartitionLog;
}

export class ReplicaFetcherManager {
  private readonly fetchers = new Map<number, ReplicaFetcher>();
  private readonly following = new Map<string, Following>();
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly addressOf: (nodeId: number) => BrokerAddress | undefined,
    private readonly settings: ReplicaFetcherSettings,
  ) {}

  /** The leader each followed partition is fetched from (tests, metrics). */
  leaderOf(topic: string, partition: number): number | undefined {
    return this.following.get(partitionKey(topic, partition))?.leaderId;
  }

  /** Partitions followed, over all fetchers. */
  get partitionCount(): number {
    return this.following.size;
  }

  /** Leaders with a fetcher. */
  get leaders(): number[] {
    return [...this.fetchers.keys()];
  }

  /** Follow `p` from `leaderId` (moves it off another leader's fetcher first; same leader and epoch: no-op; new epoch: truncate again). */
  follow(p: FetcherPartition, leaderId: number): Promise<void> {
    return this.serial(async () => {
      const key = partitionKey(p.topic, p.partition);
      const cur = this.following.get(key);
      if (
        cur !== undefined &&
        cur.leaderId === leaderId &&
        cur.leaderEpoch === p.leaderEpoch &&
        cur.log === p.log &&
        cur.topicId === p.topicId
      ) {
        return;
      }
      if (cur !== undefined && cur.leaderId !== leaderId) await this.detach(p.topic, p.partition, cur.leaderId);
      let f = this.fetchers.get(leaderId);
      if (f === undefined) {
        f = new ReplicaFetcher(leaderId, () => this.addressOf(leaderId), this.settings);
        this.fetchers.set(leaderId, f);
      }
      this.following.set(key, { leaderId, leaderEpoch: p.leaderEpoch, topicId: p.topicId, log: p.log });
      f.addPartitions([p]);
    });
  }

  /** Stops following the partition; resolves once no append of it is in flight. */
  unfollow(topic: string, partition: number): Promise<void> {
    return this.serial(async () => {
      const cur = this.following.get(partitionKey(topic, partition));
      if (cur !== undefined) await this.detach(topic, partition, cur.leaderId);
    });
  }

  /** Closes every fetcher (after the calls made before it). */
  shutdown(): Promise<void> {
    return this.serial(async () => {
      this.closed = true;
      const all = [...this.fetchers.values()];
      this.fetchers.clear();
      this.following.clear();
      await Promise.all(all.map((f) => f.close()));
    }, true);
  }

  private async detach(topic: string, partition: number, leaderId: number): Promise<void> {
    this.following.delete(partitionKey(topic, partition));
    const f = this.fetchers.get(leaderId);
    if (f === undefined) return;
    await f.removePartitions([{ topic, partition }]);
    if (f.partitionCount === 0) {
      this.fetchers.delete(leaderId);
      await f.close();
    }
  }

  private serial(op: () => Promise<void>, whenClosed = false): Promise<void> {
    const run = this.queue.then(() => {
      if (this.closed && !whenClosed) throw new Error('the replica fetcher manager is shut down');
      return op();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}
