/**
 * The admin HTTP listener against real clients: /metrics scraped and parsed with a Prometheus
 * text-format parser after a kafkajs workload (every metric the Strimzi Kafka dashboard and the
 * kafka_exporter dashboards query is there with its labels, and the values add up: messages in =
 * produced, lag = unconsumed), the time split (a librdkafka long poll waits in RemoteTime, a
 * produce with acks=all is LocalTime), health during boot and after, the request log's filters and
 * recording, and bad requests.
 */
import { expect } from 'chai';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { Writable } from 'node:stream';
import { Kafka, logLevel } from 'kafkajs';
import parsePrometheusTextFormat, { type ParsedFamily, type ParsedSample } from 'parse-prometheus-text-format';
import { loadConfluent } from '../../compat/lib/confluent-module.js';
import { Broker } from '../../lib/broker.js';
import { createLogger, silentLogger } from '../../lib/observability/logger.js';
import { buildRecordBatch } from '../../protocol/records/index.js';
import { RawClient, rawCreateTopics, rawProduce } from '../helpers/raw-client.js';
import { startTestBroker, tempDir, type TestBroker } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { asError } from '../../lib/as-error.js';

const TIMERS = ['totaltimems', 'requestqueuetimems', 'localtimems', 'remotetimems', 'responsequeuetimems', 'responsesendtimems'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * What the dashboards query, with the labels their expressions use (namespace, strimzi_io_cluster,
 * kubernetes_pod_name, instance and job are added by Prometheus' scrape config, not by the target).
 * Left out: container_* and kubelet_* (cAdvisor / kubelet, not the broker).
 */
const DASHBOARD_METRICS: { name: string; labels: string[]; panel: string }[] = [
  // Strimzi strimzi-kafka.json
  { name: 'kafka_server_replicamanager_leadercount', labels: [], panel: 'Brokers Online; template variables' },
  { name: 'kafka_controller_kafkacontroller_activecontrollercount', labels: [], panel: 'Active Controllers' },
  { name: 'kafka_controller_controllerstats_uncleanleaderelections_total', labels: [], panel: 'Unclean Leader Election Rate' },
  { name: 'kafka_server_replicamanager_partitioncount', labels: [], panel: 'Online Replicas' },
  { name: 'kafka_server_replicamanager_underreplicatedpartitions', labels: [], panel: 'Under Replicated Partitions' },
  { name: 'kafka_cluster_partition_atminisr', labels: ['topic', 'partition'], panel: 'Partitions at minimum ISR' },
  { name: 'kafka_cluster_partition_underminisr', labels: ['topic', 'partition'], panel: 'Partitions under minimum ISR' },
  { name: 'kafka_controller_kafkacontroller_offlinepartitionscount', labels: [], panel: 'Offline Partitions Count' },
  { name: 'process_open_fds', labels: [], panel: 'Open File Descriptors' },
  { name: 'jvm_memory_bytes_used', labels: ['area'], panel: 'JVM Memory Used' },
  { name: 'jvm_gc_collection_seconds', labels: ['gc'], panel: 'JVM GC Time (_sum), JVM GC Count (_count)' },
  { name: 'jvm_threads_current', labels: [], panel: 'JVM Thread Count' },
  { name: 'kafka_server_brokertopicmetrics_bytesin_total', labels: ['topic'], panel: 'Total Incoming Byte Rate; Byte Rate' },
  { name: 'kafka_server_brokertopicmetrics_bytesout_total', labels: ['topic'], panel: 'Total Outgoing Byte Rate; Byte Rate' },
  { name: 'kafka_server_brokertopicmetrics_messagesin_total', labels: ['topic'], panel: 'Incoming Messages Rate; Messages In Per Second' },
  {
    name: 'kafka_server_brokertopicmetrics_totalproducerequests_total',
    labels: ['topic'],
    panel: 'Total Produce Request Rate; Produce Request Rate',
  },
  { name: 'kafka_server_brokertopicmetrics_failedproducerequests_total', labels: ['topic'], panel: 'Produce Request Rate' },
  { name: 'kafka_server_brokertopicmetrics_totalfetchrequests_total', labels: ['topic'], panel: 'Fetch Request Rate' },
  { name: 'kafka_server_brokertopicmetrics_failedfetchrequests_total', labels: ['topic'], panel: 'Fetch Request Rate' },
  { name: 'kafka_network_socketserver_networkprocessoravgidle_percent', labels: [], panel: 'Network Processor Avg Idle Percent' },
  { name: 'kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent', labels: [], panel: 'Request Handler Avg Idle Percent' },
  { name: 'kafka_server_kafkaserver_linux_disk_write_bytes', labels: [], panel: 'Disk Writes' },
  { name: 'kafka_server_kafkaserver_linux_disk_read_bytes', labels: [], panel: 'Disk Reads' },
  { name: 'kafka_server_socket_server_metrics_connection_count', labels: ['listener'], panel: 'Connection Count per Listener' },
  { name: 'kafka_log_log_size', labels: ['topic', 'partition'], panel: 'Log Size; $kafka_partition' },
  { name: 'kafka_cluster_partition_replicascount', labels: ['topic'], panel: '$kafka_topic' },
  // kafka_exporter: Kafka Exporter Overview (Grafana 7589) and Strimzi strimzi-kafka-exporter.json
  {
    name: 'kafka_topic_partition_current_offset',
    labels: ['topic', 'partition'],
    panel: 'Message in per second/minute; Latest Offsets; $topic',
  },
  { name: 'kafka_consumergroup_lag', labels: ['consumergroup', 'topic', 'partition'], panel: 'Lag by Consumer Group; Consumer Group Lag' },
  {
    name: 'kafka_consumergroup_current_offset',
    labels: ['consumergroup', 'topic', 'partition'],
    panel: 'Message consume per minute; Consumer Group Offsets; $consumergroup',
  },
  { name: 'kafka_topic_partitions', labels: ['topic'], panel: 'Partitions per Topic; Topics; Partitions; Number of Partitions' },
  { name: 'kafka_topic_partition_replicas', labels: ['topic'], panel: 'Replicas' },
  { name: 'kafka_topic_partition_in_sync_replica', labels: ['topic'], panel: 'In Sync Replicas' },
  { name: 'kafka_topic_partition_under_replicated_partition', labels: ['topic'], panel: 'Under Replicated Partitions' },
  { name: 'kafka_topic_partition_leader_is_preferred', labels: ['topic'], panel: 'Partitions not on preferred node' },
  { name: 'kafka_topic_partition_oldest_offset', labels: ['topic', 'partition'], panel: 'Oldest Offsets' },
  { name: 'kafka_broker_info', labels: ['id', 'address'], panel: '$kubernetes_namespace' },
  { name: 'kafka_brokers', labels: [], panel: '(kafka_exporter README)' },
  { name: 'kafka_consumergroup_lag_sum', labels: ['consumergroup', 'topic'], panel: '(kafka_exporter README)' },
  { name: 'kafka_consumergroup_current_offset_sum', labels: ['consumergroup', 'topic'], panel: '(kafka_exporter README)' },
  { name: 'kafka_consumergroup_members', labels: ['consumergroup'], panel: '(kafka_exporter README)' },
  // request metrics (jmx_exporter kafka-2_0_0.yml names; Confluent's request-type breakdown)
  { name: 'kafka_network_requestmetrics_requests_total', labels: ['request', 'version'], panel: 'requests per API and version' },
  ...TIMERS.flatMap((t) => [
    { name: `kafka_network_requestmetrics_${t}`, labels: ['request', 'quantile'], panel: `${t} percentiles` },
    { name: `kafka_network_requestmetrics_${t}_count`, labels: ['request'], panel: `${t} count` },
  ]),
];

class Scrape {
  readonly families: Map<string, ParsedFamily>;
  constructor(readonly text: string) {
    this.families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
  }
  family(name: string): ParsedFamily {
    const f = this.families.get(name);
    if (f === undefined) throw new Error(`no metric family ${name} in the scrape`);
    return f;
  }
  /** Samples whose labels include `labels` (and, with exact, have no others). */
  samples(name: string, labels: Record<string, string> = {}, exact = false): ParsedSample[] {
    return this.family(name).metrics.filter((m) => {
      const l = m.labels ?? {};
      if (exact && Object.keys(l).length !== Object.keys(labels).length) return false;
      return Object.entries(labels).every(([k, v]) => l[k] === v);
    });
  }
  value(name: string, labels: Record<string, string> = {}, exact = true): number {
    const s = this.samples(name, labels, exact);
    if (s.length !== 1) throw new Error(`${name}${JSON.stringify(labels)}: ${s.length} samples`);
    return Number(s[0]!.value);
  }
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((n, m) => n + Number(m.value), 0);
  }
}

async function scrape(admin: string): Promise<Scrape> {
  const res = await fetch(`http://${admin}/metrics`);
  expect(res.status).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await res.text());
}

