import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BROKER_CONFIG, BrokerConfig, ConfigError, parseProperties, TOPIC_CONFIG } from '../../lib/config.js';
import { configDoc } from '../../lib/config/docs.js';
import {
  brokerSynonymGroup,
  KAFKA_BROKER_KEYS,
  KAFKA_TOPIC_KEYS,
  kafkaBrokerKey,
  listenerPrefixedBase,
  nearestKey,
  notApplyingLogLine,
  removedInKafka4,
} from '../../lib/config/kafka-keys.js';
import { PROJECT_ROOT } from '../helpers/project.js';

const FIXTURES = join(PROJECT_ROOT, 'test/fixtures/kafka-config');

/** Every .properties file under the fixtures folder (<release>/config/..., as in the release tarballs). */
function fixtureFiles(): string[] {
  return readdirSync(FIXTURES, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.properties'))
    .map((f) => join(FIXTURES, f))
    .sort();
}

describe('Kafka config key catalogue', () => {
  it('holds the broker keys of Kafka 3.9 and 4.x with types, defaults and update modes', () => {
    expect(KAFKA_BROKER_KEYS.size).to.be.greaterThan(350);
    expect(KAFKA_BROKER_KEYS.get('log.retention.ms')).to.include({ type: 'long', default: null, mode: 'cluster-wide', since4: false });
    expect(KAFKA_BROKER_KEYS.get('log.retention.hours')).to.include({ type: 'int', default: '168', mode: 'read-only' });
    expect(KAFKA_BROKER_KEYS.get('listeners')).to.include({ mode: 'per-broker' });
    expect(KAFKA_BROKER_KEYS.get('ssl.keystore.password')).to.include({ type: 'password', mode: 'per-broker' });
    expect(KAFKA_BROKER_KEYS.get('zookeeper.connect')).to.include({ type: 'string', mode: 'read-only' });
    expect(KAFKA_BROKER_KEYS.get('share.coordinator.state.topic.replication.factor')).to.include({ type: 'short', since4: true });
    expect(KAFKA_BROKER_KEYS.get('controller.quorum.bootstrap.servers')).to.include({ type: 'list', default: '' });
    expect(KAFKA_BROKER_KEYS.has('no.such.key')).to.equal(false);
  });

  it('says which 3.9 keys Kafka 4.0 removed: ZooKeeper mode and the keys its upgrade notes name', () => {
    const removed = ['zookeeper.connect', 'zookeeper.set.acl', 'delegation.token.master.key', 'offsets.commit.required.acks'];
    expect(removedInKafka4([...removed, 'process.roles', 'log.retention.ms', 'zookeeper.no.such.key'])).to.deep.equal(removed);
    expect(
      removedInKafka4(['log.message.format.version', 'log.message.timestamp.difference.max.ms', 'auto.include.jmx.reporter']),
    ).to.have.length(3);
    // each is a 3.9 key
    for (const k of removedInKafka4(KAFKA_BROKER_KEYS.keys())) expect(KAFKA_BROKER_KEYS.get(k)?.since4, k).to.equal(false);
    expect(removedInKafka4(KAFKA_BROKER_KEYS.keys()).length).to.be.greaterThan(20);
    expect(notApplyingLogLine([])).to.equal(undefined);
    expect(notApplyingLogLine(['process.roles'])?.fields).to.deep.equal({ keys: ['process.roles'] });
    expect(notApplyingLogLine(['process.roles', 'zookeeper.connect'])).to.deep.equal({
      fields: { keys: ['process.roles', 'zookeeper.connect'], removedInKafka4: ['zookeeper.connect'] },
      msg: 'config keys Kafka defines that do not apply to gregor: accepted, no effect; removed in Kafka 4.0: zookeeper.connect',
    });
  });

  it('chains topic keys to their broker synonyms in Kafka order', () => {
    expect(KAFKA_TOPIC_KEYS.get('retention.ms')?.brokerSynonyms).to.deep.equal([
      'log.retention.ms',
      'log.retention.minutes',
      'log.retention.hours',
    ]);
    expect(KAFKA_TOPIC_KEYS.get('segment.ms')?.brokerSynonyms).to.deep.equal(['log.roll.ms', 'log.roll.hours']);
    expect(KAFKA_TOPIC_KEYS.get('flush.ms')?.brokerSynonyms).to.deep.equal(['log.flush.interval.ms', 'log.flush.scheduler.interval.ms']);
    expect(KAFKA_TOPIC_KEYS.get('min.cleanable.dirty.ratio')?.brokerSynonyms).to.deep.equal(['log.cleaner.min.cleanable.ratio']);
    expect(KAFKA_TOPIC_KEYS.get('remote.storage.enable')?.brokerSynonyms).to.deep.equal([]);
    expect(brokerSynonymGroup('log.retention.minutes')).to.deep.equal(['log.retention.ms', 'log.retention.minutes', 'log.retention.hours']);
    expect(brokerSynonymGroup('num.io.threads')).to.deep.equal(['num.io.threads']);
    // every synonym is itself a Kafka broker key
    for (const t of KAFKA_TOPIC_KEYS.values()) for (const b of t.brokerSynonyms) expect(KAFKA_BROKER_KEYS.has(b), b).to.equal(true);
  });

  it('resolves listener-prefixed keys to their base key (per-broker)', () => {
    expect(listenerPrefixedBase('listener.name.internal.ssl.keystore.location')).to.equal('ssl.keystore.location');
    expect(listenerPrefixedBase('listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config')).to.equal('sasl.jaas.config');
    expect(listenerPrefixedBase('listener.name.internal.max.connections')).to.equal('max.connections');
    expect(listenerPrefixedBase('listener.name.internal.log.retention.ms')).to.equal(undefined);
    expect(kafkaBrokerKey('listener.name.sasl_ssl.plain.sasl.jaas.config')).to.include({ type: 'password', mode: 'per-broker' });
  });

  it('suggests the nearest known key for a misspelt one, and nothing for a far one', () => {
    expect(nearestKey('log.retention.hour', KAFKA_BROKER_KEYS.keys())).to.equal('log.retention.hours');
    expect(nearestKey('zookeper.connect', KAFKA_BROKER_KEYS.keys())).to.equal('zookeeper.connect');
    expect(nearestKey('completely.different.thing.here', KAFKA_BROKER_KEYS.keys())).to.equal(undefined);
    expect(() => new BrokerConfig({ overrides: { 'log.retention.hour': '1' } })).to.throw(
      ConfigError,
      /unknown config key 'log.retention.hour'; did you mean 'log.retention.hours'\?/,
    );
    expect(() => new BrokerConfig({ overrides: { 'xyz.abc': '1' } })).to.throw(
      ConfigError,
      /^GREGOR_ERR_CONFIG: unknown config key 'xyz.abc'$/,
    );
  });

  it('knows every key of the stock Kafka config files; the Kafka-only ones are accepted and listed as not applying', () => {
    const files = fixtureFiles();
    // 3.9.0: config/server.properties and config/kraft/{server,broker,controller,reconfig-server}; 4.0.0: config/{server,broker,controller}
    expect(files.length).to.equal(8);
    for (const f of files) {
      const props = parseProperties(readFileSync(f, 'utf8'));
      expect(props.size, f).to.be.greaterThan(10);
      for (const k of props.keys()) expect(kafkaBrokerKey(k) !== undefined, `${f}: ${k}`).to.equal(true);
      const c = new BrokerConfig({ file: f, overrides: { listeners: 'PLAINTEXT://:9092' } });
      for (const k of props.keys()) expect(c.explicit.has(k) || c.inapplicable.has(k), `${f}: ${k}`).to.equal(true);
    }
    const c = new BrokerConfig({ file: join(FIXTURES, '3.9.0/config/kraft/reconfig-server.properties') });
    expect(c.notApplying()).to.include.members(['controller.quorum.bootstrap.servers', 'process.roles', 'num.network.threads']);
    expect(c.inapplicable.get('controller.quorum.bootstrap.servers')).to.equal('localhost:9093');
    // the KRaft controller listener is not bound by gregor
    expect(c.brokerListeners).to.deep.equal(['PLAINTEXT://:9092']);
    // a controller-only file names no listener gregor could serve clients on: said at start
    for (const f of ['3.9.0/config/kraft/controller.properties', '4.0.0/config/controller.properties'])
      expect(() => new BrokerConfig({ file: join(FIXTURES, f) }), f).to.throw(ConfigError, /names only KRaft controller listeners/);
  });

  it('type-checks the values of Kafka keys gregor only accepts, as Kafka would at start', () => {
    expect(() => new BrokerConfig({ overrides: { 'background.threads': 'many' } })).to.throw(
      ConfigError,
      /Invalid value many for configuration background.threads: Not a number of type INT/,
    );
    expect(() => new BrokerConfig({ overrides: { 'zookeeper.set.acl': 'yes' } })).to.throw(ConfigError, /zookeeper.set.acl/);
    expect(
      new BrokerConfig({ overrides: { 'background.threads': '4', 'log.cleaner.io.buffer.load.factor': '0.75' } }).inapplicable.get(
        'background.threads',
      ),
    ).to.equal('4');
  });

  it("reads a Kafka key gregor only accepts: dynamic over static over Kafka's default, typed by the catalogue", () => {
    const c = new BrokerConfig({ overrides: { 'background.threads': '4' } });
    expect(c.get('background.threads')).to.equal(4);
    expect(c.get('log.cleaner.io.buffer.load.factor')).to.equal(0.9);
    expect(c.get('sasl.enabled.mechanisms')).to.deep.equal(['GSSAPI']);
    expect(c.get('zookeeper.connect')).to.equal(null);
    c.setDynamic({ 'background.threads': '6' }, { 'background.threads': '5', 'log.cleaner.threads': '2' });
    expect(c.int('background.threads')).to.equal(6);
    expect(c.int('log.cleaner.threads')).to.equal(2);
    expect(() => c.get('no.such.key')).to.throw(ConfigError, /unknown config key/);
  });

  it('gregor documents, in its own words, every key it honours', () => {
    const missing = [
      ...Object.entries(BROKER_CONFIG)
        .filter(([k, d]) => d.inert !== true && configDoc(k, false) === undefined)
        .map(([k]) => k),
      ...Object.entries(TOPIC_CONFIG)
        .filter(([k, t]) => t.def.inert !== true && configDoc(k, true) === undefined)
        .map(([k]) => `topic ${k}`),
    ];
    expect(missing).to.deep.equal([]);
  });

  it("refuses invalid cleanup policies at start with Kafka's message", () => {
    expect(() => new BrokerConfig({ overrides: { 'log.cleanup.policy': 'compact,forever' } })).to.throw(
      ConfigError,
      /Invalid value forever for configuration log.cleanup.policy: String must be one of: compact, delete/,
    );
    expect(new BrokerConfig({ overrides: { 'log.cleanup.policy': 'compact,delete' } }).list('log.cleanup.policy')).to.deep.equal([
      'compact',
      'delete',
    ]);
  });
});
