/**
 * Evaluates a parsed filter (parse.ts) against one record. Data is looked up only in what the record
 * decoded to: JSON objects by their own properties (Object.hasOwn: `__proto__`, `constructor` and
 * the like are plain missing fields unless the JSON has them), arrays by index, everything else
 * gives null. Functions are a fixed set implemented here; nothing from the input is ever called.
 * Each evaluation has a budget of steps, so a filter's cost per record is bounded.
 */
import { compileTopicRegex, TopicRegexError } from '../../group/topic-regex.js';
import { FilterError, type Literal, type Node, parseFilter } from './parse.js';

export const EVAL_STEP_BUDGET = 10_000;

/** What a filter sees of a record. */
export interface FilterRecord {
  key: string | null;
  value: string | null;
  /** header name -> value text (the first of a repeated name) */
  headers: ReadonlyMap<string, string | null>;
  partition: number;
  offset: number;
  timestamp: number;
}

/** A JSON value (decoded record data) or a literal. */
type Value = Literal | readonly unknown[] | { readonly [k: string]: unknown };

function json(text: string | null): Value {
  if (text === null) return null;
  const t = text.trimStart();
  if (t[0] !== '{' && t[0] !== '[') return text;
  try {
    return JSON.parse(text) as Value;
  } catch {
    return text;
  }
}

function step(v: Value, s: string | number): Value {
  if (Array.isArray(v)) return typeof s === 'number' && s < v.length ? ((v[s] ?? null) as Value) : null;
  if (v !== null && typeof v === 'object')
    return typeof s === 'string' && Object.hasOwn(v, s) ? ((v as Record<string, Value>)[s] ?? null) : null;
  return null;
}

function truthy(v: Value): boolean {
  return !(v === null || v === false || v === '' || v === 0);
}

function asText(v: Value): string | null {
  if (v === null) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function asNumber(v: Value): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v.trim() !== '') {
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

function equal(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (a === null || b === null) return false;
  if (typeof a === 'number' || typeof b === 'number') {
    const x = asNumber(a);
    const y = asNumber(b);
    return x !== null && y !== null && x === y;
  }
  if (typeof a === 'object' || typeof b === 'object') return asText(a) === asText(b);
  return false;
}

function order(a: Value, b: Value): number | null {
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  const x = asNumber(a);
  const y = asNumber(b);
  return x === null || y === null ? null : x - y;
}

export class CompiledFilter {
  private steps = 0;

  constructor(
    readonly source: string,
    private readonly root: Node,
  ) {
    // regular expressions are compiled (and refused) up front
    this.checkRegexes(root);
  }

  private checkRegexes(n: Node): void {
    if (n.k === 'cmp') {
      if (n.op === 'matches') {
        if (n.r.k !== 'lit' || typeof n.r.v !== 'string') throw new FilterError('"matches" takes a "regular expression" string literal');
        const re = compileTopicRegex(n.r.v);
        if (re instanceof TopicRegexError) throw new FilterError(`bad regular expression ${JSON.stringify(n.r.v)}: ${re.description}`);
      }
      this.checkRegexes(n.l);
      this.checkRegexes(n.r);
    } else if (n.k === 'and' || n.k === 'or') {
      this.checkRegexes(n.l);
      this.checkRegexes(n.r);
    } else if (n.k === 'not') this.checkRegexes(n.e);
    else if (n.k === 'call') this.checkRegexes(n.arg);
  }

  /** Whether `r` passes; throws FilterError when the step budget runs out. */
  matches(r: FilterRecord): boolean {
    this.steps = 0;
    const cache = new Map<'key' | 'value', Value>();
    return truthy(this.eval(this.root, r, cache));
  }

  private eval(n: Node, r: FilterRecord, cache: Map<'key' | 'value', Value>): Value {
    if (++this.steps > EVAL_STEP_BUDGET) throw new FilterError(`the filter took more than ${EVAL_STEP_BUDGET} steps on one record`);
    switch (n.k) {
      case 'lit':
        return n.v;
      case 'list':
        return n.items;
      case 'not':
        return !truthy(this.eval(n.e, r, cache));
      case 'and':
        return truthy(this.eval(n.l, r, cache)) && truthy(this.eval(n.r, r, cache));
      case 'or':
        return truthy(this.eval(n.l, r, cache)) || truthy(this.eval(n.r, r, cache));
      case 'path':
        return this.path(n.root, n.steps, r, cache);
      case 'call':
        return this.call(n.fn, this.eval(n.arg, r, cache));
      case 'cmp':
        return this.compare(n.op, this.eval(n.l, r, cache), n.op === 'matches' ? null : this.eval(n.r, r, cache), n);
    }
  }

  private path(root: string, steps: readonly (string | number)[], r: FilterRecord, cache: Map<'key' | 'value', Value>): Value {
    let v: Value;
    let rest = steps;
    if (root === 'key' || root === 'value') {
      let decoded = cache.get(root);
      if (decoded === undefined) cache.set(root, (decoded = json(r[root])));
      v = decoded;
    } else if (root === 'headers') {
      const [name, ...more] = steps;
      if (name === undefined) return Object.fromEntries(r.headers);
      v = typeof name === 'string' ? json(r.headers.get(name) ?? null) : null;
      rest = more;
    } else {
      v = root === 'partition' ? r.partition : root === 'offset' ? r.offset : r.timestamp;
    }
    for (const s of rest) {
      this.steps++;
      v = step(v, s);
    }
    return v;
  }

  private call(fn: string, v: Value): Value {
    switch (fn) {
      case 'lower':
        return asText(v)?.toLowerCase() ?? null;
      case 'upper':
        return asText(v)?.toUpperCase() ?? null;
      case 'len':
        return Array.isArray(v)
          ? v.length
          : typeof v === 'string'
            ? v.length
            : v !== null && typeof v === 'object'
              ? Object.keys(v).length
              : null;
      case 'exists':
        return v !== null;
      case 'number':
        return asNumber(v);
      default:
        return asText(v);
    }
  }

  private compare(op: string, l: Value, r: Value, n: Node & { k: 'cmp' }): boolean {
    switch (op) {
      case '==':
        return equal(l, r);
      case '!=':
        return !equal(l, r);
      case '<':
      case '<=':
      case '>':
      case '>=': {
        const o = order(l, r);
        if (o === null) return false;
        return op === '<' ? o < 0 : op === '<=' ? o <= 0 : op === '>' ? o > 0 : o >= 0;
      }
      case 'contains': {
        if (Array.isArray(l)) return l.some((x) => equal(x as Value, r));
        const a = asText(l);
        const b = asText(r);
        return a !== null && b !== null && a.includes(b);
      }
      case 'startsWith':
      case 'endsWith': {
        const a = asText(l);
        const b = asText(r);
        return a !== null && b !== null && (op === 'startsWith' ? a.startsWith(b) : a.endsWith(b));
      }
      case 'in':
        return Array.isArray(r) && r.some((x) => equal(l, x as Value));
      default: {
        const a = asText(l);
        const re = n.r.k === 'lit' && typeof n.r.v === 'string' ? compileTopicRegex(n.r.v) : null;
        return a !== null && re !== null && !(re instanceof TopicRegexError) && re.matcher(a).find();
      }
    }
  }
}

/** Parses and checks a filter (FilterError when it is not one). */
export function compileFilter(src: string): CompiledFilter {
  return new CompiledFilter(src, parseFilter(src));
}
