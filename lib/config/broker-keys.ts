/** The broker-level keys (server.properties): Kafka's names, types and defaults, and gregor's own keys. */
import type { ConfigDef } from '../config.js';
import { ACL_BROKER_CONFIG } from './acl-keys.js';
import { adminListenerError } from './listeners.js';
import { LOG_BROKER_CONFIG } from './log-keys.js';
import { SASL_BROKER_CONFIG } from './sasl-keys.js';
import { SSL_BROKER_CONFIG } from './ssl-keys.js';
import { atLeast, connectionOverridesError, minusOneOrPositive, oneOf, oneOfIgnoringCase, replicaSelectorError } from './validators.js';

/** Broker-level keys (server.properties). */
export const BROKER_CONFIG: Record<string, ConfigDef> = {
  listeners: { type: 'list', default: ['PLAINTEXT://127.0.0.1:9092'] },
  'advertised.listeners': { type: 'list', default: null },
  'listener.security.protocol.map': {
    type: 'list',
    default: ['PLAINTEXT:PLAINTEXT', 'SSL:SSL', 'SASL_PLAINTEXT:SASL_PLAINTEXT', 'SASL_SSL:SASL_SSL'],
  },
  'inter.broker.listener.name': { type: 'string', default: null },
  'node.id': { type: 'int', default: -1 },
  'broker.id': { type: 'int', default: -1 },
  'broker.rack': { type: 'string', default: null },
  'cluster.id': { type: 'string', default: null },
  'process.roles': { type: 'list', default: null, inert: true },
  'controller.quorum.voters': { type: 'list', default: null, inert: true },
  'controller.listener.names': { type: 'list', default: null, inert: true },
  'log.dirs': { type: 'list', default: null },
  'log.dir': { type: 'string', default: './data' },
  'num.partitions': { type: 'int', default: 1, validate: atLeast(1) },
  'default.replication.factor': { type: 'int', default: 1, validate: atLeast(1) },
  'auto.create.topics.enable': { type: 'boolean', default: true },
  'delete.topic.enable': { type: 'boolean', default: true },
  'num.network.threads': { type: 'int', default: 3, inert: true },
  'num.io.threads': { type: 'int', default: 8, inert: true },
  'num.recovery.threads.per.data.dir': { type: 'int', default: 1, inert: true },
  'offsets.topic.replication.factor': { type: 'int', default: 1, validate: atLeast(1) },
  'offsets.topic.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'offsets.topic.segment.bytes': { type: 'int', default: 104857600, validate: atLeast(1) },
  'offsets.commit.timeout.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  /** Kafka's broker request.timeout.ms: how long transaction markers and `__transaction_state` writes wait for the ISR (clusters). */
  'request.timeout.ms': { type: 'int', default: 30000, validate: atLeast(0) },
  'transaction.state.log.replication.factor': { type: 'int', default: 1 },
  'transaction.state.log.min.isr': { type: 'int', default: 1 },
  'transaction.state.log.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'transaction.state.log.segment.bytes': { type: 'int', default: 104857600, validate: atLeast(14) },
  'transaction.state.log.load.buffer.size': { type: 'int', default: 5242880, inert: true },
  'transaction.max.timeout.ms': { type: 'int', default: 900000, validate: atLeast(1) },
  'transactional.id.expiration.ms': { type: 'int', default: 604800000, validate: atLeast(1) },
  'transaction.abort.timed.out.transaction.cleanup.interval.ms': { type: 'int', default: 10000, validate: atLeast(1) },
  'transaction.remove.expired.transaction.cleanup.interval.ms': { type: 'int', default: 3600000, validate: atLeast(1) },
  'transaction.partition.verification.enable': { type: 'boolean', default: true },
  'producer.id.expiration.ms': { type: 'int', default: 86400000, validate: atLeast(1) },
  'producer.id.expiration.check.interval.ms': { type: 'int', default: 600000, validate: atLeast(1) },
  'group.initial.rebalance.delay.ms': { type: 'int', default: 3000, validate: atLeast(0) },
  'socket.send.buffer.bytes': { type: 'int', default: 102400, validate: atLeast(-1) },
  'socket.receive.buffer.bytes': { type: 'int', default: 102400, validate: atLeast(-1) },
  'socket.request.max.bytes': { type: 'int', default: 104857600, validate: atLeast(1) },
  'connections.max.idle.ms': { type: 'long', default: 600000 },
  'max.connections': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'max.connections.per.ip': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'max.connection.creation.rate': { type: 'int', default: 2147483647, validate: atLeast(0) },
  'quota.window.num': { type: 'int', default: 11, validate: atLeast(1) },
  'quota.window.size.seconds': { type: 'int', default: 1, validate: atLeast(1) },
  'controller.quota.window.num': { type: 'int', default: 11, validate: atLeast(1) },
  'controller.quota.window.size.seconds': { type: 'int', default: 1, validate: atLeast(1) },
  'max.connections.per.ip.overrides': { type: 'string', default: '', validate: connectionOverridesError },
  'queued.max.requests': { type: 'int', default: 500, validate: atLeast(1) },
  'queued.max.request.bytes': { type: 'long', default: -1, validate: minusOneOrPositive },
  'message.max.bytes': { type: 'int', default: 1048588, validate: atLeast(0) },
  'replica.fetch.max.bytes': { type: 'int', default: 1048576 },
  'max.incremental.fetch.session.cache.slots': { type: 'int', default: 1000, validate: atLeast(0) },
  'replica.fetch.wait.max.ms': { type: 'int', default: 500, validate: atLeast(0) },
  'replica.fetch.min.bytes': { type: 'int', default: 1, validate: atLeast(1) },
  'replica.fetch.response.max.bytes': { type: 'int', default: 10485760, validate: atLeast(0) },
  'replica.fetch.backoff.ms': { type: 'int', default: 1000, validate: atLeast(0) },
  'replica.socket.timeout.ms': { type: 'int', default: 30000, validate: atLeast(1) },
  'fetch.max.bytes': { type: 'int', default: 57671680, validate: atLeast(1024) },
  ...LOG_BROKER_CONFIG,
  'min.insync.replicas': { type: 'int', default: 1, validate: atLeast(1) },
  'unclean.leader.election.enable': { type: 'boolean', default: false },
  'replica.lag.time.max.ms': { type: 'long', default: 30000 },
  // KIP-392: null (leader only) or the rack-aware selector (Kafka's class name, or the alias rack-aware)
  'replica.selector.class': { type: 'string', default: null, validate: (v) => replicaSelectorError(v) },
  'replica.high.watermark.checkpoint.interval.ms': { type: 'long', default: 5000, validate: atLeast(1) },
  // clusters: the controller hands leadership back to preferred replicas when a broker leads too few of its own
  'auto.leader.rebalance.enable': { type: 'boolean', default: true },
  'leader.imbalance.check.interval.seconds': { type: 'long', default: 300, validate: atLeast(1) },
  'leader.imbalance.per.broker.percentage': { type: 'int', default: 10, validate: atLeast(0) },
  'group.min.session.timeout.ms': { type: 'int', default: 6000 },
  'group.max.session.timeout.ms': { type: 'int', default: 1800000 },
  'group.max.size': { type: 'int', default: 2147483647, validate: atLeast(1) },
  'group.consumer.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.consumer.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.consumer.max.size': { type: 'int', default: 2147483647, validate: atLeast(1) },
  // Online migration of non-empty groups between the classic and the consumer protocol (Kafka 3.8+ default).
  'group.consumer.migration.policy': {
    type: 'string',
    default: 'bidirectional',
    validate: oneOfIgnoringCase('disabled', 'upgrade', 'downgrade', 'bidirectional'),
  },
  // KIP-932 share groups (Kafka 4.2's defaults and bounds)
  'group.share.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.share.min.session.timeout.ms': { type: 'int', default: 45000, validate: atLeast(1) },
  'group.share.max.session.timeout.ms': { type: 'int', default: 60000, validate: atLeast(1) },
  'group.share.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.share.min.heartbeat.interval.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'group.share.max.heartbeat.interval.ms': { type: 'int', default: 15000, validate: atLeast(1) },
  'group.share.record.lock.duration.ms': { type: 'int', default: 30000, validate: atLeast(1000) },
  'group.share.min.record.lock.duration.ms': { type: 'int', default: 15000, validate: atLeast(1000) },
  'group.share.max.record.lock.duration.ms': { type: 'int', default: 60000, validate: atLeast(1000) },
  'group.share.delivery.count.limit': { type: 'int', default: 5, validate: atLeast(2) },
  'group.share.partition.max.record.locks': { type: 'int', default: 2000, validate: atLeast(100) },
  'group.share.max.size': { type: 'int', default: 200, validate: atLeast(1) },
  'group.share.max.share.sessions': { type: 'int', default: 2000, validate: atLeast(1) },
  'share.coordinator.state.topic.num.partitions': { type: 'int', default: 50, validate: atLeast(1) },
  'share.coordinator.snapshot.update.records.per.snapshot': { type: 'int', default: 500, validate: atLeast(0) },
  'share.coordinator.append.linger.ms': { type: 'int', default: 5, validate: atLeast(0) },
  'share.coordinator.state.topic.replication.factor': { type: 'int', default: 3, validate: atLeast(1) },
  'share.coordinator.state.topic.min.isr': { type: 'int', default: 2, validate: atLeast(1) },
  'share.coordinator.write.timeout.ms': { type: 'int', default: 5000, validate: atLeast(1) },
  'offsets.retention.minutes': { type: 'int', default: 10080, validate: atLeast(1) },
  'offsets.retention.check.interval.ms': { type: 'long', default: 600000 },
  'offset.metadata.max.bytes': { type: 'int', default: 4096 },
  'fetch.purgatory.purge.interval.requests': { type: 'int', default: 1000, inert: true },
  'producer.purgatory.purge.interval.requests': { type: 'int', default: 1000, inert: true },
  'zookeeper.connect': { type: 'string', default: null, inert: true },
  // gregor's own keys.
  'broker.version.emulate': { type: 'string', default: null },
  'validation.deep': { type: 'boolean', default: false },
  'num.append.workers': { type: 'int', default: -1, validate: atLeast(-1) },
  // How long one request may take to arrive whole, from its first byte (slow-loris clients); 0: no limit.
  'gregor.request.read.timeout.ms': { type: 'int', default: 30000, validate: atLeast(0) },
  // Fetch and ShareFetch responses: stored record slices go to the socket by reference (true) or are
  // copied once into the response buffer (false). See README "Fetch responses: one copy or none".
  'gregor.fetch.zero.copy': { type: 'boolean', default: true },
  // With zero copy, on plain TCP connections: large stored batches of a consumer's Fetch are sent from
  // the segment file with sendfile, not read into memory (as Kafka's transferTo). Off by default: it
  // saves the broker CPU but costs a lone consumer of small records throughput. See README.
  'gregor.fetch.sendfile': { type: 'boolean', default: false },
  // Plain TCP connections read straight into the request being assembled (true) or through Node's
  // socket stream, one 64 KB chunk at a time, copied into it (false). See README "Reading requests".
  'gregor.socket.read.direct': { type: 'boolean', default: true },
  // Plain TCP connections send a response with one sendmsg to the socket's descriptor while Node's
  // stream holds nothing of theirs (true), or always through the stream (false). See README "Writing responses".
  'gregor.socket.write.direct': { type: 'boolean', default: true },
  // Bytes of recently appended batches held in memory over all partition logs, oldest evicted first
  // (each log also keeps at most 1 MiB); tailing consumers are served from there. 0: no such cache.
  'gregor.log.recent.cache.bytes': { type: 'int', default: 33554432, validate: atLeast(0) },
  // Zero-copy Fetch's segment read buffers kept for reuse (bytes of idle buffers; 0: every read allocates).
  'gregor.fetch.read.buffer.pool.bytes': { type: 'int', default: 33554432, validate: atLeast(0) },
  'metadata.store': { type: 'string', default: 'local', validate: oneOf('local', 'etcd') },
  // metadata.store=etcd: the etcd client URLs (comma-separated), and how long a broker's registration
  // outlives its last keep-alive (Kafka's broker.session.timeout.ms, the etcd lease's TTL).
  'etcd.endpoints': { type: 'list', default: null },
  'broker.session.timeout.ms': { type: 'int', default: 9000, validate: atLeast(1000) },
  // The admin HTTP listener (metrics, health, request log, fault injection): host:port, 0 or host:0
  // for a free port, none to disable. Clients other than loopback ones are refused unless allowed.
  'admin.listener': { type: 'string', default: '127.0.0.1:9644', validate: (v) => adminListenerError(v) },
  'admin.listener.allow.remote': { type: 'boolean', default: false },
  // How many of the last requests GET /v1/requests keeps (0: none).
  'admin.requests.log.size': { type: 'int', default: 1000, validate: atLeast(0) },
  ...SSL_BROKER_CONFIG,
  ...SASL_BROKER_CONFIG,
  ...ACL_BROKER_CONFIG,
};
