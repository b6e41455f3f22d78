/** Emits the TypeScript for one message: interfaces, defaults, read/write/size per struct. */
import { type Field, type Message, type VersionRange, cond, intersect } from './protocol-model.js';
import { NUMERIC, and, choose, chooseStmt, elemType, isArray, isStructType, not } from './protocol-emit-expr.js';

interface Struct {
  tsName: string;
  fields: Field[];
  /** some field holds an array of it: it gets its own array reader and size sum (see emitArrayHelpers) */
  arrayElem?: boolean;
}

interface Ctx {
  msg: Message;
  valid: VersionRange;
  structs: Map<string, Struct>; // schema struct name → struct
  /** tsNames of the structs holding a records field (themselves or below): generic in it, see recordsParam */
  withRecords: Set<string>;
}

/**
 * How a struct's type is spelled. A struct holding a records field (itself or below) takes the field's
 * type as a parameter `R`, Buffer by default: what is read is plain (Buffer), what is written may
 * carry stored slices (W.RecordsValue), so an encoder can pass them on without copying.
 */
type TypeMode = 'iface' | 'read' | 'write';

/** Marks the structs (tsNames) that hold a records field, directly or in a struct below them. */
function markRecords(ctx: Ctx, tsName: string, fields: Field[]): boolean {
  let has = false;
  for (const f of fields) {
    const base = isArray(f.type) ? elemType(f.type) : f.type;
    if (base === 'records') has = true;
    else if (isStructType(base)) {
      const st = structOf(ctx, base);
      if (ctx.withRecords.has(st.tsName) || markRecords(ctx, st.tsName, st.fields)) has = true;
    }
  }
  if (has) ctx.withRecords.add(tsName);
  return has;
}

/** A struct's type in a mode (see TypeMode). */
function structType(ctx: Ctx, tsName: string, mode: TypeMode): string {
  if (!ctx.withRecords.has(tsName)) return tsName;
  if (mode === 'iface') return `${tsName}<R>`;
  return mode === 'write' ? `${tsName}<W.RecordsValue>` : tsName;
}

function collectStructs(ctx: Ctx, fields: Field[]): void {
  for (const f of fields) {
    const base = isArray(f.type) ? elemType(f.type) : f.type;
    if (!isStructType(base)) continue;
    const own = f.fields ?? ctx.msg.commonStructs.get(base);
    if (own === undefined) throw new Error(`${ctx.msg.name}.${f.name}: unknown struct type ${base}`);
    const existing = ctx.structs.get(base);
    if (existing !== undefined && isArray(f.type)) existing.arrayElem = true;
    if (existing !== undefined) {
      if (f.fields !== undefined && existing.fields !== f.fields && JSON.stringify(existing.fields) !== JSON.stringify(f.fields)) {
        throw new Error(`${ctx.msg.name}: struct ${base} defined twice with different fields`);
      }
      continue;
    }
    ctx.structs.set(base, { tsName: `${ctx.msg.name}${base}`, fields: own, ...(isArray(f.type) ? { arrayElem: true } : {}) });
    collectStructs(ctx, own);
  }
}

function structOf(ctx: Ctx, t: string): Struct {
  const s = ctx.structs.get(isArray(t) ? elemType(t) : t);
  if (s === undefined) throw new Error(`no struct ${t}`);
  return s;
}

/** The versions in which a field exists (within the message's valid versions). */
function fieldRange(ctx: Ctx, f: Field): VersionRange {
  return intersect(ctx.valid, f.versions) ?? ctx.valid;
}

function flexCond(ctx: Ctx, f: Field | undefined): string {
  const range = f === undefined ? ctx.valid : fieldRange(ctx, f);
  const msgFlex = cond(ctx.msg.flexibleVersions, range);
  if (f === undefined || f.flexibleVersions === undefined) return msgFlex;
  return and(msgFlex, cond(f.flexibleVersions, range));
}

/** Versions in which the field is a regular (non-tagged) field, as a condition. */
function regularCond(ctx: Ctx, f: Field): string {
  const exists = cond(f.versions, ctx.valid);
  if (f.taggedVersions === null) return exists;
  const r = fieldRange(ctx, f);
  const t = intersect(r, f.taggedVersions);
  if (t !== null && t.lo <= r.lo && t.hi >= r.hi) return 'false';
  return and(exists, not(cond(f.taggedVersions, ctx.valid)));
}

