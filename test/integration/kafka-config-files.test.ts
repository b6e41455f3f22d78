/**
 * Kafka's own stock server.properties files (test/fixtures/kafka-config: the ZooKeeper-era file, the
 * 3.x KRaft file, the KRaft files of the 4.0 development line, and its broker-only and controller-only
 * KRaft samples) start gregor unchanged, and a kafkajs
 * client produces and consumes through it. Overridden on the command line, because the files name
 * fixed resources other tests may hold: the port (`--port 0`, and advertised.listeners, which names
 * localhost:9092) and the data dir (log.dirs=/tmp/kafka-logs or /tmp/kraft-combined-logs).
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { startChildBroker, tempDir } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const FIXTURES = join(PROJECT_ROOT, 'test/fixtures/kafka-config');
const FILES: [string, string[]][] = [
  ['zookeeper/server.properties', ['zookeeper.connect', 'zookeeper.connection.timeout.ms']],
  ['kraft-3x/server.properties', ['process.roles', 'controller.quorum.voters', 'controller.listener.names']],
  ['kraft-dev/server.properties', ['share.coordinator.state.topic.replication.factor', 'share.coordinator.state.topic.min.isr']],
  ['kraft-dev/reconfig-server.properties', ['controller.quorum.bootstrap.servers', 'process.roles']],
  ['kraft-split/broker.properties', ['process.roles', 'controller.quorum.voters']],
  // a controller-only node: its one listener is the controller's, so the broker listener comes from --port
  ['kraft-split/controller.properties', ['controller.quorum.bootstrap.servers', 'share.coordinator.state.topic.min.isr']],
];

describe("Kafka's stock config files start gregor", function () {
  this.timeout(60_000);
  for (const [file, notApplying] of FILES) {
    it(`${file}: starts, logs the keys that do not apply (${notApplying.join(', ')}), and kafkajs produces and consumes`, async () => {
      const dir = tempDir();
      const b = await startChildBroker(dir, 0, { 'log.dirs': dir, 'advertised.listeners': 'PLAINTEXT://127.0.0.1:0' }, {}, [
        '--config',
        join(FIXTURES, file),
      ]);
      try {
        const line = b
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { msg?: string; keys?: string[] })
          .find((l) => l.msg?.startsWith('config keys Kafka defines that do not apply to gregor') === true);
        expect(line?.keys, b.output()).to.include.members(notApplying);
        const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'stock-config', logLevel: logLevel.NOTHING });
        const admin = kafka.admin();
        await admin.connect();
        await admin.createTopics({ topics: [{ topic: 'stock', numPartitions: 1 }] });
        await admin.disconnect();
        const producer = kafka.producer();
        await producer.connect();
        await producer.send({ topic: 'stock', messages: [{ key: 'k', value: `from ${file}` }] });
        await producer.disconnect();
        const consumer = kafka.consumer({ groupId: 'stock-g' });
        await consumer.connect();
        await consumer.subscribe({ topic: 'stock', fromBeginning: true });
        const got = await new Promise<string>((resolve) => {
          void consumer.run({
            eachMessage: ({ message }) => {
              resolve(message.value?.toString() ?? '');
              return Promise.resolve();
            },
          });
        });
        await consumer.disconnect();
        expect(got).to.equal(`from ${file}`);
      } finally {
        b.child.kill('SIGTERM');
        await b.exited;
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
