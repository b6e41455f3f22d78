/** Client quotas by entity key (lib/quota/entity.ts): quota key → number. */
import type { RecordKind } from './record-map.js';

export const clientQuotaRecords: RecordKind<number> = {
  field: 'clientQuotas',
  dir: 'client-quotas/',
  toName: encodeURIComponent,
  fromName: decodeURIComponent,
  isFileLeaf: (v) => typeof v === 'number',
  isEtcdLeaf: (v): v is number => typeof v === 'number',
  etcdWhat: 'not an object of numbers',
  perKey: false,
  change: () => ({ kind: 'clientQuotas' }),
};
