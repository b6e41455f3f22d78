/** The "consumer" protocol type's member metadata and assignments (a version int16, then the body). */
import { Reader } from '../../protocol/codec/reader.js';
import { Writer } from '../../protocol/codec/writer.js';
import {
  readConsumerProtocolAssignment,
  sizeConsumerProtocolAssignment,
  writeConsumerProtocolAssignment,
} from '../../protocol/generated/data/consumer-protocol-assignment.js';
import {
  readConsumerProtocolSubscription,
  sizeConsumerProtocolSubscription,
  writeConsumerProtocolSubscription,
} from '../../protocol/generated/data/consumer-protocol-subscription.js';
import type { TopicPartition } from './offsets.js';

/** A subscription, version 0 (every client and broker reads it). */
export function encodeSubscription(topics: readonly string[]): Buffer {
  const m = { topics: [...topics], userData: null };
  const w = Writer.alloc(2 + sizeConsumerProtocolSubscription(m, 0));
  w.int16(0);
  writeConsumerProtocolSubscription(w, m, 0);
  return w.done();
}

/** The topics of a member's subscription; [] when it cannot be read. */
export function decodeSubscription(buf: Buffer): string[] {
  try {
    const r = new Reader(buf);
    const version = r.int16();
    const sub = readConsumerProtocolSubscription(r, Math.min(Math.max(version, 0), 3));
    r.check();
    return sub.topics;
  } catch {
    return [];
  }
}

/** An assignment, version 0. */
export function encodeAssignment(parts: readonly TopicPartition[]): Buffer {
  const byTopic = new Map<string, number[]>();
  for (const p of parts) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  const m = { assignedPartitions: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })), userData: null };
  const w = Writer.alloc(2 + sizeConsumerProtocolAssignment(m, 0));
  w.int16(0);
  writeConsumerProtocolAssignment(w, m, 0);
  return w.done();
}

/** The partitions of an assignment; [] for an empty or unreadable one. */
export function decodeAssignment(buf: Buffer | null): TopicPartition[] {
  if (buf === null || buf.length < 2) return [];
  try {
    const r = new Reader(buf);
    const version = r.int16();
    const a = readConsumerProtocolAssignment(r, Math.min(Math.max(version, 0), 3));
    r.check();
    return a.assignedPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })));
  } catch {
    return [];
  }
}
