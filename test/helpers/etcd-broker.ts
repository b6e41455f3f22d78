/**
 * A broker's etcd session in a process of its own, for tests that freeze it (SIGSTOP) so its lease
 * expires: `node etcd-broker.js '{"endpoints":[...],"clusterId":...,"nodeId":...,"sessionTimeoutMs":...,"dataDir":...}'`.
 * Prints `READY <brokerEpoch>` once registered; closes the store on SIGTERM.
 */
import { EtcdMetadataStore } from '../../lib/metadata/etcd-store.js';
import { silentLogger } from '../../lib/observability/logger.js';

const opts = JSON.parse(process.argv[2] ?? '{}') as {
  endpoints: string[];
  clusterId: string;
  nodeId: number;
  sessionTimeoutMs: number;
  dataDir: string;
};
const store = await EtcdMetadataStore.open({ ...opts, logger: silentLogger() });
await store.register({
  nodeId: opts.nodeId,
  rack: null,
  endpoints: [{ listener: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + opts.nodeId }],
});
process.stdout.write(`READY ${store.session.brokerEpoch()}\n`);
process.once('SIGTERM', () => {
  void store.close().finally(() => process.exit(0));
});
