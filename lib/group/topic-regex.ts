/**
 * KIP-848 topic regexes as Kafka 4.x resolves them on the broker: RE2/J syntax and semantics (re2js,
 * the JavaScript port of RE2/J: linear-time matching, so no pattern a client sends can make the
 * broker backtrack), a whole-name match like `Pattern.matcher(name).matches()`, internal topics
 * never matching. Compiled patterns (and refusals) are cached. re2js is loaded on the first regex
 * (synchronously, through its CommonJS build), not at start-up.
 */
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { INTERNAL_TOPICS } from '../topics.js';

const CACHE_SIZE = 1024;

/** An RE2/J syntax error: `description` is what Java's PatternSyntaxException.getDescription() gives. */
export class TopicRegexError extends Error {
  constructor(
    readonly description: string,
    readonly pattern: string,
  ) {
    super(`error parsing regexp: ${description}`);
    this.name = 'TopicRegexError';
  }
}

const cache = new Map<string, RE2JS | TopicRegexError>();
let re2: typeof RE2JS | null = null;

function compileUncached(pattern: string): RE2JS | TopicRegexError {
  try {
    re2 ??= (createRequire(import.meta.url)('re2js') as { RE2JS: typeof RE2JS }).RE2JS;
    return re2.compile(pattern);
  } catch (e) {
    const description = (e as { error?: unknown }).error;
    if (typeof description === 'string') return new TopicRegexError(description, pattern);
    throw e;
  }
}

/** The compiled pattern, or its RE2/J syntax error (both cached). */
export function compileTopicRegex(pattern: string): RE2JS | TopicRegexError {
  let c = cache.get(pattern);
  if (c === undefined) {
    c = compileUncached(pattern);
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(pattern, c);
  }
  return c;
}

/** Kafka's INVALID_REGULAR_EXPRESSION message for an invalid pattern, or null when it compiles. */
export function topicRegexError(pattern: string): string | null {
  const c = compileTopicRegex(pattern);
  return c instanceof TopicRegexError ? `SubscribedTopicRegex \`${pattern}\` is not a valid regular expression: ${c.description}.` : null;
}

/** The topics among `names` that `pattern` matches as a whole (none when it does not compile). */
export function resolveTopicRegex(pattern: string, names: Iterable<string>): Set<string> {
  const out = new Set<string>();
  const c = compileTopicRegex(pattern);
  if (c instanceof TopicRegexError) return out;
  for (const name of names) if (!INTERNAL_TOPICS.has(name) && c.matches(name)) out.add(name);
  return out;
}
