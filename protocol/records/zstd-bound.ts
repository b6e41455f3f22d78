import { GregorErrorCode, ProtocolError } from '../codec/errors.js';

/**
 * Walks the frames and block headers of zstd data (without decoding) to compute an upper bound on
 * the decompressed size, so that a small input cannot make the native decoder produce gigabytes.
 * Raw and RLE blocks state their output size; a compressed block yields at most the frame's block
 * maximum (min(window size, 128 KiB)). A declared content size is not trusted as the bound (the
 * decoder only compares it once the frame is done), but it shrinks the window of single-segment
 * frames, which tightens the per-block maximum.
 */

const ZSTD_MAGIC = 0xfd2fb528;
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const BLOCK_MAX = 128 << 10;
const FCS_BYTES = [0, 2, 4, 8] as const;
const DICT_BYTES = [0, 1, 2, 4] as const;

function fail(message: string): never {
  throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, `zstd: ${message}`);
}

export interface ZstdBound {
  /** Upper bound of the decompressed size. */
  bound: number;
  /** Largest window any frame declares (what a streaming decoder allocates). */
  maxWindow: number;
}

/** Upper bound of the decompressed size of `input` (one or more frames). Throws on malformed framing. */
export function zstdDecompressedBound(input: Buffer): ZstdBound {
  let p = 0;
  let total = 0;
  let maxWindow = 0;
  let frames = 0;
  while (p < input.length || frames === 0) {
    if (input.length - p < 4) fail('truncated frame magic');
    const magic = input.readUInt32LE(p);
    frames++;
    if ((magic & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      if (input.length - p < 8) fail('truncated skippable frame');
      const n = input.readUInt32LE(p + 4);
      if (n > input.length - p - 8) fail('truncated skippable frame');
      p += 8 + n;
      continue;
    }
    if (magic !== ZSTD_MAGIC) fail(`bad frame magic 0x${magic.toString(16)}`);
    p += 4;
    if (p >= input.length) fail('truncated frame header');
    const fhd = input[p++] ?? 0;
    const fcsFlag = fhd >>> 6;
    const singleSegment = (fhd & 0x20) !== 0;
    const hasChecksum = (fhd & 0x04) !== 0;
    if ((fhd & 0x08) !== 0) fail('reserved frame header bit set');
    let windowSize = 0;
    if (!singleSegment) {
      if (p >= input.length) fail('truncated window descriptor');
      const wd = input[p++] ?? 0;
      const windowLog = 10 + (wd >>> 3);
      const base = 2 ** windowLog;
      windowSize = base + (base / 8) * (wd & 7);
    }
    const dictBytes = DICT_BYTES[fhd & 3] ?? 0;
    const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : (FCS_BYTES[fcsFlag] ?? 0);
    if (input.length - p < dictBytes + fcsBytes) fail('truncated frame header');
    p += dictBytes;
    let contentSize = -1;
    if (fcsBytes === 1) contentSize = input[p] ?? 0;
    else if (fcsBytes === 2) contentSize = input.readUInt16LE(p) + 256;
    else if (fcsBytes === 4) contentSize = input.readUInt32LE(p);
    else if (fcsBytes === 8) contentSize = Number(input.readBigUInt64LE(p));
    p += fcsBytes;
    if (singleSegment) windowSize = contentSize;
    if (windowSize > maxWindow) maxWindow = windowSize;
    const blockMax = Math.min(windowSize, BLOCK_MAX);
    let frameBound = 0;
    for (;;) {
      if (input.length - p < 3) fail('truncated block header');
      const bh = (input[p] ?? 0) | ((input[p + 1] ?? 0) << 8) | ((input[p + 2] ?? 0) << 16);
      p += 3;
      const last = (bh & 1) === 1;
      const type = (bh >>> 1) & 3;
      const size = bh >>> 3;
      if (type === 3) fail('reserved block type');
      if (size > blockMax) fail('block larger than the frame maximum');
      const stored = type === 1 ? 1 : size;
      if (stored > input.length - p) fail('truncated block');
      p += stored;
      frameBound += type === 2 ? blockMax : size;
      if (last) break;
    }
    if (hasChecksum) {
      if (input.length - p < 4) fail('truncated content checksum');
      p += 4;
    }
    if (contentSize >= 0 && contentSize > frameBound) fail('declared content size exceeds what the blocks can hold');
    total += frameBound;
  }
  return { bound: total, maxWindow };
}
