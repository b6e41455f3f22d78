import { GregorErrorCode, ProtocolError } from '../codec/errors.js';
import { buildRecordBatch } from './batch.js';

/** Control record types (the int16 after the version in a control record's key). */
export const ControlRecordType = {
  ABORT: 0,
  COMMIT: 1,
  LEADER_CHANGE: 2,
  SNAPSHOT_HEADER: 3,
  SNAPSHOT_FOOTER: 4,
  KRAFT_VERSION: 5,
  KRAFT_VOTERS: 6,
} as const;
export type ControlRecordType = (typeof ControlRecordType)[keyof typeof ControlRecordType];

export interface ControlRecordKey {
  version: number;
  type: number;
}

export interface EndTxnMarker {
  version: number;
  coordinatorEpoch: number;
}

function invalid(message: string): ProtocolError {
  return new ProtocolError(GregorErrorCode.INVALID_RECORD, message);
}

/** Parses a control record's key: version int16, type int16. */
export function readControlRecordKey(key: Buffer | null): ControlRecordKey {
  if (key === null || key.length < 4) throw invalid('control record key must hold a version and a type');
  const version = key.readInt16BE(0);
  if (version < 0) throw invalid(`invalid control record key version ${version}`);
  return { version, type: key.readInt16BE(2) };
}

/** Parses the value of a COMMIT/ABORT control record: version int16, coordinatorEpoch int32. */
export function readEndTxnMarker(value: Buffer | null): EndTxnMarker {
  if (value === null || value.length < 6) throw invalid('transaction marker value must hold a version and a coordinator epoch');
  const version = value.readInt16BE(0);
  if (version < 0) throw invalid(`invalid transaction marker version ${version}`);
  return { version, coordinatorEpoch: value.readInt32BE(2) };
}

export function encodeControlRecordKey(type: number, version = 0): Buffer {
  const key = Buffer.allocUnsafe(4);
  key.writeInt16BE(version, 0);
  key.writeInt16BE(type, 2);
  return key;
}

export function encodeEndTxnMarker(coordinatorEpoch: number, version = 0): Buffer {
  const value = Buffer.allocUnsafe(6);
  value.writeInt16BE(version, 0);
  value.writeInt32BE(coordinatorEpoch, 2);
  return value;
}

export interface EndTxnBatchOptions {
  type: typeof ControlRecordType.ABORT | typeof ControlRecordType.COMMIT;
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  timestamp: bigint;
  baseOffset?: bigint;
  partitionLeaderEpoch?: number;
}

/** A transactional control batch holding one COMMIT or ABORT marker (uncompressed, no sequence). */
export function buildEndTxnBatch(opts: EndTxnBatchOptions): Buffer {
  return buildRecordBatch(
    [{ key: encodeControlRecordKey(opts.type), value: encodeEndTxnMarker(opts.coordinatorEpoch), timestamp: opts.timestamp }],
    {
      baseOffset: opts.baseOffset ?? 0n,
      partitionLeaderEpoch: opts.partitionLeaderEpoch ?? -1,
      isTransactional: true,
      isControl: true,
      producerId: opts.producerId,
      producerEpoch: opts.producerEpoch,
      baseSequence: -1,
    },
  );
}
