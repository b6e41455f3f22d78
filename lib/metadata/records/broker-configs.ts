/** Dynamic broker configs by resource ('' the cluster-wide default; etcd names that one `default`). */
import type { RecordKind } from './record-map.js';

export const brokerConfigRecords: RecordKind<string> = {
  field: 'brokerConfigs',
  dir: 'broker-configs/',
  toName: (resource) => (resource === '' ? 'default' : resource),
  fromName: (name) => (name === 'default' ? '' : name),
  isFileLeaf: (v) => typeof v === 'string',
  isEtcdLeaf: (v): v is string => typeof v === 'string',
  etcdWhat: 'not an object of strings',
  perKey: false,
  change: () => ({ kind: 'brokerConfigs' }),
};
