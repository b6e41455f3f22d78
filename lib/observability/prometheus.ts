/**
 * GET /metrics: the broker's metrics under the names the Strimzi / prometheus JMX-exporter rules give
 * Kafka's MBeans (strimzi-kafka-operator packaging/examples/metrics/kafka-metrics.yaml, jmx_exporter
 * example_configs/kafka-2_0_0.yml: lowercased `kafka_<domain>_<type>_<name>`, Meters' Count as
 * `_total`, Histograms as `quantile` gauges plus `_count`), so that the Strimzi Kafka dashboard reads
 * them unchanged; the consumer-lag families of kafka_exporter (lag-metrics.ts); and the process
 * metrics (process-metrics.ts). Everything is computed at scrape time from the broker's state and
 * its plain counters, one family per event-loop turn (families.ts), and prom-client writes the
 * exposition format: nothing here runs per request.
 */
import type { CleanerStats } from '../log/cleaner/cleaner.js';
import { readFile } from 'node:fs/promises';
import { Registry } from 'prom-client';
import type { BrokerMetrics } from './broker-metrics.js';
import { Families, type Put } from './families.js';
import { registerLagMetrics } from './lag-metrics.js';
import { registerOverloadMetrics } from './overload-metrics.js';
import type { ThrottleTotal } from '../quota/manager.js';
import type { ConnectionQuotas } from '../network/connection-quotas.js';
import type { RequestBudget } from '../network/request-budget.js';
import { processRegistry } from './process-metrics.js';
import { QUANTILES, TIMERS, errorName } from './request-metrics.js';
import type { TopicStats } from './topic-metrics.js';
import type { FetchSessionStats } from '../replica/fetch-sessions.js';

/** A partition's log as the metrics read it (PartitionLog satisfies it). */
export interface PartitionView {
  readonly size: number;
  readonly logStartOffset: bigint;
  readonly logEndOffset: bigint;
  readonly highWatermark: bigint;
  readonly segmentBaseOffsets: readonly bigint[];
  readonly isOffline: boolean;
}

export interface TopicView {
  readonly name: string;
  /** partitions by index; undefined while a partition's log is not open */
  readonly partitions: readonly (PartitionView | undefined)[];
  readonly partitionCount: number;
  readonly minInsyncReplicas: number;
}

export interface GroupView {
  readonly groupId: string;
  readonly members: number;
  /** committed offsets */
  offsets(): Iterable<{ topic: string; partition: number; offset: bigint }>;
}

export interface ListenerView {
  readonly name: string;
  readonly connections: Iterable<{ readonly info: { readonly clientSoftware?: { name: string; version: string } } }>;
}

/** What /metrics reads, as the broker wires it. */
export interface MetricsSource {
  readonly metrics: BrokerMetrics;
  readonly nodeId: number;
  /** the fetch session cache's counts (KIP-227) */
  fetchSessions(): FetchSessionStats;
  /** host:port clients bootstrap from (kafka_broker_info) */
  brokerAddress(): string;
  isReady(): boolean;
  topics(): Iterable<TopicView>;
  groups(): Iterable<GroupView>;
  listeners(): Iterable<ListenerView>;
  /** The log cleaner's gauges; null when it is disabled. */
  logCleaner?(): CleanerStats | null;
  /** The connection quotas and request budget shared by the listeners; null before they are bound. */
  overload?(): { quotas: ConnectionQuotas; budget: RequestBudget } | null;
  /** Throttle time handed out per client quota (lib/quota/manager.ts). */
  quotaThrottles?(): Iterable<ThrottleTotal>;
  /** What the partition logs' recent-batches caches hold together (lib/log/recent-cache.ts). */
  recentCache?(): { bytes: number; entries: number; limit: number };
}

