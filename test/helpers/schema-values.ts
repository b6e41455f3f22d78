/**
 * Builds values for any generated message from protocol/generated/schema.json (facts about each field),
 * so that round-trip and fuzz tests cover every API × version without hand-written fixtures.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PROJECT_ROOT } from './project.js';

export interface FieldDescriptor {
  prop: string;
  type: string;
  versions: [number, number] | null;
  nullable: [number, number] | null;
  tagged: [number, number] | null;
  tag?: number;
  ignorable: boolean;
  flexible?: [number, number] | null;
}

export interface MessageDescriptor {
  kind: string;
  apiKey?: number;
  valid: [number, number];
  flexible: [number, number] | null;
  root: string;
  structs: Record<string, FieldDescriptor[]>;
}

export const SCHEMA: Record<string, MessageDescriptor> = JSON.parse(
  readFileSync(resolve(PROJECT_ROOT, 'protocol/generated/schema.json'), 'utf8'),
) as Record<string, MessageDescriptor>;

export function inRange(r: [number, number] | null, v: number): boolean {
  return r !== null && v >= r[0] && v <= r[1];
}

/** A small deterministic PRNG so failures are reproducible from the seed. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    this.s = x;
    return x / 0x100000000;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    const x = xs[this.int(0, xs.length - 1)];
    if (x === undefined) throw new Error('empty pick');
    return x;
  }
}

const STRINGS = ['', 'a', 'topic-1', 'ünïcødé ✓', 'x'.repeat(40), 'group.id_with-chars'];

function primitive(rng: Rng, t: string): unknown {
  switch (t) {
    case 'bool':
      return rng.next() < 0.5;
    case 'int8':
      return rng.int(-128, 127);
    case 'int16':
      return rng.int(-32768, 32767);
    case 'uint16':
      return rng.int(0, 65535);
    case 'int32':
      return rng.pick([0, -1, 1, 2147483647, -2147483648, rng.int(-1e9, 1e9)]);
    case 'uint32':
      return rng.pick([0, 1, 4294967295, rng.int(0, 4e9)]);
    case 'int64':
      return rng.pick([0n, -1n, 9223372036854775807n, -9223372036854775808n, BigInt(rng.int(-1e9, 1e9)) * 1000003n]);
    case 'float64':
      return rng.pick([0, 1.5, -2.25, 1e300, rng.next()]);
    case 'uuid':
      return Array.from({ length: 32 }, () => rng.int(0, 15).toString(16)).join('');
    case 'string':
      return rng.pick(STRINGS);
    case 'bytes':
    case 'records':
      return Buffer.from(Array.from({ length: rng.int(0, 24) }, () => rng.int(0, 255)));
  }
  return undefined;
}

/** A value of `structName` valid for version v: fields absent from v are left out. */
export function randomStruct(msg: MessageDescriptor, structName: string, v: number, rng: Rng, depth = 0): Record<string, unknown> {
  const fields = msg.structs[structName];
  if (fields === undefined) throw new Error(`no struct ${structName}`);
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (!inRange(f.versions, v)) continue;
    if (inRange(f.nullable, v) && rng.next() < 0.15) {
      out[f.prop] = null;
      continue;
    }
    out[f.prop] = randomValue(msg, f.type, v, rng, depth);
  }
  return out;
}

function randomValue(msg: MessageDescriptor, t: string, v: number, rng: Rng, depth: number): unknown {
  if (t.startsWith('[]')) {
    const n = depth > 3 ? 0 : rng.int(0, 3);
    return Array.from({ length: n }, () => randomValue(msg, t.slice(2), v, rng, depth + 1));
  }
  const p = primitive(rng, t);
  if (p !== undefined) return p;
  return randomStruct(msg, t, v, rng, depth + 1);
}

/** True when every field of `expected` (recursively) equals the same field of `actual`. */
export function containsValue(expected: unknown, actual: unknown, path = '$'): string | null {
  if (expected === actual) return null;
  if (typeof expected === 'bigint' || typeof expected !== 'object' || expected === null) {
    return Object.is(expected, actual) ? null : `${path}: expected ${String(expected)}, got ${String(actual)}`;
  }
  if (Buffer.isBuffer(expected)) {
    return Buffer.isBuffer(actual) && expected.equals(actual) ? null : `${path}: buffers differ`;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${path}: array length differs`;
    for (let i = 0; i < expected.length; i++) {
      const d = containsValue(expected[i], actual[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return null;
  }
  if (typeof actual !== 'object' || actual === null) return `${path}: expected an object`;
  for (const [k, x] of Object.entries(expected)) {
    const d = containsValue(x, (actual as Record<string, unknown>)[k], `${path}.${k}`);
    if (d !== null) return d;
  }
  return null;
}
