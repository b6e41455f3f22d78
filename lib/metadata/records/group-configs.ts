/** Dynamic group configs by group id (IncrementalAlterConfigs on a GROUP resource). */
import type { RecordKind } from './record-map.js';

export const groupConfigRecords: RecordKind<string> = {
  field: 'groupConfigs',
  dir: 'group-configs/',
  toName: encodeURIComponent,
  fromName: decodeURIComponent,
  isFileLeaf: (v) => typeof v === 'string',
  isEtcdLeaf: (v): v is string => typeof v === 'string',
  etcdWhat: 'not an object of strings',
  perKey: true,
  change: (group) => ({ kind: 'groupConfigs', group }),
};
