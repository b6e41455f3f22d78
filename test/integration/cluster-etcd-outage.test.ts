/**
 * etcd unreachable for 10 s under a running cluster (issue 15): the etcd process is frozen (SIGSTOP)
 * while three brokers serve a replication-factor-3 topic. Brokers keep serving what they lead, acks=all
 * included (the ISR is unchanged and followers keep fetching: data never goes through etcd), Metadata
 * answers from each broker's copy; once etcd answers again (SIGCONT) the cluster converges: one
 * controller that every broker names, every broker registered, every ISR full, and metadata writes work.
 */
import { expect } from 'chai';
import { Kafka, logLevel } from 'kafkajs';
import { metadata, until, useCluster } from '../helpers/cluster.js';

const OUTAGE_MS = 10_000;

describe('cluster: etcd unreachable for 10 s', function () {
  this.timeout(180_000);
  const cluster = useCluster(
    { 'broker.session.timeout.ms': '3000', 'default.replication.factor': '3', 'min.insync.replicas': '2' },
    { beforeStop: (c) => c.etcd.kill('SIGCONT') },
  );

  it('brokers keep serving acks=all writes and metadata while etcd is frozen, then converge', async () => {
    const kafka = new Kafka({ clientId: 'outage', brokers: cluster().bootstrap().split(','), logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    const producer = kafka.producer();
    await producer.connect();
    try {
      await admin.createTopics({ topics: [{ topic: 'outage', numPartitions: 3, replicationFactor: 3 }], waitForLeaders: true });
      await until(
        async () =>
          (await metadata(cluster().brokers[0]?.bootstrap ?? '', ['outage'])).topics[0]?.partitions.every((p) => p.isrNodes.length === 3)
            ? true
            : undefined,
        15_000,
        'full ISRs',
      );
      await producer.send({
        topic: 'outage',
        acks: -1,
        messages: Array.from({ length: 30 }, (_, i) => ({ value: `before-${i}`, partition: i % 3 })),
      });

      cluster().etcd.kill('SIGSTOP');
      const frozenAt = Date.now();
      let during = 0;
      try {
        while (Date.now() - frozenAt < OUTAGE_MS) {
          await producer.send({
            topic: 'outage',
            acks: -1,
            messages: Array.from({ length: 3 }, (_, i) => ({ value: `during-${during}-${i}`, partition: i })),
          });
          during++;
          // every broker still answers Metadata from its copy, with the three brokers and a leader everywhere
          for (const b of cluster().brokers) {
            const m = await metadata(b.bootstrap, ['outage']);
            expect(m.brokers).to.have.length(3);
            expect(m.topics[0]?.partitions.every((p) => p.leaderId >= 0)).to.equal(true);
          }
          await new Promise((r) => setTimeout(r, 500));
        }
      } finally {
        cluster().etcd.kill('SIGCONT');
      }
      expect(during).to.be.greaterThan(5);

      // converged: one controller named by every broker, all registered, full ISRs, and etcd writes work again
      await until(
        async () => {
          const views = await Promise.all(cluster().brokers.map((b) => metadata(b.bootstrap, ['outage'])));
          const controllers = new Set(views.map((m) => m.controllerId));
          const ok =
            controllers.size === 1 &&
            !controllers.has(-1) &&
            views.every(
              (m) => m.brokers.length === 3 && (m.topics[0]?.partitions ?? []).every((p) => p.leaderId >= 0 && p.isrNodes.length === 3),
            );
          return ok ? true : undefined;
        },
        30_000,
        'the cluster to converge',
      );
      // metadata writes work again. The views above can look converged before etcd, resumed, has
      // expired the sessions that lapsed while it was frozen and the brokers registered anew (seen once
      // under CI load): a creation in that window may be refused, so it is retried until it is taken
      let refused = '';
      await until(
        async () => {
          try {
            await admin.createTopics({ topics: [{ topic: 'after-outage', numPartitions: 1, replicationFactor: 3 }] });
            return true;
          } catch (e) {
            const errs = (e as { errors?: { type?: string }[] }).errors ?? [];
            refused = errs.map((x) => x.type).join(', ') || String(e);
            return undefined;
          }
        },
        30_000,
        'a topic creation after the outage',
      ).catch((e: unknown) => {
        throw new Error(`${String(e)} (last refusal: ${refused})`);
      });
      const created = (await metadata(cluster().bootstrap().split(',')[0] ?? '', ['after-outage'])).topics[0];
      expect(created?.partitions[0]?.replicaNodes, 'after-outage placed on the three brokers').to.have.length(3);
      await producer.send({ topic: 'outage', acks: -1, messages: [{ value: 'after', partition: 0 }] });
      const offsets = await admin.fetchTopicOffsets('outage');
      expect(offsets.reduce((n, p) => n + Number(p.high), 0)).to.equal(30 + during * 3 + 1);
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }
  });
});
