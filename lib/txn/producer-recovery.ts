/**
 * Rebuilding a partition's producer state when its log opens: the newest valid snapshot at or below
 * the log end, then a replay of every batch after it (Kafka's rebuildProducerState). The replay also
 * rebuilds the aborted-transaction index of the segments it covers, so a `.txnindex` that missed
 * entries in a crash (they are written with the other indexes) is made whole again.
 */
import fsp from 'node:fs/promises';
import { BatchAttribute, BatchField } from '../../protocol/records/index.js';
import type { LogLogger } from '../log/log-loader.js';
import { walkSegmentSync } from '../log/log-read.js';
import type { LogSegment } from '../log/segment.js';
import { AppendOrigin, type ProducerBatchSource, type ProducerStateManager, type ProducerStateEntry } from './producer-state.js';
import { deleteSnapshot, parseSnapshot, snapshotPath } from './producer-snapshot.js';

export interface ProducerRecovery {
  /** Offsets of the snapshot files kept, newest first. */
  snapshots: bigint[];
  /** Where the replay started, and how many producer batches it applied. */
  replayedFrom: bigint;
  replayed: number;
}

/** How many snapshot files a partition keeps. */
export const SNAPSHOTS_KEPT = 2;

/** `snapshots`: the offsets of the snapshot files in `dir`, newest first (the loader lists them). */
export async function recoverProducerState(
  dir: string,
  segments: readonly LogSegment[],
  snapshots: readonly bigint[],
  producers: ProducerStateManager,
  logEndOffset: bigint,
  logger: LogLogger,
): Promise<ProducerRecovery> {
  const first = segments[0]?.baseOffset ?? logEndOffset;
  let loaded: ProducerStateEntry[] | null = null;
  let from = first;
  const kept: bigint[] = [];
  for (const offset of snapshots) {
    if (offset > logEndOffset || loaded !== null) {
      if (offset > logEndOffset || kept.length >= SNAPSHOTS_KEPT) {
        await deleteSnapshot(dir, offset);
        continue;
      }
      kept.push(offset);
      continue;
    }
    const parsed = parseSnapshot(await fsp.readFile(snapshotPath(dir, offset)).catch(() => Buffer.alloc(0)));
    if (parsed === null) {
      logger.warn({ dir, snapshot: offset.toString() }, 'ignoring an unreadable producer-state snapshot');
      await deleteSnapshot(dir, offset);
      continue;
    }
    loaded = parsed;
    from = offset;
    kept.push(offset);
  }
  // an unreadable .txnindex below the snapshot cannot be rebuilt from it: replay the whole log
  const damaged = segments.find((s) => !s.txnIndexValid);
  if (damaged !== undefined && damaged.baseOffset < from) {
    logger.warn({ dir, segment: damaged.baseOffset.toString() }, 'rebuilding an unreadable transaction index from the log');
    loaded = null;
    from = first;
  }
  if (from < first) from = first;
  producers.load(loaded ?? []);
  for (const s of segments) s.txnIndex.truncateTo(from);
  const replayed = replay(segments, producers, from, logEndOffset, logger);
  if (replayed > 0)
    logger.info({ dir, from: from.toString(), batches: replayed, producers: producers.size }, 'producer state rebuilt from the log');
  return { snapshots: kept, replayedFrom: from, replayed };
}

/** Applies every producer batch in [from, logEndOffset) to `producers`; returns how many. */
function replay(
  segments: readonly LogSegment[],
  producers: ProducerStateManager,
  from: bigint,
  logEndOffset: bigint,
  logger: LogLogger,
): number {
  let n = 0;
  for (const seg of segments) {
    if (seg.nextOffset <= from || seg.size === 0) continue;
    const start = from > seg.baseOffset ? seg.offsetIndex.lookup(from).position : 0;
    walkSegmentSync(seg, start, (h, bytes, head) => {
      if (h.lastOffset < from || h.magic !== 2 || head.length < BatchField.RECORDS) return false;
      if (head.readBigInt64BE(BatchField.PRODUCER_ID) < 0n) return false;
      const isControl = (head.readInt16BE(BatchField.ATTRIBUTES) & BatchAttribute.CONTROL) !== 0;
      const src: ProducerBatchSource = { buf: isControl ? bytes() : head, magic: 2, firstOffset: h.baseOffset, lastOffset: h.lastOffset };
      let plan;
      try {
        plan = producers.analyze([src], AppendOrigin.REPLICATION);
      } catch (err) {
        logger.warn(
          { err, dir: seg.logPath, offset: h.baseOffset.toString() },
          'skipping an unreadable transaction marker in the producer-state replay',
        );
        return false;
      }
      if (plan !== null && !('duplicate' in plan)) {
        for (const a of producers.apply(plan, logEndOffset)) seg.txnIndex.append(a);
        n++;
      }
      return false;
    });
  }
  return n;
}
