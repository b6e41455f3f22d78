/**
 * Keyed metadata records (dynamic broker and group configs, SCRAM credentials, client quotas): each a
 * map from a key to an object of leaf values, kept in memory the same way by both stores. A kind says
 * where the records live (a field of gregor-metadata.json, one etcd key each under a directory), what
 * a valid value is and what listeners hear when one changes; the stores keep only their transport.
 */
import type { MetadataChange } from '../store.js';

/** The fields of gregor-metadata.json holding keyed records. */
export type RecordField = 'brokerConfigs' | 'groupConfigs' | 'scramCredentials' | 'clientQuotas';

export interface RecordKind<L> {
  /** Its field in gregor-metadata.json (absent when there are no records). */
  readonly field: RecordField;
  /** Its directory under the etcd cluster prefix (`group-configs/`). */
  readonly dir: string;
  /** The last segment of a record's etcd key, and the record's key from it. */
  toName(key: string): string;
  fromName(name: string): string;
  /** A leaf value as the file must hold it. */
  isFileLeaf(v: unknown): boolean;
  /** A leaf value as an etcd value must hold it; `etcdWhat` says what a value failing it is not. */
  isEtcdLeaf(v: unknown): v is L;
  readonly etcdWhat: string;
  /** True when each record's change is its own event; else one event (of `change('')`) covers the kind. */
  readonly perKey: boolean;
  /** What listeners hear when the record under `key` changed. */
  change(key: string): MetadataChange;
}

export type Records<L> = ReadonlyMap<string, Readonly<Record<string, L>>>;

/** Whether `v` is a JSON object (not null, not an array). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether `raw` (a file field) is an object of records whose leaves pass the kind's file check. */
export function isFileRecords(kind: RecordKind<unknown>, raw: unknown): boolean {
  return isObject(raw) && Object.values(raw).every((r) => isObject(r) && Object.values(r).every((v) => kind.isFileLeaf(v)));
}

export class RecordMap<L> {
  private map: Map<string, Readonly<Record<string, L>>>;

  constructor(
    readonly kind: RecordKind<L>,
    init?: Readonly<Record<string, Readonly<Record<string, L>>>>,
  ) {
    this.map = new Map(Object.entries(init ?? {}));
  }

  /** Every record; an edit replaces the map, so a reader holding this one keeps what it had. */
  all(): Records<L> {
    return this.map;
  }

  /** A copy of one record ({} when there is none). */
  get(key: string): Record<string, L> {
    return { ...(this.map.get(key) ?? {}) };
  }

  /** Sets each record (a copy), or removes it when empty; returns what listeners hear. */
  edit(entries: Iterable<readonly [string, Readonly<Record<string, L>>]>): MetadataChange[] {
    const next = new Map(this.map);
    const keys: string[] = [];
    for (const [key, values] of entries) {
      if (Object.keys(values).length === 0) next.delete(key);
      else next.set(key, { ...values });
      keys.push(key);
    }
    this.map = next;
    return this.kind.perKey ? keys.map((k) => this.kind.change(k)) : [this.kind.change('')];
  }

  /** The etcd copy's put (a value its kind checked) or delete (undefined) of one record. */
  apply(key: string, values: Readonly<Record<string, L>> | undefined): MetadataChange {
    if (values === undefined) this.map.delete(key);
    else this.map.set(key, values);
    return this.kind.change(key);
  }

  /** The value of the file's field; undefined when there are no records (the field is left out). */
  toFile(): Record<string, Readonly<Record<string, L>>> | undefined {
    return this.map.size > 0 ? Object.fromEntries(this.map) : undefined;
  }

  /** What listeners hear when `fresh` (a full reload) replaces these records. */
  changesTo(fresh: RecordMap<L>): MetadataChange[] {
    const changed: string[] = [];
    for (const k of new Set([...this.map.keys(), ...fresh.map.keys()]))
      if (JSON.stringify(this.map.get(k)) !== JSON.stringify(fresh.map.get(k))) changed.push(k);
    if (changed.length === 0) return [];
    return this.kind.perKey ? changed.map((k) => this.kind.change(k)) : [this.kind.change('')];
  }

  /** Takes the records of `fresh` (a full reload). */
  replaceWith(fresh: RecordMap<L>): void {
    this.map = new Map(fresh.map);
  }
}
