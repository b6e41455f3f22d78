/** The static JAAS file (KAFKA_OPTS=-Djava.security.auth.login.config=<file>): parsing and section choice. */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BrokerConfig } from '../../../lib/config.js';
import { ConfigError } from '../../../lib/config/error.js';
import { jaasFileFromOpts, parseJaasFile, serverSection } from '../../../lib/security/sasl/jaas-file.js';
import { listenerSaslSettings } from '../../../lib/security/sasl/settings.js';
import { makeTempDir } from '../../helpers/temp-dirs.js';

const FILE = `
// the brokers' users
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin" password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice;secret";   /* a ';' inside quotes */
  org.apache.kafka.common.security.scram.ScramLoginModule required;
};
sasl_ssl.KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";
};
KafkaClient { org.apache.kafka.common.security.plain.PlainLoginModule required username="x" password="y"; };
`;

describe('JAAS file (KAFKA_OPTS -Djava.security.auth.login.config)', () => {
  it('reads the file name from KAFKA_OPTS: bare, quoted, ==, the last one', () => {
    expect(jaasFileFromOpts(undefined)).to.equal(undefined);
    expect(jaasFileFromOpts('-Xmx1g')).to.equal(undefined);
    expect(jaasFileFromOpts('-Xmx1g -Djava.security.auth.login.config=/etc/kafka/jaas.conf -Dx=y')).to.equal('/etc/kafka/jaas.conf');
    expect(jaasFileFromOpts('-Djava.security.auth.login.config="/a b/jaas.conf"')).to.equal('/a b/jaas.conf');
    expect(jaasFileFromOpts('-Djava.security.auth.login.config==/only.conf')).to.equal('/only.conf');
    expect(jaasFileFromOpts('-Djava.security.auth.login.config=/one -Djava.security.auth.login.config=/two')).to.equal('/two');
  });

  it('parses sections with several modules, comments and quoted values; the listener section wins over KafkaServer', () => {
    const sections = parseJaasFile(FILE, 'f');
    expect([...sections.keys()]).to.deep.equal(['KafkaServer', 'sasl_ssl.KafkaServer', 'KafkaClient']);
    const server = sections.get('KafkaServer') ?? [];
    expect(server.map((e) => e.loginModule)).to.deep.equal([
      'org.apache.kafka.common.security.plain.PlainLoginModule',
      'org.apache.kafka.common.security.scram.ScramLoginModule',
    ]);
    expect(server[0]?.options.get('user_alice')).to.equal('alice;secret');
    expect(serverSection(sections, 'SASL_SSL')?.[0]?.options.get('user_bob')).to.equal('bob-secret');
    expect(serverSection(sections, 'SASL_PLAINTEXT')).to.equal(server);
  });

  it('refuses a malformed file with a ConfigError naming it', () => {
    for (const bad of [
      'KafkaServer { x required; }',
      'KafkaServer x required; };',
      'KafkaServer { x required',
      'A { x required; }; A { y required; };',
      '{ x required; };',
      'A { x maybe; };',
      'A { /* x required; };',
    ])
      expect(() => parseJaasFile(bad, 'JAAS file /f'), bad).to.throw(ConfigError, /JAAS file \/f/);
  });

  it('a SASL listener takes PLAIN users from the file when no listener.name.<l>.plain.sasl.jaas.config is set; the key wins', () => {
    const dir = makeTempDir('gregor-jaas-');
    try {
      const file = join(dir, 'jaas.conf');
      writeFileSync(file, FILE);
      const env = { KAFKA_OPTS: `-Djava.security.auth.login.config=${file}` };
      const listeners = 'SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0';
      const base = { listeners, 'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256' };
      const config = new BrokerConfig({ env, overrides: base });
      expect([...listenerSaslSettings(config, 'SASL_PLAINTEXT').plainUsers]).to.deep.equal([
        ['admin', 'admin-secret'],
        ['alice', 'alice;secret'],
      ]);
      expect([...listenerSaslSettings(config, 'SASL_SSL').plainUsers]).to.deep.equal([['bob', 'bob-secret']]);
      const keyed = new BrokerConfig({
        env,
        overrides: {
          ...base,
          'listener.name.sasl_plaintext.plain.sasl.jaas.config':
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="c";',
        },
      });
      expect([...listenerSaslSettings(keyed, 'SASL_PLAINTEXT').plainUsers]).to.deep.equal([['carol', 'c']]);
      const missing = new BrokerConfig({
        env: { KAFKA_OPTS: `-Djava.security.auth.login.config=${join(dir, 'nope.conf')}` },
        overrides: base,
      });
      expect(() => listenerSaslSettings(missing, 'SASL_PLAINTEXT')).to.throw(ConfigError, /nope\.conf: cannot read the JAAS file/);
      const none = new BrokerConfig({ overrides: base });
      expect(() => listenerSaslSettings(none, 'SASL_PLAINTEXT')).to.throw(ConfigError, /KafkaServer section of a JAAS file .*not set/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
