/** Topic-level config keys (Kafka's TopicConfig / LogConfig) and the broker key each inherits its default from. */
import type { ConfigDef } from '../config.js';
import { atLeast, cleanupPolicyError, COMPRESSION, LONG_MAX, oneOf, TIMESTAMP_TYPES } from './validators.js';

/** Topic-level keys and the broker key each one inherits its default from. */
export const TOPIC_CONFIG: Record<string, { def: ConfigDef; brokerKey?: string }> = {
  'cleanup.policy': {
    def: { type: 'list', default: ['delete'], validate: cleanupPolicyError('cleanup.policy') },
    brokerKey: 'log.cleanup.policy',
  },
  'compression.type': { def: { type: 'string', default: 'producer', validate: oneOf(...COMPRESSION) }, brokerKey: 'compression.type' },
  'compression.gzip.level': { def: { type: 'int', default: -1 }, brokerKey: 'compression.gzip.level' },
  'compression.lz4.level': { def: { type: 'int', default: 9 }, brokerKey: 'compression.lz4.level' },
  'compression.zstd.level': { def: { type: 'int', default: 3 }, brokerKey: 'compression.zstd.level' },
  'delete.retention.ms': { def: { type: 'long', default: 86400000 }, brokerKey: 'log.cleaner.delete.retention.ms' },
  'file.delete.delay.ms': { def: { type: 'long', default: 60000 }, brokerKey: 'log.segment.delete.delay.ms' },
  'flush.messages': { def: { type: 'long', default: LONG_MAX }, brokerKey: 'log.flush.interval.messages' },
  'flush.ms': { def: { type: 'long', default: LONG_MAX }, brokerKey: 'log.flush.interval.ms' },
  'index.interval.bytes': { def: { type: 'int', default: 4096 }, brokerKey: 'log.index.interval.bytes' },
  'max.message.bytes': { def: { type: 'int', default: 1048588, validate: atLeast(0) }, brokerKey: 'message.max.bytes' },
  'message.downconversion.enable': { def: { type: 'boolean', default: true }, brokerKey: 'log.message.downconversion.enable' },
  'message.format.version': { def: { type: 'string', default: '3.0-IV1' }, brokerKey: 'log.message.format.version' },
  'message.timestamp.type': {
    def: { type: 'string', default: 'CreateTime', validate: oneOf(...TIMESTAMP_TYPES) },
    brokerKey: 'log.message.timestamp.type',
  },
  'message.timestamp.difference.max.ms': { def: { type: 'long', default: LONG_MAX }, brokerKey: 'log.message.timestamp.difference.max.ms' },
  'message.timestamp.before.max.ms': { def: { type: 'long', default: LONG_MAX }, brokerKey: 'log.message.timestamp.before.max.ms' },
  'message.timestamp.after.max.ms': { def: { type: 'long', default: LONG_MAX }, brokerKey: 'log.message.timestamp.after.max.ms' },
  'min.cleanable.dirty.ratio': { def: { type: 'double', default: 0.5 }, brokerKey: 'log.cleaner.min.cleanable.ratio' },
  'max.compaction.lag.ms': {
    def: { type: 'long', default: LONG_MAX, validate: atLeast(1) },
    brokerKey: 'log.cleaner.max.compaction.lag.ms',
  },
  'min.compaction.lag.ms': { def: { type: 'long', default: 0 }, brokerKey: 'log.cleaner.min.compaction.lag.ms' },
  'min.insync.replicas': { def: { type: 'int', default: 1, validate: atLeast(1) }, brokerKey: 'min.insync.replicas' },
  preallocate: { def: { type: 'boolean', default: false } },
  'retention.bytes': { def: { type: 'long', default: -1 }, brokerKey: 'log.retention.bytes' },
  'retention.ms': { def: { type: 'long', default: 604800000 } },
  'segment.bytes': { def: { type: 'int', default: 1073741824, validate: atLeast(14) }, brokerKey: 'log.segment.bytes' },
  'segment.index.bytes': { def: { type: 'int', default: 10485760, validate: atLeast(4) }, brokerKey: 'log.index.size.max.bytes' },
  'segment.jitter.ms': { def: { type: 'long', default: 0 } },
  'segment.ms': { def: { type: 'long', default: 604800000 } },
  'unclean.leader.election.enable': { def: { type: 'boolean', default: false }, brokerKey: 'unclean.leader.election.enable' },
  'validation.deep': { def: { type: 'boolean', default: false }, brokerKey: 'validation.deep' },
  // Kafka topic keys gregor accepts and reports without acting on them (throttles, tiered storage).
  'follower.replication.throttled.replicas': { def: { type: 'list', default: [], inert: true } },
  'leader.replication.throttled.replicas': { def: { type: 'list', default: [], inert: true } },
  'local.retention.bytes': { def: { type: 'long', default: -2, inert: true } },
  'local.retention.ms': { def: { type: 'long', default: -2, inert: true } },
  'remote.log.copy.disable': { def: { type: 'boolean', default: false, inert: true } },
  'remote.log.delete.on.disable': { def: { type: 'boolean', default: false, inert: true } },
  'remote.storage.enable': { def: { type: 'boolean', default: false, inert: true } },
};
