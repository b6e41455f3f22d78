/**
 * What Fetch v0-9 readers may receive. v0-1 read magic 0 and v2-3 magic 1, whatever is stored: the
 * stored entries are down-converted (Kafka's RecordsUtil.downConvert, lib/log/convert.ts) on the
 * append worker pool, so a large compressed read does not hold the main thread; a read that needs
 * no conversion (all entries at or below the reader's magic) is passed through untouched.
 * Kafka's rules around it: `message.downconversion.enable=false` answers UNSUPPORTED_VERSION, and a
 * topic with `compression.type=zstd` answers UNSUPPORTED_COMPRESSION_TYPE below Fetch v10.
 */
import type { RecordsValue } from '../../protocol/codec/writer.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { downConvert, fetchMagic, needsDownConversion } from '../log/down-convert.js';
import { LogError } from '../log/errors.js';
import type { PartitionLog } from '../log/partition-log.js';
import { decompressLimit } from '../log/validator.js';

const EMPTY = Buffer.alloc(0);

export interface FetchRecords {
  errorCode: number;
  /** the stored slices when passed through (sent uncopied), else the converted bytes */
  records: RecordsValue;
}

/** An error the partition must answer with at this Fetch version before reading, or NONE. */
export function fetchVersionError(log: PartitionLog, apiVersion: number): number {
  if (apiVersion < 10 && log.currentConfig.compressionType.toLowerCase() === 'zstd') return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE;
  return ErrorCode.NONE;
}

/** The stored entries read for `fetchOffset`, as a reader of `apiVersion` must get them. */
export async function recordsForFetchVersion(
  log: PartitionLog,
  stored: Buffer[],
  apiVersion: number,
  fetchOffset: bigint,
): Promise<FetchRecords> {
  const concat = (): Buffer => (stored.length === 0 ? EMPTY : stored.length === 1 ? (stored[0] as Buffer) : Buffer.concat(stored));
  const toMagic = fetchMagic(apiVersion);
  if (toMagic === 2 || !needsDownConversion(stored, toMagic))
    return { errorCode: ErrorCode.NONE, records: stored.length === 0 ? EMPTY : stored };
  if (log.currentConfig.downConversionEnable === false) return { errorCode: ErrorCode.UNSUPPORTED_VERSION, records: EMPTY };
  const maxOutput = decompressLimit(log.currentConfig);
  try {
    const runner = log.converter;
    const records =
      runner === undefined
        ? downConvert(concat(), toMagic, fetchOffset, maxOutput)
        : await runner.downConvert(concat(), toMagic, fetchOffset, maxOutput);
    return { errorCode: ErrorCode.NONE, records };
  } catch (err) {
    if (err instanceof LogError) return { errorCode: err.errorCode, records: EMPTY };
    throw err;
  }
}
