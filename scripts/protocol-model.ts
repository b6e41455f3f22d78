/** The generator's model of Kafka's message definitions: version ranges, fields, structs. */

export interface VersionRange {
  lo: number;
  hi: number; // Infinity for "N+"
}

export interface Field {
  name: string; // as in the schema (PascalCase for APIs, camelCase in coordinator records)
  prop: string; // camelCase property name in TypeScript
  type: string; // schema type: int32, string, []Foo, Foo ...
  versions: VersionRange | null;
  nullableVersions: VersionRange | null;
  taggedVersions: VersionRange | null;
  tag: number | undefined;
  flexibleVersions: VersionRange | null | undefined; // field-level override; undefined = follow the message
  ignorable: boolean;
  default: string | undefined;
  fields: Field[] | undefined; // inline struct definition
}

export interface Message {
  kind: 'request' | 'response' | 'header' | 'data';
  name: string;
  apiKey: number | undefined;
  validVersions: VersionRange;
  flexibleVersions: VersionRange | null;
  listeners: string[];
  latestVersionUnstable: boolean;
  fields: Field[];
  commonStructs: Map<string, Field[]>;
}

export function parseRange(spec: unknown): VersionRange | null {
  if (spec === undefined || spec === null || spec === 'none' || spec === '') return null;
  if (typeof spec !== 'string' && typeof spec !== 'number') throw new Error(`bad version range ${JSON.stringify(spec)}`);
  const s = String(spec).trim();
  let m = /^(\d+)\+$/.exec(s);
  if (m) return { lo: Number(m[1]), hi: Infinity };
  m = /^(\d+)-(\d+)$/.exec(s);
  if (m) return { lo: Number(m[1]), hi: Number(m[2]) };
  m = /^(\d+)$/.exec(s);
  if (m) return { lo: Number(m[1]), hi: Number(m[1]) };
  throw new Error(`bad version range ${JSON.stringify(spec)}`);
}

export function camel(name: string): string {
  // "ThrottleTimeMs" → "throttleTimeMs", "ISRReplicas" → "isrReplicas", "offset" stays.
  const m = /^([A-Z]+)(?=[A-Z][a-z]|$|[0-9])/.exec(name);
  if (m && m[1] !== undefined && m[1].length > 1) return m[1].toLowerCase() + name.slice(m[1].length);
  return name.charAt(0).toLowerCase() + name.slice(1);
}

interface RawField {
  name: string;
  type: string;
  versions?: string;
  nullableVersions?: string;
  taggedVersions?: string;
  tag?: number;
  flexibleVersions?: string;
  ignorable?: boolean;
  default?: string | number | boolean;
  fields?: RawField[];
}

function toField(raw: RawField): Field {
  return {
    name: raw.name,
    prop: camel(raw.name),
    type: raw.type,
    versions: parseRange(raw.versions ?? raw.taggedVersions ?? '0+'),
    nullableVersions: parseRange(raw.nullableVersions),
    taggedVersions: parseRange(raw.taggedVersions),
    tag: raw.tag,
    flexibleVersions: raw.flexibleVersions === undefined ? undefined : parseRange(raw.flexibleVersions),
    ignorable: raw.ignorable === true,
    default: raw.default === undefined ? undefined : String(raw.default),
    fields: raw.fields?.map(toField),
  };
}

export function loadMessage(json: unknown): Message {
  const raw = json as {
    type: string;
    name: string;
    apiKey?: number;
    validVersions: string;
    flexibleVersions?: string;
    listeners?: string[];
    latestVersionUnstable?: boolean;
    fields: RawField[];
    commonStructs?: { name: string; fields: RawField[] }[];
  };
  const valid = parseRange(raw.validVersions);
  if (valid === null) throw new Error(`${raw.name}: no valid versions`);
  const kind = raw.type === 'request' || raw.type === 'response' || raw.type === 'header' ? raw.type : 'data';
  const commonStructs = new Map<string, Field[]>();
  for (const cs of raw.commonStructs ?? []) commonStructs.set(cs.name, cs.fields.map(toField));
  return {
    kind,
    name: raw.name,
    apiKey: raw.apiKey,
    validVersions: valid,
    flexibleVersions: parseRange(raw.flexibleVersions),
    listeners: raw.listeners ?? [],
    latestVersionUnstable: raw.latestVersionUnstable === true,
    fields: raw.fields.map(toField),
    commonStructs,
  };
}

/** Intersects two ranges; null when empty. */
export function intersect(a: VersionRange | null, b: VersionRange | null): VersionRange | null {
  if (a === null || b === null) return null;
  const lo = Math.max(a.lo, b.lo);
  const hi = Math.min(a.hi, b.hi);
  return lo <= hi ? { lo, hi } : null;
}

/** JS condition text for "v is in range", simplified against the message's valid range. */
export function cond(range: VersionRange | null, valid: VersionRange, v = 'v'): string {
  const r = intersect(range, valid);
  if (r === null) return 'false';
  const parts: string[] = [];
  if (r.lo > valid.lo) parts.push(`${v} >= ${r.lo}`);
  if (r.hi < valid.hi) parts.push(`${v} <= ${r.hi}`);
  return parts.length === 0 ? 'true' : parts.join(' && ');
}

export const PRIMITIVES = new Set([
  'bool',
  'int8',
  'int16',
  'uint16',
  'int32',
  'uint32',
  'int64',
  'float64',
  'uuid',
  'string',
  'bytes',
  'records',
]);
