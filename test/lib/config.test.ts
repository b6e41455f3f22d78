import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BrokerConfig, ConfigError, envKeyToConfigKey, parseListener, parseProperties } from '../../lib/config.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { tempDir } from '../helpers/broker.js';

describe('broker config', () => {
  it("has Kafka's defaults", () => {
    const c = new BrokerConfig();
    expect(c.int('socket.send.buffer.bytes')).to.equal(102400);
    expect(c.int('socket.request.max.bytes')).to.equal(104857600);
    expect(c.int('message.max.bytes')).to.equal(1048588);
    expect(c.bool('auto.create.topics.enable')).to.equal(true);
    expect(c.retentionMs).to.equal(168 * 3600000);
    expect(c.list('listeners')).to.deep.equal(['PLAINTEXT://127.0.0.1:9092']);
    expect(c.logDirs).to.deep.equal(['./data']);
  });

  it('maps KAFKA_* variables as the Apache image does', () => {
    expect(envKeyToConfigKey('KAFKA_AUTO_CREATE_TOPICS_ENABLE')).to.equal('auto.create.topics.enable');
    expect(envKeyToConfigKey('KAFKA_LISTENER_SECURITY_PROTOCOL_MAP')).to.equal('listener.security.protocol.map');
    expect(envKeyToConfigKey('KAFKA_A__B___C_D')).to.equal('a_b-c.d');
    const c = new BrokerConfig({ env: { KAFKA_NUM_PARTITIONS: '7', KAFKA_HEAP_OPTS: '-Xmx1G', PATH: '/bin' } });
    expect(c.int('num.partitions')).to.equal(7);
  });

  it('reads server.properties, then env, then overrides (highest wins)', () => {
    const dir = tempDir();
    const file = join(dir, 'server.properties');
    writeFileSync(
      file,
      '# comment\nnum.partitions=3\nlog.retention.hours = 1\nlisteners: PLAINTEXT://127.0.0.1:9093\nlog.dirs=/a,\\\n  /b\n',
    );
    const c = new BrokerConfig({ file, env: { KAFKA_NUM_PARTITIONS: '5' }, overrides: { 'log.retention.hours': '2' } });
    expect(c.int('num.partitions')).to.equal(5);
    expect(c.retentionMs).to.equal(2 * 3600000);
    expect(c.logDirs).to.deep.equal(['/a', '/b']);
    expect(parseListener(c.list('listeners')[0] ?? '')).to.deep.equal({ name: 'PLAINTEXT', host: '127.0.0.1', port: 9093 });
    expect(c.explicit.has('num.partitions')).to.equal(true);
    expect(parseProperties('a=b=c\n!x\n').get('a')).to.equal('b=c');
  });

  it('fails fast on unknown keys, bad values and topic-only keys', () => {
    expect(() => new BrokerConfig({ overrides: { 'no.such.key': '1' } })).to.throw(ConfigError, /unknown config key 'no.such.key'/);
    expect(() => new BrokerConfig({ overrides: { 'num.partitions': 'abc' } })).to.throw(
      ConfigError,
      /num.partitions=abc: expected an integer/,
    );
    expect(() => new BrokerConfig({ overrides: { 'num.partitions': '0' } })).to.throw(ConfigError, /must be >= 1/);
    expect(() => new BrokerConfig({ overrides: { 'compression.type': 'brotli' } })).to.throw(ConfigError, /must be one of/);
    expect(() => new BrokerConfig({ overrides: { 'retention.ms': '1' } })).to.throw(ConfigError, /topic config/);
    expect(() => new BrokerConfig({ overrides: { listeners: 'nonsense' } })).to.throw(ConfigError, /NAME:\/\/host:port/);
    expect(() => new BrokerConfig({ overrides: { 'node.id': '1', 'broker.id': '2' } })).to.throw(ConfigError, /disagree/);
  });

  it('retention precedence: ms over minutes over hours', () => {
    expect(new BrokerConfig({ overrides: { 'log.retention.minutes': '3' } }).retentionMs).to.equal(180000);
    expect(new BrokerConfig({ overrides: { 'log.retention.minutes': '3', 'log.retention.ms': '5' } }).retentionMs).to.equal(5);
  });

  it('the CLI refuses an unknown key with a clear message and exit code 2', () => {
    const r = spawnSync(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'start', '--override', 'bogus.key=1'], {
      encoding: 'utf8',
      timeout: 20000,
    });
    expect(r.status).to.equal(2);
    expect(r.stderr).to.match(/GREGOR_ERR_CONFIG: unknown config key 'bogus.key'/);
    const env = spawnSync(process.execPath, [join(PROJECT_ROOT, 'bin/gregor.js'), 'start'], {
      encoding: 'utf8',
      timeout: 20000,
      env: { ...process.env, KAFKA_NUM_PARTITIONS: 'x' },
    });
    expect(env.status).to.equal(2);
    expect(env.stderr).to.match(/num.partitions=x/);
  });
});
