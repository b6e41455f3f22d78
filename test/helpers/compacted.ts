/** Dirty compacted topics for the log cleaner's integration tests, and the check that a cleaning happened. */
import { expect } from 'chai';
import type kafkajs from 'kafkajs';
import { KafkajsPartitionReader } from './kafkajs-reader.js';

/** Small segments: a few rounds of updates fill several, and a cleaning shows in the bytes on disk. */
export const COMPACTED_CONFIG = { 'cleanup.policy': 'compact', 'segment.bytes': '4096' } as const;

/** Creates a compacted topic (COMPACTED_CONFIG plus `configs`). */
export async function createCompacted(
  admin: kafkajs.Admin,
  topic: string,
  partitions = 1,
  configs: Record<string, string> = {},
): Promise<void> {
  const configEntries = Object.entries({ ...COMPACTED_CONFIG, ...configs }).map(([name, value]) => ({ name, value }));
  await admin.createTopics({ topics: [{ topic, numPartitions: partitions, configEntries }] });
}

/** What writeDirty wrote to each partition: the latest value of every key, and the offset after its last record. */
export interface Dirty {
  latest: Map<string, string>;
  end: bigint;
}

/**
 * Writes `rounds` updates of `keys` keys to every partition, then a record too large for the
 * segment the updates end in (it starts a new segment): every update is below the active segment,
 * where the cleaner may clean it. Returns what each partition must read as once it is cleaned.
 */
export async function writeDirty(producer: kafkajs.Producer, topic: string, partitions: number, keys = 50, rounds = 20): Promise<Dirty[]> {
  const out: Dirty[] = [];
  for (let p = 0; p < partitions; p++) {
    const latest = new Map<string, string>();
    for (let r = 0; r < rounds; r++) {
      const messages = Array.from({ length: keys }, (_, i) => ({
        key: `key-${i}`,
        value: `p${p}-round-${r}-${'v'.repeat(20)}`,
        partition: p,
      }));
      await producer.send({ topic, messages });
      for (const m of messages) latest.set(m.key, m.value);
    }
    const [last] = await producer.send({ topic, messages: [{ key: 'filler', value: 'f'.repeat(3500), partition: p }] });
    latest.set('filler', 'f'.repeat(3500));
    out.push({ latest, end: BigInt(last?.baseOffset ?? '-1') + 1n });
  }
  return out;
}

/** Reads the partition from its start: one record per key, each key's latest value. */
export async function expectOnePerKey(bootstrap: string, topic: string, partition: number, want: Dirty): Promise<void> {
  const reader = new KafkajsPartitionReader([bootstrap]);
  await reader.connect(topic);
  try {
    const got = await reader.readAll(topic, partition, 0n, want.end);
    const keys = got.map((m) => String(m.key));
    expect(new Set(keys).size, `${topic}-${partition}: one record per key`).to.equal(keys.length);
    expect(new Map(got.map((m) => [String(m.key), String(m.value)]))).to.deep.equal(want.latest);
  } finally {
    await reader.disconnect();
  }
}
