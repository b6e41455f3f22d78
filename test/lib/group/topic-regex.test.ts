import { expect } from 'chai';
import { compileTopicRegex, resolveTopicRegex, TopicRegexError, topicRegexError } from '../../../lib/group/topic-regex.js';

function compiled(pattern: string) {
  const c = compileTopicRegex(pattern);
  if (c instanceof TopicRegexError) throw new Error(`${pattern}: ${c.message}`);
  return c;
}

function expectMatches(pattern: string, yes: string[], no: string[]): void {
  const re = compiled(pattern);
  for (const name of yes) expect(re.matches(name), `${pattern} ~ ${name}`).to.equal(true);
  for (const name of no) expect(re.matches(name), `${pattern} !~ ${name}`).to.equal(false);
}

describe('KIP-848 topic regexes (RE2/J syntax, whole-name match)', () => {
  it('matches the whole topic name, as Pattern.matcher(name).matches()', () => {
    expectMatches('^re-.*', ['re-', 're-a.b_c-1'], ['xre-a', 'r']);
    expectMatches('(^re-.*)', ['re-1'], ['are-1']); // librdkafka wraps each regex in ( )
    expectMatches('foo*', ['fo', 'foooo'], ['foox', 'xfoo']); // no implicit .* on either side
    expectMatches('topic\\.[0-9]+|other', ['topic.12', 'other'], ['topicx12', 'other1']);
    expectMatches('.*', ['', 'anything'], []);
  });

  it('follows RE2 where it differs from JavaScript', () => {
    expectMatches('(?i)ABC', ['abc', 'AbC'], ['abd']);
    expectMatches('a(?i:b)c', ['aBc'], ['aBC']); // flags scoped to the group
    expectMatches('(?i)k', ['K', 'k', '\u212a'], ['x']); // RE2 folds K, k and the Kelvin sign
    expectMatches('[[:alpha:]]+[[:^alpha:]]', ['ab1', 'ab-'], ['abc']);
    expectMatches('\\Qa.b\\E.', ['a.bc'], ['axbc']);
    expectMatches('\\x41\\x{42}\\101', ['ABA'], ['AB']);
    expectMatches('\\pL+\\p{^L}', ['abc1'], ['abcd']);
    expectMatches('(?i)\\p{Lu}+', ['abc', 'ABC'], ['a1']);
    expectMatches('\\Aa.\\z', ['ab'], ['abc']);
    expectMatches('a\\b-\\bb\\B', [], ['a-b']); // \B at the end after a word character never holds
    expectMatches('a\\b-\\bb', ['a-b'], ['ab']);
    expectMatches('[]a]', [']', 'a'], ['b']); // ] first in a class is a literal
    expectMatches('[a-]', ['-', 'a'], ['b']);
    expectMatches('a{,3}', ['a{,3}'], ['aaa']); // not a repetition: literal braces
    expectMatches('(?P<x>a)(?<y>b)', ['ab'], ['a']);
    expectMatches('(?s)a.b', ['a\nb'], []);
    expectMatches('a.b', ['axb'], ['a\nb']);
    expectMatches('[^a]', ['\n', 'b'], ['a']); // RE2's negated classes match newlines
    expectMatches('x\\s\\S', ['x a'], ['x\u000ba']); // RE2's \s has no \v
  });

  it('refuses what RE2/J refuses, with its description', () => {
    const refused: Record<string, string> = {
      '[': 'missing closing ]',
      '(': 'missing closing )',
      '(?=x)': 'invalid or unsupported Perl syntax',
      '(?!x)': 'invalid or unsupported Perl syntax',
      '(?<=x)': 'invalid named capture',
      '(?<!x)': 'invalid named capture',
      '(?>x)': 'invalid or unsupported Perl syntax',
      'a*+': 'invalid nested repetition operator',
      'a++': 'invalid nested repetition operator',
      'a**': 'invalid nested repetition operator',
      'a{2}{3}': 'invalid nested repetition operator',
      '(a)\\1': 'invalid escape sequence',
      '\\Z': 'invalid escape sequence',
      '\\C': 'invalid escape sequence',
      '\\e': 'invalid escape sequence',
      'x{1001}': 'invalid repeat count',
      'x{2,1}': 'invalid repeat count',
      '*a': 'missing argument to repetition operator',
      'a|*': 'missing argument to repetition operator',
      'a\\': 'trailing backslash at end of expression',
      '\\p{Foo}': 'invalid character class range',
      '[z-a]': 'invalid character class range',
      '[[:foo:]]': 'invalid character class range',
      '(?P<n>a)(?P<n>b)': 'duplicate capture group name',
      '((a{1000}){1000})': 'invalid repeat count',
    };
    for (const [pattern, description] of Object.entries(refused)) {
      expect(topicRegexError(pattern), pattern).to.equal(
        `SubscribedTopicRegex \`${pattern}\` is not a valid regular expression: ${description}.`,
      );
    }
    for (const ok of ['^re-.*', '(?i)x', 'a{2}', 'a*?', '(?)x', '\\_', '[\\d-z]', '\\p{Greek}'])
      expect(topicRegexError(ok), ok).to.equal(null);
  });

  it('matches in linear time: patterns that make a backtracking engine explode answer at once', () => {
    const started = Date.now();
    expect(compiled('(a|aa)*b').matches('a'.repeat(5000))).to.equal(false);
    expect(compiled('(a+)+b').matches('a'.repeat(5000))).to.equal(false);
    expect(compiled('(x+x+)+y').matches('x'.repeat(5000))).to.equal(false);
    expect(Date.now() - started).to.be.below(500);
  });

  it('resolves against topic names, never matching internal topics', () => {
    const names = ['__consumer_offsets', '__transaction_state', '__other', 're-1', 'x'];
    expect([...resolveTopicRegex('.*', names)].sort()).to.deep.equal(['__other', 're-1', 'x']);
    expect([...resolveTopicRegex('__.*', names)]).to.deep.equal(['__other']);
    expect([...resolveTopicRegex('[', names)]).to.deep.equal([]);
  });
});
