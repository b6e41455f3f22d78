import { lz4Module } from './native.js';

const lz4CompressBlock = (data: Buffer): Buffer => lz4Module().compressSync(data);
const lz4UncompressBlock = (data: Buffer, dict?: Buffer): Buffer =>
  dict === undefined ? lz4Module().uncompressSync(data) : lz4Module().uncompressSync(data, dict);
import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { xxhash32 } from './xxhash32.js';

/**
 * The LZ4 frame format as Kafka uses it, around raw LZ4 blocks. The frame is parsed here; blocks are
 * compressed and decompressed natively. The native block decoder takes the output size from a 4-byte
 * prefix and allocates it, so each block is handed over with a prefix of at most the frame's block
 * maximum and the room left under the caller's limit: output stays bounded, a block that would
 * exceed it fails.
 *
 * Kafka's pre-0.10 writer (message format magic 0) computed the header checksum over the 4 magic
 * bytes plus the descriptor instead of the descriptor alone (KAFKA-1493): we accept that form when
 * reading magic 0 and write it when writing magic 0.
 */

const FRAME_MAGIC = 0x184d2204;
const SKIPPABLE_MASK = 0xfffffff0;
const SKIPPABLE_MAGIC = 0x184d2a50;
const BLOCK_SIZES: Record<number, number> = { 4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20 };
const WRITE_BLOCK_SIZE = 64 << 10;
const WRITE_BD = 0x40; // 64 KiB blocks, as Kafka's Java writer uses

function fail(message: string): never {
  throw new ProtocolError(GregorErrorCode.COMPRESSION_FAILED, `lz4: ${message}`);
}

/** A growable output buffer that refuses to grow past `limit`. */
class Output {
  buf: Buffer;
  pos = 0;
  constructor(
    initial: number,
    readonly limit: number,
  ) {
    this.buf = Buffer.allocUnsafe(Math.max(0, Math.min(initial, limit)));
  }
  ensure(extra: number): void {
    const need = this.pos + extra;
    if (need <= this.buf.length) return;
    if (need > this.limit) fail(`decompressed size exceeds the limit of ${this.limit} bytes`);
    const next = Buffer.allocUnsafe(Math.min(this.limit, Math.max(need, this.buf.length * 2, 1024)));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }
}

/** How far back an LZ4 match may reach: a linked block's dictionary is this much of the output before it. */
const WINDOW = 64 << 10;

/**
 * Decodes one raw LZ4 block natively into `out`. `linked`: back references may reach into the
 * output of earlier blocks of the frame (from `frameStart` on).
 */
function decodeBlock(src: Buffer, start: number, end: number, out: Output, maxBlock: number, linked: boolean, frameStart: number): void {
  const room = Math.min(maxBlock, out.limit - out.pos);
  const prefixed = Buffer.allocUnsafe(4 + end - start);
  prefixed.writeUInt32LE(room, 0);
  src.copy(prefixed, 4, start, end);
  let block: Buffer;
  try {
    block =
      linked && out.pos > frameStart
        ? lz4UncompressBlock(prefixed, out.buf.subarray(Math.max(frameStart, out.pos - WINDOW), out.pos))
        : lz4UncompressBlock(prefixed);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    fail(
      room < maxBlock
        ? `block corrupt or over the limit of ${out.limit} decompressed bytes (${why})`
        : `block corrupt or larger than its declared maximum (${why})`,
    );
  }
  if (block.length === 0) fail('empty block');
  out.ensure(block.length);
  block.copy(out.buf, out.pos);
  out.pos += block.length;
}

function u32(buf: Buffer, p: number): number {
  return buf.readUInt32LE(p);
}

/** Decompresses one or more concatenated LZ4 frames, refusing more than `maxOutput` bytes. */
export function lz4FrameDecompress(input: Buffer, maxOutput: number, magic: number): Buffer {
  const out = new Output(Math.min(input.length * 4, 1 << 20), maxOutput);
  let p = 0;
  let frames = 0;
  while (p < input.length || frames === 0) {
    if (input.length - p < 4) fail('truncated frame magic');
    const m = u32(input, p);
    if ((m & SKIPPABLE_MASK) >>> 0 === SKIPPABLE_MAGIC) {
      if (input.length - p < 8) fail('truncated skippable frame');
      const n = u32(input, p + 4);
      if (n > input.length - p - 8) fail('truncated skippable frame');
      p += 8 + n;
      frames++;
      continue;
    }
    if (m !== FRAME_MAGIC) fail(`bad frame magic 0x${m.toString(16)}`);
    p = readFrame(input, p, out, magic);
    frames++;
  }
  return out.buf.subarray(0, out.pos);
}

