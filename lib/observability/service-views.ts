/** The topics and groups /metrics shows, read from the broker's services at scrape time. */
import type { LogManager } from '../log/log-dirs.js';
import type { BrokerServices } from '../services.js';
import type { TopicLogs } from '../topics.js';
import type { MetricsSource } from './prometheus.js';

export function topicAndGroupViews(
  s: BrokerServices,
  logManager: LogManager,
  brokerMinIsr: number,
): Pick<MetricsSource, 'topics' | 'groups'> {
  // a log not recovered (yet, or its recovery failed) has no offsets to show: left out as a
  // partition without a log
  const recovered = (logs: TopicLogs): TopicLogs =>
    logManager.hasUnservable ? logs.map((l) => (l?.servable === true ? l : undefined)) : logs;
  return {
    *topics() {
      for (const t of s.metadata.topics()) {
        const minIsr = t.configs['min.insync.replicas'];
        yield {
          name: t.name,
          partitions: recovered(s.topics.logsOf(t.name) ?? []),
          partitionCount: t.partitions,
          minInsyncReplicas: minIsr !== undefined ? Number(minIsr) : brokerMinIsr,
        };
      }
    },
    *groups() {
      const g = s.groups;
      const ids = new Set([...g.groups.keys(), ...g.offsets.groups()]);
      for (const groupId of ids) {
        yield {
          groupId,
          members: g.groups.get(groupId)?.members.size ?? 0,
          *offsets() {
            for (const o of g.offsets.all(groupId)) yield { topic: o.topic, partition: o.partition, offset: o.offset.offset };
          },
        };
      }
    },
  };
}
