import zlib from 'node:zlib';
import { fzstdModule, snappyModule, zstdModule } from './native.js';
import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { lz4FrameCompress, lz4FrameDecompress } from './lz4-frame.js';
import { zstdDecompressedBound } from './zstd-bound.js';

/** Compression codec ids as they appear in the low 3 attribute bits of batches and messages. */
export const CompressionCodec = {
  NONE: 0,
  GZIP: 1,
  SNAPPY: 2,
  LZ4: 3,
  ZSTD: 4,
} as const;
export type CompressionCodec = (typeof CompressionCodec)[keyof typeof CompressionCodec];

export const COMPRESSION_CODEC_MASK = 0x07;

export function isCompressionCodec(v: number): v is CompressionCodec {
  return Number.isInteger(v) && v >= 0 && v <= 4;
}

export interface CompressOptions {
  /** Message format the data is for (decides the LZ4 header-checksum form); default 2. */
  magic?: number;
  /** Codec level (gzip 1-9, zstd 1-22); codec default when absent. */
  level?: number;
  /** Snappy framing; default 'xerial' (what Kafka's Java producer writes). */
  snappyFraming?: 'xerial' | 'raw';
}

export interface DecompressOptions {
  /** Refuse to produce more than this many bytes. Required: there is no safe default. */
  maxOutput: number;
  /** Message format the data came in (magic 0 accepts the old LZ4 header checksum); default 2. */
  magic?: number;
}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_SIZE = 16;
const XERIAL_BLOCK_SIZE = 32 << 10;

function failed(codec: string, err: unknown): ProtocolError {
  if (err instanceof ProtocolError) return err;
  const msg = err instanceof Error ? err.message : String(err);
  return new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, `${codec}: ${msg}`);
}

function tooLarge(codec: string, size: number, limit: number): ProtocolError {
  return new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, `${codec}: decompressed size ${size} exceeds the limit of ${limit} bytes`);
}

function unsupported(codec: number): ProtocolError {
  return new ProtocolError(GregorErrorCode.UNSUPPORTED_COMPRESSION, `unknown compression codec ${codec}`);
}

/** Compresses `data` with `codec`. NONE returns the input. */
export function compress(codec: number, data: Buffer, opts: CompressOptions = {}): Buffer {
  switch (codec) {
    case CompressionCodec.NONE:
      return data;
    case CompressionCodec.GZIP:
      try {
        return zlib.gzipSync(data, opts.level === undefined ? {} : { level: opts.level });
      } catch (err) {
        throw failed('gzip', err);
      }
    case CompressionCodec.SNAPPY:
      try {
        return opts.snappyFraming === 'raw' ? snappyModule().compressSync(data) : xerialCompress(data);
      } catch (err) {
        throw failed('snappy', err);
      }
    case CompressionCodec.LZ4:
      try {
        return lz4FrameCompress(data, opts.magic ?? 2);
      } catch (err) {
        throw failed('lz4', err);
      }
    case CompressionCodec.ZSTD:
      try {
        return new (zstdModule().Encoder)(opts.level ?? 3).encodeSync(data);
      } catch (err) {
        throw failed('zstd', err);
      }
    default:
      throw unsupported(codec);
  }
}

/**
 * Decompresses `data`. Every failure, including output over `maxOutput`, is a ProtocolError
 * (COMPRESSION_FAILED, or UNSUPPORTED_COMPRESSION for an unknown codec).
 */
