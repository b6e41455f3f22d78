/**
 * debug dump-log <files...>: decodes log segment files offline, as kafka-dump-log does: the batches
 * of a .log (offsets, position, size, producer fields, codec, CRC check) and with --print-data every
 * record (control records as their marker); the entries of .index, .timeindex and .txnindex files.
 */
import fs from 'node:fs';
import path from 'node:path';
import {
  ControlRecordType,
  logEntries,
  readControlRecordKey,
  readEndTxnMarker,
  type RecordBatch,
} from '../../../protocol/records/index.js';
import type { LegacyMessage, Record as KRecord } from '../../../protocol/records/index.js';
import type { Context } from '../context.js';
import { encodeNullable, type Encoding } from '../encoding.js';
import { CliError, CliErrorCode } from '../errors.js';

type Flags = Record<string, unknown>;

const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const CONTROL_TYPES: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(ControlRecordType).map(([k, v]) => [v, k]));
const MAX_DECOMPRESSED = 256 << 20;

function tsName(type: number): string {
  return type === 1 ? 'LogAppendTime' : type === 0 ? 'CreateTime' : 'NoTimestampType';
}

function baseOffsetOf(file: string): bigint {
  const m = /^(\d+)\./.exec(path.basename(file));
  return m === null ? 0n : BigInt(m[1] as string);
}

interface RecordView {
  offset: bigint;
  timestampType: string;
  timestamp: bigint;
  keySize: number;
  valueSize: number;
  sequence: number;
  headerKeys: string[];
  key?: string | null;
  value?: string | null;
  headers?: { key: string; value: string | null }[];
  control?: { type: string; coordinatorEpoch?: number };
}

function recordView(r: KRecord, b: RecordBatch | null, data: boolean, enc: Encoding, legacyTsType = -1): RecordView {
  const seq = b === null || b.baseSequence < 0 ? -1 : (b.baseSequence + Number(r.offset - b.baseOffset)) % 2 ** 31;
  const v: RecordView = {
    offset: r.offset,
    timestampType: tsName(b === null ? legacyTsType : b.timestampType),
    timestamp: r.timestamp,
    keySize: r.key?.length ?? -1,
    valueSize: r.value?.length ?? -1,
    sequence: seq,
    headerKeys: r.headers.map((h) => h.key),
  };
  if (b?.isControl === true) {
    try {
      const k = readControlRecordKey(r.key);
      const type = CONTROL_TYPES[k.type] ?? `UNKNOWN(${k.type})`;
      if (k.type === ControlRecordType.ABORT || k.type === ControlRecordType.COMMIT)
        v.control = { type, coordinatorEpoch: readEndTxnMarker(r.value).coordinatorEpoch };
      else v.control = { type };
    } catch {
      v.control = { type: 'INVALID' };
    }
  } else if (data) {
    v.key = encodeNullable(r.key, enc);
    v.value = encodeNullable(r.value, enc);
    v.headers = r.headers.map((h) => ({ key: h.key, value: encodeNullable(h.value, enc) }));
  }
  return v;
}

function recordLine(v: RecordView): string {
  let s = `| offset: ${v.offset} ${v.timestampType}: ${v.timestamp} keySize: ${v.keySize} valueSize: ${v.valueSize} sequence: ${v.sequence} headerKeys: [${v.headerKeys.join(',')}]`;
  if (v.control !== undefined) {
    s +=
      v.control.coordinatorEpoch !== undefined
        ? ` endTxnMarker: ${v.control.type} coordinatorEpoch: ${v.control.coordinatorEpoch}`
        : ` controlType: ${v.control.type}`;
  } else if (v.value !== undefined) {
    if (v.key !== null && v.key !== undefined) s += ` key: ${v.key}`;
    s += ` payload: ${v.value ?? ''}`;
  }
  return s;
}

