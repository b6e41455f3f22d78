/**
 * The records of `__share_group_state`, as Kafka's share coordinator writes them (KIP-932's
 * share-coordinator schemas, written by hand), and their replay.
 *
 * Key (both types): int16 record type (0 ShareSnapshot, 1 ShareUpdate), GroupId (int16-length string),
 * TopicId (16 bytes), Partition (int32). A null value is a tombstone.
 * ShareSnapshot value: int16 version 0, then flexible: SnapshotEpoch (uint16), StateEpoch (int32),
 * LeaderEpoch (int32), StartOffset (int64), StateBatches, empty tags.
 * ShareUpdate value: int16 version 0, then flexible: SnapshotEpoch (int32), LeaderEpoch (int32),
 * StartOffset (int64), StateBatches (only the changed ones), empty tags.
 * StateBatches: compact array of FirstOffset int64, LastOffset int64, DeliveryState int8,
 * DeliveryCount int16, empty tags.
 *
 * Replay: a snapshot replaces a share partition's state; an update moves its start offset and
 * overwrites the state of the offsets its batches cover. The leader epoch (of the partition leader that
 * last read or wrote the state, which fences older leaders) is the highest one written.
 */
import { Reader } from '../../protocol/codec/reader.js';
import { sizeUvarint, Writer } from '../../protocol/codec/writer.js';
import type { PersistedRecordState } from './share-partition.js';

export const StateRecordType = { SHARE_SNAPSHOT: 0, SHARE_UPDATE: 1 } as const;
export type StateRecordType = (typeof StateRecordType)[keyof typeof StateRecordType];

export interface ShareSnapshot {
  groupId: string;
  topicId: string;
  partition: number;
  stateEpoch: number;
  /** the share partition's leader epoch the state was last read or written at (-1: none) */
  leaderEpoch: number;
  startOffset: bigint;
  batches: PersistedRecordState[];
}

export interface StateRecordKey {
  type: number;
  groupId: string;
  topicId: string;
  partition: number;
}

export function stateKey(type: StateRecordType, groupId: string, topicId: string, partition: number): Buffer {
  const w = Writer.alloc(2 + 2 + Buffer.byteLength(groupId) + 16 + 4);
  w.int16(type);
  w.string(groupId);
  w.uuid(topicId);
  w.int32(partition);
  return w.done();
}

function writeBatches(w: Writer, batches: readonly PersistedRecordState[]): void {
  w.compactArrayLength(batches.length);
  for (const b of batches) {
    w.int64(b.firstOffset);
    w.int64(b.lastOffset);
    w.int8(b.state);
    w.int16(b.deliveryCount);
    w.taggedFields([]);
  }
}

const batchesSize = (n: number): number => sizeUvarint(n + 1) + n * (8 + 8 + 1 + 2 + 1);

export function snapshotValue(s: Pick<ShareSnapshot, 'stateEpoch' | 'startOffset' | 'batches'> & { leaderEpoch?: number }): Buffer {
  const w = Writer.alloc(2 + 2 + 4 + 4 + 8 + batchesSize(s.batches.length) + 1);
  w.int16(0);
  w.uint16(s.stateEpoch & 0xffff);
  w.int32(s.stateEpoch);
  w.int32(s.leaderEpoch ?? -1);
  w.int64(s.startOffset);
  writeBatches(w, s.batches);
  w.taggedFields([]);
  return w.done();
}

export function updateValue(
  snapshotEpoch: number,
  startOffset: bigint,
  batches: readonly PersistedRecordState[],
  leaderEpoch = -1,
): Buffer {
  const w = Writer.alloc(2 + 4 + 4 + 8 + batchesSize(batches.length) + 1);
  w.int16(0);
  w.int32(snapshotEpoch);
  w.int32(leaderEpoch);
  w.int64(startOffset);
  writeBatches(w, batches);
  w.taggedFields([]);
  return w.done();
}

export function readStateKey(key: Buffer): StateRecordKey {
  const k = new Reader(key);
  const type = k.int16();
  return { type, groupId: k.string(), topicId: k.uuid(), partition: k.int32() };
}

