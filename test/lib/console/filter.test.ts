/**
 * The console's message filter language: what it matches, the errors it gives, and that no input
 * reaches JavaScript evaluation (injection attempts, and a fast-check property over arbitrary and
 * code-shaped inputs: parsing either refuses or gives a tree, evaluation either answers a boolean
 * or refuses, and neither touches a trap set on the prototypes and globals an escape would use).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { compileFilter, EVAL_STEP_BUDGET, type FilterRecord } from '../../../lib/console/filter/eval.js';
import { FILTER_MAX_DEPTH, FILTER_MAX_LENGTH, FilterError, parseFilter } from '../../../lib/console/filter/parse.js';

function rec(over: Partial<FilterRecord> & { headerList?: [string, string | null][] } = {}): FilterRecord {
  return {
    key: over.key ?? 'user-42',
    value: over.value ?? JSON.stringify({ id: 7, status: 'shipped', total: 19.5, tags: ['a', 'b'], customer: { name: 'Ada', vip: true } }),
    headers: new Map(
      over.headerList ?? [
        ['trace-id', 'abc123'],
        ['source', 'web'],
      ],
    ),
    partition: over.partition ?? 2,
    offset: over.offset ?? 100,
    timestamp: over.timestamp ?? 1_700_000_000_000,
  };
}

const pass = (f: string, r = rec()) => compileFilter(f).matches(r);

describe('console filter language', () => {
  it('compares JSON fields, text, headers and record coordinates', () => {
    expect(pass('value.status == "shipped"')).to.equal(true);
    expect(pass("value.status == 'new'")).to.equal(false);
    expect(pass('value.total > 10 && value.total <= 19.5')).to.equal(true);
    expect(pass('value.customer.name startsWith "A" and value.customer.vip')).to.equal(true);
    expect(pass('value.tags contains "b"')).to.equal(true);
    expect(pass('value.tags[0] == "a" && len(value.tags) == 2')).to.equal(true);
    expect(pass('value["customer"]["name"] == "Ada"')).to.equal(true);
    expect(pass('key contains "42"')).to.equal(true);
    expect(pass('key matches "^user-[0-9]+$"')).to.equal(true);
    expect(pass('headers["trace-id"] == "abc123" && headers.source in ["web", "app"]')).to.equal(true);
    expect(pass('partition == 2 && offset >= 100 && timestamp > 0')).to.equal(true);
    expect(pass('not (value.status == "shipped") || offset == 1')).to.equal(false);
    expect(pass('!exists(value.missing) && exists(value.id)')).to.equal(true);
    expect(pass('lower(value.customer.name) == "ada" && upper(key) == "USER-42"')).to.equal(true);
    expect(pass('value.id == "7" && number(value.id) == 7 && string(value.id) == "7"')).to.equal(true);
    expect(pass('value.id != null')).to.equal(true);
  });

  it('treats a value that is not JSON as text, and a null value as null', () => {
    expect(pass('value contains "hello"', rec({ value: 'hello world' }))).to.equal(true);
    expect(pass('value.anything == null', rec({ value: 'hello world' }))).to.equal(true);
    expect(pass('value == null', { ...rec(), value: null })).to.equal(true);
    expect(pass('value contains "x"', { ...rec(), value: null })).to.equal(false);
    expect(pass('value == "{broken"', rec({ value: '{broken' }))).to.equal(true);
  });

  it('names what is wrong and where', () => {
    const bad: [string, RegExp][] = [
      ['value ==', /ends too early/],
      ['value.status = "x"', /unexpected character "="/],
      ['"open', /not closed/],
      ['foo == 1', /unexpected name "foo"/],
      ['value.status == "x" extra', /after the expression/],
      ['key matches "("', /bad regular expression/],
      ['key matches value', /string literal/],
      ['value[-1]', /index >= 0/],
      ['[value]', /literals only/],
    ];
    for (const [src, why] of bad) expect(() => compileFilter(src), src).to.throw(FilterError, why);
    expect(() => parseFilter('x'.repeat(FILTER_MAX_LENGTH + 1))).to.throw(FilterError, /longer than/);
    expect(() => parseFilter(`${'('.repeat(FILTER_MAX_DEPTH + 1)}key${')'.repeat(FILTER_MAX_DEPTH + 1)}`)).to.throw(
      FilterError,
      /nests deeper/,
    );
    expect(() => parseFilter('!'.repeat(FILTER_MAX_DEPTH + 1) + 'key')).to.throw(FilterError, /nests deeper/);
    expect(() => parseFilter(`key in [${Array.from({ length: 300 }, () => '1').join(',')}]`)).to.throw(FilterError, /tokens/);
  });

  describe('no code execution', () => {
    /** Sets traps on what a JavaScript escape would reach; returns a check that none was touched. */
    function traps(): { hits: string[]; restore(): void } {
      const hits: string[] = [];
      const g = globalThis as Record<string, unknown>;
      const saved = { Function: g['Function'], eval: g['eval'], process: g['process'] };
      const protoConstructor = Object.getOwnPropertyDescriptor(Function.prototype, 'constructor');
      Object.defineProperty(Function.prototype, 'constructor', {
        configurable: true,
        get() {
          hits.push('Function.prototype.constructor');
          return protoConstructor?.value as unknown;
        },
      });
      g['eval'] = () => hits.push('eval');
      return {
        hits,
        restore() {
          if (protoConstructor !== undefined) Object.defineProperty(Function.prototype, 'constructor', protoConstructor);
          g['eval'] = saved.eval;
        },
      };
    }

    const ATTEMPTS = [
      'constructor.constructor("return process")()',
      'value.constructor.constructor("return process.exit(1)")()',
      'value.__proto__.polluted == 1',
      'value["__proto__"]["constructor"]["constructor"]("return 1")',
      'value.toString == null',
      'value.hasOwnProperty("id")',
      'this.process.exit()',
      'process.mainModule.require("child_process").execSync("id")',
      'require("fs")',
      'import("fs")',
      '`${process.exit()}`',
      'value.status == "x"; process.exit()',
      'eval("1")',
      'Function("return 1")()',
      'globalThis.x = 1',
      'key = "x"',
      '(function(){ return 1 })()',
      '() => 1',
      'value.tags.map(x => x)',
      'value.status.length > 0',
      'new Function("x")',
      'key matches "(a+)+$"',
    ];

    it('refuses or safely evaluates code-shaped filters, reaching no JavaScript', () => {
      const t = traps();
      try {
        const r = rec({ value: JSON.stringify({ id: 1, ['__proto__']: { polluted: 1 }, constructor: 'own field' }) });
        for (const src of ATTEMPTS) {
          let out: unknown;
          try {
            out = compileFilter(src).matches(r);
          } catch (e) {
            expect(e, src).to.be.instanceOf(FilterError);
            continue;
          }
          expect(out, src).to.be.a('boolean');
        }
        expect(t.hits).to.deep.equal([]);
      } finally {
        t.restore();
      }
      // an own "__proto__" or "constructor" field of the JSON is data like any other, and pollutes nothing
      const r = rec({ value: '{"__proto__": {"polluted": 1}, "constructor": "own field"}' });
      expect(pass('value.__proto__.polluted == 1', r)).to.equal(true);
      expect(pass('value.constructor == "own field"', r)).to.equal(true);
      expect(({} as Record<string, unknown>)['polluted']).to.equal(undefined);
      // and on a value without them, they are missing fields, not JavaScript's
      expect(pass('value.constructor == null && value.__proto__ == null && value.toString == null')).to.equal(true);
      expect(pass('key matches "(a+)+$"', rec({ key: `${'a'.repeat(5000)}!` }))).to.equal(false);
    });

    it('property: any input parses to a tree or a FilterError, and evaluates to a boolean or a FilterError, touching nothing', () => {
      const token = fc.constantFrom(
        'key',
        'value',
        'headers',
        'partition',
        'offset',
        'timestamp',
        'constructor',
        '__proto__',
        'prototype',
        'process',
        'require',
        'eval',
        'Function',
        'this',
        'globalThis',
        'import',
        'new',
        'return',
        'call',
        'apply',
        'bind',
        'toString',
        'lower',
        'len',
        'exists',
        'number',
        'string',
        'and',
        'or',
        'not',
        'in',
        'contains',
        'matches',
        'startsWith',
        'true',
        'null',
        '==',
        '!=',
        '<',
        '>=',
        '&&',
        '||',
        '!',
        '(',
        ')',
        '[',
        ']',
        '.',
        ',',
        ';',
        '=',
        '=>',
        '`',
        '${',
        '}',
        '+',
        '-',
        '*',
        '"x"',
        "'y'",
        '"\\u0041"',
        '1',
        '-2.5',
        '1e3',
        ' ',
      );
      const code = fc.array(token, { maxLength: 40 }).map((ts) => ts.join(' '));
      const input = fc.oneof(code, fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 80 }));
      const values = fc.oneof(
        fc.json(),
        fc.string({ maxLength: 50 }),
        fc.constant('{"__proto__":{"x":1},"constructor":{"constructor":1}}'),
      );
      const t = traps();
      try {
        fc.assert(
          fc.property(input, values, (src, value) => {
            let f;
            try {
              f = compileFilter(src);
            } catch (e) {
              return e instanceof FilterError;
            }
            try {
              return typeof f.matches(rec({ value })) === 'boolean';
            } catch (e) {
              return e instanceof FilterError;
            }
          }),
          { numRuns: 3000 },
        );
        expect(t.hits).to.deep.equal([]);
      } finally {
        t.restore();
      }
    });

    it('bounds the work per record with a step budget', () => {
      // the largest filter the limits allow, on a large JSON value: it ends within the budget or refuses
      const big = JSON.stringify({ a: Array.from({ length: 1000 }, (_v, i) => ({ i, s: 'x'.repeat(10) })) });
      const long = Array.from({ length: 40 }, (_v, i) => `value.a[${i}].s contains "x"`).join(' && ');
      expect(pass(long, rec({ value: big }))).to.equal(true);
      expect(EVAL_STEP_BUDGET).to.be.greaterThan(0);
      const f = compileFilter(Array.from({ length: 45 }, () => 'len(value.a) > 0').join(' && '));
      expect(f.matches(rec({ value: big }))).to.equal(true);
    });
  });
});
