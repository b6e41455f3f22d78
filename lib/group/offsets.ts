/** Committed offsets per group, as replayed from and written to `__consumer_offsets`. */

export interface OffsetAndMetadata {
  offset: bigint;
  leaderEpoch: number;
  metadata: string;
  commitTimestamp: number;
  /** Only for commits made with an explicit retention time (OffsetCommit v2–v4). */
  expireTimestamp: number | null;
  /** Offset of the record in `__consumer_offsets` (orders plain and transactional commits). */
  recordOffset?: bigint;
}

export class OffsetStore {
  private readonly byGroup = new Map<string, Map<string, Map<number, OffsetAndMetadata>>>();

  get(group: string, topic: string, partition: number): OffsetAndMetadata | undefined {
    return this.byGroup.get(group)?.get(topic)?.get(partition);
  }

  put(group: string, topic: string, partition: number, o: OffsetAndMetadata): void {
    let topics = this.byGroup.get(group);
    if (topics === undefined) this.byGroup.set(group, (topics = new Map<string, Map<number, OffsetAndMetadata>>()));
    let parts = topics.get(topic);
    if (parts === undefined) topics.set(topic, (parts = new Map<number, OffsetAndMetadata>()));
    parts.set(partition, o);
  }

  remove(group: string, topic: string, partition: number): boolean {
    const topics = this.byGroup.get(group);
    const parts = topics?.get(topic);
    if (topics === undefined || parts === undefined || !parts.delete(partition)) return false;
    if (parts.size === 0) topics.delete(topic);
    if (topics.size === 0) this.byGroup.delete(group);
    return true;
  }

  removeGroup(group: string): void {
    this.byGroup.delete(group);
  }

  hasOffsets(group: string): boolean {
    return this.byGroup.has(group);
  }

  groups(): IterableIterator<string> {
    return this.byGroup.keys();
  }

  /** Every (topic, partition, offset) of the group. */
  *all(group: string): Generator<{ topic: string; partition: number; offset: OffsetAndMetadata }> {
    const topics = this.byGroup.get(group);
    if (topics === undefined) return;
    for (const [topic, parts] of topics) for (const [partition, offset] of parts) yield { topic, partition, offset };
  }
}
