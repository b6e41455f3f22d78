/**
 * Issue 14, start-up: the start bundle (dist/bundle/start.cjs, scripts/bundle.mjs) requires the Node
 * built-ins only some features need (crypto, tls, zlib, child_process, dns/promises) on first use, not
 * while it is evaluated. Here: evaluating it loads none of them, and a `gregor start` that first needs
 * them once it runs (an SSL listener, SCRAM authentication on a data dir that already has its cluster id)
 * serves real clients.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';
import { kafkajsRoundTrip } from '../helpers/roundtrip.js';
import { tempDir, startChildBroker, stopChildBroker as stop } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { PROJECT_ROOT } from '../helpers/project.js';
import { addScramUser, saslConfig } from '../helpers/sasl.js';
import { devCerts, kafkajsSsl, pemSslConfig, removeCerts } from '../helpers/tls.js';

const LOADER = join(PROJECT_ROOT, 'bin/load-broker.js');
const LAZY = ['crypto', 'tls', 'zlib', 'child_process', 'dns/promises'];

/** The Node built-ins loading the bundle (no code cache) added to a bare process. */
function builtinsLoadedByBundle(): string[] {
  const script = `const before = new Set(process.moduleLoadList);
require(${JSON.stringify(LOADER)}).loadBroker();
console.log(JSON.stringify(process.moduleLoadList.filter((m) => !before.has(m) && m.startsWith('NativeModule ')).map((m) => m.slice(13))));`;
  const r = spawnSync(process.execPath, ['-e', script], { env: { ...process.env, GREGOR_CODE_CACHE: '0' }, encoding: 'utf8' });
  expect(r.status, r.stderr).to.equal(0);
  return JSON.parse(r.stdout) as string[];
}

/** host:port the listener `name` is bound to, from its 'listening' log line. */
function listening(output: string, name: string): string {
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    const l = JSON.parse(line) as { msg?: string; listener?: string; host?: string; port?: number };
    if (l.msg === 'listening' && l.listener === name) return `${l.host === '0.0.0.0' ? '127.0.0.1' : (l.host ?? '')}:${String(l.port)}`;
  }
  throw new Error(`no 'listening' line for ${name}:\n${output}`);
}

function roundTrip(config: KafkaConfig, topic: string): Promise<string[]> {
  return kafkajsRoundTrip(new Kafka({ ...config, logLevel: logLevel.NOTHING }), topic, ['a', 'b']);
}

describe('gregor start: built-ins some features need load on first use', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  afterEach(() => cleanup.run());

  it('evaluating the start bundle loads none of crypto, tls, zlib, child_process, dns/promises', () => {
    const loaded = builtinsLoadedByBundle();
    // the list is real: what every start needs is in it
    expect(loaded).to.include.members(['net', 'http', 'fs/promises']);
    expect(loaded.filter((m) => LAZY.includes(m))).to.deep.equal([]);
  });

  it('an SSL listener and SCRAM authentication, first used after start, serve kafkajs', async () => {
    const dataDir = cleanup.add(tempDir('lazy-'), (d) => rmSync(d, { recursive: true, force: true }));
    // a first start writes the cluster id (crypto's random bytes): the second one below does not need crypto to start
    await stop(await startChildBroker(dataDir));
    const certs = cleanup.add(devCerts(), removeCerts);
    const overrides = {
      listeners: 'PLAINTEXT://127.0.0.1:0,SSL://localhost:0,SASL_PLAINTEXT://127.0.0.1:0',
      ...pemSslConfig(certs),
      ...saslConfig(['sasl_plaintext'], ['SCRAM-SHA-256']),
    };
    const b = cleanup.add(await startChildBroker(dataDir, 0, overrides, { LOG_LEVEL: 'info' }), stop);
    await addScramUser(b.bootstrap, 'carol', 'carol-secret', ['SCRAM-SHA-256']);
    const ssl = listening(b.output(), 'SSL');
    const sasl = listening(b.output(), 'SASL_PLAINTEXT');
    expect(await roundTrip({ brokers: [ssl], ssl: kafkajsSsl(certs) }, 'lazy-ssl')).to.deep.equal(['a', 'b']);
    expect(
      await roundTrip({ brokers: [sasl], sasl: { mechanism: 'scram-sha-256', username: 'carol', password: 'carol-secret' } }, 'lazy-scram'),
    ).to.deep.equal(['a', 'b']);
  });
});
