/**
 * Dynamic broker configs in a cluster (metadata.store=etcd): a cluster-wide default set through one
 * broker reaches every broker (their DescribeConfigs show it, source DYNAMIC_DEFAULT_BROKER_CONFIG);
 * a per-broker value stays on its broker; a restarted broker reads both back from etcd.
 */
import { expect } from 'chai';
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeConfigsResponse } from '../../protocol/generated/describe-configs.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/incremental-alter-configs.js';
import { until, useCluster } from '../helpers/cluster.js';
import { RawClient } from '../helpers/raw-client.js';

const BROKER = 4;

async function withRaw<T>(bootstrap: string, f: (raw: RawClient) => Promise<T>): Promise<T> {
  const raw = await RawClient.connect(bootstrap);
  try {
    return await f(raw);
  } finally {
    raw.destroy();
  }
}

const setConfig = (bootstrap: string, resource: string, name: string, value: string) =>
  withRaw(bootstrap, async (raw) => {
    const r = await raw.request<IncrementalAlterConfigsResponse>(ApiKey.IncrementalAlterConfigs, 1, {
      validateOnly: false,
      resources: [{ resourceType: BROKER, resourceName: resource, configs: [{ name, configOperation: 0, value }] }],
    });
    return r.responses[0]?.errorCode;
  });

/** [value, source] of `name` as broker `nodeId` (at `bootstrap`) describes itself. */
const describedBy = (bootstrap: string, nodeId: number, name: string) =>
  withRaw(bootstrap, async (raw) => {
    const r = await raw.request<DescribeConfigsResponse>(ApiKey.DescribeConfigs, 4, {
      includeSynonyms: false,
      includeDocumentation: false,
      resources: [{ resourceType: BROKER, resourceName: String(nodeId), configurationKeys: [name] }],
    });
    const c = r.results[0]?.configs[0];
    return [c?.value, c?.configSource];
  });

describe('cluster: dynamic broker configs through etcd', function () {
  this.timeout(90_000);
  const cluster = useCluster({}, { brokers: 2 });

  it('a cluster-wide default reaches every broker, a per-broker value stays on its broker, a restart reads both from etcd', async () => {
    const [b1, b2] = cluster().brokers;
    if (b1 === undefined || b2 === undefined) throw new Error('two brokers expected');
    expect(await setConfig(b1.bootstrap, '', 'log.retention.ms', '7200000')).to.equal(ErrorCode.NONE);
    expect(await setConfig(b1.bootstrap, String(b1.nodeId), 'message.max.bytes', '3000000')).to.equal(ErrorCode.NONE);
    // the other broker hears the default from its etcd watch
    await until(
      async () => ((await describedBy(b2.bootstrap, b2.nodeId, 'log.retention.ms'))[0] === '7200000' ? true : undefined),
      15_000,
      'broker 2 sees the cluster-wide default',
    );
    expect(await describedBy(b2.bootstrap, b2.nodeId, 'log.retention.ms')).to.deep.equal(['7200000', 3]);
    expect(await describedBy(b2.bootstrap, b2.nodeId, 'message.max.bytes')).to.deep.equal(['1048588', 5]);
    expect(await describedBy(b1.bootstrap, b1.nodeId, 'message.max.bytes')).to.deep.equal(['3000000', 2]);

    await b1.kill('SIGTERM');
    await b1.start();
    expect(await describedBy(b1.bootstrap, b1.nodeId, 'log.retention.ms')).to.deep.equal(['7200000', 3]);
    expect(await describedBy(b1.bootstrap, b1.nodeId, 'message.max.bytes')).to.deep.equal(['3000000', 2]);
  });
});
