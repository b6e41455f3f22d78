/**
 * What was thrown, as an Error: the same object when it is one (every error gregor throws is), else
 * an Error whose message is the thrown value's text. For turning a synchronous throw into a rejection.
 */
export function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown));
}
