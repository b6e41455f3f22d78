/**
 * Client quotas in a cluster (metadata.store=etcd): a quota altered through one broker is described
 * by the other (from its etcd watch) and throttles that broker's clients; its removal too.
 */
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import { until, useCluster } from '../helpers/cluster.js';
import { alterQuotas, describeQuotas, quotaMap } from '../helpers/quotas.js';
import { RawClient } from '../helpers/raw-client.js';

/** The throttle_time_ms of a Metadata v9 request from client id raw-client on a fresh connection. */
async function metadataThrottle(bootstrap: string): Promise<number> {
  const c = await RawClient.connect(bootstrap);
  try {
    const res = await c.request<{ throttleTimeMs: number }>(
      ApiKey.Metadata,
      9,
      { topics: [], allowAutoTopicCreation: false, includeClusterAuthorizedOperations: false, includeTopicAuthorizedOperations: false },
      15_000,
    );
    return res.throttleTimeMs;
  } finally {
    c.destroy();
  }
}

describe('cluster: client quotas through etcd', function () {
  this.timeout(90_000);
  const cluster = useCluster({}, { brokers: 2 });

  it('set through one broker, described and enforced by the other; removal too', async () => {
    const [b1, b2] = cluster().brokers;
    if (b1 === undefined || b2 === undefined) throw new Error('two brokers expected');
    expect(await metadataThrottle(b2.bootstrap)).to.equal(0);
    // a request_percentage no request can stay under
    const res = await alterQuotas(b1.bootstrap, [{ entity: { 'client-id': 'raw-client' }, ops: { request_percentage: 0.000001 } }]);
    expect(res.entries[0]?.errorCode).to.equal(0);
    await until(
      async () =>
        JSON.stringify(quotaMap(await describeQuotas(b2.bootstrap, []))) ===
        JSON.stringify({ 'client-id=raw-client': { request_percentage: 0.000001 } })
          ? true
          : undefined,
      15_000,
      'broker 2 describes the quota',
    );
    expect(await metadataThrottle(b2.bootstrap)).to.be.greaterThan(0);

    await alterQuotas(b2.bootstrap, [{ entity: { 'client-id': 'raw-client' }, ops: { request_percentage: null } }]);
    await until(
      async () => (quotaMap(await describeQuotas(b1.bootstrap, []))['client-id=raw-client'] === undefined ? true : undefined),
      15_000,
      'broker 1 sees the removal',
    );
    expect(await metadataThrottle(b1.bootstrap)).to.equal(0);
  });
});