function readBatches(r: Reader): PersistedRecordState[] {
  const n = r.compactArrayLength();
  const batches: PersistedRecordState[] = [];
  for (let i = 0; i < n; i++) {
    const firstOffset = r.int64();
    const lastOffset = r.int64();
    const state = r.int8();
    const deliveryCount = r.int16();
    r.taggedFields();
    batches.push({ firstOffset, lastOffset, state, deliveryCount });
  }
  return batches;
}

/** The state epoch, leader epoch, start offset and batches of a ShareSnapshot value. */
export function readSnapshotValue(value: Buffer): {
  stateEpoch: number;
  leaderEpoch: number;
  startOffset: bigint;
  batches: PersistedRecordState[];
} {
  const r = new Reader(value);
  r.int16();
  r.uint16();
  const stateEpoch = r.int32();
  const leaderEpoch = r.int32();
  const startOffset = r.int64();
  return { stateEpoch, leaderEpoch, startOffset, batches: readBatches(r) };
}

/** The leader epoch, start offset (-1: unchanged) and changed batches of a ShareUpdate value. */
export function readUpdateValue(value: Buffer): { leaderEpoch: number; startOffset: bigint; batches: PersistedRecordState[] } {
  const r = new Reader(value);
  r.int16();
  r.int32();
  const leaderEpoch = r.int32();
  const startOffset = r.int64();
  return { leaderEpoch, startOffset, batches: readBatches(r) };
}

/** `over` laid on top of `base` (both sorted, non-overlapping): the offsets `over` covers take its state. */
export function overlay(base: readonly PersistedRecordState[], over: readonly PersistedRecordState[]): PersistedRecordState[] {
  if (over.length === 0) return [...base];
  const out: PersistedRecordState[] = [];
  let j = 0;
  const push = (b: PersistedRecordState): void => {
    if (b.lastOffset >= b.firstOffset) out.push(b);
  };
  for (const b of base) {
    let cur: PersistedRecordState | undefined = b;
    while (cur !== undefined) {
      const o = over[j];
      if (o === undefined || o.firstOffset > cur.lastOffset) {
        push(cur);
        cur = undefined;
      } else if (o.lastOffset < cur.firstOffset) {
        push(o);
        j++;
      } else {
        push({ ...cur, lastOffset: o.firstOffset - 1n });
        const rest: PersistedRecordState | undefined =
          o.lastOffset < cur.lastOffset ? { ...cur, firstOffset: o.lastOffset + 1n } : undefined;
        if (rest === undefined) cur = undefined;
        else {
          push(o);
          j++;
          cur = rest;
        }
      }
    }
  }
  for (; j < over.length; j++) push(over[j] as PersistedRecordState);
  return out;
}

/** Replays `__share_group_state` records into the state of each share partition. */
export class StateReplay {
  private readonly state = new Map<string, ShareSnapshot | null>();

  /** Applies one record (ignores other record types). */
  apply(key: Buffer, value: Buffer | null): void {
    const k = readStateKey(key);
    if (k.type !== StateRecordType.SHARE_SNAPSHOT && k.type !== StateRecordType.SHARE_UPDATE) return;
    const id = `${k.groupId}\0${k.topicId}\0${k.partition}`;
    if (value === null) {
      this.state.set(id, null);
      return;
    }
    if (k.type === StateRecordType.SHARE_SNAPSHOT) {
      this.state.set(id, { groupId: k.groupId, topicId: k.topicId, partition: k.partition, ...readSnapshotValue(value) });
      return;
    }
    const s = this.state.get(id);
    if (s === undefined || s === null) return; // an update without its snapshot (pruned away with a deleted partition)
    const u = readUpdateValue(value);
    if (u.leaderEpoch > s.leaderEpoch) s.leaderEpoch = u.leaderEpoch;
    if (u.startOffset >= 0n) s.startOffset = u.startOffset;
    const kept = s.batches.filter((b) => b.lastOffset >= s.startOffset);
    s.batches = overlay(kept, u.batches);
  }

  /** The state of every share partition not deleted. */
  result(): ShareSnapshot[] {
    return [...this.state.values()].filter((s): s is ShareSnapshot => s !== null);
  }
}
