/** Small helpers the generated codecs share. Hand-written; the generator only calls them. */
import { GregorErrorCode, ProtocolError } from './errors.js';
import type { Reader, TaggedField } from './reader.js';

export const EMPTY_BUFFER: Buffer = Buffer.alloc(0);

/** Reads an array (int32 or compact length); null when the wire says null and the version allows it. */
export function readArray<T>(r: Reader, flexible: boolean, nullable: boolean, readItem: (r: Reader) => T): T[] | null {
  const n = flexible ? r.compactArrayLength() : r.arrayLength();
  if (n < 0) {
    if (nullable) return null;
    r.fail(GregorErrorCode.NULL_NOT_ALLOWED, 'null array in a non-nullable field');
    return [];
  }
  const out: T[] = [];
  for (let i = 0; i < n && r.error === undefined; i++) out.push(readItem(r));
  return out;
}

/** Like readArray for a field that is never null in this version. */
export function readArrayNonNull<T>(r: Reader, flexible: boolean, readItem: (r: Reader) => T): T[] {
  return readArray(r, flexible, false, readItem) ?? [];
}

export function fieldNotInVersion(struct: string, field: string, version: number): ProtocolError {
  return new ProtocolError(
    GregorErrorCode.FIELD_NOT_IN_VERSION,
    `${struct}.${field} has a non-default value but does not exist in version ${version}`,
  );
}

export function nullNotAllowed(struct: string, field: string, version: number): ProtocolError {
  return new ProtocolError(GregorErrorCode.NULL_NOT_ALLOWED, `${struct}.${field} cannot be null in version ${version}`);
}

/** Deep equality against a field default: numbers, bigints, strings, booleans, null, Buffers, arrays, plain objects. */
export function isDefaultValue(value: unknown, def: unknown): boolean {
  if (value === undefined) return true;
  return deepEqual(value, def);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Buffer.isBuffer(a) || Buffer.isBuffer(b)) return Buffer.isBuffer(a) && Buffer.isBuffer(b) && a.equals(b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => deepEqual(x, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = new Set([...Object.keys(ao), ...Object.keys(bo)]);
  for (const k of keys) {
    if (k === '_unknownTaggedFields') {
      const ua = ao[k] as TaggedField[] | undefined;
      const ub = bo[k] as TaggedField[] | undefined;
      if ((ua?.length ?? 0) !== 0 || (ub?.length ?? 0) !== 0) return false;
      continue;
    }
    if (!deepEqual(ao[k], bo[k])) return false;
  }
  return true;
}

/** Merges known tagged fields (already ascending) with unknown ones into one ascending list. */
export function mergeTagged(known: TaggedField[], unknown: readonly TaggedField[] | undefined): TaggedField[] | undefined {
  if (unknown === undefined || unknown.length === 0) return known.length === 0 ? undefined : known;
  if (known.length === 0) return [...unknown].sort((x, y) => x.tag - y.tag);
  return [...known, ...unknown].sort((x, y) => x.tag - y.tag);
}

/** Unknown tagged fields in ascending tag order (as read they usually already are). */
export function sortedTagged(unknown: readonly TaggedField[] | undefined): readonly TaggedField[] | undefined {
  if (unknown === undefined || unknown.length < 2) return unknown;
  for (let i = 1; i < unknown.length; i++) {
    if ((unknown[i - 1]?.tag ?? 0) > (unknown[i]?.tag ?? 0)) return [...unknown].sort((x, y) => x.tag - y.tag);
  }
  return unknown;
}

/** Sum of the encoded sizes of an array's items (an index loop: no iterator per call). */
export function sumSizes<T>(items: readonly T[], size: (item: T, v: number) => number, v: number): number {
  let n = 0;
  for (let i = 0; i < items.length; i++) n += size(items[i] as T, v);
  return n;
}