function batchView(b: RecordBatch, position: number) {
  return {
    position,
    baseOffset: b.baseOffset,
    lastOffset: b.lastOffset,
    count: b.recordCount,
    baseSequence: b.baseSequence,
    lastSequence: b.lastSequence,
    producerId: b.producerId,
    producerEpoch: b.producerEpoch,
    partitionLeaderEpoch: b.partitionLeaderEpoch,
    isTransactional: b.isTransactional,
    isControl: b.isControl,
    deleteHorizonMs: b.hasDeleteHorizon ? b.baseTimestamp : null,
    timestampType: tsName(b.timestampType),
    maxTimestamp: b.maxTimestamp,
    size: b.sizeInBytes,
    magic: b.magic,
    compression: CODECS[b.compression] ?? `codec-${b.compression}`,
    crc: b.crc,
    crcValid: b.isValid(),
  };
}

function batchLine(v: ReturnType<typeof batchView>): string {
  return (
    `baseOffset: ${v.baseOffset} lastOffset: ${v.lastOffset} count: ${v.count} baseSequence: ${v.baseSequence} lastSequence: ${v.lastSequence} ` +
    `producerId: ${v.producerId} producerEpoch: ${v.producerEpoch} partitionLeaderEpoch: ${v.partitionLeaderEpoch} isTransactional: ${v.isTransactional} ` +
    `isControl: ${v.isControl} deleteHorizonMs: ${v.deleteHorizonMs === null ? 'OptionalLong.empty' : `OptionalLong[${v.deleteHorizonMs}]`} position: ${v.position} ` +
    `${v.timestampType}: ${v.maxTimestamp} size: ${v.size} magic: ${v.magic} compresscodec: ${v.compression} crc: ${v.crc} isvalid: ${v.crcValid}`
  );
}

function messageView(m: LegacyMessage, position: number) {
  return {
    position,
    offset: m.offset,
    magic: m.magic,
    timestampType: tsName(m.magic === 0 ? -1 : m.timestampType),
    timestamp: m.timestamp,
    size: m.sizeInBytes,
    compression: CODECS[m.compression] ?? `codec-${m.compression}`,
    crc: m.crc,
    crcValid: m.isValid(),
  };
}

/** Walks a .log file; `emit` gets each entry's view (text lines or JSON objects are built by the caller). */
function dumpSegment(
  file: string,
  data: boolean,
  enc: Encoding,
  emitLine: (s: string) => void,
): { entries: unknown[]; invalidBytes: number; problem: string | null } {
  const buf = fs.readFileSync(file);
  const entries: unknown[] = [];
  let end = 0;
  let problem: string | null = null;
  try {
    for (const e of logEntries(buf)) {
      if (e.kind === 'partial') break;
      if (e.kind === 'batch') {
        const v = batchView(e.batch, e.start);
        emitLine(batchLine(v));
        let records: RecordView[] | undefined;
        if (data || e.batch.isControl) {
          try {
            records = e.batch.records({ maxOutput: MAX_DECOMPRESSED }).map((r) => recordView(r, e.batch, data, enc));
          } catch (err) {
            emitLine(`| cannot decode the records: ${(err as Error).message}`);
          }
          if (data) for (const r of records ?? []) emitLine(recordLine(r));
        }
        entries.push(data && records !== undefined ? { ...v, records } : v);
        end = e.batch.end;
      } else {
        const v = messageView(e.message, e.start);
        emitLine(
          `offset: ${v.offset} position: ${v.position} ${v.timestampType}: ${v.timestamp} size: ${v.size} magic: ${v.magic} compresscodec: ${v.compression} crc: ${v.crc} isvalid: ${v.crcValid}`,
        );
        let records: RecordView[] | undefined;
        if (data) {
          try {
            records = e.message
              .records({ maxOutput: MAX_DECOMPRESSED, checkCrcs: false })
              .map((r) => recordView(r, null, true, enc, e.message.magic === 0 ? -1 : e.message.timestampType));
            for (const r of records) emitLine(recordLine(r));
          } catch (err) {
            emitLine(`| cannot decode the records: ${(err as Error).message}`);
          }
        }
        entries.push(records !== undefined ? { ...v, records } : v);
        end = e.message.end;
      }
    }
  } catch (err) {
    problem = (err as Error).message;
  }
  return { entries, invalidBytes: buf.length - end, problem };
}