function nullCond(ctx: Ctx, f: Field): string {
  return cond(f.nullableVersions, fieldRange(ctx, f));
}

function baseTsType(ctx: Ctx, t: string, mode: TypeMode): string {
  if (t === 'bool') return 'boolean';
  if (NUMERIC.has(t)) return 'number';
  if (t === 'int64') return 'bigint';
  if (t === 'uuid' || t === 'string') return 'string';
  if (t === 'bytes') return 'Buffer';
  if (t === 'records') return mode === 'iface' ? 'R' : mode === 'write' ? 'W.RecordsValue' : 'Buffer';
  if (isArray(t)) return `${baseTsType(ctx, elemType(t), mode)}[]`;
  return structType(ctx, structOf(ctx, t).tsName, mode);
}

function tsType(ctx: Ctx, f: Field, mode: TypeMode): string {
  const t = baseTsType(ctx, f.type, mode);
  return f.nullableVersions !== null ? `${t} | null` : t;
}

function defaultExpr(ctx: Ctx, f: Field): string {
  const d = f.default;
  const t = f.type;
  if (d === 'null') return 'null';
  if (isArray(t)) return '[]';
  if (t === 'bool') return d === 'true' ? 'true' : 'false';
  if (t === 'int64') return `${d === undefined || d === '' ? '0' : BigInt(d).toString()}n`;
  if (NUMERIC.has(t)) return d === undefined || d === '' ? '0' : String(Number(d));
  if (t === 'string') return JSON.stringify(d ?? '');
  if (t === 'uuid') return "'00000000000000000000000000000000'";
  if (t === 'bytes') return 'RT.EMPTY_BUFFER';
  if (t === 'records') return f.nullableVersions !== null ? 'null' : 'RT.EMPTY_BUFFER';
  return `default${structOf(ctx, t).tsName}()`;
}

/** Expression reading one value of type t. */
function readExpr(ctx: Ctx, t: string, F: string, N: string, r: string): string {
  switch (t) {
    case 'bool':
    case 'int8':
    case 'int16':
    case 'uint16':
    case 'int32':
    case 'uint32':
    case 'int64':
    case 'float64':
    case 'uuid':
      return `${r}.${t}()`;
    case 'string':
      return choose(
        F,
        choose(N, `${r}.compactNullableString()`, `${r}.compactString()`),
        choose(N, `${r}.nullableString()`, `${r}.string()`),
      );
    case 'bytes':
    case 'records':
      return choose(F, choose(N, `${r}.compactNullableBytes()`, `${r}.compactBytes()`), choose(N, `${r}.nullableBytes()`, `${r}.bytes()`));
  }
  if (isArray(t)) {
    const item = `(ir: Reader) => ${readExpr(ctx, elemType(t), F, 'false', 'ir')}`;
    return N === 'false' ? `RT.readArrayNonNull(${r}, ${F}, ${item})` : `RT.readArray(${r}, ${F}, ${N}, ${item})`;
  }
  const s = structOf(ctx, t);
  if (N === 'false') return `read${s.tsName}(${r}, v)`;
  return N === 'true'
    ? `(${r}.int8() < 0 ? null : read${s.tsName}(${r}, v))`
    : `((${N}) && ${r}.int8() < 0 ? null : read${s.tsName}(${r}, v))`;
}

