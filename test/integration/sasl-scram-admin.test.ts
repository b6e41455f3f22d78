/**
 * SCRAM credential administration (KIP-554) as Kafka's controller answers it: `gregor scram add | list
 * | delete` over a PLAINTEXT listener, then kafkajs authenticates (or no longer does) with the result;
 * AlterUserScramCredentials' per-user errors (DUPLICATE_RESOURCE, UNACCEPTABLE_CREDENTIAL for the name and
 * iterations, UNSUPPORTED_SASL_MECHANISM, RESOURCE_NOT_FOUND) and DescribeUserScramCredentials' on the raw
 * wire; the metadata file holds the salt, StoredKey and ServerKey only (neither the password nor the
 * salted password), and the credentials survive a restart.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import type { AlterUserScramCredentialsResponse } from '../../protocol/generated/alter-user-scram-credentials.js';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeUserScramCredentialsResponse } from '../../protocol/generated/describe-user-scram-credentials.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { type Broker, startBroker } from '../../lib/broker.js';
import { silentLogger } from '../../lib/observability/logger.js';
import { saltedPassword } from '../../lib/security/sasl/scram.js';
import { tempDir } from '../helpers/broker.js';
import { Cleanup } from '../helpers/cleanup.js';
import { cliOk, runCli } from '../helpers/cli.js';
import { RawClient } from '../helpers/raw-client.js';
import { saslConfig } from '../helpers/sasl.js';

async function canLogIn(broker: Broker, sasl: SASLOptions): Promise<boolean> {
  const kafka = new Kafka({ brokers: [broker.listenerAddress('SASL_PLAINTEXT')], sasl, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect();
  }
}

describe('SCRAM credentials: gregor scram, AlterUserScramCredentials / DescribeUserScramCredentials, storage', function () {
  this.timeout(120_000);
  const cleanup = new Cleanup();
  const dataDir = cleanup.add(tempDir(), (d) => rmSync(d, { recursive: true, force: true }));
  let broker: Broker;
  const start = async () =>
    (broker = cleanup.add(
      await startBroker({
        dataDir,
        logger: silentLogger(),
        config: {
          listeners: 'PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
          ...saslConfig([], ['SCRAM-SHA-256', 'SCRAM-SHA-512']),
        },
      }),
      (b) => b.stop(),
    ));
  before(start);
  after(() => cleanup.run());

  it('gregor scram add / list / delete, and kafkajs logs in with exactly the credentials that exist', async () => {
    const b = ['-b', broker.listenerAddress('PLAINTEXT')];
    const added = await cliOk(['scram', 'add', 'erin', '--iterations', '8192', ...b], { input: 'erin-secret\n' });
    expect(added.out).to.match(/erin\s+SCRAM-SHA-256\s+OK/);
    expect(added.out).to.match(/erin\s+SCRAM-SHA-512\s+OK/);
    await cliOk(['scram', 'add', 'frank', '-m', 'SCRAM-SHA-512', '--password', 'frank-secret', ...b]);
    const listed = JSON.parse((await cliOk(['scram', 'list', '--format', 'json', ...b])).out) as unknown;
    expect(listed).to.deep.equal([
      {
        user: 'erin',
        credentials: [
          { mechanism: 'SCRAM-SHA-256', iterations: 8192 },
          { mechanism: 'SCRAM-SHA-512', iterations: 8192 },
        ],
        error: null,
      },
      { user: 'frank', credentials: [{ mechanism: 'SCRAM-SHA-512', iterations: 4096 }], error: null },
    ]);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-256', username: 'erin', password: 'erin-secret' })).to.equal(true);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-256', username: 'frank', password: 'frank-secret' })).to.equal(false);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-512', username: 'frank', password: 'frank-secret' })).to.equal(true);

    await cliOk(['scram', 'delete', 'erin', '-m', 'SCRAM-SHA-256', ...b]);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-256', username: 'erin', password: 'erin-secret' })).to.equal(false);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-512', username: 'erin', password: 'erin-secret' })).to.equal(true);
    const missing = await runCli(['scram', 'delete', 'nobody', '-m', 'SCRAM-SHA-256', ...b]);
    expect(missing.code).to.equal(1);
    expect(missing.err).to.match(/RESOURCE_NOT_FOUND \(91\).*Attempt to delete a user credential that does not exist/);
    const unknown = await runCli(['scram', 'list', 'nobody', ...b]);
    expect(unknown.code).to.equal(1);
    expect(unknown.err).to.match(/Attempt to describe a user credential that does not exist: nobody/);
  });

  it("AlterUserScramCredentials and DescribeUserScramCredentials answer Kafka's per-user errors", async () => {
    const c = cleanup.add(await RawClient.connect(broker.listenerAddress('PLAINTEXT')), (x) => x.destroy());
    const salt = randomBytes(32);
    const up = (name: string, mechanism: number, iterations: number) => ({
      name,
      mechanism,
      iterations,
      salt,
      saltedPassword: saltedPassword('SCRAM-SHA-256', 'pw', salt, 4096),
    });
    const res = await c.request<AlterUserScramCredentialsResponse>(ApiKey.AlterUserScramCredentials, 0, {
      deletions: [{ name: 'ghost', mechanism: 2 }],
      upsertions: [
        up('twice', 1, 4096),
        up('twice', 2, 4096),
        up('few', 1, 100),
        up('many', 2, 20000),
        up('', 1, 4096),
        up('nomech', 0, 4096),
        up('gina', 1, 4096),
      ],
    });
    const byUser = Object.fromEntries(res.results.map((r) => [r.user, [r.errorCode, r.errorMessage]]));
    expect(byUser).to.deep.equal({
      twice: [ErrorCode.DUPLICATE_RESOURCE, 'A user credential cannot be altered twice in the same request'],
      ghost: [ErrorCode.RESOURCE_NOT_FOUND, 'Attempt to delete a user credential that does not exist'],
      few: [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too few iterations'],
      many: [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Too many iterations'],
      '': [ErrorCode.UNACCEPTABLE_CREDENTIAL, 'Username must not be empty'],
      nomech: [ErrorCode.UNSUPPORTED_SASL_MECHANISM, 'Unknown SCRAM mechanism'],
      gina: [0, null],
    });
    expect(await canLogIn(broker, { mechanism: 'scram-sha-256', username: 'gina', password: 'pw' })).to.equal(true);

    const d = await c.request<DescribeUserScramCredentialsResponse>(ApiKey.DescribeUserScramCredentials, 0, {
      users: [{ name: 'gina' }, { name: 'dup' }, { name: 'dup' }, { name: 'ghost' }],
    });
    expect(d.errorCode).to.equal(0);
    expect(
      d.results.map((r) => [r.user, r.errorCode, r.errorMessage, r.credentialInfos.map((i) => [i.mechanism, i.iterations])]),
    ).to.deep.equal([
      ['gina', 0, null, [[1, 4096]]],
      ['dup', ErrorCode.DUPLICATE_RESOURCE, 'Cannot describe SCRAM credentials for the same user twice in a single request: dup', []],
      ['ghost', ErrorCode.RESOURCE_NOT_FOUND, 'Attempt to describe a user credential that does not exist: ghost', []],
    ]);

    // stored: salt, iterations, StoredKey, ServerKey; never the salted password the request carried
    const file = readFileSync(join(dataDir, 'gregor-metadata.json'), 'utf8');
    const stored = (JSON.parse(file) as { scramCredentials: Record<string, Record<string, Record<string, unknown>>> }).scramCredentials;
    expect(Object.keys(stored['gina']?.['SCRAM-SHA-256'] ?? {}).sort()).to.deep.equal(['iterations', 'salt', 'serverKey', 'storedKey']);
    expect(file).to.not.include(saltedPassword('SCRAM-SHA-256', 'pw', salt, 4096).toString('base64'));
  });

  it('credentials survive a restart', async () => {
    await broker.stop();
    await start();
    expect(await canLogIn(broker, { mechanism: 'scram-sha-512', username: 'frank', password: 'frank-secret' })).to.equal(true);
    expect(await canLogIn(broker, { mechanism: 'scram-sha-512', username: 'frank', password: 'wrong' })).to.equal(false);
  });
});
