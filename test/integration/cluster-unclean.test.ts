/**
 * unclean.leader.election.enable in a cluster (three brokers on a real etcd): a partition whose whole
 * ISR is down stays offline while the setting is false (Kafka's default), and the controller elects a
 * live out-of-sync replica by itself once a client turns the topic's setting on (AlterConfigs from
 * kafka-python's admin). What only the old ISR had is gone from the new leader's log, as Kafka warns; the old
 * leader truncates to the new one when it returns.
 */
import { expect } from 'chai';
import type { LocalBroker } from '../../lib/cluster/local-cluster.js';
import { PYTHON } from '../helpers/kafka-python.js';
import { runProcess } from '../helpers/process.js';
import { clusterKafka, logBytes, metadata, partitionOf, RF3_OVERRIDES, running, until, useCluster } from '../helpers/cluster.js';

const TOPIC = 'unclean-auto';
/** kafka-python 2.0.2: AlterConfigs of the topic's unclean.leader.election.enable; prints the error codes. */
const ALTER_SCRIPT = `
import json, sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1].split(','))
res = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, sys.argv[2], configs={'unclean.leader.election.enable': 'true'})])
print(json.dumps([r[0] for r in res.resources]))
admin.close()
`;

describe('cluster: unclean.leader.election.enable', function () {
  this.timeout(120_000);
  const cluster = useCluster({ ...RF3_OVERRIDES, 'min.insync.replicas': '1', 'broker.session.timeout.ms': '3000' });
  const kafka = () => clusterKafka(cluster(), 'unclean');
  const broker = (id: number) => cluster().brokers.find((b) => b.nodeId === id) as LocalBroker;
  const state = () => partitionOf(cluster(), TOPIC, 0);

  it('false: the partition stays offline with a live out-of-sync replica; set to true on the topic, the controller elects it', async () => {
    const admin = kafka().admin();
    await admin.connect();
    const producer = kafka().producer();
    await producer.connect();
    try {
      await admin.createTopics({
        topics: [{ topic: TOPIC, replicaAssignment: [{ partition: 0, replicas: [2, 3] }] }],
        waitForLeaders: true,
      });
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ value: 'both' }] });
      await broker(3).kill('SIGKILL');
      await until(async () => ((await state()).isrNodes.join() === '2' ? true : undefined), 15_000, 'ISR [2]');
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ value: 'only-on-2' }] });
      await broker(2).kill('SIGKILL');
      await until(async () => ((await state()).leaderId === -1 ? true : undefined), 15_000, 'no leader');
      await broker(3).start();
      // broker 3 registered again (Metadata from it lists it) and the controller had its pass: still offline
      await until(
        async () => ((await metadata(running(cluster()).bootstrap, [])).brokers.some((b) => b.nodeId === 3) ? true : undefined),
        15_000,
        'broker 3 registered again',
      );
      await new Promise((r) => setTimeout(r, 1500)); // the controller's pass over the broker change

      expect((await state()).leaderId, 'offline while unclean.leader.election.enable=false').to.equal(-1);

      // kafka-python's admin (kafkajs's refreshes the topic's metadata first and gives up on an offline partition)
      const alter = await runProcess(PYTHON, ['-c', ALTER_SCRIPT, cluster().bootstrap(), TOPIC], '', 60_000);
      expect(alter.code, alter.stderr).to.equal(0);
      expect(JSON.parse(alter.stdout.toString()), 'AlterConfigs error codes').to.deep.equal([0]);
      const elected = await until(
        async () => {
          const s = await state();
          return s.leaderId !== -1 ? s : undefined;
        },
        15_000,
        'an unclean election',
      );
      expect(elected.leaderId).to.equal(3);
      expect(elected.isrNodes).to.deep.equal([3]);
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ value: 'after' }] });
    } finally {
      await producer.disconnect();
      await admin.disconnect();
    }

    const consumer = kafka().consumer({ groupId: 'unclean-reader' });
    await consumer.connect();
    const seen: string[] = [];
    try {
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({ eachMessage: ({ message }) => Promise.resolve(void seen.push(message.value?.toString() ?? '')) });
      await until(() => Promise.resolve(seen.length >= 2 ? true : undefined), 20_000, 'two records');
    } finally {
      await consumer.disconnect();
    }
    expect(seen, 'what only the old ISR had is lost, as Kafka warns').to.deep.equal(['both', 'after']);

    // the old leader returns, truncates to the new leader's log and rejoins the ISR
    await broker(2).start();
    await until(async () => ((await state()).isrNodes.length === 2 ? true : undefined), 30_000, '2 back in the ISR');
    const expected = logBytes(broker(3), TOPIC, 0);
    await until(() => Promise.resolve(logBytes(broker(2), TOPIC, 0).equals(expected) ? true : undefined), 10_000, '2 truncated to 3');
  });
});
