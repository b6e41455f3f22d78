/**
 * Fetch reads that stay in the file: for a consumer's Fetch on a plain TCP connection, the entries a
 * read returns are named by their place in the segment file (a FileSlice) instead of being copied
 * into memory, and the connection sends them with sendfile (lib/network/response-writer.ts), as
 * Kafka serves fetches with FileRecords.writeTo (transferTo). The broker then copies none of the
 * bytes it serves: it reads only the entry headers, to pick whole entries as readSegment does.
 *
 * A slice is made only where that is sure to pay and to be safe; otherwise the read goes the usual
 * way (readSegment), which handles every other case:
 * - the entries are large (at most MAX_SLICE_ENTRIES headers walked, the first few averaging at
 *   least 2 KiB) and together at least SLICE_MIN_BYTES: below that a copy costs less than the
 *   extra system calls;
 * - they are in the file (not still pending in memory) and the page cache holds all their pages
 *   (cachestat), so that sendfile, which cannot refuse to wait for the disk, never does;
 * - no check is owed on them: this process wrote them, or an earlier read or scan verified them
 *   (read-verify.ts checks the rest, and needs their bytes for it);
 * - every header is readable now from the page cache and sane.
 * The slice holds a descriptor of its own (a dup), closed by release() once the response was written,
 * so the segment may close or delete its file meanwhile.
 */
import fs from 'node:fs';
import { FileSlice } from '../../protocol/codec/writer.js';
import { fileSliceCalls } from './file-io.js';
import type { ReadLimits } from './log-read.js';
import { Picker } from './log-read.js';
import { HEADER_BYTES, parseEntryHeader } from './segment-format.js';
import type { LogSegment } from './segment.js';
import { isVerified } from './verified-ranges.js';

/** Fewer bytes than this are copied as before: the slice's own costs would outweigh the copy. */
export const SLICE_MIN_BYTES = 64 << 10;
/** More entries than this in one read: small batches, copied as before (one header read each would cost more). */
export const MAX_SLICE_ENTRIES = 32;
/** Entries averaging fewer bytes than this over the first SMALL_PROBE_ENTRIES walked: small, copied as before. */
const SMALL_ENTRY_BYTES = 2048;
const SMALL_PROBE_ENTRIES = 4;

/** A read's entries as a FileSlice: what the Fetch answers with, and what to release once it is written. */
export interface SliceRead {
  slice: FileSlice;
  /** the offset after the last entry */
  nextOffset: bigint;
  /** bytes of the slice (its length) */
  size: number;
  /** closes the slice's descriptor (idempotent) */
  release(): void;
}

/** Slices made, and reads that could have been one but went the usual way, by why (for tests and benches). */
export const sliceReads = { made: 0, small: 0, uncached: 0, unverified: 0, other: 0 };

/**
 * The entries readSegment would return from `startPosition`, as a FileSlice, or null when this read
 * should go the usual way (see the file comment).
 */
export function sliceSegment(seg: LogSegment, startPosition: number, lim: ReadLimits): SliceRead | null {
  const calls = fileSliceCalls();
  const fd = seg.fileDescriptor;
  if (calls === null || fd < 0) return null;
  const end = seg.writtenSize;
  if (lim.maxBytes < SLICE_MIN_BYTES || end - startPosition < SLICE_MIN_BYTES) return null;
  const head = Buffer.allocUnsafe(HEADER_BYTES);
  const picker = new Picker(lim);
  let first = -1;
  let p = startPosition;
  let entries = 0;
  let records = 0;
  let nextOffset = -1n;
  while (p < end && !picker.done) {
    // small entries show in the first few headers: a read of them stops walking here, at a few
    // syscalls' cost (one per header), and copies as before
    if (++entries > MAX_SLICE_ENTRIES || (entries > SMALL_PROBE_ENTRIES && p - startPosition < (entries - 1) * SMALL_ENTRY_BYTES))
      return miss('small');
    const want = Math.min(HEADER_BYTES, end - p);
    let got = 0;
    while (got < want) {
      const n = calls.preadNowait(fd, head, got, want - got, p + got);
      if (n <= 0) return miss(n === -11 ? 'uncached' : 'other');
      got += n;
    }
    const h = parseEntryHeader(head, 0, got, p);
    if (h === null || typeof h === 'string' || p + h.size > end) break; // a tail being written: take what came before
    if (p < seg.loadedSize && (h.baseOffset < seg.baseOffset || h.lastOffset >= seg.nextOffset)) return miss('other');
    const verdict = picker.consider(h.lastOffset, h.size);
    if (verdict === 'stop') break;
    if (verdict === 'take') {
      if (first < 0) first = p;
      records += h.magic >= 2 && h.size >= HEADER_BYTES ? head.readInt32BE(HEADER_BYTES - 4) : 1;
      nextOffset = h.lastOffset + 1n;
    }
    p += h.size;
  }
  if (first < 0) return miss('other');
  const size = picker.size;
  if (size < SLICE_MIN_BYTES) return miss('small');
  if (first < seg.loadedSize && !isVerified(seg.verified, first, Math.min(first + size, seg.loadedSize))) return miss('unverified');
  if (calls.uncachedPages(fd, first, size) !== 0) return miss('uncached');
  const own = calls.dupFd(fd);
  if (own < 0) return miss('other');
  sliceReads.made++;
  let open = true;
  return {
    slice: new FileSlice(own, first, size, records),
    nextOffset,
    size,
    release: () => {
      if (!open) return;
      open = false;
      fs.closeSync(own);
    },
  };
}

function miss(why: 'small' | 'uncached' | 'unverified' | 'other'): null {
  sliceReads[why]++;
  return null;
}