/** BrokerTopicMetrics meters and their TopicStats fields. */
const TOPIC_METERS: readonly [string, keyof TopicStats, string][] = [
  ['messagesin', 'messagesIn', 'Records appended by Produce requests (MessagesInPerSec)'],
  ['bytesin', 'bytesIn', 'Bytes of record batches appended by Produce requests (BytesInPerSec)'],
  ['bytesout', 'bytesOut', 'Record bytes returned to consumer fetches (BytesOutPerSec)'],
  ['totalproducerequests', 'totalProduceRequests', 'Produce requests, counted per partition (TotalProduceRequestsPerSec)'],
  ['failedproducerequests', 'failedProduceRequests', 'Produce requests that failed, per partition (FailedProduceRequestsPerSec)'],
  ['totalfetchrequests', 'totalFetchRequests', 'Fetch requests, counted per partition (TotalFetchRequestsPerSec)'],
  ['failedfetchrequests', 'failedFetchRequests', 'Fetch requests that failed, per partition (FailedFetchRequestsPerSec)'],
];

/** Kafka's BrokerState values (kafka.server<type=KafkaServer, name=BrokerState>). */
const BrokerState = { STARTING: 1, RUNNING: 3 } as const;

/** /proc/self/io read_bytes and write_bytes (Kafka's LinuxIoMetricsCollector reads the same), or null off Linux. */
async function linuxIo(): Promise<{ read: number; write: number } | null> {
  try {
    const text = await readFile('/proc/self/io', 'utf8');
    const read = /^read_bytes:\s*(\d+)/m.exec(text)?.[1];
    const write = /^write_bytes:\s*(\d+)/m.exec(text)?.[1];
    return read === undefined || write === undefined ? null : { read: Number(read), write: Number(write) };
  } catch {
    return null;
  }
}

export class PrometheusExporter {
  private readonly registry = new Registry();
  private readonly families = new Families(this.registry);
  private merged: Registry | null = null;
  private lastElu = performance.eventLoopUtilization();
  private idle = 1;
  private io: { read: number; write: number } | null = null;
  private readonly lag: { newScrape(): void };