interface LogEntry {
  api: string;
  version: number;
  clientId: string | null;
  clientSoftwareName: string | null;
  clientSoftwareVersion: string | null;
  errorCode: number;
  partitionError: string;
  outcome: string;
  latencyMs: { total: number; requestQueue: number; local: number; remote: number; responseQueue: number; responseSend: number };
}

async function requestLog(
  admin: string,
  query: string,
): Promise<{ recording: { held: number; source: string; recordAll: boolean }; requests: LogEntry[] }> {
  const res = await fetch(`http://${admin}/v1/requests${query}`);
  expect(res.status, await res.clone().text()).to.equal(200);
  return (await res.json()) as { recording: { held: number; source: string; recordAll: boolean }; requests: LogEntry[] };
}

describe('admin HTTP listener', function () {
  this.timeout(120_000);

  describe('/metrics after a kafkajs workload', () => {
    const TOPIC = 'admin-metrics';
    const GROUP = 'admin-metrics-group';
    const N1 = 120; // produced, consumed and committed
    const N2 = 80; // produced after the group left: its lag
    const VALUE = Buffer.alloc(100, 97);
    let tb: TestBroker;
    let admin: string;
    let kafka: Kafka;
    let producer: ReturnType<Kafka['producer']>;
    let s: Scrape;
    const cleanup = new Cleanup();

    before(async () => {
      tb = cleanup.add(await startTestBroker(), (t) => t.stop());
      admin = tb.broker.adminAddress!;
      kafka = new Kafka({ brokers: [tb.bootstrap], clientId: 'admin-kjs', logLevel: logLevel.NOTHING });
      const adm = kafka.admin();
      await adm.connect();
      await adm.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }], waitForLeaders: true });
      await adm.disconnect();
      producer = cleanup.add(kafka.producer(), (p) => p.disconnect());
      await producer.connect();
      const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ partition: (from + i) % 2, value: VALUE }));
      for (let i = 0; i < N1; i += 20) await producer.send({ topic: TOPIC, acks: -1, messages: batch(i, 20) });
      // a group reads all of it and commits what it read, then leaves
      const consumer = kafka.consumer({ groupId: GROUP, heartbeatInterval: 500, maxWaitTimeInMs: 200 });
      await consumer.connect();
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      const next = new Map<number, number>();
      let seen = 0;
      await consumer.run({
        autoCommit: false,
        eachMessage: ({ partition, message }) => {
          next.set(partition, Number(message.offset) + 1);
          seen++;
          return Promise.resolve();
        },
      });
      const deadline = Date.now() + 30_000;
      while (seen < N1 && Date.now() < deadline) await sleep(50);
      expect(seen).to.equal(N1);
      await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic: TOPIC, partition, offset: String(offset) })));
      await consumer.disconnect();
      for (let i = 0; i < N2; i += 20) await producer.send({ topic: TOPIC, acks: 1, messages: batch(i, 20) });
      s = await scrape(admin);
    });

    after(() => cleanup.run());

    it('has every metric the Strimzi Kafka and kafka_exporter dashboards query, with their labels', () => {
      const missing: string[] = [];
      for (const m of DASHBOARD_METRICS) {
        const f = s.families.get(m.name);
        if (f === undefined) {
          missing.push(`${m.name} (${m.panel}): no family`);
          continue;
        }
        // jvm_gc_collection_seconds: the summary shows a gc label once a collection happened
        if (f.metrics.length === 0 && m.name === 'jvm_gc_collection_seconds') continue;
        if (!f.metrics.some((x) => m.labels.every((l) => x.labels?.[l] !== undefined && x.labels[l] !== '')))
          missing.push(`${m.name} (${m.panel}): no sample with labels ${m.labels.join(',')}`);
      }
      expect(missing).to.deep.equal([]);
      expect(s.family('jvm_gc_collection_seconds').type).to.equal('SUMMARY');
    });

    it('counts messages and bytes in/out per topic and broker-wide as Kafka does', () => {
      expect(s.value('kafka_server_brokertopicmetrics_messagesin_total', { topic: TOPIC })).to.equal(N1 + N2);
      expect(s.value('kafka_server_brokertopicmetrics_messagesin_total', {}), 'broker-wide, no topic label').to.equal(N1 + N2);
      const bytesIn = s.value('kafka_server_brokertopicmetrics_bytesin_total', { topic: TOPIC });
      expect(bytesIn).to.be.above((N1 + N2) * VALUE.length);
      // batches are stored as they came: the log holds exactly the bytes that came in
      expect(s.sum('kafka_log_log_size', { topic: TOPIC })).to.equal(bytesIn);
      const bytesOut = s.value('kafka_server_brokertopicmetrics_bytesout_total', { topic: TOPIC });
      expect(bytesOut, 'the group fetched the first N1 records').to.be.above(N1 * VALUE.length);
      expect(s.value('kafka_server_brokertopicmetrics_totalproducerequests_total', { topic: TOPIC })).to.equal(((N1 + N2) / 20) * 2);
      expect(s.value('kafka_server_brokertopicmetrics_failedproducerequests_total', { topic: TOPIC })).to.equal(0);
      expect(s.value('kafka_server_brokertopicmetrics_totalfetchrequests_total', { topic: TOPIC })).to.be.above(0);
      expect(s.value('kafka_server_brokertopicmetrics_failedfetchrequests_total', { topic: TOPIC })).to.equal(0);
    });

    it('has the lag of kafka_exporter: lag = unconsumed, current offsets = what was committed and produced', () => {
      for (const p of ['0', '1']) {
        expect(s.value('kafka_topic_partition_current_offset', { topic: TOPIC, partition: p })).to.equal((N1 + N2) / 2);
        expect(s.value('kafka_topic_partition_oldest_offset', { topic: TOPIC, partition: p })).to.equal(0);
        expect(s.value('kafka_consumergroup_current_offset', { consumergroup: GROUP, topic: TOPIC, partition: p })).to.equal(N1 / 2);
        expect(s.value('kafka_consumergroup_lag', { consumergroup: GROUP, topic: TOPIC, partition: p })).to.equal(N2 / 2);
      }
      expect(s.value('kafka_consumergroup_lag_sum', { consumergroup: GROUP, topic: TOPIC })).to.equal(N2);
      expect(s.value('kafka_consumergroup_current_offset_sum', { consumergroup: GROUP, topic: TOPIC })).to.equal(N1);
      expect(s.value('kafka_consumergroup_members', { consumergroup: GROUP }), 'the group left').to.equal(0);
      expect(s.value('kafka_topic_partitions', { topic: TOPIC })).to.equal(2);
      expect(s.value('kafka_brokers')).to.equal(1);
      expect(s.value('kafka_broker_info', { id: '0', address: tb.bootstrap })).to.equal(1);
    });

    it('reports partitions, leaders, the controller and connections of a single node', () => {
      const partitions = 50 + 2; // __consumer_offsets and the topic
      expect(s.value('kafka_server_replicamanager_partitioncount')).to.equal(partitions);
      expect(s.value('kafka_server_replicamanager_leadercount')).to.equal(partitions);
      expect(s.value('kafka_server_replicamanager_underreplicatedpartitions')).to.equal(0);
      expect(s.value('kafka_controller_kafkacontroller_activecontrollercount')).to.equal(1);
      expect(s.value('kafka_controller_kafkacontroller_offlinepartitionscount')).to.equal(0);
      expect(s.value('kafka_cluster_partition_atminisr', { topic: TOPIC, partition: '0' }), 'ISR 1 = min.insync.replicas 1').to.equal(1);
      expect(s.value('kafka_cluster_partition_underminisr', { topic: TOPIC, partition: '0' })).to.equal(0);
      expect(
        s.value('kafka_server_socket_server_metrics_connection_count', { listener: 'PLAINTEXT', networkProcessor: '0' }),
        'the producer is connected',
      ).to.be.at.least(1);
      expect(s.value('kafka_server_kafkaserver_brokerstate')).to.equal(3);
      for (const idle of [
        'kafka_network_socketserver_networkprocessoravgidle_percent',
        'kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent',
      ]) {
        expect(s.value(idle)).to.be.within(0, 1);
      }
      expect(s.value('jvm_memory_bytes_used', { area: 'heap' })).to.be.above(1 << 20);
      expect(s.value('jvm_threads_current')).to.be.at.least(1);
      expect(s.value('process_open_fds')).to.be.above(0);
      expect(s.value('nodejs_eventloop_utilization')).to.be.within(0, 1);
      expect(s.families.has('nodejs_eventloop_lag_p99_seconds'), 'event-loop delay (prom-client)').to.equal(true);
    });

    it('counts requests per API and version, and each time histogram counts every one of them', () => {
      const produced = s.samples('kafka_network_requestmetrics_requests_total', { request: 'Produce' });
      expect(produced.length).to.be.at.least(1);
      for (const p of produced) expect(p.labels?.['version']).to.match(/^\d+$/);
      const produceCount = produced.reduce((n, p) => n + Number(p.value), 0);
      expect(produceCount, 'one per send').to.equal((N1 + N2) / 20);
      for (const t of TIMERS) {
        expect(s.value(`kafka_network_requestmetrics_${t}_count`, { request: 'Produce' }), t).to.equal(produceCount);
        expect(s.samples(`kafka_network_requestmetrics_${t}`, { request: 'Produce' }).map((x) => x.labels?.['quantile'])).to.deep.equal([
          '0.50',
          '0.75',
          '0.95',
          '0.98',
          '0.99',
          '0.999',
        ]);
      }
      // a Fetch counts as Fetch and as FetchConsumer, as in Kafka
      expect(s.sum('kafka_network_requestmetrics_requests_total', { request: 'FetchConsumer' })).to.equal(
        s.sum('kafka_network_requestmetrics_requests_total', { request: 'Fetch' }),
      );
      expect(s.sum('kafka_network_requestmetrics_requests_total', { request: 'Fetch' })).to.be.above(0);
      expect(s.value('kafka_network_requestmetrics_errors_total', { request: 'Produce', error: 'NONE' })).to.equal(produceCount);
    });

    it('a produce with acks=all shows its time as local time, none as remote', async () => {
      const { requests } = await requestLog(admin, '?api=Produce&client=admin-kjs');
      expect(requests).to.have.length((N1 + N2) / 20);
      for (const r of requests) {
        expect(r.latencyMs.remote).to.equal(0);
        expect(r.latencyMs.local).to.be.above(0);
        const parts =
          r.latencyMs.requestQueue + r.latencyMs.local + r.latencyMs.remote + r.latencyMs.responseQueue + r.latencyMs.responseSend;
        expect(parts).to.be.closeTo(r.latencyMs.total, 0.01);
      }
      expect(s.value('kafka_network_requestmetrics_localtimems', { request: 'Produce', quantile: '0.50' })).to.be.above(0);
      for (const x of s.samples('kafka_network_requestmetrics_remotetimems', { request: 'Produce' })) expect(Number(x.value)).to.equal(0);
    });
  });

  describe('request time split of a librdkafka long poll', () => {
    let tb: TestBroker;
    const cleanup = new Cleanup();
    before(async () => {
      tb = cleanup.add(await startTestBroker(), (t) => t.stop());
    });
    after(() => cleanup.run());

    it('is a Fetch whose wait is remote time, not local time', async () => {
      const raw = await RawClient.connect(tb.bootstrap);
      await rawCreateTopics(raw, [{ name: 'admin-lp', partitions: 1 }]);
      expect(
        (
          await rawProduce(raw, 'admin-lp', [
            [0, buildRecordBatch([{ key: null, value: Buffer.from('x'), timestamp: BigInt(Date.now()) }])],
          ])
        )[0]?.errorCode,
      ).to.equal(0);
      raw.destroy();
      const admin = tb.broker.adminAddress!;
      const ck = loadConfluent() as {
        KafkaConsumer: new (
          conf: object,
          topicConf: object,
        ) => {
          connect(o: object, cb: (e: unknown) => void): void;
          assign(a: object[]): void;
          consume(n: number, cb: (e: unknown, m: unknown[]) => void): void;
          disconnect(cb: () => void): void;
        };
      };
      const c = new ck.KafkaConsumer(
        {
          'bootstrap.servers': tb.bootstrap,
          'group.id': 'admin-lp',
          'client.id': 'lp-probe',
          'enable.auto.commit': false,
          'fetch.wait.max.ms': 500,
          log_level: 0,
        },
        {},
      );
      await new Promise<void>((resolve, reject) => c.connect({ timeout: 10_000 }, (e) => (e ? reject(asError(e)) : resolve())));
      try {
        c.assign([{ topic: 'admin-lp', partition: 0, offset: -1 }]); // the end: every fetch waits
        const until = Date.now() + 3000;
        while (Date.now() < until) await new Promise<void>((resolve, reject) => c.consume(10, (e) => (e ? reject(asError(e)) : resolve())));
        const { requests } = await requestLog(admin, '?api=Fetch&client=lp-probe');
        const polls = requests.filter((r) => r.latencyMs.total >= 400);
        expect(polls.length, JSON.stringify(requests.map((r) => r.latencyMs))).to.be.at.least(3);
        for (const r of polls) {
          expect(r.latencyMs.remote, 'the wait is remote').to.be.within(400, 1500);
          expect(r.latencyMs.local, 'handler time is small').to.be.below(50);
        }
        const software = polls[0]!.clientSoftwareName;
        expect(software, 'from ApiVersions v3').to.be.a('string').and.not.equal('');
        const s = await scrape(admin);
        expect(s.value('kafka_network_requestmetrics_remotetimems', { request: 'FetchConsumer', quantile: '0.50' })).to.be.within(
          400,
          1500,
        );
        expect(s.value('kafka_network_requestmetrics_localtimems', { request: 'FetchConsumer', quantile: '0.50' })).to.be.below(50);
        expect(s.value('kafka_network_requestmetrics_totaltimems', { request: 'Fetch', quantile: '0.50' })).to.be.at.least(400);
        expect(
          s.sum('kafka_server_socket_server_metrics_connections_software', { clientSoftwareName: software! }),
          'connections by client software',
        ).to.be.at.least(1);
      } finally {
        await new Promise<void>((resolve) => c.disconnect(() => resolve()));
      }
    });
  });

  describe('health', () => {
    it('is booting (503) until every readiness condition holds, then ready (200 / 204); live all along', async () => {
      const dataDir = tempDir();
      const broker = new Broker({ port: 0, dataDir, logger: silentLogger() });
      const topics = broker.readiness.hold('declared topics');
      let resolved = false;
      void broker.ready.then(() => (resolved = true));
      await broker.start();
      try {
        const admin = broker.adminAddress!;
        let res = await fetch(`http://${admin}/v1/status/ready`);
        expect(res.status).to.equal(503);
        const booting = (await res.json()) as { status: string; pending: { name: string }[] };
        expect(booting.status).to.equal('booting');
        expect(booting.pending.map((p) => p.name)).to.include('declared topics');
        res = await fetch(`http://${admin}/v1/ready`);
        expect(res.status).to.equal(503);
        res = await fetch(`http://${admin}/v1/status/live`);
        expect(res.status).to.equal(200);
        expect(await res.json()).to.deep.equal({ status: 'live' });
        expect((await scrape(admin)).value('kafka_server_kafkaserver_brokerstate'), 'STARTING').to.equal(1);
        await sleep(50);
        expect(resolved, 'broker.ready waits for the hold').to.equal(false);
        expect(broker.isReady).to.equal(false);
        topics.release();
        await broker.ready;
        res = await fetch(`http://${admin}/v1/status/ready`);
        expect(res.status).to.equal(200);
        expect(await res.json()).to.deep.equal({ status: 'ready' });
        res = await fetch(`http://${admin}/v1/ready`);
        expect(res.status).to.equal(204);
        expect((await scrape(admin)).value('kafka_server_kafkaserver_brokerstate'), 'RUNNING').to.equal(3);
        await broker.stop();
        let refused = false;
        await fetch(`http://${admin}/v1/status/live`).catch(() => (refused = true));
        expect(refused, 'the admin listener is closed by stop()').to.equal(true);
      } finally {
        await broker.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });

  describe('request log and bad requests', () => {
    let tb: TestBroker;
    let admin: string;
    const cleanup = new Cleanup();
    before(async () => {
      tb = cleanup.add(await startTestBroker({ 'admin.requests.log.size': 5 }), (t) => t.stop());
      admin = tb.broker.adminAddress!;
    });
    after(() => cleanup.run());

    it('filters by API, client and errors, keeps the last N, and records everything on request', async () => {
      const raw = await RawClient.connect(tb.bootstrap);
      try {
        const batch = () => buildRecordBatch([{ key: null, value: Buffer.from('v'), timestamp: BigInt(Date.now()) }]);
        await rawCreateTopics(raw, [{ name: 'admin-log', partitions: 1 }]);
        await rawProduce(raw, 'admin-log', [[0, batch()]]);
        const bad = await rawProduce(raw, 'admin-log', [[7, batch()]]);
        expect(bad[0]?.errorCode).to.equal(3); // UNKNOWN_TOPIC_OR_PARTITION
        for (let i = 0; i < 6; i++) await rawProduce(raw, 'admin-log', [[0, batch()]]);
        let log = await requestLog(admin, '');
        expect(log.recording).to.include({ held: 5, source: 'ring' });
        expect(log.requests.every((r) => r.clientId === 'raw-client')).to.equal(true);
        // the failed produce was pushed out of the ring of 5; record everything from now on
        let res = await fetch(`http://${admin}/v1/requests/record-all`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ on: true }),
        });
        expect(res.status).to.equal(200);
        await rawProduce(raw, 'admin-log', [[9, batch()]]);
        for (let i = 0; i < 7; i++) await rawProduce(raw, 'admin-log', [[0, batch()]]);
        log = await requestLog(admin, '');
        expect(log.recording).to.include({ recordAll: true, source: 'recording', held: 8 });
        const errors = await requestLog(admin, '?errors=1');
        expect(errors.requests.map((r) => [r.api, r.partitionError])).to.deep.equal([['Produce', 'UNKNOWN_TOPIC_OR_PARTITION']]);
        expect((await requestLog(admin, '?api=produce&client=raw&limit=3')).requests).to.have.length(3);
        expect((await requestLog(admin, '?api=Fetch')).requests).to.have.length(0);
        expect((await requestLog(admin, '?client=someone-else')).requests).to.have.length(0);
        res = await fetch(`http://${admin}/v1/requests/record-all`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ on: false }),
        });
        expect(((await res.json()) as { recording: { recordAll: boolean } }).recording.recordAll).to.equal(false);
        res = await fetch(`http://${admin}/v1/requests`, { method: 'DELETE' });
        expect(((await res.json()) as { recording: { held: number } }).recording.held).to.equal(0);
      } finally {
        raw.destroy();
      }
    });

    it('answers unknown paths 404, wrong methods 405, bad queries and bodies 400; the fault routes are served', async () => {
      let res = await fetch(`http://${admin}/metricz`);
      expect(res.status).to.equal(404);
      expect(await res.text()).to.equal('not found: /metricz\n');
      res = await fetch(`http://${admin}/metrics`, { method: 'POST' });
      expect(res.status).to.equal(405);
      expect(res.headers.get('allow')).to.equal('GET');
      res = await fetch(`http://${admin}/v1/requests?limit=x`);
      expect(res.status).to.equal(400);
      expect(await res.text()).to.match(/limit must be a number/);
      res = await fetch(`http://${admin}/v1/requests/record-all`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"on":"yes"}',
      });
      expect(res.status).to.equal(400);
      res = await fetch(`http://${admin}/v1/faults`);
      expect(res.status, 'fault routes wired').to.equal(200);
    });
  });

  describe('admin.listener', () => {
    const free = (): Promise<number> =>
      new Promise((resolve) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const { port } = s.address() as net.AddressInfo;
          s.close(() => resolve(port));
        });
      });

    it('none: no admin listener', async () => {
      const tb = await startTestBroker({ 'admin.listener': 'none' });
      try {
        expect(tb.broker.adminAddress).to.equal(null);
      } finally {
        await tb.stop();
      }
    });

    it('an explicit port that is taken fails start with GREGOR_ERR_ADMIN_LISTEN and releases the Kafka port', async () => {
      const blocker = net.createServer();
      await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
      const taken = (blocker.address() as net.AddressInfo).port;
      const kafkaPort = await free();
      const dataDir = tempDir();
      try {
        const b = new Broker({ port: kafkaPort, dataDir, logger: silentLogger(), config: { 'admin.listener': `127.0.0.1:${taken}` } });
        let err: Error | undefined;
        await b.start().catch((e: unknown) => (err = asError(e)));
        expect(err?.message).to.match(/^GREGOR_ERR_ADMIN_LISTEN: cannot bind the admin listener to 127.0.0.1:\d+/);
        const again = net.createServer();
        await new Promise<void>((resolve, reject) => again.once('error', reject).listen(kafkaPort, '127.0.0.1', () => resolve()));
        again.close();
      } finally {
        blocker.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    it('left at its default, takes a free port when 9644 is taken (with a warning) or a Kafka listener asked for port 0', async () => {
      const hog = net.createServer();
      const hogged = await new Promise<boolean>((resolve) =>
        hog.once('error', () => resolve(false)).listen(9644, '127.0.0.1', () => resolve(true)),
      );
      const lines: Record<string, unknown>[] = [];
      const destination = new Writable({
        write(chunk: Buffer, _e, cb) {
          for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
          cb();
        },
      });
      const dataDir = tempDir();
      const b = new Broker({ port: await free(), dataDir, logger: createLogger({ level: 'warn', destination }) });
      try {
        await b.start();
        const port = Number(b.adminAddress?.split(':').pop());
        expect(port).to.be.above(0).and.not.equal(9644);
        expect(lines.some((l) => String(l['msg']).startsWith('admin port 9644 is in use'))).to.equal(true);
        expect((await fetch(`http://${b.adminAddress}/v1/status/live`)).status).to.equal(200);
      } finally {
        await b.stop();
        if (hogged) hog.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
      const embedded = await startTestBroker();
      try {
        expect(embedded.broker.adminAddress).to.match(/^127\.0\.0\.1:\d+$/);
        expect(embedded.broker.adminAddress).to.not.equal('127.0.0.1:9644');
      } finally {
        await embedded.stop();
      }
    });
  });
});
