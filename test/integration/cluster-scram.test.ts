/**
 * SCRAM credentials in a cluster (metadata.store=etcd): credentials altered through one broker are
 * described by the other (from its etcd watch), deletions too, and a restarted broker reads them back.
 */
import { expect } from 'chai';
import { KafkaClient } from '../../lib/client/client.js';
import { alterScramCredentials, describeScramCredentials } from '../../lib/client/scram.js';
import { until, useCluster } from '../helpers/cluster.js';

async function withClient<T>(bootstrap: string, f: (c: KafkaClient) => Promise<T>): Promise<T> {
  const c = new KafkaClient({ bootstrap });
  try {
    return await f(c);
  } finally {
    c.close();
  }
}

/** user -> "MECHANISM:iterations" as broker `bootstrap` describes every user. */
const described = (bootstrap: string) =>
  withClient(bootstrap, async (c) =>
    Object.fromEntries(
      (await describeScramCredentials(c, null)).map((d) => [d.name, d.credentials.map((x) => `${x.mechanism}:${x.iterations}`)]),
    ),
  );

describe('cluster: SCRAM credentials through etcd', function () {
  this.timeout(90_000);
  const cluster = useCluster({}, { brokers: 2 });

  it('altered through one broker, described by the other; deletions too; a restarted broker reads them back', async () => {
    const [b1, b2] = cluster().brokers;
    if (b1 === undefined || b2 === undefined) throw new Error('two brokers expected');
    const res = await withClient(b1.bootstrap, (c) =>
      alterScramCredentials(
        c,
        [
          { user: 'alice', mechanism: 'SCRAM-SHA-256', password: 'a', iterations: 4096 },
          { user: 'bob', mechanism: 'SCRAM-SHA-512', password: 'b', iterations: 8192 },
        ],
        [],
      ),
    );
    expect(res.map((r) => [r.name, r.errorCode])).to.have.deep.members([
      ['alice', 0],
      ['bob', 0],
    ]);
    const want = { alice: ['SCRAM-SHA-256:4096'], bob: ['SCRAM-SHA-512:8192'] };
    await until(
      async () => (JSON.stringify(await described(b2.bootstrap)) === JSON.stringify(want) ? true : undefined),
      15_000,
      'broker 2 sees both users',
    );

    await withClient(b2.bootstrap, (c) => alterScramCredentials(c, [], [{ user: 'alice', mechanism: 'SCRAM-SHA-256' }]));
    await until(
      async () => ((await described(b1.bootstrap))['alice'] === undefined ? true : undefined),
      15_000,
      'broker 1 sees the deletion',
    );

    await b1.kill('SIGTERM');
    await b1.start();
    expect(await described(b1.bootstrap)).to.deep.equal({ bob: ['SCRAM-SHA-512:8192'] });
  });
});