/** Statements writing value x of type t. */
function writeStmt(ctx: Ctx, t: string, F: string, N: string, x: string, w: string, depth = 0): string {
  switch (t) {
    case 'bool':
    case 'int8':
    case 'int16':
    case 'uint16':
    case 'int32':
    case 'uint32':
    case 'int64':
    case 'float64':
    case 'uuid':
      return `${w}.${t}(${x});`;
    case 'string':
      return chooseStmt(F, `${w}.compactString(${x});`, `${w}.string(${x});`);
    case 'bytes':
      return chooseStmt(F, `${w}.compactBytes(${x});`, `${w}.bytes(${x});`);
    case 'records':
      return chooseStmt(F, `${w}.compactRecords(${x});`, `${w}.records(${x});`);
  }
  if (isArray(t)) {
    const len = `${x} === null ? null : ${x}.length`;
    const head = chooseStmt(F, `${w}.compactArrayLength(${len});`, `${w}.arrayLength(${len});`);
    const it = `e${depth}`;
    const body = writeStmt(ctx, elemType(t), F, 'false', it, w, depth + 1);
    const i = `i${depth}`;
    return `${head} if (${x} !== null) for (let ${i} = 0; ${i} < ${x}.length; ${i}++) { const ${it} = ${x}[${i}]!; ${body} }`;
  }
  const s = structOf(ctx, t);
  const plain = `write${s.tsName}(${w}, ${x}!, v);`;
  if (N === 'false') return `write${s.tsName}(${w}, ${x}, v);`;
  return chooseStmt(N, `if (${x} === null) ${w}.int8(-1); else { ${w}.int8(1); write${s.tsName}(${w}, ${x}, v); }`, plain);
}

/** Expression for the encoded size of value x of type t. */
function sizeExpr(ctx: Ctx, t: string, F: string, N: string, x: string, depth = 0): string {
  switch (t) {
    case 'bool':
    case 'int8':
      return '1';
    case 'int16':
    case 'uint16':
      return '2';
    case 'int32':
    case 'uint32':
      return '4';
    case 'int64':
    case 'float64':
      return '8';
    case 'uuid':
      return '16';
    case 'string':
      return choose(F, `W.sizeCompactString(${x})`, `W.sizeString(${x})`);
    case 'bytes':
      return choose(F, `W.sizeCompactBytes(${x})`, `W.sizeBytes(${x})`);
    case 'records':
      return choose(F, `W.sizeCompactRecords(${x})`, `W.sizeRecords(${x})`);
  }
  if (isArray(t)) {
    const head = choose(F, `W.sizeCompactArrayLength(${x} === null ? -1 : ${x}.length)`, '4');
    const e = elemType(t);
    const fixed = sizeExpr(ctx, e, F, 'false', 'EL', depth + 1);
    if (/^\d+$/.test(fixed)) return `(${head} + (${x} === null ? 0 : ${x}.length * ${fixed}))`;
    if (isStructType(e)) return `(${head} + (${x} === null ? 0 : size${structOf(ctx, e).tsName}Array(${x}, v)))`;
    const it = `e${depth}`;
    const inner = sizeExpr(ctx, e, F, 'false', it, depth + 1);
    // A plain call on the element is passed as the function itself: no closure per array sized.
    const call = new RegExp(`^([\\w.]+)\\(${it}(, v)?\\)$`).exec(inner);
    if (call !== null) return `(${head} + (${x} === null ? 0 : RT.sumSizes(${x}, ${call[1]}, v)))`;
    return `(${head} + (${x} === null ? 0 : RT.sumSizes(${x}, (${it}) => ${inner}, v)))`;
  }
  const s = structOf(ctx, t);
  if (N === 'false') return `size${s.tsName}(${x}, v)`;
  return choose(N, `(${x} === null ? 1 : 1 + size${s.tsName}(${x}, v))`, `size${s.tsName}(${x}!, v)`);
}

function nullCheck(ctx: Ctx, f: Field, s: Struct, x: string): string {
  if (f.nullableVersions === null) return '';
  const N = nullCond(ctx, f);
  if (N === 'true') return '';
  return `if (${x} === null && ${not(N)}) throw RT.nullNotAllowed('${s.tsName}', '${f.prop}', v); `;
}

/**
 * Structs a caller may give an `_encoded` (W.EncodedOnce): written once, then copied (spliced by a
 * splicing writer, see W.Writer.encoded) while the version is the same. An idle consumer's Fetch
 * answers thousands of partitions whose answers have not changed since its last poll; the handler
 * keeps each such answer and its bytes with the log.
 */
const ENCODED_ONCE = new Set(['FetchResponseFetchableTopicResponse']);