export function decompress(codec: number, data: Buffer, opts: DecompressOptions): Buffer {
  const limit = opts.maxOutput;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new TypeError(`maxOutput must be a non-negative integer`);
  switch (codec) {
    case CompressionCodec.NONE:
      if (data.length > limit) throw tooLarge('none', data.length, limit);
      return data;
    case CompressionCodec.GZIP: {
      let out: Buffer;
      try {
        out = zlib.gunzipSync(data, { maxOutputLength: Math.max(1, limit) });
      } catch (err) {
        if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge('gzip', limit + 1, limit);
        throw failed('gzip', err);
      }
      if (out.length > limit) throw tooLarge('gzip', out.length, limit);
      return out;
    }
    case CompressionCodec.SNAPPY:
      try {
        return snappyDecompress(data, limit);
      } catch (err) {
        throw failed('snappy', err);
      }
    case CompressionCodec.LZ4:
      try {
        return lz4FrameDecompress(data, limit, opts.magic ?? 2);
      } catch (err) {
        throw failed('lz4', err);
      }
    case CompressionCodec.ZSTD: {
      const { bound, maxWindow } = zstdDecompressedBound(data);
      // Fast path: the framing proves the output fits, so the native one-shot decoder is safe.
      if (bound <= limit) {
        let out: Buffer;
        try {
          out = new (zstdModule().Decoder)().decodeSync(data);
        } catch (err) {
          throw failed('zstd', err);
        }
        if (out.length > limit) throw tooLarge('zstd', out.length, limit);
        return out;
      }
      return zstdStreamBounded(data, limit, maxWindow);
    }
    default:
      throw unsupported(codec);
  }
}

/** Largest window the streaming fallback allocates beyond the output limit itself. */
const ZSTD_STREAM_WINDOW_CAP = 8 << 20;

/**
 * Slow path for zstd data whose block headers alone cannot prove it fits (compressed blocks only
 * bound their output by the block maximum): a pure-JS streaming decoder, stopped as soon as the
 * output passes the limit.
 */
function zstdStreamBounded(data: Buffer, limit: number, maxWindow: number): Buffer {
  if (maxWindow > Math.max(limit, ZSTD_STREAM_WINDOW_CAP)) {
    throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, `zstd: window of ${maxWindow} bytes is over the limit`);
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const stream = new (fzstdModule().Decompress)((chunk: Uint8Array) => {
    total += chunk.length;
    if (total > limit) throw tooLarge('zstd', total, limit);
    if (chunk.length > 0) chunks.push(chunk.slice());
  });
  try {
    stream.push(data, true);
  } catch (err) {
    throw failed('zstd', err);
  }
  const out = Buffer.allocUnsafe(total);
  let p = 0;
  for (const c of chunks) {
    out.set(c, p);
    p += c.length;
  }
  return out;
}

/** Length prefix of a raw snappy block (uvarint), or -1 when malformed. */
function snappyLength(buf: Buffer, start: number, end: number): number {
  let result = 0;
  for (let i = 0; i < 5 && start + i < end; i++) {
    const b = buf[start + i] ?? 0;
    result += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) return result;
  }
  return -1;
}

function rawSnappy(block: Buffer, budget: number): Buffer {
  const n = snappyLength(block, 0, block.length);
  if (n < 0) throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, 'snappy: bad length prefix');
  if (n > budget) throw tooLarge('snappy', n, budget);
  const out = snappyModule().uncompressSync(block, { asBuffer: true });
  if (typeof out === 'string' || out.length !== n) {
    throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, 'snappy: length mismatch');
  }
  return out;
}

function snappyDecompress(data: Buffer, limit: number): Buffer {
  if (data.length < XERIAL_HEADER_SIZE || !data.subarray(0, 8).equals(XERIAL_MAGIC)) return rawSnappy(data, limit);
  // xerial framing: magic, version int32, compatible-version int32, then [int32 size, raw block]*
  const parts: Buffer[] = [];
  let total = 0;
  let p = XERIAL_HEADER_SIZE;
  while (p < data.length) {
    if (data.length - p < 4) throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, 'snappy: truncated xerial block size');
    const n = data.readInt32BE(p);
    p += 4;
    if (n < 0 || n > data.length - p) throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, 'snappy: truncated xerial block');
    const block = rawSnappy(data.subarray(p, p + n), limit - total);
    total += block.length;
    parts.push(block);
    p += n;
  }
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, total);
}

function xerialCompress(data: Buffer): Buffer {
  const header = Buffer.alloc(XERIAL_HEADER_SIZE);
  XERIAL_MAGIC.copy(header, 0);
  header.writeInt32BE(1, 8);
  header.writeInt32BE(1, 12);
  const parts: Buffer[] = [header];
  for (let p = 0; p < data.length; p += XERIAL_BLOCK_SIZE) {
    const block = snappyModule().compressSync(data.subarray(p, Math.min(data.length, p + XERIAL_BLOCK_SIZE)));
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(block.length, 0);
    parts.push(len, block);
  }
  return Buffer.concat(parts);
}
