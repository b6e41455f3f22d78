export { GregorLogErrorCode, LogError } from './errors.js';
export { defaultLogConfig, logConfigFrom } from './log-config.js';
export type { LogConfig } from './log-config.js';
export { CLEAN_SHUTDOWN_MARKER, LogManager } from './log-manager.js';
export type { LogLogger } from './log-loader.js';
export { ListOffsetsTimestamp, PartitionLog } from './partition-log.js';
export type { AppendInfo, PartitionLogOptions, TimestampOffset } from './partition-log.js';
export type { ReadResult } from './log-read.js';
export type { ConvertHook, ValidatedEntry, ValidatedRecords } from './validator.js';
