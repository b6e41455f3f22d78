/**
 * The message filter language of the console: a small expression language parsed here into a tree
 * that eval.ts walks. It is never turned into JavaScript: no eval, no Function, no property lookup
 * by a name from the input on anything but decoded record data (see eval.ts), so no input can
 * reach code execution (one public console shipped remote code execution through a scripted filter).
 *
 *   expr    := or
 *   or      := and (('||' | 'or') and)*
 *   and     := not (('&&' | 'and') not)*
 *   not     := ('!' | 'not') not | compare
 *   compare := operand (('==' | '!=' | '<' | '<=' | '>' | '>=' | 'contains' | 'startsWith'
 *              | 'endsWith' | 'matches' | 'in') operand)?
 *   operand := literal | path | call | list | '(' expr ')'
 *   path    := root ('.' name | '[' (string | integer) ']')*    root: key value headers partition offset timestamp
 *   call    := ('lower' | 'upper' | 'len' | 'exists' | 'number' | 'string') '(' expr ')'
 *   list    := '[' (literal (',' literal)*)? ']'
 *   literal := "string" | 'string' | number | true | false | null
 *
 * Limits: 2,000 characters, 500 tokens, nesting 32 deep; a regular expression is RE2 syntax (linear
 * time, re2js).
 */

export const FILTER_MAX_LENGTH = 2000;
export const FILTER_MAX_TOKENS = 500;
export const FILTER_MAX_DEPTH = 32;

export class FilterError extends Error {
  constructor(
    message: string,
    /** where in the input (0-based), when known */
    readonly position: number | null = null,
  ) {
    super(position === null ? message : `${message} (at ${position + 1})`);
    this.name = 'FilterError';
  }
}

export const ROOTS = ['key', 'value', 'headers', 'partition', 'offset', 'timestamp'] as const;
export type Root = (typeof ROOTS)[number];
export const FUNCTIONS = ['lower', 'upper', 'len', 'exists', 'number', 'string'] as const;
export type FunctionName = (typeof FUNCTIONS)[number];
export const COMPARISONS = ['==', '!=', '<', '<=', '>', '>=', 'contains', 'startsWith', 'endsWith', 'matches', 'in'] as const;
export type Comparison = (typeof COMPARISONS)[number];

export type Literal = string | number | boolean | null;

export type Node =
  | { k: 'lit'; v: Literal }
  | { k: 'list'; items: Literal[] }
  | { k: 'path'; root: Root; steps: (string | number)[] }
  | { k: 'call'; fn: FunctionName; arg: Node }
  | { k: 'not'; e: Node }
  | { k: 'and' | 'or'; l: Node; r: Node }
  | { k: 'cmp'; op: Comparison; l: Node; r: Node };

type Token =
  | { t: 'str'; v: string; at: number }
  | { t: 'num'; v: number; at: number }
  | { t: 'id'; v: string; at: number }
  | { t: 'op'; v: string; at: number }
  | { t: 'end'; at: number };

const OPS = ['==', '!=', '<=', '>=', '&&', '||', '<', '>', '!', '(', ')', '[', ']', '.', ','];
const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", '/': '/' };

function lex(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    if (out.length >= FILTER_MAX_TOKENS) throw new FilterError(`the filter has more than ${FILTER_MAX_TOKENS} tokens`);
    const c = src[i] ?? '';
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const at = i;
    if (c === '"' || c === "'") {
      let v = '';
      i++;
      for (;;) {
        const d = src[i];
        if (d === undefined) throw new FilterError('a string is not closed', at);
        i++;
        if (d === c) break;
        if (d !== '\\') {
          v += d;
          continue;
        }
        const e = src[i++] ?? '';
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i, i + 4))) {
          v += String.fromCharCode(parseInt(src.slice(i, i + 4), 16));
          i += 4;
        } else if (ESCAPES[e] !== undefined) v += ESCAPES[e];
        else throw new FilterError(`unknown escape \\${e}`, i - 2);
      }
      out.push({ t: 'str', v, at });
      continue;
    }
    const num = /^-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?)/.exec(src.slice(i, i + 64));
    if (num !== null && (c !== '-' || /\d/.test(src[i + 1] ?? ''))) {
      const v = Number(num[0]);
      if (!Number.isFinite(v)) throw new FilterError(`number ${num[0]} is out of range`, at);
      out.push({ t: 'num', v, at });
      i += num[0].length;
      continue;
    }
    const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 256));
    if (id !== null) {
      out.push({ t: 'id', v: id[0], at });
      i += id[0].length;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (op === undefined) throw new FilterError(`unexpected character ${JSON.stringify(c)}`, at);
    out.push({ t: 'op', v: op, at });
    i += op.length;
  }
  out.push({ t: 'end', at: src.length });
  return out;
}

