/** Small builders for etcd transaction parts (the raw KV API: keys and values as Buffers). */
import type { ICompare, IKeyValue, IRequestOp, IResponseOp, ITxnResponse } from 'etcd3';
import type { KeyValue } from './etcd-state.js';

const buf = (s: string): Buffer => Buffer.from(s, 'utf8');

/** The key's create revision equals `revision` (0: the key does not exist). */
export function createdAt(key: string, revision: number): ICompare {
  return { key: buf(key), target: 'Create', result: 'Equal', create_revision: revision };
}

/** The key's mod revision equals `revision` (0: the key does not exist). */
export function modifiedAt(key: string, revision: number): ICompare {
  return { key: buf(key), target: 'Mod', result: 'Equal', mod_revision: revision };
}

/** The key exists and holds `value`. */
export function valueIs(key: string, value: string): ICompare {
  return { key: buf(key), target: 'Value', result: 'Equal', value: buf(value) };
}

/** The key is attached to `lease`. */
export function leaseIs(key: string, lease: string): ICompare {
  return { key: buf(key), target: 'Lease', result: 'Equal', lease };
}

export function put(key: string, value: string, lease?: string): IRequestOp {
  return { request_put: lease === undefined ? { key: buf(key), value: buf(value) } : { key: buf(key), value: buf(value), lease } };
}

export function del(key: string): IRequestOp {
  return { request_delete_range: { key: buf(key) } };
}

/** The end of the range of keys that start with `prefix` (its last byte plus one). */
export function prefixEnd(prefix: string): Buffer {
  const end = buf(prefix);
  const last = end.length - 1;
  end[last] = (end[last] ?? 0) + 1;
  return end;
}

export function delPrefix(prefix: string): IRequestOp {
  return { request_delete_range: { key: buf(prefix), range_end: prefixEnd(prefix) } };
}

export function get(key: string): IRequestOp {
  return { request_range: { key: buf(key) } };
}

export function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value,
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    lease: kv.lease,
  };
}

/** The key-values the ranges of a transaction's answer returned (its failure branch's reads, typically). */
export function rangedKeyValues(res: ITxnResponse): KeyValue[] {
  const out: KeyValue[] = [];
  // a response holds one of its fields (the one of its request's kind)
  for (const r of res.responses as Partial<IResponseOp>[]) for (const kv of r.response_range?.kvs ?? []) out.push(toKeyValue(kv));
  return out;
}

/** The revision a transaction committed at (or the store's revision when it changed nothing). */
export function revisionOf(res: ITxnResponse): number {
  return Number(res.header.revision);
}
