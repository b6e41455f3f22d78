/** Per-partition admin results grouped by topic, in first-seen order (ElectLeaders, AlterPartitionReassignments). */
import { MetadataWriteError, type PartitionResult, type TopicPartitionRef } from '../metadata/store.js';

export function byTopic<T>(results: readonly PartitionResult[], row: (r: PartitionResult) => T): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of results) {
    let rows = out.get(r.topic);
    if (rows === undefined) out.set(r.topic, (rows = []));
    rows.push(row(r));
  }
  return out;
}

/** Every partition failed with the store's error (a MetadataWriteError's code; other errors propagate). */
export function failedWith(e: unknown, refs: readonly TopicPartitionRef[]): PartitionResult[] {
  if (!(e instanceof MetadataWriteError)) throw e;
  return refs.map((r) => ({ topic: r.topic, partition: r.partition, errorCode: e.errorCode, errorMessage: e.message }));
}