function dumpIndex(
  file: string,
  kind: 'offset' | 'time' | 'txn',
  base: bigint,
  emitLine: (s: string) => void,
): { entries: unknown[]; invalidBytes: number } {
  const buf = fs.readFileSync(file);
  const size = kind === 'offset' ? 8 : kind === 'time' ? 12 : 34;
  const entries: unknown[] = [];
  let p = 0;
  for (; p + size <= buf.length; p += size) {
    if (kind === 'offset') {
      const rel = buf.readInt32BE(p);
      const position = buf.readInt32BE(p + 4);
      if (p > 0 && rel === 0 && position === 0) break; // preallocated space
      entries.push({ offset: base + BigInt(rel), position });
      emitLine(`offset: ${base + BigInt(rel)} position: ${position}`);
    } else if (kind === 'time') {
      const ts = buf.readBigInt64BE(p);
      const rel = buf.readInt32BE(p + 8);
      if (p > 0 && ts === 0n && rel === 0) break;
      entries.push({ timestamp: ts, offset: base + BigInt(rel) });
      emitLine(`timestamp: ${ts} offset: ${base + BigInt(rel)}`);
    } else {
      const e = {
        version: buf.readInt16BE(p),
        producerId: buf.readBigInt64BE(p + 2),
        firstOffset: buf.readBigInt64BE(p + 10),
        lastOffset: buf.readBigInt64BE(p + 18),
        lastStableOffset: buf.readBigInt64BE(p + 26),
      };
      entries.push(e);
      emitLine(
        `version: ${e.version} producerId: ${e.producerId} firstOffset: ${e.firstOffset} lastOffset: ${e.lastOffset} lastStableOffset: ${e.lastStableOffset}`,
      );
    }
  }
  // zeros after the last entry are preallocated space (Kafka sizes index files up front), not damage
  const rest = buf.subarray(p);
  return { entries, invalidBytes: rest.every((b) => b === 0) ? 0 : rest.length };
}

export function dumpLog(ctx: Context, files: string[], f: Flags): number {
  const data = f['printData'] === true;
  const enc = f['encoding'] as Encoding;
  const json: unknown[] = [];
  const line = ctx.json ? () => undefined : (s: string) => ctx.out.line(s);
  for (const file of files) {
    const ext = path.extname(file);
    const kind = ext === '.log' ? 'log' : ext === '.index' ? 'offset' : ext === '.timeindex' ? 'time' : ext === '.txnindex' ? 'txn' : null;
    if (kind === null) throw new CliError(CliErrorCode.FILE, `${file}: not a segment file (.log, .index, .timeindex or .txnindex)`);
    try {
      fs.accessSync(file, fs.constants.R_OK);
    } catch (e) {
      throw new CliError(CliErrorCode.FILE, `${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    const base = baseOffsetOf(file);
    line(`Dumping ${file}`);
    if (kind === 'log') {
      line(`Log starting offset: ${base}`);
      const r = dumpSegment(file, data, enc, line);
      if (r.problem !== null) line(`Stopped at a corrupt entry: ${r.problem}`);
      if (r.invalidBytes > 0) line(`Found ${r.invalidBytes} invalid bytes at the end of ${path.basename(file)}`);
      json.push({ file, type: 'log', baseOffset: base, entries: r.entries, invalidBytes: r.invalidBytes, problem: r.problem });
    } else {
      const r = dumpIndex(file, kind, base, line);
      if (r.invalidBytes > 0) line(`Found ${r.invalidBytes} invalid bytes at the end of ${path.basename(file)}`);
      json.push({
        file,
        type: kind === 'offset' ? 'offset-index' : kind === 'time' ? 'time-index' : 'transaction-index',
        baseOffset: base,
        entries: r.entries,
        invalidBytes: r.invalidBytes,
      });
    }
  }
  if (ctx.json) ctx.out.json(json);
  return 0;
}