const WORD_OPS: Record<string, string> = { and: '&&', or: '||', not: '!' };

class Parser {
  private pos = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.pos] ?? { t: 'end', at: 0 };
  }

  private next(): Token {
    const t = this.peek();
    this.pos++;
    return t;
  }

  /** The token as an operator ('and' counts as '&&'), or null. */
  private opOf(t: Token): string | null {
    if (t.t === 'op') return t.v;
    if (t.t === 'id') return WORD_OPS[t.v] ?? null;
    return null;
  }

  private expect(op: string): void {
    const t = this.next();
    if (t.t !== 'op' || t.v !== op) throw new FilterError(`expected "${op}"`, t.at);
  }

  parse(): Node {
    const e = this.or();
    const t = this.peek();
    if (t.t !== 'end') throw new FilterError('unexpected input after the expression', t.at);
    return e;
  }

  private nest<T>(f: () => T): T {
    if (++this.depth > FILTER_MAX_DEPTH) throw new FilterError(`the filter nests deeper than ${FILTER_MAX_DEPTH}`, this.peek().at);
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private or(): Node {
    return this.nest(() => {
      let l = this.and();
      while (this.opOf(this.peek()) === '||') {
        this.next();
        l = { k: 'or', l, r: this.and() };
      }
      return l;
    });
  }

  private and(): Node {
    let l = this.not();
    while (this.opOf(this.peek()) === '&&') {
      this.next();
      l = { k: 'and', l, r: this.not() };
    }
    return l;
  }

  private not(): Node {
    if (this.opOf(this.peek()) === '!') {
      this.next();
      return this.nest(() => ({ k: 'not', e: this.not() }));
    }
    return this.compare();
  }

  private compare(): Node {
    const l = this.operand();
    const t = this.peek();
    const op = t.t === 'op' || t.t === 'id' ? (COMPARISONS as readonly string[]).find((c) => c === t.v) : undefined;
    if (op === undefined) return l;
    this.next();
    const r = this.operand();
    return { k: 'cmp', op: op as Comparison, l, r };
  }

  private literal(t: Token): Literal | undefined {
    if (t.t === 'str' || t.t === 'num') return t.v;
    if (t.t === 'id' && t.v === 'true') return true;
    if (t.t === 'id' && t.v === 'false') return false;
    if (t.t === 'id' && t.v === 'null') return null;
    return undefined;
  }

  private operand(): Node {
    const t = this.next();
    const lit = this.literal(t);
    if (lit !== undefined) return { k: 'lit', v: lit };
    if (t.t === 'op' && t.v === '(') {
      const e = this.or();
      this.expect(')');
      return e;
    }
    if (t.t === 'op' && t.v === '[') {
      const items: Literal[] = [];
      if (this.opOf(this.peek()) !== ']') {
        for (;;) {
          const it = this.next();
          const v = this.literal(it);
          if (v === undefined) throw new FilterError('a list holds literals only', it.at);
          items.push(v);
          if (this.opOf(this.peek()) !== ',') break;
          this.next();
        }
      }
      this.expect(']');
      return { k: 'list', items };
    }
    if (t.t === 'id' && (FUNCTIONS as readonly string[]).includes(t.v)) {
      this.expect('(');
      const arg = this.or();
      this.expect(')');
      return { k: 'call', fn: t.v as FunctionName, arg };
    }
    if (t.t === 'id' && (ROOTS as readonly string[]).includes(t.v)) return this.path(t.v as Root);
    if (t.t === 'end') throw new FilterError('the filter ends too early', t.at);
    throw new FilterError(
      `unexpected ${t.t === 'id' ? `name "${t.v}" (a filter starts from ${ROOTS.join(', ')})` : `"${t.t === 'op' ? t.v : ''}"`}`,
      t.at,
    );
  }

  private path(root: Root): Node {
    const steps: (string | number)[] = [];
    for (;;) {
      const op = this.opOf(this.peek());
      if (op === '.') {
        this.next();
        const n = this.next();
        if (n.t !== 'id') throw new FilterError('expected a field name after "."', n.at);
        steps.push(n.v);
      } else if (op === '[') {
        this.next();
        const n = this.next();
        if (n.t === 'str') steps.push(n.v);
        else if (n.t === 'num' && Number.isSafeInteger(n.v) && n.v >= 0) steps.push(n.v);
        else throw new FilterError('expected a "field name" or an index >= 0 in [ ]', n.at);
        this.expect(']');
      } else {
        return { k: 'path', root, steps };
      }
    }
  }
}

/** Parses a filter; throws FilterError naming what is wrong and where. */
export function parseFilter(src: string): Node {
  if (src.length > FILTER_MAX_LENGTH) throw new FilterError(`the filter is longer than ${FILTER_MAX_LENGTH} characters`);
  return new Parser(lex(src)).parse();
}
