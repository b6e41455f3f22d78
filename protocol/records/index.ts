export {
  BatchAttribute,
  BatchField,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  RecordBatch,
  TimestampType,
  buildRecordBatch,
  buildRecordBatchOf,
  scanBatches,
} from './batch.js';
export type { BuildBatchOptions, DecodeRecordsOptions, PartialTail, RecordsSectionInfo } from './batch.js';
export { COMPRESSION_CODEC_MASK, CompressionCodec, compress, decompress, isCompressionCodec } from './compression.js';
export type { CompressOptions, DecompressOptions } from './compression.js';
export {
  ControlRecordType,
  buildEndTxnBatch,
  encodeControlRecordKey,
  encodeEndTxnMarker,
  readControlRecordKey,
  readEndTxnMarker,
} from './control.js';
export type { ControlRecordKey, EndTxnBatchOptions, EndTxnMarker } from './control.js';
export { decodeRecords, logEntries } from './entries.js';
export type { DecodeAllOptions, LogEntry } from './entries.js';
export {
  LegacyMessage,
  MESSAGE_OVERHEAD,
  MESSAGE_TIMESTAMP_TYPE,
  MessageField,
  NO_TIMESTAMP_TYPE,
  buildMessageSet,
  encodeMessage,
  scanMessageSet,
} from './message-set.js';
export type { BuildMessageSetOptions, LegacyRecordInput } from './message-set.js';
export { MIN_RECORD_SIZE, readRecord, recordBodySize, recordSize, writeRecord } from './records.js';
export type { Record, RecordHeader, RecordInput } from './records.js';
export { xxhash32 } from './xxhash32.js';
