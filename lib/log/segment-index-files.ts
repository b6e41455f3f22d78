/**
 * Writing a segment's index files (`.index`, `.timeindex`, `.txnindex`): the entries added since the
 * last write, or the whole file after a truncation or a rebuild.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { OffsetIndex, TimeIndex } from './indexes.js';
import { type TransactionIndex, TXN_INDEX_ENTRY_SIZE } from './transaction-index.js';

export interface SegmentIndexes {
  readonly offsetIndex: OffsetIndex;
  readonly timeIndex: TimeIndex;
  readonly txnIndex: TransactionIndex;
  readonly indexPath: string;
  readonly timeIndexPath: string;
  readonly txnIndexPath: string;
}

/** Writes what the segment's indexes hold and their files do not yet. */
export async function writeIndexFiles(seg: SegmentIndexes): Promise<void> {
  for (const [idx, file] of [
    [seg.offsetIndex, seg.indexPath],
    [seg.timeIndex, seg.timeIndexPath],
  ] as const) {
    if (!idx.needsRewrite && idx.persisted === idx.entries && fs.existsSync(file)) continue;
    const from = idx.needsRewrite ? 0 : idx.persisted;
    const data = idx.serialize(from);
    // a new empty index holds nothing to lose (if a crash takes the file, the next open rebuilds
    // it); a rewrite after a truncation must reach the disk, or stale entries could come back
    const mustSync = data.length > 0 || idx.needsRewrite;
    const fh = await fsp.open(file, idx.needsRewrite || from === 0 ? 'w' : 'r+');
    try {
      await fh.write(data, 0, data.length, from * idx.entrySize);
      if (mustSync) await fh.sync();
    } finally {
      await fh.close();
    }
    idx.persisted = idx.entries;
    idx.needsRewrite = false;
  }
  await writeTxnIndexFile(seg.txnIndex, seg.txnIndexPath);
}

async function writeTxnIndexFile(idx: TransactionIndex, file: string): Promise<void> {
  if (!idx.needsRewrite && idx.persisted === idx.length) return;
  if (idx.length === 0) {
    await fsp.rm(file, { force: true });
  } else {
    const from = idx.needsRewrite ? 0 : idx.persisted;
    const data = idx.serialize(from);
    const fh = await fsp.open(file, from === 0 ? 'w' : 'r+');
    try {
      await fh.write(data, 0, data.length, from * TXN_INDEX_ENTRY_SIZE);
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
  idx.persisted = idx.length;
  idx.needsRewrite = false;
}
