/**
 * The families of danielqsj/kafka_exporter (the "Kafka Exporter Overview" dashboard, Grafana 7589,
 * and Strimzi's strimzi-kafka-exporter.json read them), computed at scrape time from the broker's own
 * state instead of over the protocol, with the exporter's rules (kafka_exporter.go collect()):
 * - current offset of a partition: its high watermark (what ListOffsets latest gives a consumer);
 *   oldest offset: its log start offset;
 * - per group (default offset.show-all): every topic on which the group has at least one committed
 *   offset, every partition of it: kafka_consumergroup_current_offset (-1 where nothing is committed)
 *   and kafka_consumergroup_lag = high watermark - committed (-1 where nothing is committed; not
 *   summed); the _sum families per group and topic add them up as the exporter does (its
 *   current_offset_sum includes the -1s);
 * - kafka_consumergroup_members: the group's members.
 */
import type { Families, Labels } from './families.js';
import type { MetricsSource, TopicView } from './prometheus.js';

interface Row {
  labels: Labels;
  value: number;
}

/** One pass over topics and groups per scrape, shared by the families (each reads its part). */
function snapshot(src: MetricsSource): Map<string, Row[]> {
  const out = new Map<string, Row[]>();
  const add = (family: string, labels: Labels, value: number): void => {
    let rows = out.get(family);
    if (rows === undefined) out.set(family, (rows = []));
    rows.push({ labels, value });
  };
  const topics = new Map<string, TopicView>();
  for (const t of src.topics()) {
    topics.set(t.name, t);
    add('kafka_topic_partitions', { topic: t.name }, t.partitionCount);
    for (let p = 0; p < t.partitionCount; p++) {
      const log = t.partitions[p];
      const labels = { topic: t.name, partition: p };
      if (log !== undefined) {
        add('kafka_topic_partition_current_offset', labels, Number(log.highWatermark));
        add('kafka_topic_partition_oldest_offset', labels, Number(log.logStartOffset));
      }
      add('kafka_topic_partition_leader', labels, src.nodeId);
      add('kafka_topic_partition_replicas', labels, 1);
      add('kafka_topic_partition_in_sync_replica', labels, 1);
      add('kafka_topic_partition_leader_is_preferred', labels, 1);
      add('kafka_topic_partition_under_replicated_partition', labels, 0);
    }
  }
  for (const g of src.groups()) {
    const group = g.groupId;
    add('kafka_consumergroup_members', { consumergroup: group }, g.members);
    const committed = new Map<string, Map<number, bigint>>();
    for (const o of g.offsets()) {
      let parts = committed.get(o.topic);
      if (parts === undefined) committed.set(o.topic, (parts = new Map<number, bigint>()));
      parts.set(o.partition, o.offset);
    }
    for (const [topic, parts] of committed) {
      const t = topics.get(topic);
      // a topic that no longer exists: the committed offsets alone, no lag (the exporter has no offsets for it)
      const indexes = t === undefined ? [...parts.keys()].sort((a, b) => a - b) : Array.from({ length: t.partitionCount }, (_, i) => i);
      let offsetSum = 0;
      let lagSum = 0;
      for (const p of indexes) {
        const offset = parts.get(p);
        const current = offset === undefined ? -1 : Number(offset);
        offsetSum += current;
        const labels = { consumergroup: group, topic, partition: p };
        add('kafka_consumergroup_current_offset', labels, current);
        const log = t?.partitions[p];
        if (log === undefined) continue;
        const lag = offset === undefined ? -1 : Number(log.highWatermark - offset);
        if (offset !== undefined) lagSum += lag;
        add('kafka_consumergroup_lag', labels, lag);
      }
      add('kafka_consumergroup_current_offset_sum', { consumergroup: group, topic }, offsetSum);
      add('kafka_consumergroup_lag_sum', { consumergroup: group, topic }, lagSum);
    }
  }
  return out;
}

const FAMILIES: readonly [string, string, readonly string[]][] = [
  ['kafka_topic_partitions', 'Number of partitions for this Topic', ['topic']],
  ['kafka_topic_partition_current_offset', 'Current Offset of a Broker at Topic/Partition', ['topic', 'partition']],
  ['kafka_topic_partition_oldest_offset', 'Oldest Offset of a Broker at Topic/Partition', ['topic', 'partition']],
  ['kafka_topic_partition_leader', 'Leader Broker ID of this Topic/Partition', ['topic', 'partition']],
  ['kafka_topic_partition_replicas', 'Number of Replicas for this Topic/Partition', ['topic', 'partition']],
  ['kafka_topic_partition_in_sync_replica', 'Number of In-Sync Replicas for this Topic/Partition', ['topic', 'partition']],
  ['kafka_topic_partition_leader_is_preferred', '1 if Topic/Partition is using the Preferred Broker', ['topic', 'partition']],
  ['kafka_topic_partition_under_replicated_partition', '1 if Topic/Partition is under Replicated', ['topic', 'partition']],
  ['kafka_consumergroup_current_offset', 'Current Offset of a ConsumerGroup at Topic/Partition', ['consumergroup', 'topic', 'partition']],
  ['kafka_consumergroup_current_offset_sum', 'Current Offset of a ConsumerGroup at Topic for all partitions', ['consumergroup', 'topic']],
  ['kafka_consumergroup_lag', 'Current Approximate Lag of a ConsumerGroup at Topic/Partition', ['consumergroup', 'topic', 'partition']],
  ['kafka_consumergroup_lag_sum', 'Current Approximate Lag of a ConsumerGroup at Topic for all partitions', ['consumergroup', 'topic']],
  ['kafka_consumergroup_members', 'Amount of members in a consumer group', ['consumergroup']],
];

/** Registers the families; call the returned `newScrape()` before each scrape (the families of one scrape share one snapshot). */
export function registerLagMetrics(families: Families, src: MetricsSource): { newScrape(): void } {
  let current: Map<string, Row[]> | null = null;
  const rows = (family: string): Row[] => (current ??= snapshot(src)).get(family) ?? [];
  families.gauge('kafka_brokers', 'Number of Brokers in the Kafka Cluster.', [], (put) => put(null, 1));
  families.gauge('kafka_broker_info', 'Information about the Kafka Broker.', ['id', 'address'], (put) =>
    put({ id: src.nodeId, address: src.brokerAddress() }, 1),
  );
  for (const [name, help, labelNames] of FAMILIES) {
    families.gauge(name, help, labelNames, (put) => {
      for (const r of rows(name)) put(r.labels, r.value);
    });
  }
  return { newScrape: () => (current = null) };
}
