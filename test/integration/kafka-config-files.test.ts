/**
 * The stock broker config files shipped in the Kafka 3.9.0 and 4.0.0 release tarballs
 * (test/fixtures/kafka-config/<release>/config/..., see its README) start gregor unchanged, and a
 * kafkajs client produces and consumes through it. Overridden on the command line, because the files
 * name fixed resources other tests may hold: the port (`--port 0`), the data dir
 * (log.dirs=/tmp/kafka-logs, /tmp/kraft-*-logs), and in advertised.listeners only the broker
 * listener's entry (localhost:9092 -> 127.0.0.1:0, the bound port); a KRaft CONTROLLER entry there
 * (3.9.0's and 4.0.0's combined server.properties) is kept, and must not reach clients.
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseProperties } from '../../lib/config.js';
import { startChildBroker, tempDir } from '../helpers/broker.js';
import { PROJECT_ROOT } from '../helpers/project.js';

const require = createRequire(import.meta.url);
const { Kafka, logLevel } = require('kafkajs') as typeof import('kafkajs');

const FIXTURES = join(PROJECT_ROOT, 'test/fixtures/kafka-config');
/** Each file, with keys it sets that gregor must list at start as not applying. */
const FILES: [string, string[]][] = [
  ['3.9.0/config/server.properties', ['zookeeper.connect', 'zookeeper.connection.timeout.ms']],
  ['3.9.0/config/kraft/server.properties', ['process.roles', 'controller.quorum.voters', 'controller.listener.names']],
  ['3.9.0/config/kraft/broker.properties', ['process.roles', 'controller.quorum.bootstrap.servers']],
  // a controller-only node: its one listener is the controller's, so the broker listener comes from --port
  ['3.9.0/config/kraft/controller.properties', ['process.roles', 'controller.quorum.bootstrap.servers']],
  ['3.9.0/config/kraft/reconfig-server.properties', ['process.roles', 'controller.quorum.bootstrap.servers']],
  ['4.0.0/config/server.properties', ['controller.quorum.bootstrap.servers', 'controller.listener.names']],
  ['4.0.0/config/broker.properties', ['process.roles', 'controller.listener.names']],
  ['4.0.0/config/controller.properties', ['controller.quorum.bootstrap.servers', 'controller.listener.names']],
];

/** The file's advertised.listeners with its broker entries replaced by PLAINTEXT://127.0.0.1:0 and its controller entries kept. */
function advertisedOverride(file: string): { value: string; controllerEntries: number } {
  const props = parseProperties(readFileSync(join(FIXTURES, file), 'utf8'));
  const controller = new Set((props.get('controller.listener.names') ?? '').split(',').map((n) => n.trim().toUpperCase()));
  const entries = (props.get('advertised.listeners') ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  const kept = entries.filter((e) => controller.has(e.slice(0, e.indexOf(':')).toUpperCase()));
  return { value: ['PLAINTEXT://127.0.0.1:0', ...kept].join(','), controllerEntries: kept.length };
}

describe("Kafka's stock config files start gregor", function () {
  this.timeout(60_000);
  it('the files keep a KRaft controller entry in advertised.listeners where the release has one', () => {
    expect(advertisedOverride('3.9.0/config/kraft/server.properties').controllerEntries).to.equal(1);
    expect(advertisedOverride('4.0.0/config/server.properties').controllerEntries).to.equal(1);
    expect(advertisedOverride('3.9.0/config/server.properties').value).to.equal('PLAINTEXT://127.0.0.1:0');
  });

  for (const [file, notApplying] of FILES) {
    it(`${file}: starts, logs the keys that do not apply (${notApplying.join(', ')}), and kafkajs produces and consumes`, async () => {
      const dir = tempDir();
      const advertised = advertisedOverride(file).value;
      const b = await startChildBroker(dir, 0, { 'log.dirs': dir, 'advertised.listeners': advertised }, {}, [
        '--config',
        join(FIXTURES, file),
      ]);
      try {
        const line = b
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { msg?: string; keys?: string[]; removedInKafka4?: string[] })
          .find((l) => l.msg?.startsWith('config keys Kafka defines that do not apply to gregor') === true);
        expect(line?.keys, b.output()).to.include.members(notApplying);
        // gregor applies the share coordinator's state-topic keys (share groups in clusters)
        expect(line?.keys).to.not.include.members(['share.coordinator.state.topic.replication.factor']);
        expect(line?.keys).to.not.include.members(['share.coordinator.state.topic.min.isr']);
        // the ZooKeeper-mode file's zookeeper.* keys are named as removed in Kafka 4.0; no other file sets a removed key
        const removed = file === '3.9.0/config/server.properties' ? ['zookeeper.connect', 'zookeeper.connection.timeout.ms'] : undefined;
        expect(line?.removedInKafka4).to.deep.equal(removed);
        expect(line?.msg?.includes('removed in Kafka 4.0: zookeeper.connect, zookeeper.connection.timeout.ms')).to.equal(
          removed !== undefined,
        );
        const kafka = new Kafka({ brokers: [b.bootstrap], clientId: 'stock-config', logLevel: logLevel.NOTHING });
        const admin = kafka.admin();
        await admin.connect();
        // only the broker listener reaches clients, at the bound port (never a KRaft controller endpoint)
        const cluster = await admin.describeCluster();
        expect(cluster.brokers.map((x) => `${x.host}:${x.port}`)).to.deep.equal([b.bootstrap]);
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
