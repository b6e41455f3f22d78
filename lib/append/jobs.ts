/**
 * The messages between the append pool and its workers, and the job runner both sides share (the
 * worker runs it; `num.append.workers=0` runs it inline). Buffers travel as transferred
 * ArrayBuffers: the request bytes are copied once into a fresh ArrayBuffer (the request frame is
 * shared with other partitions and the recent-batches cache, so it cannot be detached) and the
 * result comes back in the one buffer the worker packed, moved, not copied.
 */
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { convertForAppend } from '../log/convert.js';
import { downConvert } from '../log/down-convert.js';
import type { ConvertedAppend, ConvertedEntry } from '../log/convert.js';
import { LogError } from '../log/errors.js';
import type { LogConfig } from '../log/log-config.js';

export interface AppendJobMessage {
  kind: 'append';
  id: number;
  buf: ArrayBuffer;
  config: LogConfig;
  base: bigint;
  now: number;
}

export interface DownConvertJobMessage {
  kind: 'down-convert';
  id: number;
  buf: ArrayBuffer;
  toMagic: 0 | 1;
  fetchOffset: bigint;
  maxOutput: number;
}

export type JobMessage = AppendJobMessage | DownConvertJobMessage;

export type ResultMessage =
  | { id: number; ok: true; buf: ArrayBuffer; byteLength: number; entries?: ConvertedEntry[]; recordCount?: number; converted?: boolean }
  | { id: number; ok: false; errorCode: number; message: string };

/** An ArrayBuffer holding exactly `b`: `b`'s own when it is the whole of it, else a copy. */
export function ownArrayBuffer(b: Buffer): ArrayBuffer {
  if (b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer) return b.buffer;
  const ab = new ArrayBuffer(b.length);
  new Uint8Array(ab).set(b);
  return ab;
}

/** A fresh copy of `b` in its own ArrayBuffer (for transfer). */
export function copyToArrayBuffer(b: Buffer): ArrayBuffer {
  const ab = new ArrayBuffer(b.length);
  new Uint8Array(ab).set(b);
  return ab;
}

const PREFIX = /^GREGOR_ERR_[A-Z_]+: /;

/** A failure as a message (Kafka error code kept; anything unexpected becomes UNKNOWN_SERVER_ERROR). */
export function errorResult(id: number, err: unknown): ResultMessage {
  if (err instanceof LogError) return { id, ok: false, errorCode: err.errorCode, message: err.message.replace(PREFIX, '') };
  return { id, ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message: err instanceof Error ? err.message : String(err) };
}

/** Runs one job; returns the result and the buffers to transfer with it. */
export function runJob(job: JobMessage): { result: ResultMessage; transfer: ArrayBuffer[] } {
  try {
    if (job.kind === 'append') {
      const c = convertForAppend(Buffer.from(job.buf), job.config, job.base, job.now);
      const ab = ownArrayBuffer(c.buf);
      return {
        result: {
          id: job.id,
          ok: true,
          buf: ab,
          byteLength: c.buf.length,
          entries: c.entries,
          recordCount: c.recordCount,
          converted: c.converted,
        },
        transfer: [ab],
      };
    }
    const out = downConvert(Buffer.from(job.buf), job.toMagic, job.fetchOffset, job.maxOutput);
    const ab = ownArrayBuffer(out);
    return { result: { id: job.id, ok: true, buf: ab, byteLength: out.length }, transfer: [ab] };
  } catch (err) {
    return { result: errorResult(job.id, err), transfer: [] };
  }
}

/** The ConvertedAppend a result message stands for. */
export function convertedFrom(r: Extract<ResultMessage, { ok: true }>): ConvertedAppend {
  return {
    buf: Buffer.from(r.buf, 0, r.byteLength),
    entries: r.entries ?? [],
    recordCount: r.recordCount ?? 0,
    converted: r.converted ?? false,
  };
}