  constructor(private readonly source: MetricsSource) {
    this.registerBroker();
    this.lag = registerLagMetrics(this.families, source);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text of one scrape. */
  async scrape(): Promise<string> {
    // per-scrape inputs shared by several families
    const elu = performance.eventLoopUtilization(this.lastElu);
    this.lastElu = performance.eventLoopUtilization();
    this.idle = Number.isFinite(elu.utilization) ? 1 - elu.utilization : 1;
    this.io = await linuxIo();
    this.lag.newScrape();
    this.merged ??= Registry.merge([this.registry, processRegistry()]);
    return this.merged.metrics();
  }

  private registerBroker(): void {
    const f = this.families;
    const gauge = (name: string, help: string, labelNames: readonly string[], fill: (put: Put) => void) =>
      f.gauge(name, help, labelNames, fill);
    const counter = (name: string, help: string, labelNames: readonly string[], fill: (put: Put) => void) =>
      f.counter(name, help, labelNames, fill);
    const src = this.source;
    const m = src.metrics;

    // ---- LogCleaner (kafka.log<type=LogCleaner>, LogCleanerManager): a few of Kafka's gauges ----
    const cleaner = (name: string, help: string, field: keyof CleanerStats): void =>
      gauge(`kafka_log_logcleaner_${name}`, help, [], (put) => {
        const st = src.logCleaner?.() ?? null;
        if (st !== null) put(null, st[field]);
      });
    cleaner(
      'max_buffer_utilization_percent',
      'Offset map use of the last cleaning, percent (max-buffer-utilization-percent)',
      'maxBufferUtilizationPercent',
    );
    cleaner(
      'cleaner_recopy_percent',
      'Bytes written / bytes read by the last cleaning, percent (cleaner-recopy-percent)',
      'cleanerRecopyPercent',
    );
    cleaner('max_clean_time_secs', 'Duration of the last cleaning, seconds (max-clean-time-secs)', 'maxCleanTimeSecs');
    cleaner('max_dirty_percent', 'Dirty share of the dirtiest compacted log, percent (max-dirty-percent)', 'maxDirtyPercent');
    cleaner('uncleanable_partitions_count', 'Logs the cleaner gave up on (uncleanable-partitions-count)', 'uncleanablePartitions');
    cleaner('cleanings', 'Cleanings swapped in since start', 'cleanings');

    // ---- BrokerTopicMetrics: per topic, and broker-wide without a topic label ----
    for (const [meter, field, help] of TOPIC_METERS) {
      counter(`kafka_server_brokertopicmetrics_${meter}_total`, help, ['topic'], (put) => {
        put(null, m.topics.all[field]);
        for (const [topic, s] of m.topics.topics()) put({ topic }, s[field]);
      });
    }

    // ---- RequestMetrics ----
    counter(
      'kafka_network_requestmetrics_requests_total',
      'Requests by request name and API version (RequestsPerSec)',
      ['request', 'version'],
      (put) => {
        for (const s of m.requests.all()) s.versions.forEach((n, version) => n > 0 && put({ request: s.name, version }, n));
      },
    );
    counter(
      'kafka_network_requestmetrics_errors_total',
      'Responses by request name and error: the top-level error, else the first partition error (ErrorsPerSec; Kafka counts every error of a response)',
      ['request', 'error'],
      (put) => {
        for (const s of m.requests.all()) for (const [code, n] of s.errors()) put({ request: s.name, error: errorName(code) }, n);
      },
    );
    TIMERS.forEach((timer, i) => {
      // the quantile family and its _count are separate families, as the JMX exporter emits them
      gauge(
        `kafka_network_requestmetrics_${timer}`,
        `Request ${timer.replace(/ms$/, '')} in ms, last 5 minutes (RequestMetrics ${timer})`,
        ['request', 'quantile'],
        (put) => {
          const now = performance.now();
          for (const s of m.requests.all()) {
            const values = s.timers.quantiles(
              i,
              QUANTILES.map((q) => q.q),
              now,
            );
            QUANTILES.forEach((q, j) => put({ request: s.name, quantile: q.label }, values[j] ?? 0));
          }
        },
      );
      counter(`kafka_network_requestmetrics_${timer}_count`, `Requests measured by ${timer}`, ['request'], (put) => {
        for (const s of m.requests.all()) put({ request: s.name }, s.count);
      });
    });

    // ---- FetchSessionCache (KIP-227) ----
    gauge('kafka_server_fetchsessioncache_numincrementalfetchsessions', 'Open fetch sessions (NumIncrementalFetchSessions)', [], (put) =>
      put(null, src.fetchSessions().sessions),
    );
    gauge('kafka_server_fetchsessioncache_sessions', 'Open fetch sessions by kind: follower (privileged) or consumer', ['kind'], (put) => {
      const st = src.fetchSessions();
      put({ kind: 'follower' }, st.followerSessions);
      put({ kind: 'consumer' }, st.sessions - st.followerSessions);
    });
    gauge(
      'kafka_server_fetchsessioncache_numincrementalfetchpartitionscached',
      'Partitions cached over all fetch sessions (NumIncrementalFetchPartitionsCached)',
      [],
      (put) => put(null, src.fetchSessions().partitions),
    );
    counter(
      'kafka_server_fetchsessioncache_fetches_total',
      'Fetch requests by fetcher (follower, consumer) and session context (sessionless, full, incremental, error)',
      ['fetcher', 'context'],
      (put) => {
        const st = src.fetchSessions();
        for (const fetcher of ['follower', 'consumer'] as const)
          for (const [context, n] of Object.entries(st.fetches[fetcher])) put({ fetcher, context }, n);
      },
    );
    counter(
      'kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total',
      'Fetch sessions evicted (IncrementalFetchSessionEvictionsPerSec)',
      [],
      (put) => put(null, src.fetchSessions().evictions),
    );

    // ---- ReplicaManager, Partition, Log (one node: every partition is a leader with an ISR of 1) ----
    const partitions = function* () {
      for (const t of src.topics()) for (let p = 0; p < t.partitionCount; p++) yield { t, p, log: t.partitions[p] };
    };
    gauge('kafka_server_replicamanager_partitioncount', 'Partitions (replicas) on this broker', [], (put) =>
      put(null, [...partitions()].length),
    );
    gauge('kafka_server_replicamanager_leadercount', 'Partitions this broker leads', [], (put) =>
      put(null, [...partitions()].filter((x) => x.log !== undefined && !x.log.isOffline).length),
    );
    gauge(
      'kafka_server_replicamanager_underreplicatedpartitions',
      'Partitions whose ISR is smaller than their replica set (a single node: none)',
      [],
      (put) => put(null, 0),
    );
    gauge('kafka_server_replicamanager_offlinereplicacount', 'Replicas whose log is offline', [], (put) =>
      put(null, [...partitions()].filter((x) => x.log?.isOffline === true).length),
    );
    gauge('kafka_server_replicamanager_atminisrpartitioncount', 'Partitions whose ISR size equals min.insync.replicas', [], (put) =>
      put(null, [...partitions()].filter((x) => x.t.minInsyncReplicas === 1).length),
    );
    gauge('kafka_server_replicamanager_underminisrpartitioncount', 'Partitions whose ISR is below min.insync.replicas', [], (put) =>
      put(null, [...partitions()].filter((x) => x.t.minInsyncReplicas > 1).length),
    );
    const perPartition = (name: string, help: string, value: (x: { t: TopicView; log: PartitionView | undefined }) => number | null) =>
      gauge(name, help, ['topic', 'partition'], (put) => {
        for (const x of partitions()) {
          const v = value(x);
          if (v !== null) put({ topic: x.t.name, partition: x.p }, v);
        }
      });
    perPartition('kafka_cluster_partition_replicascount', 'Replicas of the partition', () => 1);
    perPartition('kafka_cluster_partition_insyncreplicascount', 'In-sync replicas of the partition', () => 1);
    perPartition('kafka_cluster_partition_underreplicated', '1 when the partition is under-replicated', () => 0);
    perPartition('kafka_cluster_partition_atminisr', '1 when the ISR size equals min.insync.replicas', (x) =>
      x.t.minInsyncReplicas === 1 ? 1 : 0,
    );
    perPartition('kafka_cluster_partition_underminisr', '1 when the ISR is below min.insync.replicas', (x) =>
      x.t.minInsyncReplicas > 1 ? 1 : 0,
    );
    perPartition('kafka_log_log_size', 'Bytes in the partition log (all segments)', (x) => x.log?.size ?? null);
    perPartition('kafka_log_log_logstartoffset', 'Log start offset', (x) => (x.log === undefined ? null : Number(x.log.logStartOffset)));
    perPartition('kafka_log_log_logendoffset', 'Log end offset', (x) => (x.log === undefined ? null : Number(x.log.logEndOffset)));
    perPartition('kafka_log_log_numlogsegments', 'Segments in the partition log', (x) => x.log?.segmentBaseOffsets.length ?? null);

    // ---- controller (a single node is its own controller) ----
    gauge('kafka_controller_kafkacontroller_activecontrollercount', '1 on the active controller', [], (put) => put(null, 1));
    gauge('kafka_controller_kafkacontroller_offlinepartitionscount', 'Partitions without a leader (an offline log)', [], (put) =>
      put(null, [...partitions()].filter((x) => x.log?.isOffline === true).length),
    );
    gauge('kafka_controller_kafkacontroller_globaltopiccount', 'Topics in the cluster', [], (put) => put(null, [...src.topics()].length));
    gauge('kafka_controller_kafkacontroller_globalpartitioncount', 'Partitions in the cluster', [], (put) =>
      put(null, [...partitions()].length),
    );
    counter(
      'kafka_controller_controllerstats_uncleanleaderelections_total',
      'Unclean leader elections (none on a single node)',
      [],
      (put) => put(null, 0),
    );

    // ---- server and network ----
    gauge('kafka_server_kafkaserver_brokerstate', 'Broker state: 1 starting, 3 running', [], (put) =>
      put(null, src.isReady() ? BrokerState.RUNNING : BrokerState.STARTING),
    );
    gauge(
      'kafka_server_socket_server_metrics_connection_count',
      'Open connections per listener (one network processor: the event loop)',
      ['listener', 'networkProcessor'],
      (put) => {
        for (const l of src.listeners()) put({ listener: l.name, networkProcessor: '0' }, [...l.connections].length);
      },
    );
    gauge(
      'kafka_server_socket_server_metrics_connections_software',
      'Open connections by the client software they named in ApiVersions v3+',
      ['clientSoftwareName', 'clientSoftwareVersion', 'listener', 'networkProcessor'],
      (put) => {
        for (const l of src.listeners()) {
          const counts = new Map<string, { name: string; version: string; n: number }>();
          for (const c of l.connections) {
            const sw = c.info.clientSoftware ?? { name: 'unknown', version: 'unknown' };
            const key = `${sw.name}\u0000${sw.version}`;
            const e = counts.get(key) ?? { name: sw.name, version: sw.version, n: 0 };
            e.n++;
            counts.set(key, e);
          }
          for (const e of counts.values())
            put({ clientSoftwareName: e.name, clientSoftwareVersion: e.version, listener: l.name, networkProcessor: '0' }, e.n);
        }
      },
    );
    registerOverloadMetrics(f, () => src.overload?.());
    gauge(
      'gregor_log_recent_cache_bytes',
      'Bytes of recently appended batches held in memory over all partitions to serve tailing consumers (gregor.log.recent.cache.bytes bounds it)',
      [],
      (put) => {
        const c = src.recentCache?.();
        if (c !== undefined) put(null, c.bytes);
      },
    );
    gauge('gregor_log_recent_cache_entries', 'Batches held in the recent-batches caches over all partitions', [], (put) => {
      const c = src.recentCache?.();
      if (c !== undefined) put(null, c.entries);
    });
    f.counter(
      'gregor_client_quota_throttle_time_ms_total',
      'Throttle time handed out to clients over a quota, per quota key and the user / client id it is measured for',
      ['quota', 'user', 'client_id'],
      (put) => {
        for (const t of src.quotaThrottles?.() ?? []) put({ quota: t.type, user: t.user, client_id: t.clientId }, t.throttleMsTotal);
      },
    );
    // Kafka's network threads and request handler threads are one event loop here: both idle
    // fractions are 1 - the event loop's utilisation since the previous scrape (0..1, as Kafka's).
    gauge(
      'kafka_network_socketserver_networkprocessoravgidle_percent',
      'Fraction of time the event loop was idle since the previous scrape (NetworkProcessorAvgIdlePercent)',
      [],
      (put) => put(null, this.idle),
    );
    gauge(
      'kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent',
      'Fraction of time the event loop was idle since the previous scrape (RequestHandlerAvgIdlePercent)',
      [],
      (put) => put(null, this.idle),
    );
    gauge(
      'kafka_server_kafkaserver_linux_disk_read_bytes',
      'Bytes this process read from storage (/proc/self/io read_bytes)',
      [],
      (put) => this.io !== null && put(null, this.io.read),
    );
    gauge(
      'kafka_server_kafkaserver_linux_disk_write_bytes',
      'Bytes this process wrote to storage (/proc/self/io write_bytes)',
      [],
      (put) => this.io !== null && put(null, this.io.write),
    );
  }
}