function emitStruct(ctx: Ctx, s: Struct, exported: boolean): string {
  const { valid } = ctx;
  const hasFlex = ctx.msg.flexibleVersions !== null;
  const F0 = flexCond(ctx, undefined);
  const out: string[] = [];
  const required = (f: Field) => cond(f.versions, valid) === 'true' && f.taggedVersions === null;

  // Interface.
  const generic = ctx.withRecords.has(s.tsName) ? '<R extends W.RecordsValue = Buffer>' : '';
  const wt = structType(ctx, s.tsName, 'write');
  out.push(`export interface ${s.tsName}${generic} {`);
  for (const f of s.fields) out.push(`  ${f.prop}${required(f) ? '' : '?'}: ${tsType(ctx, f, 'iface')};`);
  if (hasFlex) out.push('  _unknownTaggedFields?: TaggedField[];');
  const once = ENCODED_ONCE.has(s.tsName);
  if (once) out.push('  _encoded?: W.EncodedOnce;');
  out.push('}\n');

  // Default.
  out.push(`export function default${s.tsName}(): ${s.tsName} {`);
  out.push(`  return { ${s.fields.map((f) => `${f.prop}: ${defaultExpr(ctx, f)}`).join(', ')} };`);
  out.push('}\n');

  const tagged = s.fields.filter((f) => f.taggedVersions !== null).sort((a, b) => (a.tag ?? 0) - (b.tag ?? 0));
  const access = (f: Field) => (required(f) ? `m.${f.prop}` : `(m.${f.prop} === undefined ? ${defaultExpr(ctx, f)} : m.${f.prop})`);

  // Read.
  out.push(`${exported ? 'export ' : ''}function read${s.tsName}(r: Reader, v: number): ${s.tsName} {`);
  for (const f of s.fields) {
    const regular = regularCond(ctx, f);
    const F = flexCond(ctx, f);
    const N = nullCond(ctx, f);
    const decl = f.taggedVersions !== null ? 'let' : 'const';
    const typeAnn = `: ${tsType(ctx, f, 'read')}`;
    out.push(`  ${decl} f_${f.prop}${typeAnn} = ${choose(regular, readExpr(ctx, f.type, F, N, 'r'), defaultExpr(ctx, f))};`);
  }
  if (hasFlex) {
    out.push(`  let u: TaggedField[] | undefined;`);
    if (tagged.length === 0) {
      out.push(`  if (${F0}) u = r.taggedFields();`);
    } else {
      // The callback is only built when the section holds fields (it is usually empty).
      out.push(`  if (${F0}) { const tc = r.uvarint(); if (tc !== 0) u = r.taggedFieldsOf(tc, (tag, tr) => {`);
      out.push('    switch (tag) {');
      for (const f of tagged) {
        const T = cond(f.taggedVersions, valid);
        out.push(
          `      case ${f.tag}: if (${T}) { f_${f.prop} = ${readExpr(ctx, f.type, flexCond(ctx, f), nullCond(ctx, f), 'tr')}; return true; } return false;`,
        );
      }
      out.push('    }\n    return false;\n  }); }');
    }
  }
  out.push(`  const m: ${s.tsName} = { ${s.fields.map((f) => `${f.prop}: f_${f.prop}`).join(', ')} };`);
  if (hasFlex) out.push('  if (u !== undefined) m._unknownTaggedFields = u;');
  out.push('  return m;\n}\n');

  // Tagged-field section builder (known tags encoded, merged with unknown ones).
  if (hasFlex && tagged.length > 0) {
    out.push(`function tagged${s.tsName}(m: ${wt}, v: number): TaggedField[] | undefined {`);
    // Nothing set (the common case): no list is built.
    out.push(
      `  if (${tagged.map((f) => `m.${f.prop} === undefined`).join(' && ')} && m._unknownTaggedFields === undefined) return undefined;`,
    );
    out.push('  const t: TaggedField[] = [];');
    for (const f of tagged) {
      const T = cond(f.taggedVersions, valid);
      const F = flexCond(ctx, f);
      const N = nullCond(ctx, f);
      // Absent (undefined) means default: skip before building a default value to compare against.
      out.push(`  if (${T} && m.${f.prop} !== undefined) { const x = m.${f.prop}; if (!RT.isDefaultValue(x, ${defaultExpr(ctx, f)})) {`);
      out.push(
        `    const tw = W.Writer.alloc(${sizeExpr(ctx, f.type, F, N, 'x')}); ${writeStmt(ctx, f.type, F, N, 'x', 'tw')} t.push({ tag: ${f.tag}, data: tw.done() }); } }`,
      );
    }
    out.push('  return RT.mergeTagged(t, m._unknownTaggedFields);\n}\n');
  }
  const taggedCall = tagged.length > 0 ? `tagged${s.tsName}(m, v)` : 'RT.sortedTagged(m._unknownTaggedFields)';

  // Write.
  out.push(`${exported ? 'export ' : ''}function write${s.tsName}(w: W.Writer, m: ${wt}, v: number): void {`);
  if (once) {
    out.push('  const e_ = m._encoded;');
    out.push('  if (e_ !== undefined && e_.version === v && e_.bytes !== null) { w.encoded(e_.bytes); return; }');
    out.push('  const at_ = w.offset;');
  }
  for (const f of s.fields) {
    const exists = cond(f.versions, valid);
    const regular = regularCond(ctx, f);
    const F = flexCond(ctx, f);
    const N = nullCond(ctx, f);
    const absentCheck = f.ignorable
      ? ''
      : `if (m.${f.prop} !== undefined && !RT.isDefaultValue(m.${f.prop}, ${defaultExpr(ctx, f)})) throw RT.fieldNotInVersion('${s.tsName}', '${f.prop}', v);`;
    const body = `{ const x = ${access(f)}; ${nullCheck(ctx, f, s, 'x')}${writeStmt(ctx, f.type, F, N, 'x', 'w')} }`;
    if (exists === 'true' && regular === 'true') out.push(`  ${body}`);
    else if (exists === 'false') out.push(absentCheck === '' ? '' : `  ${absentCheck}`);
    else if (regular === 'false') {
      if (absentCheck !== '' && exists !== 'true') out.push(`  if (${not(exists)}) ${absentCheck}`);
    } else {
      out.push(`  if (${regular}) ${body}`);
      if (absentCheck !== '') out.push(regular === exists ? `  else ${absentCheck}` : `  else if (${not(exists)}) ${absentCheck}`);
    }
  }
  if (hasFlex) out.push(`  if (${F0}) w.taggedFields(${taggedCall});`);
  if (once) out.push('  if (e_ !== undefined) { e_.bytes = w.since(at_); e_.version = v; }');
  out.push('}\n');

  // Size.
  out.push(`${exported ? 'export ' : ''}function size${s.tsName}(m: ${wt}, v: number): number {`);
  if (once)
    out.push(
      '  if (m._encoded !== undefined && m._encoded.version === v && m._encoded.bytes !== null) return W.sizeEncoded(m._encoded.bytes);',
    );
  out.push('  let n = 0;');
  for (const f of s.fields) {
    const regular = regularCond(ctx, f);
    if (regular === 'false') continue;
    const F = flexCond(ctx, f);
    const N = nullCond(ctx, f);
    const se = sizeExpr(ctx, f.type, F, N, 'x');
    const stmt = /\bx\b/.test(se) ? `{ const x = ${access(f)}; n += ${se}; }` : `n += ${se};`;
    out.push(regular === 'true' ? `  ${stmt}` : `  if (${regular}) ${stmt}`);
  }
  if (hasFlex) out.push(`  if (${F0}) n += W.sizeTaggedFields(${taggedCall});`);
  out.push('  return n;\n}\n');
  if (s.arrayElem === true) emitArrayHelpers(s, wt, out);
  return unusedVersionParams(out.filter((l) => l !== '').join('\n')) + '\n';
}

