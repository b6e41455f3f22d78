import type { BrokerConfig, ConfigValue } from '../config.js';

/** Per-partition log settings, resolved from topic overrides and broker defaults. */
export interface LogConfig {
  segmentBytes: number;
  segmentMs: number;
  /** -1: keep forever. */
  retentionMs: number;
  /** -1: no size limit. */
  retentionBytes: number;
  indexIntervalBytes: number;
  segmentIndexBytes: number;
  maxMessageBytes: number;
  messageTimestampType: 'CreateTime' | 'LogAppendTime';
  timestampBeforeMaxMs: number;
  timestampAfterMaxMs: number;
  flushMessages: number;
  flushMs: number;
  flushPolicy: 'default' | 'always';
  cleanupPolicy: string[];
  compressionType: string;
  validationDeep: boolean;
  fileDeleteDelayMs: number;
  /** delete.retention.ms: how long the cleaner keeps tombstones and transaction markers it reached. */
  deleteRetentionMs?: number;
  /** min.cleanable.dirty.ratio, min.compaction.lag.ms, max.compaction.lag.ms (the log cleaner). */
  minCleanableDirtyRatio?: number;
  minCompactionLagMs?: number;
  maxCompactionLagMs?: number;
  /** compression.gzip.level / .lz4.level / .zstd.level (used when the broker recompresses). */
  compressionLevels?: { gzip: number; lz4: number; zstd: number };
  /**
   * Effective message.format.version (topic, else log.message.format.version, else the release of
   * broker.version.emulate, else 3.0-IV1): decides the magic stored ("0.10.x" → 1, older → 0).
   */
  messageFormatVersion?: string;
  /** message.downconversion.enable (Fetch v0-3 readers); default true. */
  downConversionEnable?: boolean;
}

/** Long configs saturate at MAX_SAFE_INTEGER ("never"). */
function num(v: ConfigValue | undefined, fallback: number): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v.trim())) return num(BigInt(v.trim()), fallback);
  return fallback;
}

/** Effective LogConfig for a partition: topic overrides first, then the broker's topic defaults. */
export function logConfigFrom(broker: BrokerConfig, topicOverrides: ReadonlyMap<string, ConfigValue>): LogConfig {
  const get = (key: string): ConfigValue => (topicOverrides.has(key) ? (topicOverrides.get(key) ?? null) : broker.topicDefault(key));
  const never = Number.MAX_SAFE_INTEGER;
  // KIP-937: the deprecated difference.max.ms still applies when before/after are not set explicitly
  const bound = (key: string, brokerKey: string): number => {
    if (topicOverrides.has(key)) return num(topicOverrides.get(key), never);
    if (topicOverrides.has('message.timestamp.difference.max.ms'))
      return num(topicOverrides.get('message.timestamp.difference.max.ms'), never);
    if (broker.explicit.has(brokerKey)) return num(broker.get(brokerKey), never);
    if (broker.explicit.has('log.message.timestamp.difference.max.ms'))
      return num(broker.get('log.message.timestamp.difference.max.ms'), never);
    return num(get(key), never);
  };
  const cleanup = get('cleanup.policy');
  const tsType = String(get('message.timestamp.type') ?? 'CreateTime');
  return {
    segmentBytes: num(get('segment.bytes'), 1 << 30),
    segmentMs: num(get('segment.ms'), 604800000),
    retentionMs: num(get('retention.ms'), 604800000),
    retentionBytes: num(get('retention.bytes'), -1),
    indexIntervalBytes: num(get('index.interval.bytes'), 4096),
    segmentIndexBytes: num(get('segment.index.bytes'), 10485760),
    maxMessageBytes: num(get('max.message.bytes'), 1048588),
    messageTimestampType: tsType === 'LogAppendTime' ? 'LogAppendTime' : 'CreateTime',
    timestampBeforeMaxMs: bound('message.timestamp.before.max.ms', 'log.message.timestamp.before.max.ms'),
    timestampAfterMaxMs: bound('message.timestamp.after.max.ms', 'log.message.timestamp.after.max.ms'),
    flushMessages: num(get('flush.messages'), never),
    flushMs: num(get('flush.ms'), never),
    flushPolicy: broker.string('log.flush.policy') === 'always' ? 'always' : 'default',
    cleanupPolicy: Array.isArray(cleanup) ? cleanup : typeof cleanup === 'string' ? cleanup.split(',').map((s) => s.trim()) : ['delete'],
    compressionType: String(get('compression.type') ?? 'producer'),
    validationDeep: get('validation.deep') === true,
    fileDeleteDelayMs: num(get('file.delete.delay.ms'), 60000),
    deleteRetentionMs: num(get('delete.retention.ms'), 86400000),
    minCleanableDirtyRatio: Number(get('min.cleanable.dirty.ratio') ?? 0.5),
    minCompactionLagMs: num(get('min.compaction.lag.ms'), 0),
    maxCompactionLagMs: num(get('max.compaction.lag.ms'), never),
    compressionLevels: {
      gzip: num(get('compression.gzip.level'), -1),
      lz4: num(get('compression.lz4.level'), 9),
      zstd: num(get('compression.zstd.level'), 3),
    },
    messageFormatVersion:
      topicOverrides.has('message.format.version') || broker.explicit.has('log.message.format.version')
        ? String(get('message.format.version') ?? '3.0-IV1')
        : (broker.string('broker.version.emulate') ?? String(get('message.format.version') ?? '3.0-IV1')),
    downConversionEnable: get('message.downconversion.enable') !== false,
  };
}

/** A LogConfig with Kafka's defaults, for tests and tools; `over` replaces fields. */
export function defaultLogConfig(over: Partial<LogConfig> = {}): LogConfig {
  return {
    segmentBytes: 1 << 30,
    segmentMs: 604800000,
    retentionMs: 604800000,
    retentionBytes: -1,
    indexIntervalBytes: 4096,
    segmentIndexBytes: 10485760,
    maxMessageBytes: 1048588,
    messageTimestampType: 'CreateTime',
    timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER,
    timestampAfterMaxMs: Number.MAX_SAFE_INTEGER,
    flushMessages: Number.MAX_SAFE_INTEGER,
    flushMs: Number.MAX_SAFE_INTEGER,
    flushPolicy: 'default',
    cleanupPolicy: ['delete'],
    compressionType: 'producer',
    validationDeep: false,
    fileDeleteDelayMs: 60000,
    ...over,
  };
}
