/** SCRAM credentials by user, then mechanism name: salted (salt, iterations, StoredKey, ServerKey), never a password. */
import type { StoredScramCredential } from '../store.js';
import { isObject, type RecordKind } from './record-map.js';

function isScramCredential(v: unknown): v is StoredScramCredential {
  const x = v as Partial<StoredScramCredential> | null;
  return (
    typeof x === 'object' &&
    x !== null &&
    Number.isInteger(x.iterations) &&
    typeof x.salt === 'string' &&
    typeof x.storedKey === 'string' &&
    typeof x.serverKey === 'string'
  );
}

export const scramRecords: RecordKind<StoredScramCredential> = {
  field: 'scramCredentials',
  dir: 'scram/',
  toName: encodeURIComponent,
  fromName: decodeURIComponent,
  isFileLeaf: isObject,
  isEtcdLeaf: isScramCredential,
  etcdWhat: 'not SCRAM credentials',
  perKey: false,
  change: () => ({ kind: 'scramCredentials' }),
};