function readFrame(input: Buffer, frameStart: number, out: Output, magic: number): number {
  let p = frameStart + 4;
  if (input.length - p < 3) fail('truncated frame descriptor');
  const flg = input[p] ?? 0;
  const bd = input[p + 1] ?? 0;
  if (flg >>> 6 !== 1) fail(`unsupported frame version ${flg >>> 6}`);
  if ((flg & 0x02) !== 0 || (bd & 0x8f) !== 0) fail('reserved frame descriptor bits set');
  const blockChecksum = (flg & 0x10) !== 0;
  const hasContentSize = (flg & 0x08) !== 0;
  const contentChecksum = (flg & 0x04) !== 0;
  const linked = (flg & 0x20) === 0;
  if ((flg & 0x01) !== 0) fail('dictionary ids are not supported');
  const maxBlock = BLOCK_SIZES[(bd >>> 4) & 7];
  if (maxBlock === undefined) fail(`unsupported block size code ${(bd >>> 4) & 7}`);
  const descEnd = p + 2 + (hasContentSize ? 8 : 0);
  if (input.length - descEnd < 1) fail('truncated frame descriptor');
  let contentSize = -1;
  if (hasContentSize) {
    const size = input.readBigUInt64LE(p + 2);
    if (size > BigInt(out.limit - out.pos)) fail(`content size ${size} exceeds the limit of ${out.limit} bytes`);
    contentSize = Number(size);
  }
  const hc = input[descEnd] ?? 0;
  const good = (xxhash32(input, p, descEnd) >>> 8) & 0xff;
  const quirk = (xxhash32(input, frameStart, descEnd) >>> 8) & 0xff;
  if (hc !== good && !(magic === 0 && hc === quirk)) fail('frame header checksum mismatch');
  p = descEnd + 1;
  const contentStart = out.pos;
  if (contentSize >= 0) out.ensure(contentSize);
  for (;;) {
    if (input.length - p < 4) fail('truncated block size');
    const word = u32(input, p);
    p += 4;
    if (word === 0) break; // end mark
    const size = word & 0x7fffffff;
    const stored = word >>> 31 === 1;
    if (size > maxBlock) fail('block larger than the frame maximum');
    if (size > input.length - p - (blockChecksum ? 4 : 0)) fail('truncated block');
    if (blockChecksum && xxhash32(input, p, p + size) !== u32(input, p + size)) fail('block checksum mismatch');
    if (stored) {
      out.ensure(size);
      input.copy(out.buf, out.pos, p, p + size);
      out.pos += size;
    } else {
      decodeBlock(input, p, p + size, out, maxBlock, linked, contentStart);
    }
    p += size + (blockChecksum ? 4 : 0);
  }
  if (contentChecksum) {
    if (input.length - p < 4) fail('truncated content checksum');
    if (xxhash32(out.buf, contentStart, out.pos) !== u32(input, p)) fail('content checksum mismatch');
    p += 4;
  }
  if (contentSize >= 0 && out.pos - contentStart !== contentSize) fail('content size mismatch');
  return p;
}

/**
 * Compresses `data` into one LZ4 frame: 64 KiB independent blocks, no checksums besides the header
 * checksum (as Kafka's Java producer writes). For magic 0 the header checksum is written in the
 * pre-0.10 form.
 */
export function lz4FrameCompress(data: Buffer, magic: number): Buffer {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(7);
  header.writeUInt32LE(FRAME_MAGIC, 0);
  header[4] = 0x60; // version 01, independent blocks
  header[5] = WRITE_BD;
  header[6] = (xxhash32(header, magic === 0 ? 0 : 4, 6) >>> 8) & 0xff;
  parts.push(header);
  for (let p = 0; p < data.length; p += WRITE_BLOCK_SIZE) {
    const chunk = data.subarray(p, Math.min(data.length, p + WRITE_BLOCK_SIZE));
    // the native block compressor prefixes a 4-byte little-endian size: drop it
    const packed = lz4CompressBlock(chunk).subarray(4);
    const len = Buffer.allocUnsafe(4);
    if (packed.length < chunk.length) {
      len.writeUInt32LE(packed.length, 0);
      parts.push(len, packed);
    } else {
      len.writeUInt32LE((chunk.length | 0x80000000) >>> 0, 0);
      parts.push(len, chunk);
    }
  }
  parts.push(Buffer.alloc(4)); // end mark
  return Buffer.concat(parts);
}