/**
 * An array of a struct is read and sized by a loop of its own that calls the struct's reader and
 * sizer directly. Through the shared RT.readArray / RT.sumSizes the per-item call went through one
 * call site for every API, which V8 cannot inline (megamorphic): a 10,000-partition Fetch paid a
 * generic call and a closure per partition each way.
 */
function emitArrayHelpers(s: Struct, wt: string, out: string[]): void {
  const T = s.tsName;
  out.push(`function size${T}Array(items: readonly ${wt}[], v: number): number {`);
  out.push('  let n = 0;');
  out.push(`  for (let i = 0; i < items.length; i++) n += size${T}(items[i]!, v);`);
  out.push('  return n;\n}\n');
}

/** Renames the version parameter to `_v` in functions whose body never reads it (noUnusedParameters). */
function unusedVersionParams(code: string): string {
  const fns = code.split(/\n(?=(?:export )?function )/);
  return fns
    .map((fn) => {
      const open = fn.indexOf('{');
      const head = fn.slice(0, open);
      const body = fn.slice(open);
      let h = head;
      if (/\bv: number\b/.test(h) && !/\bv\b/.test(body)) h = h.replace(/\bv: number\b/, '_v: number');
      if (/\(m: /.test(h) && !/\bm\b/.test(body)) h = h.replace(/\(m: /, '(_m: ');
      return h + body;
    })
    .join('\n');
}

export function emitMessageCode(msg: Message): string {
  const ctx: Ctx = { msg, valid: msg.validVersions, structs: new Map(), withRecords: new Set() };
  collectStructs(ctx, msg.fields);
  markRecords(ctx, msg.name, msg.fields);
  let s = `// ${msg.name}: versions ${msg.validVersions.lo}-${msg.validVersions.hi}, flexible ${msg.flexibleVersions === null ? 'none' : `${msg.flexibleVersions.lo}+`}\n\n`;
  s += emitStruct(ctx, { tsName: msg.name, fields: msg.fields }, true);
  for (const st of ctx.structs.values()) s += emitStruct(ctx, st, true);
  return s;
}

/** A field as the tests see it: facts only, with struct types resolved to their TypeScript names. */
export interface FieldDescriptor {
  prop: string;
  type: string; // primitive, '[]primitive', struct tsName, or '[]' + struct tsName
  versions: [number, number] | null;
  nullable: [number, number] | null;
  tagged: [number, number] | null;
  tag?: number;
  ignorable: boolean;
  flexible?: [number, number] | null; // field-level override of the message's flexible versions
}

export interface MessageDescriptor {
  kind: string;
  apiKey?: number;
  valid: [number, number];
  flexible: [number, number] | null;
  root: string;
  structs: Record<string, FieldDescriptor[]>;
}

const MAX_VERSION = 32767;

function rangeOut(r: VersionRange | null): [number, number] | null {
  return r === null ? null : [r.lo, r.hi === Infinity ? MAX_VERSION : r.hi];
}

export function describeMessage(msg: Message): MessageDescriptor {
  const ctx: Ctx = { msg, valid: msg.validVersions, structs: new Map(), withRecords: new Set() };
  collectStructs(ctx, msg.fields);
  const resolve = (t: string): string => {
    const arr = isArray(t);
    const base = arr ? elemType(t) : t;
    const name = isStructType(base) ? structOf(ctx, base).tsName : base;
    return arr ? `[]${name}` : name;
  };
  const fields = (fs: Field[]): FieldDescriptor[] =>
    fs.map((f) => {
      const d: FieldDescriptor = {
        prop: f.prop,
        type: resolve(f.type),
        versions: rangeOut(f.versions),
        nullable: rangeOut(f.nullableVersions),
        tagged: rangeOut(f.taggedVersions),
        ignorable: f.ignorable,
      };
      if (f.tag !== undefined) d.tag = f.tag;
      if (f.flexibleVersions !== undefined) d.flexible = rangeOut(f.flexibleVersions);
      return d;
    });
  const structs: Record<string, FieldDescriptor[]> = { [msg.name]: fields(msg.fields) };
  for (const s of ctx.structs.values()) structs[s.tsName] = fields(s.fields);
  const out: MessageDescriptor = {
    kind: msg.kind,
    valid: [msg.validVersions.lo, msg.validVersions.hi === Infinity ? MAX_VERSION : msg.validVersions.hi],
    flexible: rangeOut(msg.flexibleVersions),
    root: msg.name,
    structs,
  };
  if (msg.apiKey !== undefined) out.apiKey = msg.apiKey;
  return out;
}
